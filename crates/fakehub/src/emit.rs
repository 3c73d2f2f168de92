//! Which webhooks a write sends, and the state GitHub changes with them.
//!
//! It owns *the choice of echoes per write*: route handlers and
//! `RepoHandle` actions call one function per family of write (issue
//! opened or changed, comment, pull request, branch moved, check run,
//! workflow run) right after applying it, under the state lock; the
//! function builds each payload (`payloads::*_in`) from the state as it now
//! is and queues it (`echo::queue`) when echoes are on for the repository.
//!
//! It also applies the side effects GitHub attaches to some writes whether
//! or not anyone listens: a push creates the App's check suite on its head
//! (when there is none yet), the first check run on a commit creates it
//! implicitly, and a fast-forward of a pull request's base onto its head
//! merges the pull request. It must not decide anything else about the
//! write itself: handlers validate and apply.

use serde_json::{json, Value};

use crate::agents::{self, Heard};
use crate::echo;
use crate::payloads::{self, Push, ZERO_SHA};
use crate::state::{CheckSuite, Comment, Issue, Pull, State};

/// Where a write happened: the repository key and the fake's base URL.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub key: &'a str,
    pub base: &'a str,
}

/// Builds and queues one payload when echoes are on for the repository.
fn send(
    st: &mut State,
    at: At,
    event: &str,
    build: impl FnOnce(&State, &crate::state::Repo) -> Value,
) {
    if !echo::on(st, at.key) || !echo::subscribed(st, at.key, event) {
        return;
    }
    let payload = build(st, &st.repos[at.key]);
    echo::queue(st, event, payload);
}

/// [`send`] for the echoes of other modules (`merge_queue`).
pub(crate) fn send_event(
    st: &mut State,
    at: At,
    event: &str,
    build: impl FnOnce(&State, &crate::state::Repo) -> Value,
) {
    send(st, at, event, build);
}

/// An `issues` webhook, or `pull_request` when the issue is a pull request.
fn issue_event(st: &mut State, at: At, (action, number, sender): (&str, u64, &str), extra: Value) {
    let is_pull = st.repos[at.key]
        .issues
        .get(&number)
        .is_some_and(|i| i.is_pull_request);
    if is_pull {
        pull(st, at, (action, number, sender), extra);
    } else {
        send(st, at, "issues", |st, r| {
            payloads::issues_in(st, r, at.base, (action, number, sender), extra)
        });
    }
}

fn label(st: &State, at: At, name: &str) -> Value {
    json!({"label": payloads::label_json(at.base, &st.repos[at.key], name)})
}

fn assignee(st: &State, at: At, login: &str) -> Value {
    json!({"assignee": crate::render::user_by_login(st, at.base, login)})
}

/// An issue was opened: `opened`, then `labeled` per label and `assigned`
/// per assignee it was opened with.
pub(crate) fn issue_opened(st: &mut State, at: At, number: u64, sender: &str) {
    st.written(at.key, format!("issue:{number}"));
    send(st, at, "issues", |st, r| {
        payloads::issues_in(st, r, at.base, ("opened", number, sender), json!({}))
    });
    let issue = st.repos[at.key].issues[&number].clone();
    for name in &issue.labels {
        let extra = label(st, at, name);
        issue_event(st, at, ("labeled", number, sender), extra);
        agents::heard(st, at, Some(number), &Heard::Labeled(name));
    }
    for login in &issue.assignees {
        let extra = assignee(st, at, login);
        issue_event(st, at, ("assigned", number, sender), extra);
        agents::heard(st, at, Some(number), &Heard::Assigned(login));
    }
}

/// Labels of issue (or pull request) `number` changed from `before`.
pub(crate) fn labels_changed(st: &mut State, at: At, number: u64, sender: &str, before: &[String]) {
    let now = st.repos[at.key].issues[&number].labels.clone();
    let has = |list: &[String], l: &str| list.iter().any(|x| x.eq_ignore_ascii_case(l));
    for name in before.iter().filter(|l| !has(&now, l)) {
        let extra = json!({"label": {"name": name}});
        let extra = match st.repos[at.key].label(name) {
            Some(_) => label(st, at, name),
            None => extra,
        };
        issue_event(st, at, ("unlabeled", number, sender), extra);
    }
    for name in now.iter().filter(|l| !has(before, l)) {
        let extra = label(st, at, name);
        issue_event(st, at, ("labeled", number, sender), extra);
        agents::heard(st, at, Some(number), &Heard::Labeled(name));
    }
}

