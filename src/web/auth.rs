//! `TASKGATE_API_TOKEN` checks for the API and the dashboard.
//!
//! A caller proves it knows the token with `Authorization: Bearer <token>`
//! (scripts, agents) or with HTTP Basic, any user name and the token as the
//! password (a browser asks for it once and remembers it). With no token
//! configured nothing is authorised: plans and their failures are the
//! repositories' private business, so nothing is shown by default.
//!
//! Basic is for reading only. A browser replays the Basic credentials it
//! remembers on every request to this host, including a form or `fetch`
//! that another site's page sends (a cross-site request forgery); it never
//! adds a bearer token by itself, and another site's script cannot add one
//! without a CORS preflight that taskgate never grants. So a state-changing
//! call ([`Use::Change`]: ship, accept, reject) needs the bearer token, and
//! the dashboard's cached password cannot ship a story on anyone's behalf.

use base64::Engine;
use sha2::{Digest, Sha256};

/// What a request does with the token's authority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Reads (`GET`): a bearer token or a Basic password.
    Read,
    /// Changes state (`POST`): a bearer token only.
    Change,
}

/// Whether the `Authorization` header value carries `token` for reading.
pub fn authorized(token: Option<&str>, header: Option<&str>) -> bool {
    check(token, header, Use::Read) == Check::Granted
}

/// The answer to a request's `Authorization` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Granted,
    /// No token, or not the configured one (401).
    Missing,
    /// Basic credentials on a state-changing call (403): what a browser
    /// replays, whether or not the password is right (it is not looked at).
    BasicForChange,
}

/// Whether `header` carries `token` for `usage`.
pub fn check(token: Option<&str>, header: Option<&str>, usage: Use) -> Check {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Check::Missing;
    };
    let Some((scheme, given)) = header.and_then(presented_token) else {
        return Check::Missing;
    };
    if usage == Use::Change && scheme == Scheme::Basic {
        return Check::BasicForChange;
    }
    if same_secret(token.as_bytes(), given.trim().as_bytes()) {
        Check::Granted
    } else {
        Check::Missing
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Bearer,
    Basic,
}

/// The token a header presents: a bearer token, or a Basic password.
fn presented_token(header: &str) -> Option<(Scheme, String)> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some((Scheme::Bearer, rest.to_owned()));
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest.trim())
            .ok()?;
        let pair = String::from_utf8(decoded).ok()?;
        let (_user, password) = pair.split_once(':')?;
        return Some((Scheme::Basic, password.to_owned()));
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
    fn a_change_needs_the_bearer_token_and_basic_is_refused_for_it() {
        let token = Some("s3cret");
        assert_eq!(
            check(token, Some("Bearer s3cret"), Use::Change),
            Check::Granted
        );
        assert_eq!(
            check(token, Some("Bearer wrong"), Use::Change),
            Check::Missing
        );
        assert_eq!(check(token, None, Use::Change), Check::Missing);
        for password in ["anyone:s3cret", "anyone:wrong"] {
            assert_eq!(
                check(token, Some(&basic(password)), Use::Change),
                Check::BasicForChange,
                "{password}"
            );
        }
        assert_eq!(
            check(token, Some(&basic("anyone:s3cret")), Use::Read),
            Check::Granted
        );
    }

    #[test]
    fn without_a_configured_token_nobody_is_authorised() {
        assert!(!authorized(None, Some("Bearer ")));
        assert!(!authorized(Some(""), Some("Bearer ")));
        assert!(!authorized(Some(""), Some(&basic("a:"))));
    }
}
