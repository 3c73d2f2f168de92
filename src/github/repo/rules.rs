//! The rules of a branch, read as the App sees them: its rulesets' active
//! rules (`GET /rules/branches/{branch}`), whether the App may bypass each
//! ruleset (`GET /rulesets/{id}`: `current_user_can_bypass`), and classic
//! branch protection (`protected` and its required checks on
//! `GET /branches/{branch}`: the rest of it needs administration access).
//!
//! Owns: those reads and their shapes, summed up as `core::ship::BranchRules`.
//! Must not: decide how to land under them (`core::ship::landing_plan`).

use serde::Deserialize;

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
            if v.kind == "merge_queue" {
                queue = queue_settings(&v.parameters);
            }
            let ruleset = v.ruleset_id;
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

    async fn listed_rules(&self, branch: &str) -> Result<Vec<ListedRule>, GitHubError> {
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = self.path(&format!("rules/branches/{branch}?per_page=100&page={page}"));
            let items: Vec<ListedRule> = self
                .get(&path)
                .await?
                .answer(&format!("GET /rules/branches/{branch}"))?;
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
                let v: Ruleset = r.answer(&format!("GET /rulesets/{id}"))?;
                Ok(match v.current_user_can_bypass.as_deref() {
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
        let v: Branch = match self.get(&self.path(&format!("branches/{branch}"))).await {
            Ok(r) => r.answer(&format!("GET /branches/{branch}"))?,
            Err(GitHubError::Http { status: 404, .. }) => return Ok((false, vec![])),
            Err(e) => return Err(e),
        };
        let protection = v.protection.unwrap_or_default();
        let contexts = protection
            .required_status_checks
            .map(|checks| checks.contexts)
            .unwrap_or_default();
        Ok((protection.enabled.unwrap_or(false), contexts))
    }
}

/// A rule as `GET /rules/branches/{branch}` lists it.
#[derive(Debug, Deserialize)]
struct ListedRule {
    #[serde(rename = "type")]
    kind: String,
    /// Not in `required` of GitHub's schema: a rule may come from no
    /// ruleset taskgate can name.
    #[serde(default)]
    ruleset_id: Option<u64>,
    /// Each rule type has its own parameters, and some (`deletion`,
    /// `non_fast_forward`) none: every one taskgate reads is optional here
    /// and defaults as GitHub does when it is left out.
    #[serde(default)]
    parameters: RuleParameters,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RuleParameters {
    /// `merge_queue`.
    merge_method: Option<String>,
    grouping_strategy: Option<String>,
    /// `pull_request`.
    required_approving_review_count: Option<u64>,
    allowed_merge_methods: Vec<String>,
    require_code_owner_review: bool,
    require_last_push_approval: bool,
    dismiss_stale_reviews_on_push: bool,
    /// `required_status_checks`.
    required_status_checks: Vec<StatusCheck>,
}

#[derive(Debug, Deserialize)]
struct StatusCheck {
    context: String,
}

/// `GET /rulesets/{id}`: whether the App may bypass it. Not in
/// `required` of GitHub's schema (shown only to who may see it).
#[derive(Debug, Deserialize)]
struct Ruleset {
    #[serde(default)]
    current_user_can_bypass: Option<String>,
}

/// `GET /branches/{branch}`, as far as classic protection. Every field of
/// `protection` is optional in GitHub's schema (the App without
/// administration access sees only some).
#[derive(Debug, Deserialize)]
struct Branch {
    #[serde(default)]
    protection: Option<Protection>,
}

#[derive(Debug, Default, Deserialize)]
struct Protection {
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    required_status_checks: Option<RequiredChecks>,
}

#[derive(Debug, Deserialize)]
struct RequiredChecks {
    #[serde(default)]
    contexts: Vec<String>,
}

/// The `merge_queue` rule's parameters: how groups are built and landed.
/// A missing `merge_method` is GitHub's default (`MERGE`); one taskgate
/// does not know is kept, and refused by `core::ship::landing_plan`.
fn queue_settings(params: &RuleParameters) -> QueueSettings {
    QueueSettings {
        method: params
            .merge_method
            .as_deref()
            .map_or(QueueMethod::Merge, QueueMethod::parse),
        grouping: match params.grouping_strategy.as_deref() {
            Some("HEADGREEN") => QueueGrouping::HeadGreen,
            _ => QueueGrouping::AllGreen,
        },
    }
}

fn rule_kind(v: &ListedRule) -> RuleKind {
    let params = &v.parameters;
    match v.kind.as_str() {
        "pull_request" => RuleKind::PullRequest {
            approvals: params
                .required_approving_review_count
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            methods: params
                .allowed_merge_methods
                .iter()
                .filter_map(|m| match m.as_str() {
                    "merge" => Some(MergeMethod::Merge),
                    "squash" => Some(MergeMethod::Squash),
                    "rebase" => Some(MergeMethod::Rebase),
                    _ => None,
                })
                .collect(),
            review: ReviewFlags {
                code_owners: params.require_code_owner_review,
                last_push: params.require_last_push_approval,
                dismiss_stale: params.dismiss_stale_reviews_on_push,
            },
        },
        "required_status_checks" => RuleKind::RequiredChecks {
            contexts: params
                .required_status_checks
                .iter()
                .map(|c| c.context.clone())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::client::ApiResponse;

    fn answer(body: &str) -> ApiResponse {
        ApiResponse {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: body.to_owned().into(),
        }
    }

    /// Rules as `GET /rules/branches/{branch}` lists them, in the shapes
    /// of GitHub's documented rule types (REST docs, "Get rules for a
    /// branch", and the `repository-rule-detailed` schema).
    const RULES: &str = r#"[
      {"type": "deletion", "ruleset_source_type": "Repository", "ruleset_source": "monalisa/my-repo", "ruleset_id": 42},
      {"type": "pull_request", "ruleset_id": 42, "parameters": {
        "dismiss_stale_reviews_on_push": true, "require_code_owner_review": false,
        "require_last_push_approval": false, "required_approving_review_count": 2,
        "required_review_thread_resolution": false, "allowed_merge_methods": ["squash", "rebase"]}},
      {"type": "required_status_checks", "ruleset_id": 43, "parameters": {
        "strict_required_status_checks_policy": true,
        "required_status_checks": [{"context": "ci/build", "integration_id": 1}]}},
      {"type": "merge_queue", "ruleset_id": 43, "parameters": {
        "merge_method": "SQUASH", "grouping_strategy": "HEADGREEN", "max_entries_to_build": 5}}
    ]"#;

    #[test]
    fn rules_are_read_from_githubs_shapes() {
        let rules: Vec<ListedRule> = answer(RULES).answer("GET /rules/branches/main").unwrap();
        let kinds: Vec<RuleKind> = rules.iter().map(rule_kind).collect();
        assert_eq!(kinds[0], RuleKind::Deletion);
        assert_eq!(
            kinds[1],
            RuleKind::PullRequest {
                approvals: 2,
                methods: vec![MergeMethod::Squash, MergeMethod::Rebase],
                review: ReviewFlags {
                    code_owners: false,
                    last_push: false,
                    dismiss_stale: true,
                },
            }
        );
        assert_eq!(
            kinds[2],
            RuleKind::RequiredChecks {
                contexts: vec!["ci/build".into()]
            }
        );
        let queue = queue_settings(&rules[3].parameters);
        assert_eq!(queue.grouping, QueueGrouping::HeadGreen);
        let branch: Branch = answer(r#"{"name": "main", "protected": true, "protection": {"enabled": true, "required_status_checks": {"enforcement_level": "non_admins", "contexts": ["ci"]}}}"#)
            .answer("GET /branches/main")
            .unwrap();
        let protection = branch.protection.unwrap();
        assert_eq!(protection.enabled, Some(true));
        assert_eq!(protection.required_status_checks.unwrap().contexts, ["ci"]);
    }

    #[test]
    fn a_rule_missing_its_type_is_an_error_naming_the_call() {
        let err = answer(r#"[{"ruleset_id": 42, "parameters": {}}]"#)
            .answer::<Vec<ListedRule>>("GET /rules/branches/main")
            .unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: GET /rules/branches/main: missing field `type` at line 1 column 37");
    }
}
