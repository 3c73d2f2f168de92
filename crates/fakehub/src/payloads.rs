//! Webhook payloads shaped like GitHub App deliveries (compared with
//! `fixtures/webhooks/` and checked against GitHub's webhook schemas,
//! `fixtures/openapi/webhooks-subset.json`): the object, `repository`,
//! `sender` and `installation: {id, node_id}`, built from the fake's state so
//! the ids, numbers and shas agree with what the REST API answers.
//!
//! Each builder has two forms: an internal `*_in(&State, &Repo, base, ...)`
//! that the echo engine calls under the state lock, right after a write
//! (`emit`), and a public one taking a [`RepoHandle`], for tests and
//! `taskgate demo` that deliver a payload themselves.

use serde_json::{json, Value};

use crate::render;
use crate::state::{CheckSuite, Comment, Repo, State};
use crate::RepoHandle;

pub(crate) const ZERO_SHA: &str = "0000000000000000000000000000000000000000";

fn with<T>(repo: &RepoHandle, f: impl FnOnce(&State, &Repo, &str) -> T) -> T {
    let st = repo.shared().lock();
    let base = repo.shared().base_url.clone();
    f(&st, &st.repos[repo.key()], &base)
}

pub(crate) fn envelope(st: &State, r: &Repo, base: &str, sender: &str, mut v: Value) -> Value {
    v["repository"] = render::repository(st, base, r);
    v["sender"] = render::user_by_login(st, base, sender);
    let key = r.full_name().to_lowercase();
    if let Some(i) = st.installations.values().find(|i| i.repos.contains(&key)) {
        v["installation"] =
            json!({"id": i.id, "node_id": format!("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{}", i.id)});
    }
    v
}

/// `v` with the fields of the object `extra` added (label, changes, ...).
fn plus(mut v: Value, extra: Value) -> Value {
    if let Value::Object(fields) = extra {
        for (k, x) in fields {
            v[k] = x;
        }
    }
    v
}

/// A label as webhooks show it (`{name}` alone if the repository lacks it).
pub(crate) fn label_json(base: &str, r: &Repo, name: &str) -> Value {
    r.label(name)
        .map(|l| render::label(base, r, l))
        .unwrap_or_else(|| json!({"name": name}))
}

/// `issues` / `action` on issue `number`, sent by `sender`; `extra` adds
/// `label`, `assignee` or `changes`.
pub(crate) fn issues_in(
    st: &State,
    r: &Repo,
    base: &str,
    (action, number, sender): (&str, u64, &str),
    extra: Value,
) -> Value {
    let issue = r.issues.get(&number).expect("issue exists");
    let v = json!({"action": action, "issue": render::issue(st, base, r, issue)});
    envelope(st, r, base, sender, plus(v, extra))
}

/// `issue_comment` / `action` for `comment` on issue `number`.
pub(crate) fn issue_comment_in(
    st: &State,
    r: &Repo,
    base: &str,
    (action, comment, sender): (&str, &Comment, &str),
    extra: Value,
) -> Value {
    let issue = r.issues.get(&comment.issue_number).expect("issue exists");
    let v = json!({"action": action, "issue": render::issue(st, base, r, issue),
                   "comment": render::comment(st, base, r, comment)});
    envelope(st, r, base, sender, plus(v, extra))
}

/// `pull_request` / `action` on pull request `number`.
pub(crate) fn pull_request_in(
    st: &State,
    r: &Repo,
    base: &str,
    (action, number, sender): (&str, u64, &str),
    extra: Value,
) -> Value {
    let p = r.pulls.get(&number).expect("pull request exists");
    let v =
        json!({"action": action, "number": number, "pull_request": render::pull(st, base, r, p)});
    envelope(st, r, base, sender, plus(v, extra))
}

/// `pull_request_review` / `action` for review `id` of pull request
/// `number`: the review as webhooks spell it (`state` in lower case).
pub(crate) fn pull_request_review_in(
    st: &State,
    r: &Repo,
    base: &str,
    (action, number, id, sender): (&str, u64, u64, &str),
) -> Value {
    let p = r.pulls.get(&number).expect("pull request exists");
    let review = r
        .reviews
        .iter()
        .find(|x| x.id == id)
        .expect("review exists");
    let mut rendered = render::review(st, base, r, review);
    rendered["state"] = json!(review.state.to_lowercase());
    let v =
        json!({"action": action, "review": rendered, "pull_request": render::pull(st, base, r, p)});
    envelope(st, r, base, sender, v)
}

