//! A value read as the S3 location it names, in whatever form: `s3://`, `s3a://` and `s3n://`
//! URIs; https URLs virtual-hosted, path-style, regional, dual-stack, through an access point;
//! S3 ARNs. A pipeline parameter reaches code that may read it in any of these ways (SageMaker's
//! `S3Uri` takes https URLs too), so each is read as the bucket and key it names, to be held to
//! the allowed prefixes.

use percent_encoding::percent_decode_str;
use url::{Host, Url};

/// What a value names in S3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum S3Reference {
    /// No S3 location.
    None,
    /// A bucket and a key (empty for the whole bucket). `key` as written (its dot segments and
    /// `%XX` kept), `decoded_key` with every `%XX` decoded: readers take either.
    Object {
        bucket: String,
        key: String,
        decoded_key: String,
    },
    /// An access point, a Multi-Region or Object Lambda access point, or an Outposts resource:
    /// not a bucket, so under no allowed prefix.
    AccessPoint,
    /// An S3 location in a form that cannot be read as one bucket and key.
    Unreadable,
}

/// The S3 location `value` names, if any.
pub fn read(value: &str) -> S3Reference {
    // As URL parsers read it: tabs and line breaks dropped, control characters and spaces
    // trimmed. A value that needed more than trimming and names S3 is refused: no reader should
    // have to guess.
    let cleaned: String = value
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let cleaned = cleaned.trim_matches(|c: char| c.is_control() || c.is_whitespace());
    match read_clean(cleaned) {
        S3Reference::None if names_s3_within(value) => S3Reference::Unreadable,
        S3Reference::Object { .. } if value.chars().any(char::is_control) => {
            S3Reference::Unreadable
        }
        // A second location behind the first (`s3://b/train/,s3://other/`): not read in part.
        S3Reference::Object { key, .. } if names_s3_within(&key) => S3Reference::Unreadable,
        found => found,
    }
}

fn read_clean(text: &str) -> S3Reference {
    match scheme_of(text).as_deref() {
        Some("s3" | "s3a" | "s3n") => {
            let rest = &text[text.find(':').map_or(0, |i| i + 1)..];
            read_s3_uri(rest)
        }
        Some("http" | "https") => read_url(text, S3Reference::Unreadable),
        Some("arn") => read_arn(text),
        _ if text.starts_with("//") => read_url(&format!("https:{text}"), S3Reference::None),
        // A host without a scheme (`bucket.s3.amazonaws.com/key`), as a reader may complete it.
        _ => read_url(&format!("https://{text}"), S3Reference::None),
    }
}

/// The scheme, lowercased, when `text` starts with one (`[a-z][a-z0-9+.-]*:`).
fn scheme_of(text: &str) -> Option<String> {
    let (scheme, _) = text.split_once(':')?;
    let ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    ok.then(|| scheme.to_ascii_lowercase())
}

/// Whether an S3 location appears inside `value` (a list, a command line, an encoded one): such
/// a value is refused rather than read in part. Linear in the value's length: each mark is
/// looked at within a bounded window.
fn names_s3_within(value: &str) -> bool {
    let decoded = fully_decoded(value).to_ascii_lowercase();
    let uri = ["s3://", "s3a://", "s3n://"]
        .iter()
        .any(|m| decoded.contains(m));
    let arn = decoded.match_indices("arn:").any(|(i, _)| {
        let window = within(&decoded, i, i + 64);
        window
            .split(':')
            .nth(2)
            .is_some_and(|service| service.starts_with("s3"))
    });
    let host = decoded.match_indices(".amazonaws.com").any(|(i, m)| {
        // The host that ends here: back to the first character no host name holds.
        let head = within(&decoded, i.saturating_sub(MAX_HOST), i);
        let start = head
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '.' || *c == '-'))
            .map_or(0, |(j, c)| j + c.len_utf8());
        let host = &head[start..];
        host.contains("s3")
            && read_url(&format!("https://{host}{m}/k"), S3Reference::None) != S3Reference::None
    });
    uri || arn || host
}

/// The longest host name looked at inside a value.
const MAX_HOST: usize = 253;

/// `text[from..to]`, its ends moved inward to character boundaries (and `to` to the end at most).
fn within(text: &str, mut from: usize, to: usize) -> &str {
    let mut to = to.min(text.len());
    while !text.is_char_boundary(from) {
        from += 1;
    }
    while to > from && !text.is_char_boundary(to) {
        to -= 1;
    }
    &text[from.min(to)..to]
}

