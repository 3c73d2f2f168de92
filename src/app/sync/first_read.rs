//! A repository's config read before any push syncs it: when the App is
//! installed on it (`installation.created`, `installation_repositories.added`)
//! and, lazily, at a push or before a comment in a repository with nothing recorded
//! (installed while taskgate was down, or the record lost with the
//! database), so that a freshly installed repository follows its own
//! `.github/taskgate.yml` (permissions, prefix, `runner_network`, …) from
//! its first command, not the defaults until its first config push.
//!
//! Owns: reading the config at the default branch's head, and what a
//! failed read does: it is logged and leaves the repository as it was,
//! never failing the delivery (the lazy read tries again at a comment
//! after a wait). Must not: decide which text is recorded or what a config's
//! problems say (`core::config::push`).
//!
//! One idea a reader needs: `Syncer::repo_config` still reads no GitHub.
//! The lazy read happens before the comment is read (the processor calls
//! [`Syncer::read_config_if_unrecorded`]), records what it read in its own
//! commit (`Store::record_first_config`), and `repo_config` then finds it;
//! when GitHub fails, or has not answered within 5 s, the comment is
//! answered with the fallback as before.
//!
//! A failed lazy read is remembered per repository ([`FailedReads`]): the
//! comments that follow use the fallback without asking GitHub (no token
//! minted, no connection tried) until a wait that doubles with each failure
//! has passed, so an unreachable GitHub costs one read per wait, not one per
//! comment, and a GitHub coming back is not met by a read per comment queued.

use std::time::Duration;

use octocrab::Octocrab;
use tracing::{debug, warn};

use super::{read_file, ConfigSeen, SyncError, Syncer};
use crate::github::RepoClient;
use crate::intake::event::Webhook;
use crate::intake::payload::RepositoryRef;
use crate::intake::payload::{InstallationAction, InstallationRepositoriesAction};
use crate::store::RepoConfigRecord;
use taskgate_core::config::{decide_config_read, decide_first_config_read, Problems, CONFIG_PATH};
use taskgate_core::ids::{CommitSha, InstallationId, RepoName};
use taskgate_core::{Change, Decision};

/// Repositories whose config one installation delivery reads (three
/// requests each); an installation on more is read lazily for the rest,
/// at each one's first comment or push.
pub const INSTALL_READS: usize = 100;

/// The repositories an installation webhook adds: all of a new
/// installation's, or those added to one; none for other actions.
pub fn added_repositories(webhook: &Webhook) -> &[RepositoryRef] {
    match webhook {
        Webhook::Installation(p) if p.action == InstallationAction::Created => {
            p.repositories.as_deref().unwrap_or_default()
        }
        Webhook::InstallationRepositories(p)
            if p.action == InstallationRepositoriesAction::Added =>
        {
            &p.repositories_added
        }
        _ => &[],
    }
}

/// How long a comment waits for the lazy read of its repository's config
/// (a token and three reads, well under a second when GitHub is well): a
/// GitHub that hangs delays the answer by this much, not by its own
/// timeouts.
const LAZY_READ_WAIT: Duration = Duration::from_secs(5);

/// The wait after a repository's first failed lazy read, doubling with each
/// failure up to [`RETRY_READ_MAX_MS`].
pub const RETRY_READ_FIRST_MS: i64 = 10_000;
pub const RETRY_READ_MAX_MS: i64 = 5 * 60_000;

/// Repositories whose lazy config read failed: how many times in a row, and
/// the time (the injected clock's) before which it is not tried again.
#[derive(Debug, Default)]
pub struct FailedReads {
    repos: std::sync::Mutex<std::collections::HashMap<RepoName, (u32, i64)>>,
}

impl FailedReads {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<RepoName, (u32, i64)>> {
        self.repos.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When `repo` may be read again, if not yet at `now`.
    fn waiting(&self, repo: &RepoName, now: i64) -> Option<i64> {
        self.lock()
            .get(repo)
            .map(|(_, at)| *at)
            .filter(|at| *at > now)
    }

