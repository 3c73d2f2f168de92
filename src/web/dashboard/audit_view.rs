//! The dashboard's freeze lines and audit log, as plain data.
//!
//! Owns: what a person reads of each repository's freeze in force and its
//! latest audit entries. Must not: read the store or the clock (the
//! handler loads each repository's manual freeze, windows and entries, and
//! `now` comes in), or decide whether a freeze is in force
//! (`core::freeze::freeze_in_force` does).

use taskgate_core::audit::AuditEntry;
use taskgate_core::freeze::{freeze_in_force, utc_minute, Freeze, FreezeWindow};
use taskgate_core::ids::RepoName;

/// Audit entries shown per repository.
pub const AUDIT_ROWS: u32 = 50;

/// A repository in which nothing lands now, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FreezeLine {
    pub repo: String,
    /// `frozen by @alice since 2026-11-27 09:00 UTC: release in progress`.
    pub why: String,
    /// Frozen by a command (`unfreeze` lifts it), not by a window.
    pub manual: bool,
}

/// One repository's latest audit entries, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSection {
    pub repo: String,
    pub rows: Vec<AuditRow>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    /// `2026-11-27 09:00 UTC`.
    pub at: String,
    /// `@alice`, or `the HTTP API`.
    pub who: String,
    pub action: &'static str,
    pub object: String,
    pub reason: Option<String>,
    pub via: &'static str,
}

/// What one repository holds of freezes: its manual freeze, if any, and
/// its configured windows.
pub struct RepoFreeze<'a> {
    pub repo: &'a RepoName,
    pub manual: Option<&'a Freeze>,
    pub windows: &'a [FreezeWindow],
}

/// A line for each repository frozen at `now`, in the order given.
pub fn freeze_lines(repos: &[RepoFreeze<'_>], now: i64) -> Vec<FreezeLine> {
    repos
        .iter()
        .filter_map(|r| {
            let why = freeze_in_force(r.manual, r.windows, now)?;
            Some(FreezeLine {
                repo: r.repo.to_string(),
                why: why.render(),
                manual: r.manual.is_some(),
            })
        })
        .collect()
}

/// A section per repository with entries, in the order given.
pub fn audit_sections(per_repo: &[(RepoName, Vec<AuditEntry>)]) -> Vec<AuditSection> {
    per_repo
        .iter()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(repo, entries)| AuditSection {
            repo: repo.to_string(),
            rows: entries.iter().map(audit_row).collect(),
        })
        .collect()
}

