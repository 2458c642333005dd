//! `resources/list`, `resources/templates/list` and `resources/read`: a job's output and its
//! failure detail, read over the same connection and authorization as the tools, by the caller
//! that submitted the job. Jobs are not enumerable: the list is empty, the templates say how
//! to name one, and a status's `resource_link` names it for the client.

use rmcp::model::{Extensions, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult};
use rmcp::ErrorData;
use tracing::{field::Empty, info_span, Instrument};

use usecases::job_object;

use crate::contract::quota_refused;
use crate::contract::resources::{self, READ_MAX_BYTES};
use crate::deps::Backend;
use crate::listing::caches;
use crate::server::Server;

/// `resources/read`, beside the tools, over the same [`Server`].
pub(crate) struct Resources<'a, B> {
    server: &'a Server<B>,
}

impl<'a, B> Resources<'a, B> {
    pub fn new(server: &'a Server<B>) -> Self {
        Self { server }
    }
}

impl<B: Backend> Resources<'_, B> {
    /// `resources/read` of a job's object, for its owner only. A URI this server did not make
    /// is not found before anything is read.
    pub(crate) async fn read_job_resource(
        &self,
        request: ReadResourceRequestParams,
        extensions: &Extensions,
        version: Option<ProtocolVersion>,
    ) -> Result<ReadResourceResult, ErrorData> {
        let caller = self.server.task_caller(extensions)?;
        let span = info_span!("resource_read", inference_id = Empty, object = Empty);
        let uri = request.uri;
        let Some((inference_id, which)) = resources::parse_uri(&uri) else {
            return Err(resources::not_found(&uri));
        };
        span.record("inference_id", inference_id.as_str());
        span.record("object", tracing::field::debug(which));
        let _read = self
            .server
            .count_read(&caller)
            .await
            .map_err(quota_refused)?;
        let d = &self.server.deps;
        let (jobs, objects) = (d.ports.jobs(), d.ports.objects());
        let read = job_object::read_job_object(
            jobs,
            objects,
            d.settings,
            &caller,
            &inference_id,
            which,
            READ_MAX_BYTES,
            d.clock.now(),
        )
        .instrument(span.clone())
        .await;
        span.in_scope(|| match &read {
            Ok(r) => tracing::info!(bytes = r.bytes.len(), "resource read"),
            Err(e) => tracing::info!(error = %e, "resource not read"),
        });
        let contents = resources::contents(&uri, read.map_err(|e| resources::read_error(&uri, e))?);
        let result = ReadResourceResult::new(vec![contents]);
        Ok(match caches(version) {
            true => result
                .with_ttl_ms(resources::READ_TTL_MS)
                .with_cache_scope(resources::READ_CACHE_SCOPE),
            false => result,
        })
    }
}
