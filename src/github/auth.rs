//! GitHub App authentication: an RS256 JWT as the app, exchanged for an
//! installation token per installation, cached until shortly before expiry.
//!
//! Two ideas a reader needs:
//! - The cache holds one slot per installation. The map's lock is held only
//!   to find a slot, never across a call to GitHub; a slot's own lock is held
//!   while its token is minted, so callers for the same installation share
//!   one mint and callers for other installations never wait on it.
//! - A mint that failed for want of GitHub (no answer, 5xx) is remembered
//!   per installation ([`MintRetry`]): until its wait has passed, a caller
//!   gets the same failure at once, with no JWT signed and no connection
//!   made, so an outage costs one mint attempt per wait, not one per
//!   delivery and effect.
//! - A token is a secret: [`InstallationToken`]'s `Debug` and `Display`
//!   redact it, and an access-token answer taskgate cannot read is reported
//!   without its body, so no log line ever carries one.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use octocrab::Octocrab;
use serde::{Deserialize, Serialize};
use tracing::debug;

use super::client::{self, GitHubError};
use crate::clock::Clock;
use taskgate_core::ids::InstallationId;

/// A token is renewed when less than this is left, so a call never starts
/// with a token about to lapse.
const RENEW_BEFORE: chrono::Duration = chrono::Duration::minutes(5);

#[derive(Clone)]
pub struct AppCredentials {
    pub app_id: u64,
    pub key: EncodingKey,
}

impl AppCredentials {
    /// Accepts a PEM (PKCS#1 or PKCS#8). `\n` written as two characters, as
    /// in a one-line environment variable, is understood too.
    pub fn from_pem(app_id: u64, pem: &str) -> Result<AppCredentials, GitHubError> {
        let pem = pem.replace("\\n", "\n");
        let key = EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(|e| {
            GitHubError::Config(format!(
                "PRIVATE_KEY is not an RSA private key in PEM form: {e}"
            ))
        })?;
        Ok(AppCredentials { app_id, key })
    }
}

#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Claims {
    pub iat: i64,
    pub exp: i64,
    pub iss: String,
}

/// The app's JWT at `now` (Unix seconds): issued 60 s in the past to allow
/// for clock drift, as GitHub recommends, and valid for 9 minutes after
/// `now`, inside GitHub's 10-minute maximum.
pub fn app_jwt(creds: &AppCredentials, now: i64) -> Result<String, GitHubError> {
    let claims = Claims {
        iat: now - 60,
        exp: now + 9 * 60,
        iss: creds.app_id.to_string(),
    };
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &creds.key)
        .map_err(|e| GitHubError::Config(format!("could not sign the app JWT: {e}")))
}

/// An installation access token. Shown as `InstallationToken(<redacted>)`
/// by `Debug` and `<redacted>` by `Display`: only [`InstallationToken::expose`]
/// gives the secret, where it is sent.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct InstallationToken(String);

impl InstallationToken {
    pub fn new(secret: String) -> InstallationToken {
        InstallationToken(secret)
    }

    /// The secret itself, for an `Authorization` header or git's credentials.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for InstallationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InstallationToken(<redacted>)")
    }
}

impl fmt::Display for InstallationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Clone)]
struct CachedToken {
    token: InstallationToken,
    expires_at: DateTime<Utc>,
    client: Octocrab,
}

impl fmt::Debug for CachedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedToken")
            .field("token", &self.token)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// One installation's place in the cache; its lock is held during a mint.
type Slot = Arc<tokio::sync::Mutex<SlotState>>;

#[derive(Default)]
struct SlotState {
    token: Option<CachedToken>,
    failed: Option<FailedMint>,
}

/// The last mints that failed in a row for want of GitHub.
struct FailedMint {
    in_a_row: u32,
    /// Milliseconds on the app's clock.
    until_ms: i64,
    why: String,
}

/// How long a mint that failed for want of GitHub is not tried again:
/// `first` after one failure, doubling with each failure in a row, at
/// most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MintRetry {
    pub first: Duration,
    pub max: Duration,
}

impl Default for MintRetry {
    /// A second, then doubling to a minute: an outage costs GitHub a
    /// mint a minute per installation, and taskgate notices GitHub's
    /// return within a minute.
    fn default() -> MintRetry {
        MintRetry {
            first: Duration::from_secs(1),
            max: Duration::from_secs(60),
        }
    }
}