fn audit_row(e: &AuditEntry) -> AuditRow {
    AuditRow {
        at: utc_minute(e.at_s),
        who: match e.actor_id {
            Some(_) => format!("@{}", e.actor_login),
            None => e.actor_login.clone(),
        },
        action: e.action.name(),
        object: e.object.clone(),
        reason: e.reason.clone(),
        via: e.via.name(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::Weekday;

    use super::*;
    use crate::web::dashboard::{dashboard_view, render_dashboard};
    use taskgate_core::audit::{
        task_object, AuditAction, AuditActor, AuditVia, API_LOGIN, REPOSITORY,
    };
    use taskgate_core::ids::{IssueNumber, UserId};

    /// Friday 2026-11-27 17:00 UTC.
    const NOW: i64 = 1_795_737_600 + 17 * 3_600;

    fn repo(name: &str) -> RepoName {
        RepoName::parse(name).unwrap()
    }

    fn weekend() -> FreezeWindow {
        FreezeWindow {
            days: vec![Weekday::Fri],
            from_min: 16 * 60,
            to_min: 24 * 60,
            reason: Some("weekend".into()),
        }
    }

    fn release() -> Freeze {
        Freeze {
            reason: "release <2.0> in progress".into(),
            by_login: "alice".into(),
            by_id: Some(UserId::new(7)),
            since_s: NOW - 8 * 3_600,
        }
    }

    fn entries() -> Vec<AuditEntry> {
        let a = repo("acme/strategies");
        let alice = AuditActor::user(UserId::new(7), "alice");
        let api = AuditActor {
            id: None,
            login: API_LOGIN,
        };
        vec![
            AuditEntry::new(
                &a,
                NOW - 60,
                alice,
                AuditAction::Freeze,
                REPOSITORY,
                AuditVia::Command,
            )
            .because(Some("release <2.0> in progress")),
            AuditEntry::new(
                &a,
                NOW - 3_600,
                api,
                AuditAction::ApiAccept,
                task_object(IssueNumber::new(12), "check"),
                AuditVia::Api,
            ),
        ]
    }

    #[test]
    fn a_repository_is_listed_frozen_by_its_manual_freeze_or_its_window_only_while_in_force() {
        let (a, b, c) = (repo("acme/a"), repo("acme/b"), repo("acme/c"));
        let (manual, windows) = (release(), [weekend()]);
        let repos = [
            RepoFreeze {
                repo: &a,
                manual: Some(&manual),
                windows: &windows,
            },
            RepoFreeze {
                repo: &b,
                manual: None,
                windows: &windows,
            },
            RepoFreeze {
                repo: &c,
                manual: None,
                windows: &[],
            },
        ];
        let lines = freeze_lines(&repos, NOW);
        assert_eq!(
            lines,
            vec![
                FreezeLine {
                    repo: "acme/a".into(),
                    why: "frozen by @alice since 2026-11-27 09:00 UTC: release <2.0> in progress"
                        .into(),
                    manual: true,
                },
                FreezeLine {
                    repo: "acme/b".into(),
                    why: "inside the freeze window Fri 16:00–24:00 UTC (weekend)".into(),
                    manual: false,
                },
            ]
        );
        // Friday morning: only the manual freeze holds.
        assert_eq!(freeze_lines(&repos, NOW - 8 * 3_600).len(), 1);
    }

    #[test]
    fn the_page_shows_each_freeze_and_each_repositorys_audit_log() {
        let a = repo("acme/strategies");
        let (manual, windows) = (release(), [weekend()]);
        let mut view = dashboard_view(&[], "https://github.com", NOW);
        view.freezes = freeze_lines(
            &[RepoFreeze {
                repo: &a,
                manual: Some(&manual),
                windows: &windows,
            }],
            NOW,
        );
        view.audit = audit_sections(&[(a.clone(), entries()), (repo("acme/quiet"), vec![])]);
        let page = render_dashboard(&view);
        let freeze: Vec<&str> = page
            .lines()
            .filter(|l| l.contains("class=\"freeze\""))
            .collect();
        insta::assert_snapshot!(freeze.join("\n"), @"<p class=\"freeze\"><strong>Freeze</strong> · acme/strategies: frozen by @alice since 2026-11-27 09:00 UTC: release &#60;2.0&#62; in progress. Nothing lands until <code>/taskgate unfreeze</code>.</p>");
        let start = page
            .find("<section class=\"audit\">")
            .expect("an audit section");
        let end = page[start..].find("</section>").unwrap() + start;
        insta::assert_snapshot!(&page[start..end], @r#"
        <section class="audit">
        <h2>Audit log</h2>


        <h3>acme/strategies</h3>
        <table>
        <thead><tr><th>When</th><th>Who</th><th>What</th><th>On</th><th>Reason</th><th>Via</th></tr></thead>
        <tbody>

        <tr><td>2026-11-27 16:59 UTC</td><td>@alice</td><td>freeze</td><td>repository</td><td>release &#60;2.0&#62; in progress</td><td class="muted">command</td></tr>

        <tr><td>2026-11-27 16:00 UTC</td><td>the HTTP API</td><td>api_accept</td><td>task #12 (check)</td><td></td><td class="muted">api</td></tr>

        </tbody>
        </table>
        "#);
    }
}