/// `pull_request_review` / `submitted` for review `id` of pull request
/// `number`, sent by its reviewer: as GitHub would send it, for a test to
/// deliver itself.
pub fn pull_request_review_submitted(repo: &RepoHandle, number: u64, id: u64) -> Value {
    with(repo, |st, r, base| {
        let login = r
            .reviews
            .iter()
            .find(|x| x.id == id)
            .expect("review exists")
            .user
            .clone();
        pull_request_review_in(st, r, base, ("submitted", number, id, &login))
    })
}

/// What one `push` webhook says.
pub(crate) struct Push<'a> {
    pub branch: &'a str,
    /// Zeros for a created branch.
    pub before: &'a str,
    /// Zeros for a deleted branch.
    pub after: &'a str,
    /// The commits listed, oldest first.
    pub commits: &'a [String],
    pub forced: bool,
    pub pusher: &'a str,
}

/// Whether `sha` is new to the repository with a push of `branch`: on no
/// other branch already. GitHub marks the others `distinct: false` (a
/// fast-forward to commits another branch holds brings none of its own).
fn distinct(r: &Repo, branch: &str, sha: &str) -> bool {
    !r.branches
        .iter()
        .any(|(b, head)| b != branch && r.is_ancestor(sha, head))
}

fn push_commit_json(r: &Repo, sha: &str, pusher: &str, distinct: bool) -> Value {
    let html = format!("{}/{}", render::HTML, r.full_name());
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
    json!({"id": c.sha, "tree_id": c.tree, "distinct": distinct, "message": c.message, "timestamp": render::ts(c.date),
           "url": format!("{html}/commit/{}", c.sha), "author": who, "committer": who,
           "added": added, "removed": removed, "modified": modified})
}

/// `push` of one branch.
pub(crate) fn push_in(st: &State, r: &Repo, base: &str, p: &Push) -> Value {
    let html = format!("{}/{}", render::HTML, r.full_name());
    let commits: Vec<Value> = p
        .commits
        .iter()
        .filter(|s| r.commits.contains_key(*s))
        .map(|s| push_commit_json(r, s, p.pusher, distinct(r, p.branch, s)))
        .collect();
    let mut repository = render::repository(st, base, r);
    repository["owner"]["name"] = json!(r.owner);
    repository["owner"]["email"] = Value::Null;
    repository["master_branch"] = json!(r.default_branch);
    // A push's repository carries Unix seconds, as GitHub sends them there
    // (its other payloads carry dates): `pushed_at` is this push.
    repository["created_at"] = json!(1_704_067_200);
    repository["pushed_at"] = json!(st.clock.now().timestamp());
    let (before, after) = (p.before, p.after);
    let v = json!({
        "ref": format!("refs/heads/{}", p.branch), "before": before, "after": after,
        "pusher": {"name": p.pusher, "email": format!("{}@users.noreply.github.com", p.pusher)},
        "created": before == ZERO_SHA, "deleted": after == ZERO_SHA, "forced": p.forced, "base_ref": null,
        "compare": format!("{html}/compare/{}...{}", &before[..12], &after[..12]),
        "head_commit": if r.commits.contains_key(after) { push_commit_json(r, after, p.pusher, distinct(r, p.branch, after)) } else { Value::Null },
        "commits": commits,
    });
    let mut v = envelope(st, r, base, p.pusher, v);
    v["repository"] = repository;
    v
}

/// `create` of branch `branch` by `sender`.
pub(crate) fn create_in(st: &State, r: &Repo, base: &str, branch: &str, sender: &str) -> Value {
    let v = json!({"ref": branch, "ref_type": "branch", "master_branch": r.default_branch,
                   "description": null, "pusher_type": "user"});
    envelope(st, r, base, sender, v)
}

/// GitHub's order of check conclusions, worst first: a suite concludes
/// with the worst of its runs.
const CONCLUSIONS: &[&str] = &[
    "action_required",
    "cancelled",
    "timed_out",
    "failure",
    "neutral",
    "success",
    "skipped",
];

/// A suite's status and conclusion, from its check runs.
pub(crate) fn suite_status(r: &Repo, s: &CheckSuite) -> (&'static str, Option<String>) {
    let runs: Vec<_> = r
        .check_runs
        .iter()
        .filter(|c| c.head_sha == s.head_sha && c.other_app.is_none())
        .collect();
    if runs.is_empty() {
        return ("queued", None);
    }
    if runs.iter().any(|c| c.status != "completed") {
        return ("in_progress", None);
    }
    let worst = runs
        .iter()
        .filter_map(|c| c.conclusion.as_deref())
        .min_by_key(|c| CONCLUSIONS.iter().position(|x| x == c).unwrap_or(99));
    ("completed", worst.map(str::to_string))
}

