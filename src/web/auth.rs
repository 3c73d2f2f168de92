//! `TASKGATE_API_TOKEN` checks for the API and the dashboard.
//!
//! A caller proves it knows the token with `Authorization: Bearer <token>`
//! (scripts, agents) or with HTTP Basic, any user name and the token as the
//! password (a browser asks for it once and remembers it). With no token
//! configured nothing is authorised: plans and their failures are the
//! repositories' private business, so nothing is shown by default.

use base64::Engine;
use sha2::{Digest, Sha256};

/// Whether the `Authorization` header value carries `token`.
pub fn authorized(token: Option<&str>, header: Option<&str>) -> bool {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return false;
    };
    let Some(given) = header.and_then(presented_token) else {
        return false;
    };
    same_secret(token.as_bytes(), given.trim().as_bytes())
}

/// The token a header presents: a bearer token, or a Basic password.
fn presented_token(header: &str) -> Option<String> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let pair = String::from_utf8(decoded).ok()?;
        let (_user, password) = pair.split_once(':')?;
        return Some(password.to_owned());
    }
    None
}

/// Constant-time comparison: both sides are hashed first, so neither their
/// contents nor their lengths leak through timing.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = (Sha256::digest(a), Sha256::digest(b));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user_password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_password)
        )
    }

    #[test]
    fn a_bearer_token_or_a_basic_password_is_accepted() {
        let token = Some("s3cret");
        assert!(authorized(token, Some("Bearer s3cret")));
        assert!(authorized(token, Some("bearer s3cret ")));
        assert!(authorized(token, Some(&basic("anyone:s3cret"))));
        assert!(authorized(token, Some(&basic(":s3cret"))));
    }

    #[test]
    fn anything_else_is_refused() {
        let token = Some("s3cret");
        for header in [
            None,
            Some("Bearer wrong"),
            Some("Bearer"),
            Some("s3cret"),
            Some("Token s3cret"),
            Some("Basic not-base64!"),
            Some(basic("s3cret").as_str()),
            Some(basic("s3cret:").as_str()),
        ] {
            assert!(!authorized(token, header), "{header:?}");
        }
    }

    #[test]
    fn without_a_configured_token_nobody_is_authorised() {
        assert!(!authorized(None, Some("Bearer ")));
        assert!(!authorized(Some(""), Some("Bearer ")));
        assert!(!authorized(Some(""), Some(&basic("a:"))));
    }
}
