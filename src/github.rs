//! GitHub: App authentication, the HTTP client, the typed client for one
//! repository (`RepoClient`), and the effect executor.
//!
//! Owns: JWTs, installation tokens, every request taskgate sends to GitHub,
//! retries, backoff and rate-limit pacing.
//! Must not: decide what to do (the core decides; this module only performs
//! the effects it is handed) or touch SQL directly (it goes through `Store`).

pub mod auth;
pub mod client;
pub mod executor;
mod lag;
pub mod manifest;
mod perform;
pub mod permissions;
mod refusal;
mod repo;
mod turns;

pub use auth::{app_jwt, AppCredentials, GitHubApp, InstallationToken, MintRetry};
pub use client::{ApiResponse, Capped, GitHubError};
pub use executor::{Backoff, Executor, Pacing};
pub use permissions::Permissions;
pub use repo::{CarBuild, ListedIssue, ListedLabel, OwnApp, RepoClient};

/// The web host that goes with an API URL, where people read issues and
/// git fetches: `https://github.com` for `https://api.github.com`,
/// `https://host` for GitHub Enterprise's `https://host/api/v3`, and the
/// URL itself for anything else (a test server serves both).
pub fn web_base(api_url: &str) -> String {
    let api = api_url.trim_end_matches('/');
    if api == "https://api.github.com" {
        "https://github.com".to_owned()
    } else if let Some(host) = api.strip_suffix("/api/v3") {
        host.to_owned()
    } else {
        api.to_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_web_host_of_github_com_enterprise_and_a_test_server() {
        assert_eq!(
            super::web_base("https://api.github.com/"),
            "https://github.com"
        );
        assert_eq!(
            super::web_base("https://ghe.example.com/api/v3"),
            "https://ghe.example.com"
        );
        assert_eq!(
            super::web_base("http://127.0.0.1:4000"),
            "http://127.0.0.1:4000"
        );
    }
}