impl MintRetry {
    fn wait(&self, in_a_row: u32) -> Duration {
        let doubled = self
            .first
            .saturating_mul(1u32 << in_a_row.saturating_sub(1).min(20));
        doubled.min(self.max)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct AppInfo {
    pub id: u64,
    pub slug: String,
}

/// The app as a GitHub client: hands out per-installation octocrab clients.
pub struct GitHubApp {
    base_url: String,
    creds: AppCredentials,
    tokens: std::sync::Mutex<HashMap<InstallationId, Slot>>,
    /// The App's slug, once `GET /app` answered ([`GitHubApp::app_info`]).
    slug: std::sync::OnceLock<String>,
    mint_retry: MintRetry,
    /// What a failed mint's wait is read on (the server's injected clock).
    clock: Clock,
}

/// `POST /app/installations/{id}/access_tokens`'s answer (the fields used).
#[derive(Deserialize)]
struct AccessToken {
    token: InstallationToken,
    expires_at: DateTime<Utc>,
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &self.token)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// The access-token answer, or an error that says where it was unreadable
/// but never quotes it: the body holds the token.
fn read_access_token(body: &[u8]) -> Result<AccessToken, GitHubError> {
    serde_json::from_slice(body).map_err(|e| {
        GitHubError::Unexpected(format!(
            "the access-token answer is not readable ({:?} error at line {}, column {}; body not shown: it holds a token)",
            e.classify(),
            e.line(),
            e.column()
        ))
    })
}

impl GitHubApp {
    pub fn new(base_url: &str, creds: AppCredentials) -> GitHubApp {
        GitHubApp {
            base_url: base_url.trim_end_matches('/').to_owned(),
            creds,
            tokens: std::sync::Mutex::new(HashMap::new()),
            slug: std::sync::OnceLock::new(),
            mint_retry: MintRetry::default(),
            clock: Clock::system(),
        }
    }

    /// The app, with how long a failed mint is remembered, on `clock`.
    pub fn with_mint_retry(mut self, retry: MintRetry, clock: Clock) -> GitHubApp {
        self.mint_retry = retry;
        self.clock = clock;
        self
    }

    /// The App's id.
    pub fn app_id(&self) -> u64 {
        self.creds.app_id
    }

    /// The App as GitHub names it on what it made: its id, and its bot's
    /// login once [`GitHubApp::app_info`] has answered.
    pub fn own_app(&self) -> super::OwnApp {
        super::OwnApp {
            app_id: self.creds.app_id,
            bot_login: self.slug.get().map(|slug| format!("{slug}[bot]")),
        }
    }

    fn client_with_bearer(&self, token: String) -> Result<Octocrab, GitHubError> {
        Octocrab::builder()
            .base_uri(self.base_url.as_str())
            .map_err(|e| {
                GitHubError::Config(format!(
                    "GITHUB_API_URL `{}` is not a URL: {e}",
                    self.base_url
                ))
            })?
            .personal_token(token)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(60)))
            .build()
            .map_err(|e| GitHubError::Config(format!("could not build the GitHub client: {e}")))
    }

    /// A client authenticated as the app itself (for `/app` endpoints).
    pub fn app_client(&self) -> Result<Octocrab, GitHubError> {
        self.client_with_bearer(app_jwt(&self.creds, Utc::now().timestamp())?)
    }

    /// `GET /app`: the app's id and slug (its bot is `<slug>[bot]`).
    pub async fn app_info(&self) -> Result<AppInfo, GitHubError> {
        let response = client::send(&self.app_client()?, http::Method::GET, "/app", None).await?;
        let app: AppInfo = response.answer("GET /app")?;
        let _ = self.slug.set(app.slug.clone());
        Ok(app)
    }

    /// A client for `installation`, reusing a cached token while it has
    /// more than five minutes left.
    pub async fn installation_client(
        &self,
        installation: InstallationId,
    ) -> Result<Octocrab, GitHubError> {
        Ok(self.cached(installation).await?.client)
    }

    /// The installation token itself, for git over HTTPS (the runner's
    /// mirror fetch); same cache as [`GitHubApp::installation_client`].
    pub async fn installation_token(
        &self,
        installation: InstallationId,
    ) -> Result<String, GitHubError> {
        Ok(self.cached(installation).await?.token.expose().to_owned())
    }

    /// `installation`'s slot, made on first use. The map's lock is held
    /// for this lookup only.
    fn slot(&self, installation: InstallationId) -> Slot {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        tokens.entry(installation).or_default().clone()
    }