/// The `changes` of an `edited` webhook for a title and body: each one that
/// changed, with what it was (GitHub names a missing body `""`).
fn text_changes(
    (title_before, body_before): (&str, &Option<String>),
    (title_now, body_now): (&str, &Option<String>),
) -> Value {
    let mut changes = json!({});
    if title_now != title_before {
        changes["title"] = json!({ "from": title_before });
    }
    if body_now != body_before {
        changes["body"] = json!({ "from": body_before.clone().unwrap_or_default() });
    }
    changes
}

/// `closed` or `reopened` when an issue's or pull request's state moved.
fn state_action(before: &str, now: &str) -> Option<&'static str> {
    (now != before).then(|| {
        if now == "closed" {
            "closed"
        } else {
            "reopened"
        }
    })
}

/// Issue `number` was edited (PATCH) from `before`: `edited` when the title
/// or body changed, `closed` / `reopened`, the label and assignee
/// differences. A pull request's issue sends only its label changes here.
pub(crate) fn issue_changed(st: &mut State, at: At, number: u64, sender: &str, before: &Issue) {
    let now = st.repos[at.key].issues[&number].clone();
    if !now.is_pull_request {
        let changes = text_changes((&before.title, &before.body), (&now.title, &now.body));
        if changes.as_object().is_some_and(|c| !c.is_empty()) {
            let extra = json!({"changes": changes});
            issue_event(st, at, ("edited", number, sender), extra);
        }
        if let Some(action) = state_action(&before.state, &now.state) {
            issue_event(st, at, (action, number, sender), json!({}));
        }
    }
    labels_changed(st, at, number, sender, &before.labels);
    if now.is_pull_request {
        return;
    }
    for login in before
        .assignees
        .iter()
        .filter(|a| !now.assignees.contains(a))
    {
        let extra = assignee(st, at, login);
        issue_event(st, at, ("unassigned", number, sender), extra);
    }
    for login in now
        .assignees
        .iter()
        .filter(|a| !before.assignees.contains(a))
    {
        let extra = assignee(st, at, login);
        issue_event(st, at, ("assigned", number, sender), extra);
        agents::heard(st, at, Some(number), &Heard::Assigned(login));
    }
}

/// `issue_comment` / `action` (created, edited, deleted) for `comment`.
pub(crate) fn comment(
    st: &mut State,
    at: At,
    action: &str,
    c: &Comment,
    sender: &str,
    extra: Value,
) {
    if action == "created" {
        st.written(at.key, format!("comment:{}", c.id));
        let (body, author) = (&c.body, &c.author);
        agents::heard(
            st,
            at,
            Some(c.issue_number),
            &Heard::Comment { body, author },
        );
    }
    send(st, at, "issue_comment", |st, r| {
        payloads::issue_comment_in(st, r, at.base, (action, c, sender), extra)
    });
}

/// A `pull_request` webhook.
pub(crate) fn pull(
    st: &mut State,
    at: At,
    (action, number, sender): (&str, u64, &str),
    extra: Value,
) {
    send(st, at, "pull_request", |st, r| {
        payloads::pull_request_in(st, r, at.base, (action, number, sender), extra)
    });
}

/// A `pull_request_review` webhook for review `id` of pull request
/// `number` (`submitted`, `dismissed`).
pub(crate) fn review(st: &mut State, at: At, (action, number, id): (&str, u64, u64), sender: &str) {
    send(st, at, "pull_request_review", |st, r| {
        payloads::pull_request_review_in(st, r, at.base, (action, number, id, sender))
    });
}

/// A pull request was opened.
pub(crate) fn pull_opened(st: &mut State, at: At, number: u64, sender: &str) {
    st.written(at.key, format!("issue:{number}"));
    pull(st, at, ("opened", number, sender), json!({}));
}

