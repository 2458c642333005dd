//! Reading job outputs and failure objects from S3, never more than a bounded prefix.

use std::collections::HashMap;
use std::future::Future;

use crate::aws::{classify, AwsFailure};
use crate::s3_location::S3Location;

/// The first bytes of an object, and how long the whole object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPrefix {
    pub bytes: Vec<u8>,
    pub total_len: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("S3 GetObject of {location} failed: {failure}")]
    Aws {
        location: S3Location,
        failure: AwsFailure,
    },
    #[error("reading the body of {location} failed: {message}")]
    Body {
        location: S3Location,
        message: String,
    },
}

pub trait ObjectReader: Sync {
    /// At most `max + 1` bytes from the start of the object, so callers can tell "exactly
    /// `max`" from "larger", and the object's full length. A huge output is never downloaded.
    fn read_prefix(
        &self,
        location: &S3Location,
        max: u64,
    ) -> impl Future<Output = Result<ObjectPrefix, ObjectError>> + Send;
}

pub struct S3ObjectReader {
    client: aws_sdk_s3::Client,
}

impl S3ObjectReader {
    pub fn new(client: aws_sdk_s3::Client) -> Self {
        Self { client }
    }
}

impl ObjectReader for S3ObjectReader {
    async fn read_prefix(
        &self,
        location: &S3Location,
        max: u64,
    ) -> Result<ObjectPrefix, ObjectError> {
        let response = self
            .client
            .get_object()
            .bucket(&location.bucket)
            .key(&location.key)
            .range(format!("bytes=0-{max}"))
            .send()
            .await;
        let response = match response {
            Ok(r) => r,
            // S3 answers a range on an empty object with 416.
            Err(e) if classify(&e).code.as_deref() == Some("InvalidRange") => {
                return Ok(ObjectPrefix {
                    bytes: Vec::new(),
                    total_len: 0,
                });
            }
            Err(e) => {
                return Err(ObjectError::Aws {
                    location: location.clone(),
                    failure: classify(&e),
                })
            }
        };
        // "bytes 0-999/123456": the total follows the slash. Without a range, the length is all.
        let total = response
            .content_range()
            .and_then(|r| r.rsplit_once('/'))
            .and_then(|(_, total)| total.parse::<u64>().ok());
        let length = response
            .content_length()
            .and_then(|l| u64::try_from(l).ok());
        let bytes = response
            .body
            .collect()
            .await
            .map_err(|e| ObjectError::Body {
                location: location.clone(),
                message: e.to_string(),
            })?
            .into_bytes()
            .to_vec();
        let total_len = total
            .or(length)
            .unwrap_or(bytes.len() as u64)
            .max(bytes.len() as u64);
        Ok(ObjectPrefix { bytes, total_len })
    }
}

/// Objects in a map, for tests of the domain logic without AWS.
#[derive(Default)]
pub struct MemoryObjects {
    pub objects: HashMap<String, Vec<u8>>,
}

impl MemoryObjects {
    pub fn with(mut self, location: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.objects.insert(location.to_owned(), bytes.into());
        self
    }
}

impl ObjectReader for MemoryObjects {
    async fn read_prefix(
        &self,
        location: &S3Location,
        max: u64,
    ) -> Result<ObjectPrefix, ObjectError> {
        let bytes = self
            .objects
            .get(&location.to_string())
            .ok_or_else(|| ObjectError::Aws {
                location: location.clone(),
                failure: AwsFailure {
                    code: Some("NoSuchKey".into()),
                    message: "no such key".into(),
                    retryable: false,
                },
            })?;
        let take = bytes
            .len()
            .min(usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX));
        Ok(ObjectPrefix {
            bytes: bytes[..take].to_vec(),
            total_len: bytes.len() as u64,
        })
    }
}

/// Uploads of inputs and presigned downloads of outputs (mcp-tools).
pub struct S3Io {
    client: aws_sdk_s3::Client,
}

impl S3Io {
    pub fn new(client: aws_sdk_s3::Client) -> Self {
        Self { client }
    }

    pub async fn put_json(&self, location: &S3Location, body: Vec<u8>) -> Result<(), ObjectError> {
        self.client
            .put_object()
            .bucket(&location.bucket)
            .key(&location.key)
            .content_type("application/json")
            .body(body.into())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| ObjectError::Aws {
                location: location.clone(),
                failure: classify(&e),
            })
    }

    /// A GET URL signed locally (no call to S3), valid for `expires_in`.
    pub async fn presign_get(
        &self,
        location: &S3Location,
        expires_in: std::time::Duration,
    ) -> Result<String, String> {
        let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(expires_in)
            .map_err(|e| e.to_string())?;
        self.client
            .get_object()
            .bucket(&location.bucket)
            .key(&location.key)
            .presigned(config)
            .await
            .map(|p| p.uri().to_owned())
            .map_err(|e| aws_smithy_types::error::display::DisplayErrorContext(e).to_string())
    }
}
