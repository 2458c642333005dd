//! What the handlers of every MCP method share, the tools' and the tasks', the listen's and
//! the resources': the deployment's dependencies, who calls, a read counted, where a job's
//! status is read and its results linked, and where the deployment's runs live.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ErrorData, Extensions, Resource};

use domain::arn::{account_of_function, Scope};
use domain::caller::{Caller, Principal};
use domain::job::{Job, JobStatus};
use entry::telemetry::{self, OutcomeSource};
use usecases::check;
use usecases::job_object::{self, JobObject};
use usecases::quota::{self, QuotaError};

use crate::contract::{quota_refused, resources};
use crate::deadline::{lambda_context, left_until, wait_within};
use crate::deps::{Backend, Deps};
use crate::wording;

/// The deployment as one request sees it: cheap to clone (the dependencies are shared).
pub(crate) struct Server<B> {
    pub deps: Arc<Deps<B>>,
    /// The caller of every request, for a transport with one caller and no front door (an
    /// in-process or stdio client); None where each request brings its own.
    sole_caller: Option<Principal>,
}

impl<B> Clone for Server<B> {
    fn clone(&self) -> Self {
        Self {
            deps: self.deps.clone(),
            sole_caller: self.sole_caller.clone(),
        }
    }
}

impl<B> Server<B> {
    pub fn new(deps: Arc<Deps<B>>, sole_caller: Option<Principal>) -> Self {
        Self { deps, sole_caller }
    }

    /// The caller the front door established on the request's parts (both doors put it
    /// there, see the `direct` module); else the transport's sole caller. Nothing here reads a
    /// header.
    pub fn caller_of(&self, extensions: &Extensions) -> Option<Caller> {
        self.principal_of(extensions).map(|p| p.caller())
    }

    /// Who calls, as the front door authenticated them (see [`Server::caller_of`]).
    pub fn principal_of(&self, extensions: &Extensions) -> Option<Principal> {
        extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .or(self.sole_caller.as_ref())
            .cloned()
    }

    /// A protocol method's caller; without one nothing is read.
    pub fn task_caller(&self, extensions: &Extensions) -> Result<Caller, ErrorData> {
        self.caller_of(extensions)
            .ok_or_else(|| ErrorData::internal_error(wording::NO_CALLER, None))
    }

    /// Where this deployment's runs and model packages live: the configured region and
    /// pipeline, and the account of the function being invoked (from the invocation's context,
    /// when the runtime gives a real one).
    pub fn scope<'a>(&'a self, extensions: &'a Extensions) -> Scope<'a> {
        let config = &self.deps.config;
        let account =
            lambda_context(extensions).and_then(|c| account_of_function(&c.invoked_function_arn));
        Scope {
            region: config.region.as_deref(),
            account,
            pipelines: &self.deps.pipelines,
        }
    }

    /// How long a listen may be held: `LISTEN_MAX_SECS`, within the invocation's time (its
    /// deadline in epoch milliseconds, from the Lambda context).
    pub fn listen_time(&self, deadline_ms: Option<u64>) -> Duration {
        let max = Duration::from_secs(self.deps.config.listen_max_secs);
        wait_within(max, deadline_ms.and_then(left_until))
    }
}

/// Counts an outcome a status check found in S3 (the check announced it).
pub fn count_reconciled(report: &check::JobReport) {
    if let Some(recorded) = &report.reconciled {
        telemetry::outcome(recorded, OutcomeSource::Reconciliation);
    }
}

impl<B: Backend> Server<B> {
    /// One read counted against the caller's reads per minute, before the read's work: over
    /// the quota, or with the count not written, the work is not done. Every tool whose
    /// policy says so, `resources/read`, `tasks/get`, `tasks/update` and a listen each take one.
    pub async fn count_read(&self, caller: &Caller) -> Result<quota::Read, QuotaError> {
        let d = &self.deps;
        d.reads
            .take(d.ports.quotas(), &caller.owner, d.clock.now())
            .await
    }

    /// A task method's caller, with one read counted before anything is read: over the quota,
    /// the method's answer is the quota's error (-32009).
    pub async fn reading_caller(&self, extensions: &Extensions) -> Result<Caller, ErrorData> {
        let caller = self.task_caller(extensions)?;
        let _read = self.count_read(&caller).await.map_err(quota_refused)?;
        Ok(caller)
    }

    /// Where a status check reads a job, and announces an outcome it heals from S3.
    pub fn job_reads(&self) -> check::JobReads<'_, B::Jobs, B::Objects, B::Events> {
        let d = &self.deps;
        check::JobReads {
            jobs: d.ports.jobs(),
            objects: d.ports.objects(),
            events: d.ports.events(),
            settings: d.settings,
        }
    }

    /// The links a status of `job` carries: its output once completed (where it is not inline
    /// in the status), its failure detail once failed (where SageMaker wrote one). Each is one
    /// ranged read of S3, for its size and type.
    pub async fn job_links(&self, job: &Job) -> Vec<Resource> {
        let which = match job.status {
            JobStatus::Completed if job.result.is_none() => JobObject::Output,
            JobStatus::Failed => JobObject::Failure,
            _ => return Vec::new(),
        };
        let objects = self.deps.ports.objects();
        match job_object::describe(objects, job, which).await {
            Some(info) => vec![resources::link(job.inference_id.as_str(), which, &info)],
            None => Vec::new(),
        }
    }
}