/// Pull request `number` was changed (PATCH, draft toggled) from `before`:
/// `edited` (title, body, base), `closed` / `reopened`,
/// `ready_for_review` / `converted_to_draft`.
pub(crate) fn pull_changed(st: &mut State, at: At, number: u64, sender: &str, before: &Pull) {
    let now = st.repos[at.key].pulls[&number].clone();
    let mut changes = text_changes((&before.title, &before.body), (&now.title, &now.body));
    if now.base != before.base {
        let sha = st.repos[at.key].branches.get(&before.base).cloned();
        changes["base"] = json!({"ref": {"from": before.base}, "sha": {"from": sha}});
    }
    if changes.as_object().is_some_and(|c| !c.is_empty()) {
        pull(
            st,
            at,
            ("edited", number, sender),
            json!({"changes": changes}),
        );
    }
    if let Some(action) = state_action(&before.state, &now.state) {
        pull(st, at, (action, number, sender), json!({}));
    }
    if now.draft != before.draft {
        let action = if now.draft {
            "converted_to_draft"
        } else {
            "ready_for_review"
        };
        pull(st, at, (action, number, sender), json!({}));
    }
}

/// Pull request `number` was merged into its base, whose head was
/// `base_before`: `pull_request` closed (merged), `push` of the base with
/// the merge commit, `check_suite` requested for it, then `issues` closed
/// for each issue its body closes (into the default branch only).
pub(crate) fn pull_merged(st: &mut State, at: At, number: u64, sender: &str, base_before: &str) {
    st.written(at.key, format!("merge:{number}"));
    pull(st, at, ("closed", number, sender), json!({}));
    let base = st.repos[at.key].pulls[&number].base.clone();
    branch_moved(st, at, &base, Some(base_before.to_string()), sender);
    close_linked_issues(st, at, number, sender);
}

/// Whether moving a branch from `before` to `after` rewrote history.
fn forced(st: &State, at: At, before: Option<&str>, after: Option<&str>) -> bool {
    match (before, after) {
        (Some(b), Some(a)) => !st.repos[at.key].is_ancestor(b, a),
        _ => false,
    }
}

/// `branch` moved from `before` (`None`: it was created) to its current
/// head (absent: it was deleted), pushed by `sender`. Sends `create` for a
/// new branch, then `push`; `pull_request` synchronize for the open pull
/// requests whose head it is; merges the open pull requests the branch now
/// contains (fast-forward onto their head); then requests the App's check
/// suite on the head when it has none.
pub(crate) fn branch_moved(
    st: &mut State,
    at: At,
    branch: &str,
    before: Option<String>,
    sender: &str,
) {
    crate::races::heard(st, at.key, branch, sender);
    st.repos
        .get_mut(at.key)
        .expect("repository exists")
        .pushers
        .insert(branch.to_owned(), sender.to_owned());
    let after = st.repos[at.key].branches.get(branch).cloned();
    let forced = forced(st, at, before.as_deref(), after.as_deref());
    if before.is_none() {
        st.written(at.key, format!("ref:{branch}"));
        send(st, at, "create", |st, r| {
            payloads::create_in(st, r, at.base, branch, sender)
        });
    }
    let r = &st.repos[at.key];
    let commits = match (&before, &after) {
        (_, None) => Vec::new(),
        // New to the repository: not reachable from another branch.
        (None, Some(a)) => payloads::chain(r, a, |sha| {
            r.branches
                .iter()
                .any(|(b, head)| b != branch && r.is_ancestor(sha, head))
        }),
        (Some(b), Some(a)) => payloads::chain(r, a, |sha| r.is_ancestor(sha, b)),
    };
    let before_sha = before.clone().unwrap_or_else(|| ZERO_SHA.into());
    let after_sha = after.clone().unwrap_or_else(|| ZERO_SHA.into());
    send(st, at, "push", |st, r| {
        let p = Push {
            branch,
            before: &before_sha,
            after: &after_sha,
            commits: &commits,
            forced,
            pusher: sender,
        };
        payloads::push_in(st, r, at.base, &p)
    });
    let Some(after) = after else { return };
    if let Some(before) = &before {
        synchronize(st, at, branch, (before, &after), sender);
        crate::routes::reviews::dismiss_stale(st, at, (branch, &after), sender);
        crate::merge_queue::on_head_moved(st, at, branch);
        if !forced {
            merge_contained(st, at, branch, before, &after, sender);
        }
    }
    if st.repos[at.key].suite(&after).is_none() {
        let id = st.suite_ids.next();
        let suite = CheckSuite {
            id,
            head_sha: after.clone(),
            head_branch: Some(branch.to_string()),
            before: before.clone(),
            created_at: st.clock.now(),
        };
        st.repos
            .get_mut(at.key)
            .expect("repository exists")
            .check_suites
            .push(suite);
        send(st, at, "check_suite", |st, r| {
            payloads::check_suite_in(st, r, at.base, ("requested", &after, sender))
        });
    }
}