    async fn cached(&self, installation: InstallationId) -> Result<CachedToken, GitHubError> {
        let slot = self.slot(installation);
        // Held across the mint: a second caller for this installation waits
        // here and then finds the token the first one minted.
        let mut state = slot.lock().await;
        if let Some(token) = state.token.as_ref() {
            if token.expires_at - Utc::now() > RENEW_BEFORE {
                return Ok(token.clone());
            }
        }
        let now_ms = self.clock.now_ms();
        if let Some(failed) = state.failed.as_ref().filter(|f| now_ms < f.until_ms) {
            let left_s = (failed.until_ms - now_ms + 999) / 1000;
            return Err(GitHubError::Transport(format!(
                "{} (an installation token is asked for again in {left_s} s)",
                failed.why
            )));
        }
        match self.mint(installation).await {
            Ok(fresh) => {
                state.failed = None;
                state.token = Some(fresh.clone());
                Ok(fresh)
            }
            Err(e) => {
                if unreachable(&e) {
                    let in_a_row = state.failed.as_ref().map_or(0, |f| f.in_a_row) + 1;
                    let wait = self.mint_retry.wait(in_a_row);
                    debug!(%installation, in_a_row, wait_ms = wait.as_millis() as u64, "installation token not minted: {e}");
                    state.failed = Some(FailedMint {
                        in_a_row,
                        until_ms: now_ms + i64::try_from(wait.as_millis()).unwrap_or(i64::MAX),
                        why: e.to_string(),
                    });
                }
                Err(e)
            }
        }
    }

    async fn mint(&self, installation: InstallationId) -> Result<CachedToken, GitHubError> {
        let path = format!("/app/installations/{installation}/access_tokens");
        let response = client::send(&self.app_client()?, http::Method::POST, &path, None).await?;
        let token = read_access_token(&response.body)?;
        debug!(%installation, expires_at = %token.expires_at, "new installation token");
        Ok(CachedToken {
            client: self.client_with_bearer(token.token.expose().to_owned())?,
            expires_at: token.expires_at,
            token: token.token,
        })
    }

    /// Forgets a token GitHub refused (401), so the next call gets a new one.
    pub async fn invalidate(&self, installation: InstallationId) {
        let slot = self.slot(installation);
        slot.lock().await.token = None;
    }
}

/// A mint failed for want of GitHub: no answer, or a 5xx. A rate limit
/// is not remembered here (its own headers say when to come back, and
/// the executor reads them), nor a refusal (the installation is gone:
/// asking again says so at once).
fn unreachable(e: &GitHubError) -> bool {
    match e {
        GitHubError::Transport(_) => true,
        GitHubError::Http { status, .. } => *status >= 500,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    const KEY: &str = include_str!("../../fixtures/keys/test-app.pem");
    const PUBLIC: &str = include_str!("../../fixtures/keys/test-app.pub.pem");

    #[test]
    fn the_jwt_follows_githubs_rules() {
        let creds = AppCredentials::from_pem(4242, KEY).unwrap();
        let jwt = app_jwt(&creds, 1_700_000_000).unwrap();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["iat", "exp", "iss"]);
        let claims = jsonwebtoken::decode::<Claims>(
            &jwt,
            &DecodingKey::from_rsa_pem(PUBLIC.as_bytes()).unwrap(),
            &validation,
        )
        .unwrap()
        .claims;
        assert_eq!(claims.iss, "4242");
        assert_eq!(claims.iat, 1_700_000_000 - 60);
        assert!(
            claims.exp - claims.iat <= 600,
            "GitHub refuses JWTs valid for over 10 minutes"
        );
        assert!(claims.exp > 1_700_000_000);
    }

    #[test]
    fn a_token_never_shows_in_debug_or_display() {
        let secret = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
        let token = InstallationToken::new(secret.into());
        for shown in [
            format!("{token:?}"),
            format!("{token}"),
            format!("{token:#?}"),
        ] {
            assert!(!shown.contains(secret), "{shown}");
        }
        let answer = format!(r#"{{"token":"{secret}","expires_at":"2030-01-01T00:00:00Z"}}"#);
        let read = read_access_token(answer.as_bytes()).unwrap();
        assert_eq!(read.token.expose(), secret);
        assert!(!format!("{read:?}").contains(secret));
    }

    #[test]
    fn an_unreadable_access_token_answer_is_reported_without_its_token() {
        let secret = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
        // A well-formed token next to an unreadable expiry.
        let answer = format!(r#"{{"token":"{secret}","expires_at":"next tuesday"}}"#);
        let err = read_access_token(answer.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(!err.contains(secret), "{err}");
        assert!(err.contains("access-token answer is not readable"), "{err}");
    }

    #[test]
    fn escaped_newlines_in_the_key_are_accepted_and_garbage_is_refused() {
        assert!(AppCredentials::from_pem(1, &KEY.replace('\n', "\\n")).is_ok());
        let err = AppCredentials::from_pem(1, "not a key").err().unwrap();
        assert!(err.to_string().contains("PRIVATE_KEY"), "{err}");
    }
}
