//! A job's objects, its output and its failure detail, and the URIs that name them as MCP
//! resources (`job://{inference_id}/output`, `job://{inference_id}/failure`): the tools read
//! them by these, and an event links them.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::ids::InferenceId;
use crate::job::{Job, JobStatus};

/// Which of a job's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobObject {
    /// What the model answered (`output_location`), once the job completed.
    Output,
    /// What SageMaker wrote of a failure (`failure_location`), once the job failed; the recorded
    /// reason where it wrote nothing.
    Failure,
}

impl JobObject {
    /// Where the object is, for a job in the state that has one.
    pub fn location(self, job: &Job) -> Option<&str> {
        match (self, job.status) {
            (Self::Output, JobStatus::Completed) => job.output_location.as_deref(),
            (Self::Failure, JobStatus::Failed) => job.failure_location.as_deref(),
            _ => None,
        }
    }

    fn segment(self) -> &'static str {
        match self {
            Self::Output => OUTPUT,
            Self::Failure => FAILURE,
        }
    }
}

const SCHEME: &str = "job://";
const OUTPUT: &str = "output";
const FAILURE: &str = "failure";

/// What a job object's URI escapes in an id: everything but RFC 3986's unreserved characters.
const ESCAPED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A job object's URI. The id is percent-encoded past the unreserved characters, so any id
/// reads back as it was.
pub fn uri(inference_id: &str, which: JobObject) -> String {
    let encoded = utf8_percent_encode(inference_id, ESCAPED);
    format!("{SCHEME}{encoded}/{}", which.segment())
}

/// The URI template of one kind of object, as `resources/templates/list` declares it.
pub fn template(which: JobObject) -> String {
    format!("{SCHEME}{{inference_id}}/{}", which.segment())
}

/// The job and object a URI names; None for any URI this server did not make (its id encoded
/// as [`uri`] encodes one, and no longer than a job's).
pub fn parse_uri(uri: &str) -> Option<(InferenceId, JobObject)> {
    let rest = uri.strip_prefix(SCHEME)?;
    let (encoded, object) = rest.split_once('/')?;
    let which = match object {
        OUTPUT => JobObject::Output,
        FAILURE => JobObject::Failure,
        _ => return None,
    };
    let id = percent_decode_str(encoded).decode_utf8().ok()?;
    // Encoded again, the id reads as it came (hex digits in either case): nothing else escaped.
    let made_here = utf8_percent_encode(&id, ESCAPED)
        .to_string()
        .eq_ignore_ascii_case(encoded);
    let id = InferenceId::parse(&id).ok().filter(|_| made_here)?;
    Some((id, which))
}
