//! `s3://bucket/key` locations, as SageMaker writes them in its notifications.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    pub key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an S3 location of the form s3://bucket/key")]
pub struct BadS3Location(pub String);

impl FromStr for S3Location {
    type Err = BadS3Location;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rest = s
            .strip_prefix("s3://")
            .ok_or_else(|| BadS3Location(s.to_owned()))?;
        match rest.split_once('/') {
            Some((bucket, key)) if !bucket.is_empty() && !key.is_empty() => Ok(S3Location {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            }),
            _ => Err(BadS3Location(s.to_owned())),
        }
    }
}

impl fmt::Display for S3Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_and_nested_key() {
        let loc: S3Location = "s3://io-bucket/outputs/a/b.out".parse().unwrap();
        assert_eq!(loc.bucket, "io-bucket");
        assert_eq!(loc.key, "outputs/a/b.out");
        assert_eq!(loc.to_string(), "s3://io-bucket/outputs/a/b.out");
    }

    #[test]
    fn rejects_other_forms() {
        for bad in [
            "",
            "s3://",
            "s3://bucket",
            "s3://bucket/",
            "s3:///key",
            "https://b/k",
            "bucket/key",
        ] {
            assert!(
                bad.parse::<S3Location>().is_err(),
                "{bad:?} should be rejected"
            );
        }
    }
}
