//! Job outputs as MCP resources: their URIs (`job://{inference_id}/output`,
//! `job://{inference_id}/failure`), the templates `resources/templates/list` declares, the
//! `resource_link` a status carries, and what `resources/read` returns. A result read this way
//! stays inside MCP, under the caller's own authorization: no bearer URL in a transcript.

use base64::Engine;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{
    CacheScope, CallToolResponse, CallToolResult, ContentBlock, ErrorData, ProtocolVersion,
    Resource, ResourceContents, ResourceTemplate,
};

use usecases::job_object::{JobObject, ObjectInfo, ObjectRead, ReadError};

use crate::wording;

/// The most `resources/read` returns of one object: 1 MiB (about 1.4 MB as base64). A larger
/// output is downloaded from the status check's `result_url`.
pub const READ_MAX_BYTES: u64 = 1024 * 1024;

/// How long a client may keep a read output: a job's output never changes once written, and
/// it is the caller's alone.
pub const READ_TTL_MS: u64 = 5 * 60 * 1000;
pub const READ_CACHE_SCOPE: CacheScope = CacheScope::Private;

/// Whether a client of `version` understands a `resource_link` block (2025-06-18 on). A
/// front door without a version (the AgentCore Gateway's) gets none: its clients cannot
/// read resources here.
pub fn links_understood(version: Option<ProtocolVersion>) -> bool {
    version.is_some_and(|v| v >= ProtocolVersion::V_2025_06_18)
}

pub use domain::job::object::{parse_uri, template, uri};

/// A tool's structured result and the `resource_link` blocks that go beside its text.
pub struct Linked<T> {
    pub output: T,
    pub links: Vec<Resource>,
}

impl<T: serde::Serialize> IntoCallToolResult for Linked<T> {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        let value = serde_json::to_value(self.output)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(with_links(CallToolResult::structured(value), self.links).into())
    }
}

/// `result` with a `resource_link` block for each of `links` after its text.
pub fn with_links(mut result: CallToolResult, links: Vec<Resource>) -> CallToolResult {
    result
        .content
        .extend(links.into_iter().map(ContentBlock::resource_link));
    result
}

/// The templates `resources/templates/list` declares.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(template(JobObject::Output), "job-output")
            .with_title("Job output")
            .with_description(
                "What the model answered for a completed job (inference_id from submit_job or a catalog \
                 tool), for the caller that submitted it. resources/read returns up to 1 MiB; a larger \
                 output is downloaded from check_job_status's result_url.",
            ),
        ResourceTemplate::new(template(JobObject::Failure), "job-failure")
            .with_title("Job failure detail")
            .with_description(
                "What SageMaker wrote of a failed job's failure (or the recorded reason), for the \
                 caller that submitted it.",
            ),
    ]
}

/// The `resource_link` of a job's object in S3, as a status carries it.
pub fn link(inference_id: &str, which: JobObject, info: &ObjectInfo) -> Resource {
    let (name, description) = match which {
        JobObject::Output => (
            "job-output",
            "The job's output: read it with resources/read (up to 1 MiB), or download it from result_url.",
        ),
        JobObject::Failure => (
            "job-failure",
            "What SageMaker wrote of the failure: read it with resources/read.",
        ),
    };
    let mut resource = Resource::new(uri(inference_id, which), name)
        .with_description(description)
        .with_size(info.size);
    if let Some(content_type) = &info.content_type {
        resource = resource.with_mime_type(content_type);
    }
    resource
}

/// What `resources/read` returns of an object: text where it is text (JSON among it) and valid
/// UTF-8, base64 otherwise.
pub fn contents(uri: &str, read: ObjectRead) -> ResourceContents {
    let is_text = read.content_type.as_deref().is_none_or(is_textual);
    let mime = read.content_type.clone();
    let contents = match (is_text, String::from_utf8(read.bytes)) {
        (true, Ok(text)) => ResourceContents::text(text, uri),
        (_, Ok(text)) => ResourceContents::blob(base64_of(text.as_bytes()), uri),
        (_, Err(e)) => ResourceContents::blob(base64_of(e.as_bytes()), uri),
    };
    match mime {
        Some(mime) => contents.with_mime_type(mime),
        None => contents,
    }
}

/// A read that found nothing to return, as the protocol error a client gets: unknown,
/// another caller's and expired alike are the resource-not-found error (rmcp says it as
/// `-32602` to a 2026-07-28 client, `-32002` to an older one).
pub fn read_error(uri: &str, error: ReadError) -> ErrorData {
    match error {
        ReadError::NotFound { .. } => not_found(uri),
        ReadError::TooLarge { size, max, .. } => {
            ErrorData::invalid_params(wording::resource_too_large(size, max), uri_data(uri))
        }
        ReadError::Store(e) => {
            tracing::warn!(error = %e, "resources/read: the job could not be read");
            ErrorData::internal_error(wording::RESOURCE_UNREADABLE, None)
        }
        ReadError::Object(e) => {
            tracing::warn!(error = %e, "resources/read: the object could not be read");
            ErrorData::internal_error(wording::RESOURCE_UNREADABLE, None)
        }
    }
}

