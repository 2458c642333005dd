//! Objects: bounded reads, absence, empty objects, presigned URLs.

use domain::s3_location::S3Location;
use ports::{ObjectError, ObjectStore};

/// An object store and the bucket the behaviours may write to.
pub struct Objects<O> {
    pub objects: O,
    pub bucket: String,
}

impl<O> Objects<O> {
    fn at(&self, name: &str) -> S3Location {
        S3Location {
            bucket: self.bucket.clone(),
            key: format!("contract/{}/{name}", uuid::Uuid::new_v4()),
        }
    }
}

pub async fn an_object_is_read_back_whole<O: ObjectStore>(o: &Objects<O>) {
    let body = o.at("body.json");
    o.objects
        .put_json(&body, b"0123456789".to_vec())
        .await
        .unwrap();
    let whole = o.objects.read_prefix(&body, 100).await.unwrap();
    assert_eq!(
        (whole.bytes.as_slice(), whole.total_len),
        (&b"0123456789"[..], 10)
    );
    let exact = o.objects.read_prefix(&body, 10).await.unwrap();
    assert_eq!(exact.bytes.len(), 10, "max = the length reads it all");
    assert_eq!(whole.content_type.as_deref(), Some("application/json"));
}

pub async fn a_bounded_read_gives_max_plus_one_bytes_and_the_length<O: ObjectStore>(
    o: &Objects<O>,
) {
    let body = o.at("body.json");
    o.objects
        .put_json(&body, b"0123456789".to_vec())
        .await
        .unwrap();
    let cut = o.objects.read_prefix(&body, 3).await.unwrap();
    assert_eq!((cut.bytes.as_slice(), cut.total_len), (&b"0123"[..], 10));
}

pub async fn a_missing_object_is_not_found<O: ObjectStore>(o: &Objects<O>) {
    let missing = o.at("missing");
    match o.objects.read_prefix(&missing, 10).await {
        Err(ObjectError::NotFound { location }) => assert_eq!(location, missing),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

pub async fn an_empty_object_reads_as_empty<O: ObjectStore>(o: &Objects<O>) {
    let empty = o.at("empty");
    o.objects.put_json(&empty, Vec::new()).await.unwrap();
    let read = o.objects.read_prefix(&empty, 10).await.unwrap();
    assert_eq!((read.bytes.len(), read.total_len), (0, 0));
}

pub async fn a_presigned_url_names_the_object<O: ObjectStore>(o: &Objects<O>) {
    let body = o.at("body.json");
    o.objects.put_json(&body, b"{}".to_vec()).await.unwrap();
    let url = o
        .objects
        .presign_get(&body, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    assert!(url.starts_with("http") && url.contains(&body.key), "{url}");
    assert!(url.contains(&body.bucket), "{url}");
}

/// One `#[tokio::test]` per object-store behaviour, on the [`object_store::Objects`] `$make.await` gives.
#[macro_export]
macro_rules! object_store_contract {
    ($make:expr) => {
        $crate::__port_contract_tests!(
            object_store,
            $make,
            [
                an_object_is_read_back_whole,
                a_bounded_read_gives_max_plus_one_bytes_and_the_length,
                a_missing_object_is_not_found,
                an_empty_object_reads_as_empty,
                a_presigned_url_names_the_object,
            ]
        );
    };
}
