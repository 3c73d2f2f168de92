//! The rules API: the active rules of a branch
//! (`GET /repos/{owner}/{repo}/rules/branches/{branch}`) and one ruleset
//! (`GET /repos/{owner}/{repo}/rulesets/{ruleset_id}`), and the refusal
//! every route that moves a branch gives when its rules say no.
//!
//! Owns: GitHub's shapes for both reads — a rule's `type`, `parameters`
//! and ruleset source; a ruleset's `current_user_can_bypass` for the
//! caller — and [`refused`], the one check the ref, merge and pull routes
//! call before they move a branch. Must not: decide what a rule says
//! (`state::rules` does) or move anything.
//!
//! GitHub lists only rulesets here: classic branch protection is not a
//! ruleset (404 by id, absent from a branch's rules), though it makes the
//! branch `protected` (`GET /branches/{branch}`). A ruleset's bypass list
//! is not shown to an App; `current_user_can_bypass` says whether the
//! caller itself may bypass it.

use serde_json::{json, Value};

use super::issues::repo;
use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::render::{self, HTML};
use crate::state::{Actor, Change, Repo, Rule, Ruleset, State};

pub const ROUTES: &[Route] = &[
    inst(
        "GET",
        "/repos/{owner}/{repo}/rules/branches/{branch}",
        branch_rules,
    ),
    inst(
        "GET",
        "/repos/{owner}/{repo}/rulesets/{ruleset_id}",
        get_ruleset,
    ),
];

/// Who an API request acts as: an installation token is its App.
pub(crate) fn api_actor(st: &State) -> Actor {
    Actor::App(st.app_id)
}

/// The refusal of `change` to `branch` by the API's caller, with
/// `status` (422 for a ref, 409 for the merges API, 405 for a pull
/// request's merge); `None` when the rules let it through.
pub(crate) fn refused(
    st: &State,
    repo: &Repo,
    branch: &str,
    change: &Change,
    status: u16,
) -> Option<Reply> {
    let violations = repo.violations(branch, &api_actor(st), change)?;
    Some(Reply::error(status, &violations.message()))
}

fn parameters(rule: &Rule) -> Option<Value> {
    Some(match rule {
        Rule::PullRequest {
            required_approvals,
            allowed_merge_methods,
            code_owners,
            last_push,
            dismiss_stale,
        } => {
            let methods = if allowed_merge_methods.is_empty() {
                vec!["merge".to_owned(), "squash".into(), "rebase".into()]
            } else {
                allowed_merge_methods.clone()
            };
            json!({
                "allowed_merge_methods": methods,
                "dismiss_stale_reviews_on_push": dismiss_stale,
                "require_code_owner_review": code_owners,
                "require_last_push_approval": last_push,
                "required_approving_review_count": required_approvals,
                "required_review_thread_resolution": false,
            })
        }
        Rule::RequiredStatusChecks(contexts) => json!({
            "do_not_enforce_on_create": false,
            "required_status_checks": contexts.iter().map(|c| json!({"context": c})).collect::<Vec<_>>(),
            "strict_required_status_checks_policy": false,
        }),
        Rule::MergeQueue => queue_parameters("MERGE", "ALLGREEN"),
        Rule::MergeQueueBy {
            merge_method,
            grouping_strategy,
        } => queue_parameters(merge_method, grouping_strategy),
        Rule::RequiredLinearHistory | Rule::NonFastForward | Rule::Deletion | Rule::Creation => {
            return None
        }
    })
}

fn queue_parameters(merge_method: &str, grouping_strategy: &str) -> Value {
    json!({
        "check_response_timeout_minutes": 60,
        "grouping_strategy": grouping_strategy,
        "max_entries_to_build": 5,
        "max_entries_to_merge": 5,
        "merge_method": merge_method,
        "min_entries_to_merge": 1,
        "min_entries_to_merge_wait_minutes": 5,
    })
}

fn rule_json(rule: &Rule) -> Value {
    let mut v = json!({ "type": rule.kind() });
    if let Some(p) = parameters(rule) {
        v["parameters"] = p;
    }
    v
}

fn branch_rules(st: &mut State, req: &Req) -> HResult {
    let repo = repo(st, req)?;
    let branch = req.param("branch");
    let items = repo
        .rules_for(branch)
        .filter(|set| !set.classic)
        .flat_map(|set| {
            set.rules.iter().map(|rule| {
                let mut v = rule_json(rule);
                v["ruleset_source_type"] = json!("Repository");
                v["ruleset_source"] = json!(repo.full_name());
                v["ruleset_id"] = json!(set.id);
                v
            })
        })
        .collect();
    Ok(paginate(req, items))
}

fn get_ruleset(st: &mut State, req: &Req) -> HResult {
    let id = req.num("ruleset_id")?;
    let repo = repo(st, req)?;
    let set = repo
        .rulesets
        .iter()
        .find(|s| s.id == id && !s.classic)
        .ok_or_else(Reply::not_found)?;
    Ok(Reply::ok(ruleset_json(st, req, repo, set)))
}

fn ruleset_json(st: &State, req: &Req, repo: &Repo, set: &Ruleset) -> Value {
    let api = render::repo_api(&req.base, repo);
    let can_bypass = if set.bypassed_by(&api_actor(st)) {
        "always"
    } else {
        "never"
    };
    let include: Vec<String> = set
        .branches
        .iter()
        .map(|b| {
            if b.starts_with('~') || b.starts_with("refs/") {
                b.clone()
            } else {
                format!("refs/heads/{b}")
            }
        })
        .collect();
    let at = repo.clock.now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    json!({
        "id": set.id,
        "name": set.name,
        "target": "branch",
        "source_type": "Repository",
        "source": repo.full_name(),
        "enforcement": "active",
        "current_user_can_bypass": can_bypass,
        "node_id": format!("RRS_{}", set.id),
        "_links": {
            "self": {"href": format!("{api}/rulesets/{}", set.id)},
            "html": {"href": format!("{HTML}/{}/rules/{}", repo.full_name(), set.id)},
        },
        "conditions": {"ref_name": {"include": include, "exclude": []}},
        "rules": set.rules.iter().map(rule_json).collect::<Vec<_>>(),
        "created_at": at,
        "updated_at": at,
    })
}
