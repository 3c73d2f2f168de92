//! The last step of GitHub's manifest flow: a one-time code, given to the
//! browser after a person registered the app, exchanged for the app's
//! credentials (`POST /app-manifests/{code}/conversions`). GitHub asks for
//! no authentication there: the code is the proof, and it works once.

use std::time::Duration;

use octocrab::Octocrab;
use serde::Deserialize;

use super::client::{self, GitHubError};

/// The registered app, as the conversion answers it.
#[derive(Debug, Clone, Deserialize)]
pub struct RegisteredApp {
    pub id: u64,
    pub slug: String,
    pub name: String,
    pub html_url: String,
    /// The app's private key (PEM). Shown by GitHub this once only.
    pub pem: String,
    pub webhook_secret: Option<String>,
}

/// Whether `code` can be a manifest code: GitHub's are short and
/// alphanumeric. Anything else is refused before it reaches a URL path.
pub fn is_manifest_code(code: &str) -> bool {
    !code.is_empty()
        && code.len() <= 100
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Exchanges `code` at `api_url` for the app it registered.
pub async fn convert_manifest_code(
    api_url: &str,
    code: &str,
) -> Result<RegisteredApp, GitHubError> {
    if !is_manifest_code(code) {
        return Err(GitHubError::Config(format!(
            "`{code}` is not a code GitHub gives"
        )));
    }
    let client = Octocrab::builder()
        .base_uri(api_url.trim_end_matches('/'))
        .map_err(|e| GitHubError::Config(format!("GITHUB_API_URL `{api_url}` is not a URL: {e}")))?
        .set_connect_timeout(Some(Duration::from_secs(10)))
        .set_read_timeout(Some(Duration::from_secs(60)))
        .build()
        .map_err(|e| GitHubError::Config(format!("could not build the GitHub client: {e}")))?;
    let path = format!("/app-manifests/{code}/conversions");
    client::send(&client, http::Method::POST, &path, None)
        .await?
        .answer("POST /app-manifests/{code}/conversions")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_codes_reach_a_path() {
        assert!(is_manifest_code("a1b2c3d4e5"));
        assert!(is_manifest_code("ab_cd-ef"));
        for bad in ["", "../app", "a/b", "a?b", "a b", "%2e%2e"] {
            assert!(!is_manifest_code(bad), "{bad}");
        }
        assert!(!is_manifest_code(&"a".repeat(101)));
    }
}
