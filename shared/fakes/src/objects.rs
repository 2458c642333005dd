//! S3 in memory: objects by location, with their content types, and the reads counted.

use std::collections::HashMap;
use std::sync::Mutex;

use domain::s3_location::S3Location;
use ports::*;

#[derive(Default)]
pub struct MemoryObjects {
    objects: Mutex<HashMap<String, Vec<u8>>>,
    /// Content types of objects that have one (every object `put_json` writes).
    content_types: Mutex<HashMap<String, String>>,
    reads: Mutex<usize>,
}

impl MemoryObjects {
    pub fn with(self, location: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.objects
            .lock()
            .unwrap()
            .insert(location.to_owned(), bytes.into());
        self
    }

    /// An object stored with its content type, as SageMaker writes an output.
    pub fn with_typed(self, location: &str, bytes: impl Into<Vec<u8>>, content_type: &str) -> Self {
        self.content_types
            .lock()
            .unwrap()
            .insert(location.to_owned(), content_type.to_owned());
        self.with(location, bytes)
    }

    pub fn has(&self, location: &str) -> bool {
        self.objects.lock().unwrap().contains_key(location)
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.objects.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many reads were made (S3 probes and output reads).
    pub fn reads(&self) -> usize {
        *self.reads.lock().unwrap()
    }
}

impl ObjectStore for MemoryObjects {
    async fn read_prefix(
        &self,
        location: &S3Location,
        max: u64,
    ) -> Result<ObjectPrefix, ObjectError> {
        *self.reads.lock().unwrap() += 1;
        let objects = self.objects.lock().unwrap();
        let bytes = objects
            .get(&location.to_string())
            .ok_or_else(|| ObjectError::NotFound {
                location: location.clone(),
            })?;
        let take = bytes
            .len()
            .min(usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX));
        let content_type = self.content_types.lock().unwrap();
        Ok(ObjectPrefix {
            bytes: bytes[..take].to_vec(),
            total_len: bytes.len() as u64,
            content_type: content_type.get(&location.to_string()).cloned(),
        })
    }

    async fn put_json(&self, location: &S3Location, body: Vec<u8>) -> Result<(), ObjectError> {
        self.content_types
            .lock()
            .unwrap()
            .insert(location.to_string(), "application/json".to_owned());
        self.objects
            .lock()
            .unwrap()
            .insert(location.to_string(), body);
        Ok(())
    }

    async fn presign_get(
        &self,
        location: &S3Location,
        _expires_in: std::time::Duration,
    ) -> Result<String, ObjectError> {
        Ok(format!(
            "https://presigned.example/{}/{}",
            location.bucket, location.key
        ))
    }
}