/// `pull_request` synchronize for each open pull request whose head is
/// `branch`, which moved from `before` to `after`.
fn synchronize(st: &mut State, at: At, branch: &str, (before, after): (&str, &str), sender: &str) {
    let numbers: Vec<u64> = st.repos[at.key]
        .pulls
        .values()
        .filter(|p| p.state == "open" && p.head == branch)
        .map(|p| p.number)
        .collect();
    for number in numbers {
        let extra = json!({"before": before, "after": after});
        pull(st, at, ("synchronize", number, sender), extra);
    }
}

/// Marks merged the open pull requests into `branch` whose head the
/// fast-forward from `before` to `after` brought in, as GitHub does:
/// merged by `sender`, their merge commit the oldest commit of the
/// branch's new first-parent chain that contains the head (the head itself
/// for a plain fast-forward); `pull_request` closed, then the issues their
/// body closes.
fn merge_contained(st: &mut State, at: At, branch: &str, before: &str, after: &str, sender: &str) {
    let r = &st.repos[at.key];
    let merged: Vec<(u64, String)> = r
        .pulls
        .values()
        .filter(|p| p.state == "open" && p.base == branch)
        .filter_map(|p| Some((p.number, r.branches.get(&p.head)?.clone())))
        .filter(|(_, head)| r.is_ancestor(head, after) && !r.is_ancestor(head, before))
        .map(|(number, head)| (number, merging_commit(r, &head, before, after)))
        .collect();
    for (number, merge_commit) in merged {
        marked_merged(st, at, number, &merge_commit, sender);
    }
}

/// Open pull request `number` is now merged as `merge_commit` by `sender`
/// (its base moved already): `pull_request` closed, then the issues its
/// body closes.
pub(crate) fn marked_merged(st: &mut State, at: At, number: u64, merge_commit: &str, sender: &str) {
    let r = st.repos.get_mut(at.key).expect("repository exists");
    crate::routes::pulls::mark_merged(r, number, merge_commit, sender);
    st.written(at.key, format!("merge:{number}"));
    pull(st, at, ("closed", number, sender), json!({}));
    close_linked_issues(st, at, number, sender);
}

/// The commit on `after`'s first-parent chain (down to `before`) that
/// brought `head` in: the oldest one that contains it.
fn merging_commit(r: &crate::state::Repo, head: &str, before: &str, after: &str) -> String {
    let mut found = after.to_string();
    let mut cursor = Some(after.to_string());
    while let Some(sha) = cursor {
        if sha == before || !r.is_ancestor(head, &sha) {
            break;
        }
        cursor = r.commits.get(&sha).and_then(|c| c.parents.first().cloned());
        found = sha;
    }
    found
}

/// The issue numbers a pull request body closes on merge: `#N` after one
/// of GitHub's keywords (close, closes, closed, fix, fixes, fixed,
/// resolve, resolves, resolved; any case, an optional colon), in order.
pub(crate) fn closing_references(body: &str) -> Vec<u64> {
    const KEYWORDS: [&str; 9] = [
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ];
    let mut out = Vec::new();
    for (i, _) in body.match_indices('#') {
        let rest = &body[i + 1..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let ends_word = !rest[digits..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let Ok(number) = rest[..digits].parse::<u64>() else {
            continue;
        };
        let lead = &body[..i];
        let separated = lead.ends_with(|c: char| c.is_whitespace() || c == ':');
        let lead = lead.trim_end();
        let lead = lead.strip_suffix(':').unwrap_or(lead);
        let word_start = lead
            .char_indices()
            .rev()
            .find(|(_, c)| !c.is_alphanumeric())
            .map_or(0, |(p, c)| p + c.len_utf8());
        let word = &lead[word_start..];
        let keyword = KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word));
        if keyword && separated && ends_word && !out.contains(&number) {
            out.push(number);
        }
    }
    out
}

