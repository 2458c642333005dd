//! SageMaker async endpoints (sagemaker-runtime InvokeEndpointAsync), and how many instances
//! each runs (DescribeEndpoint).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_config::SdkConfig;

use crate::aws::{classify, SdkClient};
use domain::job::Locations;
use ports::{AsyncInvoker, AwsFailure, InvokeInput, InvokeRequest};

/// A client whose every attempt gives up after `attempt_timeout`: InvokeEndpointAsync only
/// queues the request, so an answer that takes longer is treated as lost (the job is then
/// `uncertain`, never failed) rather than holding the tool call until the Lambda times out.
pub fn sagemaker_runtime_client(
    sdk: &SdkConfig,
    attempt_timeout: Duration,
) -> SdkClient<aws_sdk_sagemakerruntime::Client> {
    crate::aws::sdk_client(sdk, move |sdk| {
        let timeouts = aws_config::timeout::TimeoutConfig::builder()
            .operation_attempt_timeout(attempt_timeout)
            .build();
        let conf = aws_sdk_sagemakerruntime::config::Builder::from(sdk)
            .timeout_config(timeouts)
            .build();
        aws_sdk_sagemakerruntime::Client::from_conf(conf)
    })
}

/// An instance count read this recently is used again: DescribeEndpoint is a control-plane
/// call with a low rate limit, and submits come in bursts. A read that failed (throttled, not
/// allowed, no such endpoint) is remembered as unknown for as long: the count is only a hint,
/// and a control plane that refuses is not asked again on every submit.
const INSTANCES_FRESH_FOR: Duration = Duration::from_secs(30);

/// Each endpoint's last instance count read, and when.
type InstancesRead = Arc<Mutex<HashMap<String, (tokio::time::Instant, Option<u32>)>>>;

#[derive(Clone)]
pub struct SageMakerEndpoints {
    client: SdkClient<aws_sdk_sagemakerruntime::Client>,
    control: SdkClient<aws_sdk_sagemaker::Client>,
    instances: InstancesRead,
}

impl SageMakerEndpoints {
    pub fn new(
        client: SdkClient<aws_sdk_sagemakerruntime::Client>,
        control: SdkClient<aws_sdk_sagemaker::Client>,
    ) -> Self {
        Self {
            client,
            control,
            instances: Arc::default(),
        }
    }
}

impl AsyncInvoker for SageMakerEndpoints {
    async fn invoke(&self, r: &InvokeRequest) -> Result<Locations, AwsFailure> {
        let call = self
            .client
            .invoke_endpoint_async()
            .endpoint_name(&r.endpoint_name)
            .inference_id(&r.inference_id)
            .content_type(&r.content_type)
            .set_accept(r.accept.clone())
            .invocation_timeout_seconds(r.invocation_timeout_secs as i32)
            .request_ttl_seconds(r.request_ttl_secs as i32);
        let call = match &r.input {
            InvokeInput::S3(location) => call.input_location(location),
            InvokeInput::Inline(body) => call.body(aws_smithy_types::Blob::new(body.clone())),
        };
        let out = call.send().await.map_err(|e| classify(&e))?;
        Ok(Locations {
            output_location: out.output_location,
            failure_location: out.failure_location,
        })
    }

    async fn current_instances(&self, endpoint_name: &str) -> Result<Option<u32>, AwsFailure> {
        if let Some((read_at, count)) = self.instances.lock().unwrap().get(endpoint_name) {
            if read_at.elapsed() < INSTANCES_FRESH_FOR {
                return Ok(*count);
            }
        }
        let remember = |count: Option<u32>| {
            self.instances.lock().unwrap().insert(
                endpoint_name.to_owned(),
                (tokio::time::Instant::now(), count),
            );
        };
        let out = match self
            .control
            .describe_endpoint()
            .endpoint_name(endpoint_name)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                remember(None);
                return Err(classify(&e));
            }
        };
        let counts: Vec<i32> = out
            .production_variants()
            .iter()
            .filter_map(|v| v.current_instance_count())
            .collect();
        let count = (!counts.is_empty()).then(|| counts.iter().map(|c| (*c).max(0) as u32).sum());
        remember(count);
        Ok(count)
    }
}
