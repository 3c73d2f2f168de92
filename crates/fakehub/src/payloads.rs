//! Webhook payloads shaped like GitHub App deliveries (compared with
//! `fixtures/webhooks/`): the object, `repository`, `sender` and
//! `installation: {id, node_id}`, built from the fake's current state so the
//! ids, numbers and shas agree with what the REST API answers.

use serde_json::{json, Value};

use crate::render;
use crate::state::{Comment, Repo, State};
use crate::RepoHandle;

const ZERO_SHA: &str = "0000000000000000000000000000000000000000";

fn with<T>(repo: &RepoHandle, f: impl FnOnce(&State, &Repo, &str) -> T) -> T {
    let st = repo.shared().lock();
    let base = repo.shared().base_url.clone();
    f(&st, &st.repos[repo.key()], &base)
}

fn envelope(st: &State, r: &Repo, base: &str, sender: &str, mut v: Value) -> Value {
    v["repository"] = render::repository(st, base, r);
    v["sender"] = render::user_by_login(st, base, sender);
    let key = r.full_name().to_lowercase();
    if let Some(i) = st.installations.values().find(|i| i.repos.contains(&key)) {
        v["installation"] =
            json!({"id": i.id, "node_id": format!("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{}", i.id)});
    }
    v
}

/// `issue_comment` / `created`, sent by the comment's author.
pub fn issue_comment_created(repo: &RepoHandle, issue_number: u64, comment: &Comment) -> Value {
    with(repo, |st, r, base| {
        let issue = r.issues.get(&issue_number).expect("issue exists");
        let v = json!({"action": "created", "issue": render::issue(st, base, r, issue),
                       "comment": render::comment(st, base, r, comment)});
        envelope(st, r, base, &comment.author, v)
    })
}

/// `issues` / `<action>` (opened, edited, closed, labeled, ...), sent by the author.
pub fn issues(action: &str, repo: &RepoHandle, issue_number: u64) -> Value {
    with(repo, |st, r, base| {
        let issue = r.issues.get(&issue_number).expect("issue exists");
        let v = json!({"action": action, "issue": render::issue(st, base, r, issue)});
        envelope(st, r, base, &issue.author, v)
    })
}

/// `issues` / `opened`.
pub fn issues_opened(repo: &RepoHandle, issue_number: u64) -> Value {
    issues("opened", repo, issue_number)
}

/// `push` of `branch` from `before` (use `None` for a new branch) to its
/// current head, by `pusher`. Commits are the first-parent chain in between.
pub fn push(repo: &RepoHandle, branch: &str, before: Option<&str>, pusher: &str) -> Value {
    with(repo, |st, r, base| {
        let after = r
            .branches
            .get(branch)
            .cloned()
            .unwrap_or_else(|| ZERO_SHA.into());
        let html = format!("{}/{}", render::HTML, r.full_name());
        let commit_json = |sha: &str| {
            let c = &r.commits[sha];
            let who = json!({"name": pusher, "email": format!("{pusher}@users.noreply.github.com"), "username": pusher});
            let parent_files = c
                .parents
                .first()
                .and_then(|p| r.commits.get(p))
                .map(|p| p.files.clone())
                .unwrap_or_default();
            let added: Vec<&String> = c
                .files
                .keys()
                .filter(|f| !parent_files.contains_key(*f))
                .collect();
            let modified: Vec<&String> = c
                .files
                .iter()
                .filter(|(f, v)| parent_files.get(*f).is_some_and(|p| p != *v))
                .map(|(f, _)| f)
                .collect();
            let removed: Vec<&String> = parent_files
                .keys()
                .filter(|f| !c.files.contains_key(*f))
                .collect();
            json!({"id": c.sha, "tree_id": c.sha, "distinct": true, "message": c.message, "timestamp": render::ts(c.date),
                   "url": format!("{html}/commit/{}", c.sha), "author": who, "committer": who,
                   "added": added, "removed": removed, "modified": modified})
        };
        let mut chain = Vec::new();
        let mut cursor = Some(after.clone());
        while let Some(sha) = cursor {
            if Some(sha.as_str()) == before || !r.commits.contains_key(&sha) || chain.len() >= 20 {
                break;
            }
            cursor = r.commits[&sha].parents.first().cloned();
            chain.push(sha);
        }
        if before.is_none() {
            chain.truncate(1);
        }
        chain.reverse();
        let commits: Vec<Value> = chain.iter().map(|s| commit_json(s)).collect();
        let before = before.unwrap_or(ZERO_SHA);
        let mut repository = render::repository(st, base, r);
        repository["owner"]["name"] = json!(r.owner);
        repository["owner"]["email"] = Value::Null;
        repository["master_branch"] = json!(r.default_branch);
        let v = json!({
            "ref": format!("refs/heads/{branch}"), "before": before, "after": after,
            "pusher": {"name": pusher, "email": format!("{pusher}@users.noreply.github.com")},
            "created": before == ZERO_SHA, "deleted": after == ZERO_SHA, "forced": false, "base_ref": null,
            "compare": format!("{html}/compare/{}...{}", &before[..12], &after[..12]),
            "head_commit": if r.commits.contains_key(&after) { commit_json(&after) } else { Value::Null },
            "commits": commits,
        });
        let mut v = envelope(st, r, base, pusher, v);
        v["repository"] = repository;
        v
    })
}

