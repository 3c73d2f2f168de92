//! Who may run a command: a user's permission on a repository, read from
//! `GET /repos/{owner}/{repo}/collaborators/{username}/permission` and
//! cached for a minute.
//!
//! Owns: the request, reading GitHub's answer into a [`Permission`], and the
//! cache. Must not: decide what a level allows (`RepoConfig::required_permission`
//! does) or allow anything when GitHub cannot be asked (callers refuse).
//!
//! Two ideas a reader needs:
//! - **`role_name`, not `permission`.** GitHub's `permission` field holds the
//!   legacy base roles only (maintain reads as `write`, triage as `read`), so
//!   a maintainer would never pass a `maintain` requirement. `role_name` is
//!   the real role; a custom role falls back to the legacy field.
//! - **Users are ids.** The cache is keyed by (installation, repository,
//!   user id): a renamed account keeps its entry and a login taken over by
//!   someone else does not inherit it. The login is only the API path.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use tokio::sync::Mutex;

use super::client::{send, GitHubError};
use super::GitHubApp;
use taskgate_core::config::Permission;
use taskgate_core::ids::{InstallationId, RepoName, UserId};

/// How long an answer is trusted: a revoked collaborator loses their
/// commands within a minute, and a burst of commands costs one request.
pub const CACHE_TTL: Duration = Duration::from_secs(60);

type Key = (InstallationId, RepoName, UserId);

pub struct Permissions {
    github: Arc<GitHubApp>,
    cache: Mutex<HashMap<Key, (Instant, Option<Permission>)>>,
}

impl Permissions {
    pub fn new(github: Arc<GitHubApp>) -> Permissions {
        Permissions {
            github,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The user's level on `repo`; `None` for no access at all.
    pub async fn level(
        &self,
        installation: InstallationId,
        repo: &RepoName,
        user: UserId,
        login: &str,
    ) -> Result<Option<Permission>, GitHubError> {
        let key = (installation, repo.clone(), user);
        if let Some((at, level)) = self.cache.lock().await.get(&key) {
            if at.elapsed() < CACHE_TTL {
                return Ok(*level);
            }
        }
        let client = self.github.installation_client(installation).await?;
        let path = format!("/repos/{repo}/collaborators/{login}/permission");
        let answer: Answer = send(&client, Method::GET, &path, None)
            .await?
            .answer(&format!("GET /collaborators/{login}/permission"))?;
        let level = answer.level()?;
        let mut cache = self.cache.lock().await;
        cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
        cache.insert(key, (Instant::now(), level));
        Ok(level)
    }
}

#[derive(Debug, serde::Deserialize)]
struct Answer {
    permission: String,
    #[serde(default)]
    role_name: Option<String>,
}

impl Answer {
    fn level(&self) -> Result<Option<Permission>, GitHubError> {
        if let Some(level) = self.role_name.as_deref().and_then(parse_level) {
            return Ok(level);
        }
        parse_level(&self.permission).ok_or_else(|| {
            GitHubError::Unexpected(format!("unknown permission `{}`", self.permission))
        })
    }
}

/// `Some(None)` for `none`; `None` for a name that is not a base role.
fn parse_level(name: &str) -> Option<Option<Permission>> {
    Some(match name {
        "admin" => Some(Permission::Admin),
        "maintain" => Some(Permission::Maintain),
        "write" => Some(Permission::Write),
        "triage" => Some(Permission::Triage),
        "read" => Some(Permission::Read),
        "none" => None,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(permission: &str, role_name: Option<&str>) -> Option<Permission> {
        Answer {
            permission: permission.into(),
            role_name: role_name.map(Into::into),
        }
        .level()
        .unwrap()
    }

    #[test]
    fn the_role_name_wins_over_the_legacy_field() {
        assert_eq!(
            answer("write", Some("maintain")),
            Some(Permission::Maintain)
        );
        assert_eq!(answer("read", Some("triage")), Some(Permission::Triage));
        assert_eq!(answer("none", Some("none")), None);
    }

    #[test]
    fn a_custom_role_or_an_old_server_uses_the_legacy_field() {
        assert_eq!(answer("write", Some("deployer")), Some(Permission::Write));
        assert_eq!(answer("admin", None), Some(Permission::Admin));
    }

    #[test]
    fn an_unknown_level_is_an_error_not_a_grant() {
        let odd = Answer {
            permission: "superuser".into(),
            role_name: Some("custom".into()),
        };
        assert!(odd.level().is_err());
    }
}
