//! The rules of a branch, read as the App sees them: its rulesets' active
//! rules (`GET /rules/branches/{branch}`), whether the App may bypass each
//! ruleset (`GET /rulesets/{id}`: `current_user_can_bypass`), and classic
//! branch protection (`protected` and its required checks on
//! `GET /branches/{branch}`: the rest of it needs administration access).
//!
//! Owns: those reads and their shapes, summed up as `core::ship::BranchRules`.
//! Must not: decide how to land under them (`core::ship::landing_plan`).

use serde_json::Value;

use super::RepoClient;
use crate::github::client::GitHubError;
use taskgate_core::config::MergeMethod;
use taskgate_core::ship::{
    BranchRule, BranchRules, Bypass, QueueGrouping, QueueMethod, QueueSettings, ReviewFlags,
    RuleKind,
};

/// Pages of rules read at most (100 rules a page).
const MAX_PAGES: usize = 10;

impl RepoClient<'_> {
    /// The rules taskgate lands under on `branch`: every active ruleset
    /// rule, each with whether the App may bypass its ruleset, and classic
    /// protection's required checks.
    pub async fn branch_rules(&self, branch: &str) -> Result<BranchRules, GitHubError> {
        let listed = self.listed_rules(branch).await?;
        let mut bypass: Vec<(u64, Bypass)> = Vec::new();
        let mut rules = Vec::new();
        let mut queue = QueueSettings::default();
        for v in &listed {
            if v["type"] == "merge_queue" {
                queue = queue_settings(&v["parameters"]);
            }
            let ruleset = v["ruleset_id"].as_u64();
            let how = match ruleset {
                Some(id) => match bypass.iter().find(|(known, _)| *known == id) {
                    Some((_, how)) => *how,
                    None => {
                        let how = self.ruleset_bypass(id).await?;
                        bypass.push((id, how));
                        how
                    }
                },
                None => Bypass::Never,
            };
            rules.push(BranchRule {
                rule: rule_kind(v),
                ruleset,
                bypass: how,
            });
        }
        let (classic, contexts) = self.classic_protection(branch).await?;
        if !contexts.is_empty() {
            rules.push(BranchRule {
                rule: RuleKind::RequiredChecks { contexts },
                ruleset: None,
                bypass: Bypass::Never,
            });
        }
        Ok(BranchRules {
            branch: branch.to_owned(),
            classic,
            rules,
            merge_group_unsubscribed: false,
            queue,
        })
    }

    async fn listed_rules(&self, branch: &str) -> Result<Vec<Value>, GitHubError> {
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = self.path(&format!("rules/branches/{branch}?per_page=100&page={page}"));
            let items: Vec<Value> = self.get(&path).await?.json()?;
            let last = items.len() < 100;
            out.extend(items);
            if last {
                break;
            }
        }
        Ok(out)
    }

    /// Whether the App may bypass ruleset `id`; a ruleset it cannot read
    /// (an organisation's, say) is taken as not bypassable.
    async fn ruleset_bypass(&self, id: u64) -> Result<Bypass, GitHubError> {
        match self.get(&self.path(&format!("rulesets/{id}"))).await {
            Ok(r) => {
                let v: Value = r.json()?;
                Ok(match v["current_user_can_bypass"].as_str() {
                    Some("always" | "exempt") => Bypass::Always,
                    Some("pull_requests_only") => Bypass::PullRequestsOnly,
                    _ => Bypass::Never,
                })
            }
            Err(GitHubError::Http {
                status: 403 | 404, ..
            }) => Ok(Bypass::Never),
            Err(e) => Err(e),
        }
    }

    /// Whether classic protection is on, and the checks it requires.
    async fn classic_protection(&self, branch: &str) -> Result<(bool, Vec<String>), GitHubError> {
        let v: Value = match self.get(&self.path(&format!("branches/{branch}"))).await {
            Ok(r) => r.json()?,
            Err(GitHubError::Http { status: 404, .. }) => return Ok((false, vec![])),
            Err(e) => return Err(e),
        };
        let protection = &v["protection"];
        let enabled = protection["enabled"].as_bool().unwrap_or(false);
        let contexts = protection["required_status_checks"]["contexts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        Ok((enabled, contexts))
    }
}

/// The `merge_queue` rule's parameters: how groups are built and landed.
/// A missing `merge_method` is GitHub's default (`MERGE`); one taskgate
/// does not know is kept, and refused by `core::ship::landing_plan`.
fn queue_settings(params: &Value) -> QueueSettings {
    QueueSettings {
        method: params["merge_method"]
            .as_str()
            .map_or(QueueMethod::Merge, QueueMethod::parse),
        grouping: match params["grouping_strategy"].as_str() {
            Some("HEADGREEN") => QueueGrouping::HeadGreen,
            _ => QueueGrouping::AllGreen,
        },
    }
}

fn rule_kind(v: &Value) -> RuleKind {
    let params = &v["parameters"];
    match v["type"].as_str().unwrap_or_default() {
        "pull_request" => RuleKind::PullRequest {
            approvals: params["required_approving_review_count"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            methods: params["allowed_merge_methods"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| match m.as_str() {
                    Some("merge") => Some(MergeMethod::Merge),
                    Some("squash") => Some(MergeMethod::Squash),
                    Some("rebase") => Some(MergeMethod::Rebase),
                    _ => None,
                })
                .collect(),
            review: ReviewFlags {
                code_owners: params["require_code_owner_review"].as_bool() == Some(true),
                last_push: params["require_last_push_approval"].as_bool() == Some(true),
                dismiss_stale: params["dismiss_stale_reviews_on_push"].as_bool() == Some(true),
            },
        },
        "required_status_checks" => RuleKind::RequiredChecks {
            contexts: params["required_status_checks"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["context"].as_str())
                .map(str::to_owned)
                .collect(),
        },
        "required_linear_history" => RuleKind::LinearHistory,
        "non_fast_forward" => RuleKind::NonFastForward,
        "deletion" => RuleKind::Deletion,
        "merge_queue" => RuleKind::MergeQueue,
        other => RuleKind::Other {
            name: other.to_owned(),
        },
    }
}