    /// One more failure at `now`; the time of the next try.
    fn failed(&self, repo: &RepoName, now: i64) -> i64 {
        let mut repos = self.lock();
        let (failures, at) = repos.entry(repo.clone()).or_insert((0, now));
        *failures += 1;
        let wait = RETRY_READ_FIRST_MS
            .saturating_mul(1 << (*failures - 1).min(16))
            .min(RETRY_READ_MAX_MS);
        *at = now + wait;
        *at
    }

    fn succeeded(&self, repo: &RepoName) {
        self.lock().remove(repo);
    }
}

impl Syncer {
    /// The App was installed on `repos`: each one's config, read at its
    /// default branch's head, becomes its current config (problems are
    /// said on that commit's `taskgate/plan` check run). A repository
    /// GitHub does not answer for is logged and left to the lazy read.
    pub async fn on_installed(
        &self,
        installation: InstallationId,
        repos: &[RepositoryRef],
    ) -> Decision {
        if repos.is_empty() {
            return Decision::default();
        }
        let client = match self.github.installation_client(installation).await {
            Ok(client) => client,
            Err(e) => {
                warn!(%installation, error = %e, "no client for a new installation: its repositories' configs are read at their first comment or push");
                return Decision::nothing("configs not read (GitHub did not answer)");
            }
        };
        let mut decision = Decision::default();
        let mut outcomes = Vec::new();
        for r in repos.iter().take(INSTALL_READS) {
            let Ok(repo) = RepoName::parse(&r.full_name) else {
                continue;
            };
            match self.decide_read(&client, &repo).await {
                Ok(Some(d)) => {
                    outcomes.push(d.outcome);
                    decision.changes.extend(d.changes);
                    decision.effects.extend(d.effects);
                }
                Ok(None) => outcomes.push(format!("{repo} is empty: no config to read")),
                Err(e) => {
                    warn!(%repo, error = %e, "reading a newly installed repository's config failed: it is read at its first comment or push");
                    outcomes.push(format!("{repo}: config not read ({e})"));
                }
            }
        }
        decision.outcome = outcomes.join("; ");
        decision
    }

    /// A push to the default branch of `repo`, which has no config
    /// recorded, changed neither a plan nor the config: the config at
    /// `sha` is read and recorded now. A failed read is logged and leaves
    /// the push decided without it.
    pub async fn first_read_at(
        &self,
        installation: InstallationId,
        repo: &RepoName,
        sha: &CommitSha,
    ) -> Decision {
        let read = async {
            let client = self.github.installation_client(installation).await?;
            let config = read_file(&client, repo, CONFIG_PATH, sha).await?;
            let last_good = self.store.latest_story_config(repo).await?.flatten();
            Ok::<_, SyncError>(decide_first_config_read(repo, sha, config, last_good))
        };
        match read.await {
            Ok(decision) => decision,
            Err(e) => {
                warn!(%repo, error = %e, "reading the config of a repository with none recorded failed: it is read at its next comment or push");
                Decision::nothing(format!(
                    "no plan files or config changed; config not read ({e})"
                ))
            }
        }
    }

    /// Before a comment in `repo` is read: with no config recorded for it,
    /// reads it now and records it (`Store::record_first_config`), so the
    /// comment's commands follow it. A failure is logged and remembered:
    /// the comment then follows the fallback (`Syncer::repo_config`), and so
    /// do the next ones until the repository's wait has passed.
    /// Returns what it learnt of the record, so that the comment does not
    /// read it again (`Syncer::repo_config_seen`).
    pub async fn read_config_if_unrecorded(
        &self,
        installation: InstallationId,
        repo: &RepoName,
    ) -> ConfigSeen {
        match self.store.repo_config(repo).await {
            Ok(None) => {}
            Ok(Some(record)) => return ConfigSeen::Recorded(record),
            Err(e) => {
                warn!(%repo, error = %e, "reading the recorded config failed");
                return ConfigSeen::Unread;
            }
        }
        let now = self.store.clock().now_ms();
        if let Some(at) = self.failed_reads.waiting(repo, now) {
            debug!(%repo, retry_in_ms = at - now, "the config read of this repository failed lately: this comment follows the fallback");
            return ConfigSeen::NoneRecorded;
        }
        let read = tokio::time::timeout(LAZY_READ_WAIT, self.record_first_read(installation, repo));
        let why = match read.await {
            Ok(Ok(seen)) => {
                self.failed_reads.succeeded(repo);
                return seen;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "GitHub did not answer within {} s",
                LAZY_READ_WAIT.as_secs()
            ),
        };
        let now = self.store.clock().now_ms();
        let retry_in_s = (self.failed_reads.failed(repo, now) - now) / 1000;
        warn!(%repo, error = %why, retry_in_s, "reading the config of a repository with none recorded failed: comments follow the fallback until it is read again");
        ConfigSeen::NoneRecorded
    }

