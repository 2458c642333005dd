//! A webhook delivery signed as Standard Webhooks (standardwebhooks.com) says, so a receiver
//! checks it with any of that project's libraries: the signed content is
//! `<webhook-id>.<webhook-timestamp>.<body>`, its HMAC-SHA256 under the client's secret goes
//! out base64-encoded as `v1,<signature>` in `webhook-signature`. The secret is the client's
//! own, given as `whsec_<base64>`; it is never shown (not even in `Debug`).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The headers of a signed delivery, in Standard Webhooks' names.
pub const ID_HEADER: &str = "webhook-id";
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
pub const SIGNATURE_HEADER: &str = "webhook-signature";

const PREFIX: &str = "whsec_";
/// The secret's bounds, in bytes once decoded.
pub const MIN_SECRET_BYTES: usize = 24;
pub const MAX_SECRET_BYTES: usize = 64;
/// How far a receiver lets a delivery's timestamp stray from its clock (the libraries' default).
pub const TOLERANCE_SECS: i64 = 300;

/// A client's signing secret, decoded.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Vec<u8>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// Why a secret was refused; never the secret itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("must start with `whsec_`")]
    Prefix,
    #[error("must be base64 after `whsec_`")]
    Encoding,
    #[error("must hold {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} bytes once decoded")]
    Length,
}

impl WebhookSecret {
    /// `whsec_` and the standard base64 of 24 to 64 bytes.
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let encoded = text.strip_prefix(PREFIX).ok_or(SecretError::Prefix)?;
        // Checked before decoding: a huge value costs nothing.
        if encoded.len() > MAX_SECRET_BYTES.div_ceil(3) * 4 {
            return Err(SecretError::Length);
        }
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| SecretError::Encoding)?;
        if !(MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&bytes.len()) {
            return Err(SecretError::Length);
        }
        Ok(Self(bytes))
    }

    /// The decoded bytes, to keep encrypted at rest; [`WebhookSecret::from_bytes`] reads them back.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, SecretError> {
        match (MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&bytes.len()) {
            true => Ok(Self(bytes)),
            false => Err(SecretError::Length),
        }
    }

    fn mac(&self, id: &str, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `webhook-signature` value of a delivery: `v1,<base64 HMAC-SHA256>`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let code = self.mac(id, timestamp, body).finalize().into_bytes();
        format!("v1,{}", STANDARD.encode(code))
    }

    /// Whether `signatures` (a `webhook-signature` value: space-separated `v1,<base64>`) holds
    /// one that signs this delivery, its timestamp within [`TOLERANCE_SECS`] of `now`: the
    /// receiver's check, compared in constant time.
    pub fn verify(
        &self,
        id: &str,
        timestamp: i64,
        body: &[u8],
        signatures: &str,
        now: i64,
    ) -> bool {
        if (now - timestamp).abs() > TOLERANCE_SECS {
            return false;
        }
        signatures.split(' ').any(|signature| {
            let Some(encoded) = signature.strip_prefix("v1,") else {
                return false;
            };
            let Ok(code) = STANDARD.decode(encoded) else {
                return false;
            };
            self.mac(id, timestamp, body).verify_slice(&code).is_ok()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Standard Webhooks project's own vector (its libraries' tests use it).
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn a_delivery_is_signed_as_the_standards_vector_says() {
        let secret = WebhookSecret::parse(SECRET).unwrap();
        assert_eq!(secret.sign(ID, TIMESTAMP, BODY), SIGNATURE);
        assert!(secret.verify(ID, TIMESTAMP, BODY, SIGNATURE, TIMESTAMP + 10));
    }

    #[test]
    fn any_change_to_the_id_the_time_or_the_body_breaks_the_signature() {
        let secret = WebhookSecret::parse(SECRET).unwrap();
        let now = TIMESTAMP;
        assert!(!secret.verify("msg_other", TIMESTAMP, BODY, SIGNATURE, now));
        assert!(!secret.verify(ID, TIMESTAMP + 1, BODY, SIGNATURE, now));
        assert!(!secret.verify(ID, TIMESTAMP, br#"{"test": 2432232315}"#, SIGNATURE, now));
        // Too old, or from too far ahead, whatever it signs.
        assert!(!secret.verify(ID, TIMESTAMP, BODY, SIGNATURE, now + TOLERANCE_SECS + 1));
        assert!(!secret.verify(ID, TIMESTAMP, BODY, SIGNATURE, now - TOLERANCE_SECS - 1));
        // One good signature among several (a secret being rotated) is enough.
        let several = format!("v1,AAAA {SIGNATURE} v2,x");
        assert!(secret.verify(ID, TIMESTAMP, BODY, &several, now));
        let other = WebhookSecret::from_bytes(vec![7; 32]).unwrap();
        assert!(!other.verify(ID, TIMESTAMP, BODY, SIGNATURE, now));
    }

    #[test]
    fn a_secret_is_whsec_and_24_to_64_bytes_and_never_shown() {
        assert_eq!(WebhookSecret::parse("MfKQ9r8G"), Err(SecretError::Prefix));
        assert_eq!(
            WebhookSecret::parse("whsec_!!!"),
            Err(SecretError::Encoding)
        );
        let of = |n: usize| format!("whsec_{}", STANDARD.encode(vec![1u8; n]));
        assert_eq!(WebhookSecret::parse(&of(23)), Err(SecretError::Length));
        assert!(WebhookSecret::parse(&of(24)).is_ok());
        assert!(WebhookSecret::parse(&of(64)).is_ok());
        assert_eq!(WebhookSecret::parse(&of(65)), Err(SecretError::Length));
        assert_eq!(
            WebhookSecret::parse(&format!("whsec_{}", "A".repeat(10_000))),
            Err(SecretError::Length)
        );
        let secret = WebhookSecret::parse(SECRET).unwrap();
        assert!(!format!("{secret:?}").contains("MfKQ"));
        assert_eq!(
            WebhookSecret::from_bytes(secret.bytes().to_vec()),
            Ok(secret)
        );
    }
}