/// `pull_request` / `<action>` (opened, synchronize, closed, labeled, ...),
/// sent by the pull request's author.
pub fn pull_request(action: &str, repo: &RepoHandle, number: u64) -> Value {
    with(repo, |st, r, base| {
        let p = r.pulls.get(&number).expect("pull request exists");
        let v = json!({"action": action, "number": number, "pull_request": render::pull(st, base, r, p)});
        envelope(st, r, base, &p.author, v)
    })
}

/// `pull_request` / `labeled`: `sender` added `label` to pull request `number`.
pub fn pull_request_labeled(repo: &RepoHandle, number: u64, label: &str, sender: &str) -> Value {
    with(repo, |st, r, base| {
        let p = r.pulls.get(&number).expect("pull request exists");
        let label = r
            .label(label)
            .map(|l| render::label(base, r, l))
            .unwrap_or_else(|| json!({"name": label}));
        let v = json!({"action": "labeled", "number": number, "label": label,
                       "pull_request": render::pull(st, base, r, p)});
        envelope(st, r, base, sender, v)
    })
}

fn check_run_json(st: &State, r: &Repo, base: &str, check_run_id: u64) -> Value {
    let c = r
        .check_runs
        .iter()
        .find(|c| c.id == check_run_id)
        .expect("check run exists");
    let mut v = render::check_run(st, base, r, c);
    let api = render::repo_api(base, r);
    let prs: Vec<Value> = r
        .pulls
        .values()
        .filter(|p| p.state == "open" && r.branches.get(&p.head) == Some(&c.head_sha))
        .map(|p| {
            let end = |b: &str| json!({"ref": b, "sha": r.branches.get(b), "repo": {"id": r.id, "url": api, "name": r.name}});
            json!({"url": format!("{api}/pulls/{}", p.number), "id": p.id, "number": p.number, "head": end(&p.head), "base": end(&p.base)})
        })
        .collect();
    let head_branch = r
        .branches
        .iter()
        .find(|(_, s)| **s == c.head_sha)
        .map(|(b, _)| b.clone());
    v["pull_requests"] = json!(prs);
    v["check_suite"] = json!({
        "id": c.id + 1, "node_id": format!("CS_{}", c.id + 1), "head_branch": head_branch, "head_sha": c.head_sha,
        "status": c.status, "conclusion": c.conclusion, "url": format!("{api}/check-suites/{}", c.id + 1),
        "before": null, "after": c.head_sha, "pull_requests": prs, "app": v["app"].clone(),
        "created_at": v["started_at"].clone(), "updated_at": v["started_at"].clone(),
    });
    v["deployment"] = Value::Null;
    v
}

/// `check_run` / `<action>` (created, completed, rerequested), sent by the bot
/// for created/completed and by `sender` otherwise.
pub fn check_run(action: &str, repo: &RepoHandle, check_run_id: u64) -> Value {
    with(repo, |st, r, base| {
        let v = json!({"action": action, "check_run": check_run_json(st, r, base, check_run_id)});
        envelope(st, r, base, &st.bot_login(), v)
    })
}

/// `check_run` / `requested_action`: a user pressed an action button.
pub fn check_run_requested_action(
    repo: &RepoHandle,
    check_run_id: u64,
    identifier: &str,
    sender: &str,
) -> Value {
    with(repo, |st, r, base| {
        let v = json!({"action": "requested_action", "check_run": check_run_json(st, r, base, check_run_id),
                       "requested_action": {"identifier": identifier}});
        envelope(st, r, base, sender, v)
    })
}

/// `workflow_run` / `<action>` (requested, in_progress, completed) for a run
/// of the fake (see `RepoHandle::complete_run`), sent by the bot: the app
/// dispatched it.
pub fn workflow_run(action: &str, repo: &RepoHandle, run_id: u64) -> Value {
    with(repo, |st, r, base| {
        let run = r
            .runs
            .iter()
            .find(|run| run.id == run_id)
            .expect("the workflow run exists");
        let wf_id = r.workflows.get(&run.workflow).copied().unwrap_or(0);
        let api = render::repo_api(base, r);
        let path = format!(".github/workflows/{}", run.workflow);
        let workflow = json!({
            "id": wf_id, "node_id": format!("W_{wf_id}"), "name": run.workflow, "path": path, "state": "active",
            "created_at": render::ts(run.created_at), "updated_at": render::ts(run.created_at),
            "url": format!("{api}/actions/workflows/{wf_id}"),
            "html_url": format!("{}/{}/blob/{}/{path}", render::HTML, r.full_name(), r.default_branch),
            "badge_url": format!("{}/{}/workflows/{}/badge.svg", render::HTML, r.full_name(), run.workflow),
        });
        let v = json!({"action": action, "workflow": workflow,
                       "workflow_run": crate::routes::actions::run_json(st, base, r, run)});
        envelope(st, r, base, &st.bot_login(), v)
    })
}