/// Pull request `number` was merged: when its base is the default branch,
/// closes (as completed, by `sender`) the open issues its body closes with
/// a keyword, each with `issues` closed. Other bases close nothing, as on
/// GitHub.
fn close_linked_issues(st: &mut State, at: At, number: u64, sender: &str) {
    let now = st.clock.now();
    let r = st.repos.get_mut(at.key).expect("repository exists");
    let Some(p) = r.pulls.get(&number) else {
        return;
    };
    if p.base != r.default_branch {
        return;
    }
    for n in closing_references(p.body.as_deref().unwrap_or_default()) {
        let r = st.repos.get_mut(at.key).expect("repository exists");
        let Some(issue) = r.issues.get_mut(&n) else {
            continue;
        };
        if issue.is_pull_request || issue.state != "open" {
            continue;
        }
        let before = issue.clone();
        issue.state = "closed".into();
        issue.state_reason = Some("completed".into());
        issue.closed_at = Some(now);
        issue.updated_at = now;
        issue_changed(st, at, n, sender, &before);
    }
}

/// Check run `id` was created: the App's suite on its head exists from now
/// on (implicitly, without `requested`); `check_run` created, then
/// completed when it was created completed.
pub(crate) fn check_run_created(st: &mut State, at: At, id: u64) {
    let r = &st.repos[at.key];
    let run = r
        .check_runs
        .iter()
        .find(|c| c.id == id)
        .expect("just created");
    let head_sha = run.head_sha.clone();
    if r.suite(&head_sha).is_none() {
        let head_branch = r
            .branches
            .iter()
            .find(|(_, s)| **s == head_sha)
            .map(|(b, _)| b.clone());
        let suite = CheckSuite {
            id: st.suite_ids.next(),
            head_sha: head_sha.clone(),
            head_branch,
            before: None,
            created_at: st.clock.now(),
        };
        st.repos
            .get_mut(at.key)
            .expect("repository exists")
            .check_suites
            .push(suite);
    }
    let bot = st.bot_login();
    send(st, at, "check_run", |st, r| {
        payloads::check_run_in(st, r, at.base, ("created", id, &bot), json!({}))
    });
    check_run_updated(st, at, id, false);
}

/// Check run `id` was updated (`was_completed`: it already was):
/// `check_run` completed when it just completed, then `check_suite`
/// completed once every run of the App on that commit is.
pub(crate) fn check_run_updated(st: &mut State, at: At, id: u64, was_completed: bool) {
    let r = &st.repos[at.key];
    let run = r.check_runs.iter().find(|c| c.id == id).expect("exists");
    if was_completed || run.status != "completed" {
        return;
    }
    let head_sha = run.head_sha.clone();
    let bot = st.bot_login();
    send(st, at, "check_run", |st, r| {
        payloads::check_run_in(st, r, at.base, ("completed", id, &bot), json!({}))
    });
    let r = &st.repos[at.key];
    let done = r
        .suite(&head_sha)
        .is_some_and(|s| payloads::suite_status(r, s).0 == "completed");
    if done {
        send(st, at, "check_suite", |st, r| {
            payloads::check_suite_in(st, r, at.base, ("completed", &head_sha, &bot))
        });
    }
}

/// `workflow_run` / `action` for run `run_id`, sent by the App's bot (the
/// App dispatched it).
pub(crate) fn workflow_run(st: &mut State, at: At, action: &str, run_id: u64) {
    if action == "requested" {
        st.written(at.key, format!("run:{run_id}"));
    }
    let bot = st.bot_login();
    send(st, at, "workflow_run", |st, r| {
        payloads::workflow_run_in(st, r, at.base, (action, run_id, &bot))
    });
}

#[cfg(test)]
mod tests {
    use super::closing_references;

    #[test]
    fn closing_keywords_link_issues_in_any_case_with_an_optional_colon() {
        let body = "Closes #1, fixes: #2 and RESOLVED #3.\nresolve #2 again";
        assert_eq!(closing_references(body), [1, 2, 3]);
    }

    #[test]
    fn mentions_without_a_keyword_or_glued_to_a_word_close_nothing() {
        let body = "See #4. Unfixes #5, closes#6, fixes #7abc, closes the #8";
        assert_eq!(closing_references(body), Vec::<u64>::new());
    }
}
