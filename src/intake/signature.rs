//! `X-Hub-Signature-256`: HMAC-SHA256 of the raw body with the webhook
//! secret, hex-encoded behind `sha256=`. The comparison is constant-time
//! (`Mac::verify_slice`), so timing leaks nothing about the expected value.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("missing X-Hub-Signature-256 header")]
    Missing,
    #[error("X-Hub-Signature-256 is not of the form sha256=<64 hex digits>")]
    Malformed,
    #[error("X-Hub-Signature-256 does not match the body (wrong secret, or a changed body)")]
    Mismatch,
}

/// Verifies `header` (the raw header value, if any) against `body`.
pub fn verify(secret: &[u8], body: &[u8], header: Option<&str>) -> Result<(), SignatureError> {
    verify_rotating(secret, None, body, header).map(|_| ())
}

/// Which secret a verified delivery was signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    Current,
    /// The secret being rotated out: GitHub still had it when it signed.
    Previous,
}

/// Verifies `header` against `body` with the current secret and, while one
/// is being rotated out, the previous one. The previous one is tried only
/// when the current one does not match, so a delivery costs one HMAC.
pub fn verify_rotating(
    current: &[u8],
    previous: Option<&[u8]>,
    body: &[u8],
    header: Option<&str>,
) -> Result<Signer, SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let hex_digest = header
        .strip_prefix("sha256=")
        .ok_or(SignatureError::Malformed)?;
    let expected = hex::decode(hex_digest).map_err(|_| SignatureError::Malformed)?;
    if expected.len() != 32 {
        return Err(SignatureError::Malformed);
    }
    let matches = |secret: &[u8]| {
        let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    };
    if matches(current) {
        Ok(Signer::Current)
    } else if previous.is_some_and(matches) {
        Ok(Signer::Previous)
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The header value GitHub would send for `body`; used by `taskgate` tools
/// that replay deliveries and by the tests.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // GitHub's documented test vector ("Validating webhook deliveries").
    #[test]
    fn githubs_documented_example_verifies() {
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(
            sign(b"It's a Secret to Everybody", b"Hello, World!"),
            header
        );
        assert_eq!(
            verify(
                b"It's a Secret to Everybody",
                b"Hello, World!",
                Some(header)
            ),
            Ok(())
        );
    }

    #[test]
    fn every_kind_of_bad_signature_is_refused() {
        let good = sign(b"s3cret", b"{}");
        assert_eq!(verify(b"s3cret", b"{}", None), Err(SignatureError::Missing));
        assert_eq!(
            verify(b"s3cret", b"{}", Some("sha1=abc")),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(b"s3cret", b"{}", Some("sha256=zz")),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify(b"other", b"{}", Some(&good)),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"s3cret", b"{ }", Some(&good)),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn while_a_secret_is_rotated_out_both_verify_and_nothing_else_does() {
        let body = b"{\"zen\":\"Design for failure.\"}";
        let rotating = |header: &str| verify_rotating(b"new", Some(b"old"), body, Some(header));
        assert_eq!(rotating(&sign(b"new", body)), Ok(Signer::Current));
        assert_eq!(rotating(&sign(b"old", body)), Ok(Signer::Previous));
        assert_eq!(
            rotating(&sign(b"older", body)),
            Err(SignatureError::Mismatch)
        );
        // Without a previous secret, the old one is refused.
        assert_eq!(
            verify_rotating(b"new", None, body, Some(&sign(b"old", body))),
            Err(SignatureError::Mismatch)
        );
    }
}