fn open_pulls_at(r: &Repo, api: &str, head_sha: &str) -> Vec<Value> {
    r.pulls
        .values()
        .filter(|p| p.state == "open" && r.branches.get(&p.head).map(String::as_str) == Some(head_sha))
        .map(|p| {
            let end = |b: &str| json!({"ref": b, "sha": r.branches.get(b), "repo": {"id": r.id, "url": api, "name": r.name}});
            json!({"url": format!("{api}/pulls/{}", p.number), "id": p.id, "number": p.number, "head": end(&p.head), "base": end(&p.base)})
        })
        .collect()
}

fn suite_json(st: &State, r: &Repo, base: &str, s: &CheckSuite) -> Value {
    let api = render::repo_api(base, r);
    let (status, conclusion) = suite_status(r, s);
    let runs = r
        .check_runs
        .iter()
        .filter(|c| c.head_sha == s.head_sha)
        .count();
    let head_commit = r.commits.get(&s.head_sha).map(|c| {
        let who =
            json!({"name": r.owner, "email": format!("{}@users.noreply.github.com", r.owner)});
        json!({"id": c.sha, "tree_id": c.tree, "message": c.message, "timestamp": render::ts(c.date),
               "author": who, "committer": who})
    });
    json!({
        "id": s.id, "node_id": format!("CS_{}", s.id), "head_branch": s.head_branch, "head_sha": s.head_sha,
        "status": status, "conclusion": conclusion, "url": format!("{api}/check-suites/{}", s.id),
        "before": s.before, "after": s.head_sha, "pull_requests": open_pulls_at(r, &api, &s.head_sha),
        "app": render::app(st, base), "created_at": render::ts(s.created_at), "updated_at": render::ts(s.created_at),
        "latest_check_runs_count": runs, "check_runs_url": format!("{api}/check-suites/{}/check-runs", s.id),
        "head_commit": head_commit, "rerequestable": true, "runs_rerequestable": true,
    })
}

/// `check_suite` / `action` for the App's suite on `head_sha`.
pub(crate) fn check_suite_in(
    st: &State,
    r: &Repo,
    base: &str,
    (action, head_sha, sender): (&str, &str, &str),
) -> Value {
    let s = r.suite(head_sha).expect("the check suite exists");
    let v = json!({"action": action, "check_suite": suite_json(st, r, base, s)});
    envelope(st, r, base, sender, v)
}

/// `issue_comment` / `created`, sent by the comment's author.
pub fn issue_comment_created(repo: &RepoHandle, issue_number: u64, comment: &Comment) -> Value {
    with(repo, |st, r, base| {
        let mut c = comment.clone();
        c.issue_number = issue_number;
        issue_comment_in(st, r, base, ("created", &c, &comment.author), json!({}))
    })
}

/// `issues` / `<action>` (opened, edited, closed, labeled, ...), sent by the author.
pub fn issues(action: &str, repo: &RepoHandle, issue_number: u64) -> Value {
    with(repo, |st, r, base| {
        let author = &r.issues.get(&issue_number).expect("issue exists").author;
        issues_in(st, r, base, (action, issue_number, author), json!({}))
    })
}

/// `issues` / `opened`.
pub fn issues_opened(repo: &RepoHandle, issue_number: u64) -> Value {
    issues("opened", repo, issue_number)
}

/// The commits a `push` payload lists at most: "The array includes a
/// maximum of 2048 commits. If necessary, you can use the Commits API to
/// fetch additional commits" (GitHub's description of the push event's
/// `commits`, `fixtures/openapi/webhooks-subset.json`). Nothing else in the
/// payload says it was capped (no `size` in a webhook, unlike the Events
/// API): a receiver sees exactly this many and must compare `before` with
/// `after`. Which ones GitHub keeps is not documented: the newest, here.
pub const PUSH_COMMITS_MAX: usize = 2048;

/// The first-parent chain from `after` back to (not including) `before`,
/// oldest first, at most [`PUSH_COMMITS_MAX`] (the newest).
pub(crate) fn chain(r: &Repo, after: &str, stop: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor = Some(after.to_string());
    while let Some(sha) = cursor {
        if stop(&sha) || !r.commits.contains_key(&sha) || out.len() >= PUSH_COMMITS_MAX {
            break;
        }
        cursor = r.commits[&sha].parents.first().cloned();
        out.push(sha);
    }
    out.reverse();
    out
}

