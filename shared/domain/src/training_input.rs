//! Where a training run may read its data: under one of the deployment's allowed S3 prefixes,
//! by a URI whose path cannot climb out of it. The pipeline's role can read more than any one
//! caller should (every caller's inputs, say), so a caller's `input_data_uri` is held here.

use std::fmt;

use super::s3_reference::{self, S3Reference};

/// An allowed place for training data: `s3://bucket/` or `s3://bucket/prefix/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Prefix {
    bucket: String,
    /// Empty (the whole bucket) or ending in `/`.
    key_prefix: String,
}

impl S3Prefix {
    /// `s3://bucket/prefix/` (a missing final `/` is added: `s3://b/train` would otherwise also
    /// allow `s3://b/training-secrets/`). None for anything else.
    pub fn parse(text: &str) -> Option<S3Prefix> {
        let (bucket, key) = split_s3_uri(text.trim())?;
        if has_bad_segment(key) {
            return None;
        }
        let key_prefix = match key {
            "" => String::new(),
            k if k.ends_with('/') => k.to_owned(),
            k => format!("{k}/"),
        };
        Some(S3Prefix {
            bucket: bucket.to_owned(),
            key_prefix,
        })
    }

    /// Whether the object or prefix `key` of `bucket` lies under this one.
    fn holds(&self, bucket: &str, key: &str) -> bool {
        bucket == self.bucket && key.starts_with(&self.key_prefix)
    }
}

impl fmt::Display for S3Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key_prefix)
    }
}

/// Why a training input was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputRefusal {
    /// Not an S3 location that can be read as one bucket and key.
    NotS3,
    /// A `.`, `..` or empty path segment (also when percent-encoded or behind a `\`).
    Segments,
    /// Under none of the allowed prefixes.
    Outside,
    /// An access point: not a bucket, so under no allowed prefix.
    AccessPoint,
}

/// Whether training may read `uri`, an S3 location in any form (see [`s3_reference`]), given
/// the allowed prefixes.
pub fn check_input_uri(uri: &str, allowed: &[S3Prefix]) -> Result<(), InputRefusal> {
    match check_value(uri, allowed) {
        Ok(true) => Ok(()),
        Ok(false) => Err(InputRefusal::NotS3),
        Err(refusal) => Err(refusal),
    }
}

/// Whether `value` may reach a reader of S3: Ok(false) when it names no S3 location, Ok(true)
/// when it names one under an allowed prefix however it is read (as written, or decoded).
pub fn check_value(value: &str, allowed: &[S3Prefix]) -> Result<bool, InputRefusal> {
    match s3_reference::read(value) {
        S3Reference::None => Ok(false),
        S3Reference::Unreadable => Err(InputRefusal::NotS3),
        S3Reference::AccessPoint => Err(InputRefusal::AccessPoint),
        S3Reference::Object {
            bucket,
            key,
            decoded_key,
        } => {
            if has_bad_segment(&key) || has_bad_segment(&decoded_key) {
                return Err(InputRefusal::Segments);
            }
            let under = |key: &str| allowed.iter().any(|p| p.holds(&bucket, key));
            if under(&key) && under(&decoded_key) {
                Ok(true)
            } else {
                Err(InputRefusal::Outside)
            }
        }
    }
}

/// (bucket, key) of `s3://bucket/key`, with a bucket as S3 names them (3 to 63 lowercase
/// letters, digits, `.` and `-`; S3 itself holds names to 3 or more) and a key without control characters.
fn split_s3_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix("s3://")?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    let bucket_ok = (1..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    let key_ok = key.len() <= 1024 && !key.chars().any(char::is_control);
    (bucket_ok && key_ok).then_some((bucket, key))
}

/// A `.`, `..` or empty segment anywhere in `key`, once `%XX` is decoded and `\` read as `/`
/// (readers of the data may do either). The final segment may be empty (a prefix's `/`).
fn has_bad_segment(key: &str) -> bool {
    if key.is_empty() {
        return false;
    }
    let decoded = s3_reference::fully_decoded(key).replace('\\', "/");
    let segments: Vec<&str> = decoded.split('/').collect();
    let last = segments.len() - 1;
    segments
        .iter()
        .enumerate()
        .any(|(i, s)| *s == "." || *s == ".." || (s.is_empty() && i != last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Vec<S3Prefix> {
        vec![
            S3Prefix::parse("s3://io-bucket/train/").unwrap(),
            S3Prefix::parse("s3://datasets").unwrap(),
        ]
    }

    #[test]
    fn prefixes_parse_to_a_bucket_and_a_slash_ended_key() {
        assert_eq!(
            S3Prefix::parse("s3://b-1/train").unwrap().to_string(),
            "s3://b-1/train/"
        );
        assert_eq!(
            S3Prefix::parse(" s3://b-1/ ").unwrap().to_string(),
            "s3://b-1/"
        );
        assert_eq!(
            S3Prefix::parse("s3://b-1").unwrap().to_string(),
            "s3://b-1/"
        );
        for bad in [
            "",
            "b/train/",
            "https://b/x/",
            "s3://B/x/",
            "s3://b/../x/",
            "s3://bb//x/",
            "s3://",
        ] {
            assert_eq!(S3Prefix::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn inputs_under_an_allowed_prefix_pass() {
        for ok in [
            "s3://io-bucket/train/",
            "s3://io-bucket/train/2026/data.csv",
            "s3://io-bucket/train/a.b/c..d/",
            "s3://datasets/anything/",
            "s3://datasets",
            "S3://io-bucket/train/x",
            "https://io-bucket.s3.amazonaws.com/train/x",
        ] {
            assert_eq!(check_input_uri(ok, &allowed()), Ok(()), "{ok}");
        }
    }

    #[test]
    fn inputs_elsewhere_or_climbing_out_are_refused() {
        use InputRefusal::*;
        let cases = [
            ("s3://io-bucket/inputs/", Outside),
            ("s3://io-bucket/train", Outside),
            ("s3://io-bucket/training-secrets/", Outside),
            ("s3://other/train/", Outside),
            ("s3://io-bucket/train/../inputs/", Segments),
            ("s3://io-bucket/train/./x", Segments),
            ("s3://io-bucket/train//x", Segments),
            ("s3://io-bucket/train/%2e%2e/inputs/", Segments),
            ("s3://io-bucket/train/%252E%252E/inputs/", Segments),
            ("s3://io-bucket/train\\..\\inputs", Segments),
            ("s3://io-bucket/train/..", Segments),
            ("s3://io-bucket//train/", Segments),
            ("s3:/io-bucket/train/", NotS3),
            ("s3://IO/train/", NotS3),
            ("s3://io-bucket/train/\n", NotS3),
            ("/train/", NotS3),
            ("train/x.csv", NotS3),
        ];
        for (uri, refusal) in cases {
            assert_eq!(check_input_uri(uri, &allowed()), Err(refusal), "{uri}");
        }
    }
}
