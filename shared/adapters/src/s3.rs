//! S3: job inputs, bounded reads of outputs and failure objects, presigned downloads.

use crate::aws::{classify, SdkClient};
use domain::s3_location::S3Location;
use ports::{ObjectError, ObjectPrefix, ObjectStore};

#[derive(Clone)]
pub struct S3Objects {
    client: SdkClient<aws_sdk_s3::Client>,
}

impl S3Objects {
    pub fn new(client: SdkClient<aws_sdk_s3::Client>) -> Self {
        Self { client }
    }
}

impl ObjectStore for S3Objects {
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
            Err(e) => {
                let failure = classify(&e);
                return match failure.code.as_deref() {
                    // S3 answers a range on an empty object with 416.
                    Some("InvalidRange") => Ok(ObjectPrefix {
                        bytes: Vec::new(),
                        total_len: 0,
                        content_type: None,
                    }),
                    Some("NoSuchKey" | "NotFound") => Err(ObjectError::NotFound {
                        location: location.clone(),
                    }),
                    _ => Err(ObjectError::Aws {
                        operation: "GetObject",
                        location: location.clone(),
                        failure,
                    }),
                };
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
        let content_type = response.content_type().map(str::to_owned);
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
        Ok(ObjectPrefix {
            bytes,
            total_len,
            content_type,
        })
    }

    async fn put_json(&self, location: &S3Location, body: Vec<u8>) -> Result<(), ObjectError> {
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
                operation: "PutObject",
                location: location.clone(),
                failure: classify(&e),
            })
    }

    async fn presign_get(
        &self,
        location: &S3Location,
        expires_in: std::time::Duration,
    ) -> Result<String, ObjectError> {
        let presign_error = |message: String| ObjectError::Presign {
            location: location.clone(),
            message,
        };
        let config = aws_sdk_s3::presigning::PresigningConfig::expires_in(expires_in)
            .map_err(|e| presign_error(e.to_string()))?;
        self.client
            .get_object()
            .bucket(&location.bucket)
            .key(&location.key)
            .presigned(config)
            .await
            .map(|p| p.uri().to_owned())
            .map_err(|e| {
                presign_error(aws_smithy_types::error::display::DisplayErrorContext(e).to_string())
            })
    }
}