    /// Reads `repo`'s config and records it; returns what is recorded
    /// now, as far as it knows.
    async fn record_first_read(
        &self,
        installation: InstallationId,
        repo: &RepoName,
    ) -> Result<ConfigSeen, SyncError> {
        let client = self.github.installation_client(installation).await?;
        let Some(decision) = self.decide_read(&client, repo).await? else {
            // An empty repository: nothing to record.
            return Ok(ConfigSeen::NoneRecorded);
        };
        let recorded = decision.changes.into_iter().find_map(|c| match c {
            Change::RepoConfigChanged { sha, config, .. } => Some(RepoConfigRecord { config, sha }),
            _ => None,
        });
        let Some(record) = recorded else {
            // A config with problems: the last good one stays the fallback.
            return Ok(ConfigSeen::NoneRecorded);
        };
        let stored = (self.store)
            .record_first_config(installation, repo, record.clone(), decision.effects)
            .await?;
        // Not stored: a push recorded one meanwhile, which is read.
        Ok(match stored {
            true => ConfigSeen::Recorded(record),
            false => ConfigSeen::Unread,
        })
    }

    /// `repo`'s config at its default branch's head, decided: a first
    /// read (nothing recorded: a config with problems leaves the last good
    /// one recorded) or a re-read (the record stays when it has problems).
    /// `None`: the repository is empty.
    async fn decide_read(
        &self,
        client: &Octocrab,
        repo: &RepoName,
    ) -> Result<Option<Decision>, SyncError> {
        let Some((sha, config)) = config_at_head(client, repo).await? else {
            return Ok(None);
        };
        Ok(Some(match self.store.repo_config(repo).await? {
            Some(_) => decide_config_read(repo, &sha, config, Problems::Report),
            None => {
                let last_good = self.store.latest_story_config(repo).await?.flatten();
                decide_first_config_read(repo, &sha, config, last_good)
            }
        }))
    }
}

/// The default branch's head and the config there (`None`: no file, the
/// defaults); `None` for an empty repository.
async fn config_at_head(
    client: &Octocrab,
    repo: &RepoName,
) -> Result<Option<(CommitSha, Option<String>)>, SyncError> {
    let github = RepoClient::new(client, repo);
    let branch = github.default_branch().await?;
    let Some(sha) = github.branch_head(&branch).await? else {
        return Ok(None);
    };
    let config = read_file(client, repo, CONFIG_PATH, &sha).await?;
    Ok(Some((sha, config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_with_each_failure_up_to_five_minutes_and_ends_at_a_success() {
        let failed = FailedReads::default();
        let repo = RepoName::parse("acme/widgets").unwrap();
        let other = RepoName::parse("acme/gears").unwrap();
        assert_eq!(failed.waiting(&repo, 0), None);
        let waits: Vec<i64> = (0..7).map(|_| failed.failed(&repo, 0)).collect();
        assert_eq!(
            waits,
            [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]
        );
        assert_eq!(failed.waiting(&repo, 299_999), Some(300_000));
        assert_eq!(failed.waiting(&repo, 300_000), None, "tried again then");
        assert_eq!(failed.waiting(&other, 0), None, "per repository");
        failed.succeeded(&repo);
        assert_eq!(failed.failed(&repo, 0), 10_000, "a success starts over");
    }
}