/// `push` of `branch` from `before` (use `None` for a new branch) to its
/// current head, by `pusher`. Commits are the first-parent chain in between
/// (only the head for a new branch).
pub fn push(repo: &RepoHandle, branch: &str, before: Option<&str>, pusher: &str) -> Value {
    with(repo, |st, r, base| {
        let after = r
            .branches
            .get(branch)
            .cloned()
            .unwrap_or_else(|| ZERO_SHA.into());
        let mut commits = chain(r, &after, |sha| Some(sha) == before);
        if before.is_none() {
            commits = commits.split_off(commits.len().saturating_sub(1));
        }
        let p = Push {
            branch,
            before: before.unwrap_or(ZERO_SHA),
            after: &after,
            commits: &commits,
            forced: false,
            pusher,
        };
        push_in(st, r, base, &p)
    })
}

/// `pull_request` / `<action>` (opened, synchronize, closed, labeled, ...),
/// sent by the pull request's author.
pub fn pull_request(action: &str, repo: &RepoHandle, number: u64) -> Value {
    with(repo, |st, r, base| {
        let p = r.pulls.get(&number).expect("pull request exists");
        let mut extra = json!({});
        if action == "synchronize" {
            // The head's previous commit stands for the branch's old head.
            let after = r.branches.get(&p.head).cloned().unwrap_or_default();
            let before = r
                .commits
                .get(&after)
                .and_then(|c| c.parents.first().cloned());
            extra = json!({"before": before.unwrap_or_else(|| ZERO_SHA.into()), "after": after});
        }
        pull_request_in(st, r, base, (action, number, &p.author), extra)
    })
}

/// `pull_request` / `labeled`: `sender` added `label` to pull request `number`.
pub fn pull_request_labeled(repo: &RepoHandle, number: u64, label: &str, sender: &str) -> Value {
    with(repo, |st, r, base| {
        let extra = json!({"label": label_json(base, r, label)});
        pull_request_in(st, r, base, ("labeled", number, sender), extra)
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
    let prs = open_pulls_at(r, &api, &c.head_sha);
    v["pull_requests"] = json!(prs);
    v["check_suite"] = match r.suite(&c.head_sha) {
        Some(s) => suite_json(st, r, base, s),
        // A run seeded outside the API: GitHub would have a suite anyway.
        None => {
            let head_branch = r
                .branches
                .iter()
                .find(|(_, s)| **s == c.head_sha)
                .map(|(b, _)| b.clone());
            let seeded = CheckSuite {
                id: c.id + 1,
                head_sha: c.head_sha.clone(),
                head_branch,
                before: None,
                created_at: c.started_at.unwrap_or_else(|| st.clock.now()),
            };
            suite_json(st, r, base, &seeded)
        }
    };
    v
}

/// `check_run` / `action`, sent by `sender`.
pub(crate) fn check_run_in(
    st: &State,
    r: &Repo,
    base: &str,
    (action, check_run_id, sender): (&str, u64, &str),
    extra: Value,
) -> Value {
    let v = json!({"action": action, "check_run": check_run_json(st, r, base, check_run_id)});
    envelope(st, r, base, sender, plus(v, extra))
}

/// `check_run` / `<action>` (created, completed, rerequested), sent by the bot
/// for created/completed and by `sender` otherwise.
pub fn check_run(action: &str, repo: &RepoHandle, check_run_id: u64) -> Value {
    with(repo, |st, r, base| {
        check_run_in(
            st,
            r,
            base,
            (action, check_run_id, &st.bot_login()),
            json!({}),
        )
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
        let extra = json!({"requested_action": {"identifier": identifier}});
        check_run_in(
            st,
            r,
            base,
            ("requested_action", check_run_id, sender),
            extra,
        )
    })
}

/// `workflow_run` / `action` for run `run_id`, sent by `sender`.
pub(crate) fn workflow_run_in(
    st: &State,
    r: &Repo,
    base: &str,
    (action, run_id, sender): (&str, u64, &str),
) -> Value {
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
    envelope(st, r, base, sender, v)
}

/// `workflow_run` / `<action>` (requested, in_progress, completed) for a run
/// of the fake (see `RepoHandle::complete_run`), sent by the bot: the app
/// dispatched it.
pub fn workflow_run(action: &str, repo: &RepoHandle, run_id: u64) -> Value {
    with(repo, |st, r, base| {
        workflow_run_in(st, r, base, (action, run_id, &st.bot_login()))
    })
}