/// `//bucket/key` of an `s3:`, `s3a:` or `s3n:` URI.
fn read_s3_uri(rest: &str) -> S3Reference {
    let Some(rest) = rest.strip_prefix("//") else {
        return S3Reference::Unreadable;
    };
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    object(bucket, key)
}

/// A bucket as S3 names them (lowercase letters, digits, `.` and `-`; at most 63), and a key
/// S3 could hold.
fn object(bucket: &str, key: &str) -> S3Reference {
    let bucket_ok = (1..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    let key_ok = key.len() <= 1024 && !key.chars().any(char::is_control);
    if !(bucket_ok && key_ok) {
        return S3Reference::Unreadable;
    }
    S3Reference::Object {
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        decoded_key: fully_decoded(key),
    }
}

/// An https (or http) URL whose host is S3's. The host as a client resolves it (any case,
/// `%XX`, full-width letters, a trailing dot, a port, userinfo); the key as written, and
/// percent-decoded with its dot segments resolved, so the check sees what each reader reads.
/// `unparsable`: what a URL that does not parse names (an explicit `https:` that mentions S3's
/// domain is refused; a bare word is not a URL at all).
fn read_url(text: &str, unparsable: S3Reference) -> S3Reference {
    let Ok(url) = Url::parse(text) else {
        let lower = text.to_ascii_lowercase();
        return match lower.contains("amazonaws") && lower.contains("s3") {
            true => unparsable,
            false => S3Reference::None,
        };
    };
    let Some(Host::Domain(host)) = url.host() else {
        return S3Reference::None;
    };
    let host = host.trim_end_matches('.');
    let Some(labels) = host
        .strip_suffix(".amazonaws.com")
        .or_else(|| host.strip_suffix(".amazonaws.com.cn"))
    else {
        return S3Reference::None;
    };
    let labels: Vec<&str> = labels.split('.').collect();
    // S3's own label is the last such: a bucket's name may start with `s3-` too.
    let Some(service) = labels.iter().rposition(|l| is_s3_label(l)) else {
        return S3Reference::None;
    };
    // The labels from S3's own on (a bucket's name may hold these words), and a Multi-Region
    // access point's `<alias>.accesspoint.s3-global`.
    if labels[service..].iter().any(|l| is_access_point_label(l))
        || labels[..service].contains(&"accesspoint")
    {
        return S3Reference::AccessPoint;
    }
    // The path as written (dot segments and all) and as resolved.
    let written = written_path(text);
    let resolved = url.path().strip_prefix('/').unwrap_or(url.path());
    if service == 0 {
        // Path-style: the bucket is the first segment.
        let (bucket, key) = resolved.split_once('/').unwrap_or((resolved, ""));
        let bucket = fully_decoded(bucket);
        let written_key = match written.split_once('/') {
            Some((b, k)) if fully_decoded(b) == bucket => k,
            _ => return S3Reference::Unreadable,
        };
        with_written_key(object(&bucket, key), written_key)
    } else {
        with_written_key(object(&labels[..service].join("."), resolved), written)
    }
}

/// `found` with its key as written (a `..` that resolution removed is then still seen, and
/// refused), beside the decoded, resolved one.
fn with_written_key(found: S3Reference, written: &str) -> S3Reference {
    match found {
        S3Reference::Object {
            bucket,
            decoded_key,
            ..
        } => S3Reference::Object {
            bucket,
            key: written.to_owned(),
            decoded_key,
        },
        found => found,
    }
}

/// The path of a URL as written, without its leading `/`, query or fragment; `\` read as `/`.
fn written_path(text: &str) -> &str {
    let after_scheme = text.split_once("//").map_or(text, |(_, rest)| rest);
    let path = after_scheme
        .find(['/', '\\', '?', '#'])
        .map_or("", |i| &after_scheme[i..]);
    let path = path.find(['?', '#']).map_or(path, |i| &path[..i]);
    path.strip_prefix(['/', '\\']).unwrap_or(path)
}

/// `s3`, `s3-<region>`, `s3-external-1`, `s3-fips`, `s3-website...`, `s3express-...`: S3's
/// own labels in a host.
fn is_s3_label(label: &str) -> bool {
    label == "s3" || label.starts_with("s3-") || label.starts_with("s3express")
}

/// `s3-accesspoint`, `s3-object-lambda`, `s3-global` (Multi-Region access points), Outposts.
fn is_access_point_label(label: &str) -> bool {
    label.contains("accesspoint")
        || label.contains("object-lambda")
        || label.contains("outposts")
        || label == "s3-global"
}

/// `arn:<partition>:s3:::bucket/key`; an access point's, Object Lambda's or Outposts' ARN.
fn read_arn(text: &str) -> S3Reference {
    let parts: Vec<&str> = text.splitn(6, ':').collect();
    let [_, _, service, region, account, resource] = parts[..] else {
        return S3Reference::None;
    };
    match service.to_ascii_lowercase().as_str() {
        "s3" if region.is_empty() && account.is_empty() => {
            let (bucket, key) = resource.split_once('/').unwrap_or((resource, ""));
            object(bucket, key)
        }
        "s3" | "s3-object-lambda" | "s3-outposts" => S3Reference::AccessPoint,
        s if s.starts_with("s3") => S3Reference::Unreadable,
        _ => S3Reference::None,
    }
}

/// `%XX` decoded until nothing changes (so `%252e` is `.` too), at most a few rounds.
pub fn fully_decoded(text: &str) -> String {
    let mut current = text.to_owned();
    for _ in 0..4 {
        let next = percent_decode_str(&current)
            .decode_utf8_lossy()
            .into_owned();
        if next == current {
            break;
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(bucket: &str, key: &str) -> S3Reference {
        S3Reference::Object {
            bucket: bucket.into(),
            key: key.into(),
            decoded_key: fully_decoded(key),
        }
    }

    #[test]
    fn s3_uris_of_every_scheme_and_case_name_a_bucket_and_key() {
        for uri in [
            "s3://io-bucket/inputs/x.csv",
            "s3a://io-bucket/inputs/x.csv",
            "s3n://io-bucket/inputs/x.csv",
            "S3://io-bucket/inputs/x.csv",
            "S3A://io-bucket/inputs/x.csv",
            " s3://io-bucket/inputs/x.csv ",
        ] {
            assert_eq!(read(uri), object("io-bucket", "inputs/x.csv"), "{uri}");
        }
        assert_eq!(read("s3://io-bucket"), object("io-bucket", ""));
        for unreadable in [
            "s3:/io-bucket/x",
            "s3:io-bucket/x",
            "s3://IO-BUCKET/x",
            "s3://io_bucket/x",
            "s3://",
            "s3://io-bucket/x\u{0}y",
            "s3://io-bucket/train/\n",
        ] {
            assert_eq!(read(unreadable), S3Reference::Unreadable, "{unreadable:?}");
        }
    }

    #[test]
    fn https_urls_of_every_s3_host_name_a_bucket_and_key() {
        for url in [
            "https://io-bucket.s3.amazonaws.com/inputs/x.csv",
            "https://io-bucket.s3.us-east-1.amazonaws.com/inputs/x.csv",
            "https://io-bucket.s3-us-west-2.amazonaws.com/inputs/x.csv",
            "https://io-bucket.s3.dualstack.eu-west-1.amazonaws.com/inputs/x.csv",
            "https://s3.amazonaws.com/io-bucket/inputs/x.csv",
            "https://s3.us-east-1.amazonaws.com/io-bucket/inputs/x.csv",
            "https://s3-us-west-2.amazonaws.com/io-bucket/inputs/x.csv",
            "https://s3.dualstack.us-east-1.amazonaws.com/io-bucket/inputs/x.csv",
            "https://io-bucket.s3.cn-north-1.amazonaws.com.cn/inputs/x.csv",
            "HTTPS://IO-BUCKET.S3.AMAZONAWS.COM/inputs/x.csv",
            "https://io-bucket.s3.amazonaws.com./inputs/x.csv",
            "https://io-bucket.s3.amazonaws.com:443/inputs/x.csv?versionId=1#f",
            "https://someone@io-bucket.s3.amazonaws.com/inputs/x.csv",
            "http://io-bucket.s3.amazonaws.com/inputs/x.csv",
            "https://io-bucket.%73%33.amazonaws.com/inputs/x.csv",
            "https://io-bucket.ｓ３.amazonaws.com/inputs/x.csv",
            "https://s3.amazonaws.com/io%2Dbucket/inputs/x.csv",
            "io-bucket.s3.amazonaws.com/inputs/x.csv",
            "//s3.amazonaws.com/io-bucket/inputs/x.csv",
        ] {
            assert_eq!(read(url), object("io-bucket", "inputs/x.csv"), "{url}");
        }
        // Buckets with dots, virtual-hosted; one named like S3's own label.
        assert_eq!(
            read("https://my.data.s3.us-east-1.amazonaws.com/k"),
            object("my.data", "k")
        );
        assert_eq!(
            read("https://s3-x.s3.amazonaws.com/io-bucket/train/x"),
            object("s3-x", "io-bucket/train/x")
        );
    }

    #[test]
    fn a_url_keeps_its_written_key_beside_the_resolved_one() {
        // Resolved, the key is `inputs/x`; as written it climbs: the check sees both.
        let S3Reference::Object {
            bucket,
            key,
            decoded_key,
        } = read("https://io-bucket.s3.amazonaws.com/train/../inputs/x")
        else {
            panic!("an object")
        };
        assert_eq!(bucket, "io-bucket");
        assert_eq!(key, "train/../inputs/x");
        assert_eq!(decoded_key, "inputs/x");
        let S3Reference::Object { key, .. } =
            read("https://s3.amazonaws.com/io-bucket/train/%2e%2e/inputs/x")
        else {
            panic!("an object")
        };
        assert_eq!(key, "train/%2e%2e/inputs/x");
        assert_eq!(
            read("https://s3.amazonaws.com/other/../io-bucket/train/x"),
            S3Reference::Unreadable,
            "the bucket itself climbed"
        );
    }

    #[test]
    fn access_points_are_not_buckets() {
        for url in [
            "https://my-ap-123456789012.s3-accesspoint.us-east-1.amazonaws.com/train/x",
            "https://my-ap-123456789012.s3-accesspoint.dualstack.us-east-1.amazonaws.com/train/x",
            "https://mfzwi23gnjvgw.mrap.accesspoint.s3-global.amazonaws.com/train/x",
            "https://my-olap-123456789012.s3-object-lambda.us-east-1.amazonaws.com/train/x",
            "arn:aws:s3:us-east-1:123456789012:accesspoint/my-ap/object/train/x",
            "arn:aws:s3-object-lambda:us-east-1:123456789012:accesspoint/olap",
        ] {
            assert_eq!(read(url), S3Reference::AccessPoint, "{url}");
        }
    }

    #[test]
    fn s3_arns_name_a_bucket_and_key() {
        assert_eq!(
            read("arn:aws:s3:::io-bucket/inputs/x"),
            object("io-bucket", "inputs/x")
        );
        assert_eq!(read("arn:aws-cn:s3:::io-bucket"), object("io-bucket", ""));
        assert_eq!(
            read("arn:aws:sagemaker:us-east-1:123456789012:model-package/p/1"),
            S3Reference::None
        );
    }

    #[test]
    fn other_values_name_no_s3_location() {
        for value in [
            "",
            "3",
            "0.92",
            "true",
            "ml.m5.xlarge",
            "hello world",
            "/train/",
            "train/x.csv",
            "https://example.com/io-bucket/x",
            "https://123456789012.dkr.ecr.us-east-1.amazonaws.com/img:1",
            "https://sagemaker.us-east-1.amazonaws.com/",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/img:latest",
            "gs://bucket/key",
            "file:///etc/passwd",
        ] {
            assert_eq!(read(value), S3Reference::None, "{value:?}");
        }
    }

    #[test]
    fn an_s3_location_inside_a_value_is_unreadable() {
        for value in [
            "s3://io-bucket/train/,s3://other/x",
            "--data s3://other/x",
            "--data=S3A://other/x",
            "%73%33%3A%2F%2Fother%2Fx",
            "see https://other.s3.amazonaws.com/x",
            "arn:aws:sagemaker:x:y:z/arn:aws:s3:::other/x",
            "x,other.s3.us-east-1.amazonaws.com/k",
        ] {
            assert_eq!(read(value), S3Reference::Unreadable, "{value:?}");
        }
    }

    #[test]
    fn long_or_odd_values_are_read_in_time_without_panicking() {
        let many = "é".repeat(300) + ".amazonaws.com" + &"arn:é".repeat(50);
        assert_eq!(read(&many), S3Reference::None);
        for hostile in [
            "http://.amazonaws.com%".repeat(40_000),
            "a.s3.amazonaws.com".repeat(40_000),
            "arn:aws:s3".repeat(40_000),
        ] {
            let started = std::time::Instant::now();
            let _ = read(&hostile);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(2),
                "{:?} for {} bytes",
                started.elapsed(),
                hostile.len()
            );
        }
    }

    #[test]
    fn percent_encodings_are_decoded_to_a_fixed_point() {
        assert_eq!(fully_decoded("a%252Fb%2e"), "a/b.");
        assert_eq!(fully_decoded("100%"), "100%");
        assert_eq!(fully_decoded("%zz"), "%zz");
    }
}
