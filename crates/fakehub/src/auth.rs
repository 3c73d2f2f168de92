//! GitHub App authentication: the app's RS256 JWT for `/app/...` routes, and
//! installation tokens (`ghs_...`) for everything an installation does.
//!
//! Error wording follows what GitHub answers where it is known.

use chrono::Utc;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use crate::routes::Reply;
use crate::state::State;

pub const PUBLIC_KEY_PEM: &str = include_str!("../fixtures/keys/test-app.pub.pem");

/// Who is calling.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Caller {
    /// The app itself, with a valid JWT.
    App,
    /// An installation, with a live token.
    Installation(u64),
}

/// The credential in an `Authorization` header (`token X` or `Bearer X`).
pub(crate) fn credential(header: Option<&str>) -> Option<&str> {
    let h = header?.trim();
    let (scheme, rest) = h.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("token") || scheme.eq_ignore_ascii_case("bearer"))
        .then(|| rest.trim())
}

/// Verifies an app JWT the way GitHub does.
pub(crate) fn verify_jwt(app_id: u64, token: &str) -> Result<(), Reply> {
    let key =
        DecodingKey::from_rsa_pem(PUBLIC_KEY_PEM.as_bytes()).expect("fixture public key parses");
    let mut v = Validation::new(Algorithm::RS256);
    v.validate_exp = false;
    v.validate_nbf = false;
    v.validate_aud = false;
    v.required_spec_claims.clear();
    let claims: Value = match jsonwebtoken::decode::<Value>(token, &key, &v) {
        Ok(d) => d.claims,
        Err(_) => return Err(Reply::error(401, "A JSON web token could not be decoded")),
    };
    let now = Utc::now().timestamp();
    let Some(iat) = claims.get("iat").and_then(Value::as_i64) else {
        return Err(Reply::error(
            401,
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued.",
        ));
    };
    let Some(exp) = claims.get("exp").and_then(Value::as_i64) else {
        return Err(Reply::error(
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires.",
        ));
    };
    if exp <= now {
        return Err(Reply::error(
            401,
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires.",
        ));
    }
    if iat > now + 60 {
        return Err(Reply::error(
            401,
            "'Issued at' claim ('iat') must be an Integer representing a time in the past.",
        ));
    }
    if exp - iat > 600 {
        return Err(Reply::error(
            401,
            "'Expiration time' claim ('exp') is too far in the future",
        ));
    }
    let iss = match claims.get("iss") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        _ => None,
    };
    match iss {
        None => Err(Reply::error(
            401,
            "'Issuer' claim ('iss') must be an Integer",
        )),
        Some(id) if id != app_id => Err(Reply::error(401, "Integration not found")),
        Some(_) => Ok(()),
    }
}

/// Resolves an installation token; `Err` is GitHub's 401.
pub(crate) fn installation_for_token(st: &State, token: Option<&str>) -> Result<u64, Reply> {
    let Some(token) = token else {
        return Err(Reply::error(401, "Requires authentication"));
    };
    match st.tokens.get(token) {
        Some(t) if t.expires_at > Utc::now() => Ok(t.installation),
        _ => Err(Reply::error(401, "Bad credentials")),
    }
}

/// Mints a new installation token.
pub(crate) fn mint_token(st: &mut State, installation: u64) -> (String, chrono::DateTime<Utc>) {
    let token = format!(
        "ghs_{}",
        (0..36)
            .map(|_| fastrand::alphanumeric())
            .collect::<String>()
    );
    let ttl = chrono::Duration::from_std(st.token_ttl).unwrap_or(chrono::Duration::hours(1));
    let expires_at = Utc::now() + ttl;
    st.tokens.insert(
        token.clone(),
        crate::state::TokenInfo {
            installation,
            expires_at,
        },
    );
    (token, expires_at)
}