/// The resource-not-found error, for any URI this caller may not read (or that names nothing).
pub fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(wording::resource_not_found(uri), uri_data(uri))
}

/// The URI as the error's `data` gives it back: whole up to 200 characters, then cut with `…`
/// (a caller's value is never echoed whole).
fn uri_data(uri: &str) -> Option<serde_json::Value> {
    let max = domain::util::QUOTE_MAX_CHARS;
    let uri: String = match uri.chars().count() > max {
        true => uri.chars().take(max).chain(['…']).collect(),
        false => uri.to_owned(),
    };
    Some(serde_json::json!({ "uri": uri }))
}

fn is_textual(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence.starts_with("text/")
        || essence == "application/json"
        || essence.ends_with("+json")
        || essence == "application/jsonlines"
        || essence == "application/x-ndjson"
        || essence == "application/xml"
        || essence == "text/csv"
}

fn base64_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_reads_back_as_the_job_and_object_it_names() {
        for id in ["3f1c9a2e-0000-4000-8000-000000000001", "a b/c%d", "ü"] {
            for which in [JobObject::Output, JobObject::Failure] {
                let made = uri(id, which);
                assert!(
                    made.starts_with("job://") && !made[6..].contains(' '),
                    "{made}"
                );
                assert_eq!(
                    parse_uri(&made),
                    Some((domain::ids::InferenceId::parse(id).unwrap(), which)),
                    "{made}"
                );
            }
        }
        assert_eq!(
            uri("abc-1", JobObject::Output),
            "job://abc-1/output",
            "an id of unreserved characters is the URI's own"
        );
        for foreign in [
            "job://abc/input",
            "job:///output",
            "file:///etc/passwd",
            "job://a%zz/output",
            "job://a b/output",
            "job://abc/output/more",
            "s3://bucket/key",
        ] {
            assert_eq!(parse_uri(foreign), None, "{foreign}");
        }
        let long = format!("job://{}/output", "a".repeat(1025));
        assert_eq!(parse_uri(&long), None, "an id longer than any job's");
    }

    #[test]
    fn text_is_returned_as_text_and_anything_else_as_base64() {
        let read = |bytes: &[u8], content_type: Option<&str>| {
            let read = ObjectRead {
                bytes: bytes.to_vec(),
                content_type: content_type.map(str::to_owned),
            };
            serde_json::to_value(contents("job://j/output", read)).unwrap()
        };
        let json = read(br#"{"label":"ok"}"#, Some("application/json"));
        assert_eq!(json["text"], r#"{"label":"ok"}"#);
        assert_eq!(json["mimeType"], "application/json");
        let csv = read(b"a,b\n", Some("text/csv; charset=utf-8"));
        assert_eq!(csv["text"], "a,b\n");
        let image = read(&[0x89, b'P', b'N', b'G'], Some("image/png"));
        assert_eq!(image["blob"], "iVBORw==");
        assert_eq!(image["mimeType"], "image/png");
        let not_utf8 = read(&[0xff, 0xfe], None);
        assert_eq!(not_utf8["blob"], "//4=");
        assert!(not_utf8.get("mimeType").is_none());
    }

    #[test]
    fn a_refusal_gives_the_uri_back_unquoted_and_cut() {
        let not_found = |uri: &str| {
            let e = ReadError::NotFound {
                inference_id: String::new(),
                which: JobObject::Output,
            };
            read_error(uri, e).data.unwrap()["uri"].clone()
        };
        assert_eq!(not_found("test://x"), "test://x");
        let long = format!("job://{}/output", "a".repeat(300));
        let given = not_found(&long);
        assert_eq!(given.as_str().unwrap().chars().count(), 201);
        assert!(given.as_str().unwrap().ends_with('…'));
    }

    #[test]
    fn a_link_says_where_what_and_how_big() {
        let info = ObjectInfo {
            size: 2_000_000,
            content_type: Some("application/json".into()),
        };
        let link = serde_json::to_value(link("j-1", JobObject::Output, &info)).unwrap();
        assert_eq!(link["uri"], "job://j-1/output");
        assert_eq!(link["size"], 2_000_000);
        assert_eq!(link["mimeType"], "application/json");
        assert_eq!(link["name"], "job-output");
    }
}
