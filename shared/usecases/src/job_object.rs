//! A job's output, or its failure detail, read back for its owner: what a link to it says (its
//! size and type, from one ranged read) and its bytes, up to a bound. An output too large for
//! the bound is never downloaded whole; the presigned URL of a status check serves that one.

use chrono::{DateTime, Utc};

use crate::check::{owned_job, CheckError};
use crate::JobSettings;
use domain::caller::Caller;
use domain::ids::InferenceId;
pub use domain::job::object::JobObject;
use domain::job::{Job, JobStatus};
use domain::s3_location::S3Location;
use ports::{JobStore, ObjectError, ObjectStore, StoreError};

/// What stands in for the object where none is in S3: an inline result, a failure reason.
fn recorded(which: JobObject, job: &Job) -> Option<(Vec<u8>, &'static str)> {
    match (which, job.status) {
        (JobObject::Output, JobStatus::Completed) => job
            .result
            .as_ref()
            .map(|r| (r.to_string().into_bytes(), "application/json")),
        (JobObject::Failure, JobStatus::Failed) => job
            .failure_reason
            .as_ref()
            .map(|r| (r.clone().into_bytes(), "text/plain")),
        _ => None,
    }
}

/// What a link to an object in S3 says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    pub size: u64,
    pub content_type: Option<String>,
}

/// An object read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRead {
    pub bytes: Vec<u8>,
    pub content_type: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Unknown, another caller's, expired, or a job without that object (yet): one answer.
    #[error("no {which:?} of job {}", domain::util::quote(inference_id))]
    NotFound {
        inference_id: String,
        which: JobObject,
    },
    #[error(
        "the {which:?} of job {} is {size} bytes, more than {max}",
        domain::util::quote(inference_id)
    )]
    TooLarge {
        inference_id: String,
        which: JobObject,
        size: u64,
        max: u64,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Object(ObjectError),
}

/// The size and type of `job`'s object in S3, for a link to it: one ranged read of a byte.
/// None where the job has no such object in S3, or it cannot be read now (logged: the status
/// check still answers without the link).
pub async fn describe<O: ObjectStore>(
    objects: &O,
    job: &Job,
    which: JobObject,
) -> Option<ObjectInfo> {
    let location = which.location(job)?.parse::<S3Location>().ok()?;
    match objects.read_prefix(&location, 0).await {
        Ok(prefix) => Some(ObjectInfo {
            size: prefix.total_len,
            content_type: prefix.content_type,
        }),
        Err(e) => {
            tracing::warn!(%location, error = %e, "could not size the job's object for its link");
            None
        }
    }
}

/// The caller's job's object, whole, if it is at most `max` bytes. Another caller's job, an
/// unknown or expired one, and one without that object yet answer alike.
#[allow(clippy::too_many_arguments)]
pub async fn read_job_object<S: JobStore, O: ObjectStore>(
    store: &S,
    objects: &O,
    settings: JobSettings,
    caller: &Caller,
    inference_id: &InferenceId,
    which: JobObject,
    max: u64,
    now: DateTime<Utc>,
) -> Result<ObjectRead, ReadError> {
    let not_found = || ReadError::NotFound {
        inference_id: inference_id.to_string(),
        which,
    };
    let job = match owned_job(store, settings, caller, inference_id, now).await {
        Ok(job) => job,
        Err(CheckError::NotFound { .. }) => return Err(not_found()),
        Err(CheckError::Store(e)) => return Err(e.into()),
    };
    let Some(location) = which.location(&job) else {
        return match recorded(which, &job) {
            Some((bytes, content_type)) => {
                bounded(bytes, content_type, inference_id.as_str(), which, max)
            }
            None => Err(not_found()),
        };
    };
    let location: S3Location = location.parse().map_err(|_| not_found())?;
    match objects.read_prefix(&location, max).await {
        Ok(prefix) if prefix.total_len > max => Err(ReadError::TooLarge {
            inference_id: inference_id.to_string(),
            which,
            size: prefix.total_len,
            max,
        }),
        Ok(prefix) => Ok(ObjectRead {
            bytes: prefix.bytes,
            content_type: prefix.content_type,
        }),
        Err(ObjectError::NotFound { .. }) => Err(not_found()),
        Err(e) => Err(ReadError::Object(e)),
    }
}

fn bounded(
    bytes: Vec<u8>,
    content_type: &str,
    inference_id: &str,
    which: JobObject,
    max: u64,
) -> Result<ObjectRead, ReadError> {
    let size = bytes.len() as u64;
    if size > max {
        return Err(ReadError::TooLarge {
            inference_id: inference_id.to_owned(),
            which,
            size,
            max,
        });
    }
    Ok(ObjectRead {
        bytes,
        content_type: Some(content_type.to_owned()),
    })
}
