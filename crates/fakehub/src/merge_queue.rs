//! GitHub's merge queue, as GitHub documents it ("Managing a merge
//! queue", the `merge_group` webhook, GraphQL's `enqueuePullRequest`): a
//! pull request into a branch whose rules include `merge_queue` is
//! enqueued (never merged directly), the queue builds a merge group — the
//! base (or the group ahead of it) with the pull request merged in — on a
//! `gh-readonly-queue/{base}/pr-{number}-{base sha}` branch and asks for
//! checks on it (`merge_group` `checks_requested`); once the branch's
//! required status checks pass on the group's head, the base branch is
//! moved to that very commit (its `push`, and the pull request closed as
//! merged), and the group is destroyed (`merged`). A required check that
//! fails takes the pull request out of the queue (`dequeued`), and each
//! group built on top of it is destroyed (`invalidated`) and built again.
//! A push to a queued pull request's head takes it out too.
//!
//! Owns: the queue's entries per repository and every transition above,
//! with the echoes they send. Must not: answer HTTP (`routes::graphql`
//! calls [`enqueue`], the check-run routes call [`on_check`], `emit`
//! calls [`on_head_moved`]) or judge a rule other than its own required
//! checks (`state::rules`).
//!
//! The group's commit is built by the queue's merge method (the
//! `merge_queue` rule's `merge_method`): a merge commit, a squash (one
//! commit, the base its only parent) or a rebase (the pull request's
//! commits replayed on the base).
//!
//! Not modelled: the check response timeout, batching several pull
//! requests into one group (each group holds one pull request, built on
//! the group ahead of it, and lands on its own checks whatever the
//! grouping strategy), and `jump`.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::emit::{self, At};
use crate::merge::{three_way, MergeError};
use crate::payloads;
use crate::render;
use crate::state::{Repo, Rule, State};

/// Who moves the base branch and builds the groups.
pub const QUEUE_BOT: &str = "github-merge-queue[bot]";

/// One pull request in a branch's merge queue, with its merge group.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueEntry {
    pub id: u64,
    pub number: u64,
    /// The pull request's head when it was enqueued.
    pub head_sha: String,
    /// The branch it merges into.
    pub base: String,
    /// The commit the group was built on: the base branch's head, or the
    /// group ahead of it.
    pub group_base: String,
    /// The merge group's commit (`head_sha` of `merge_group`).
    pub group_sha: String,
    /// The group's branch, without `refs/heads/`.
    pub group_branch: String,
    pub enqueued_by: String,
    pub enqueued_at: DateTime<Utc>,
}

/// Whether the rules of `branch` take changes through the merge queue.
pub fn required(repo: &Repo, branch: &str) -> bool {
    method(repo, branch).is_some()
}

/// The merge method of the merge queue of `branch` (`MERGE`, `SQUASH`,
/// `REBASE`), if it has one.
fn method(repo: &Repo, branch: &str) -> Option<String> {
    repo.rules_for(branch)
        .flat_map(|s| s.rules.iter())
        .find_map(|r| r.queue_method().map(str::to_owned))
}

/// The status checks `branch` requires, by context, once each.
fn required_checks(repo: &Repo, branch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for set in repo.rules_for(branch) {
        for rule in &set.rules {
            if let Rule::RequiredStatusChecks(contexts) = rule {
                for c in contexts {
                    if !out.contains(c) {
                        out.push(c.clone());
                    }
                }
            }
        }
    }
    out
}

/// How the required checks stand on a commit.
#[derive(Debug, PartialEq)]
enum Verdict {
    Passed,
    Waiting,
    /// The first failing check's name.
    Failed(String),
}

fn verdict(repo: &Repo, branch: &str, sha: &str) -> Verdict {
    let mut waiting = false;
    for context in required_checks(repo, branch) {
        match verdict_of(repo, sha, &context) {
            None => waiting = true,
            Some(true) => {}
            Some(false) => return Verdict::Failed(context),
        }
    }
    if waiting {
        Verdict::Waiting
    } else {
        Verdict::Passed
    }
}

/// Enqueues open pull request `number` of the repository at `at`, by
/// `enqueuer`, if its head is still `expected_head` (when given). Returns
/// the entry (an already queued pull request's own) and its position
/// (1-based), or GitHub's refusal.
pub(crate) fn enqueue(
    st: &mut State,
    at: At,
    number: u64,
    expected_head: Option<&str>,
    enqueuer: &str,
) -> Result<(QueueEntry, usize), String> {
    let repo = &st.repos[at.key];
    if let Some(pos) = repo.merge_queue.iter().position(|e| e.number == number) {
        return Ok((repo.merge_queue[pos].clone(), pos + 1));
    }
    let p = repo.pulls.get(&number).ok_or("Pull request not found")?;
    if p.merged || p.state != "open" {
        return Err("Pull request is closed".into());
    }
    if p.draft {
        return Err("Pull request is in draft state".into());
    }
    if !required(repo, &p.base) {
        return Err(format!(
            "Merge queue is not enabled for the branch {}",
            p.base
        ));
    }
    let head = repo
        .branches
        .get(&p.head)
        .cloned()
        .ok_or("Pull request is not mergeable")?;
    if expected_head.is_some_and(|e| e != head) {
        return Err(format!(
            "The pull request's head {head} is not the expected head oid"
        ));
    }
    if !crate::routes::pulls::mergeable_now(repo, p) {
        return Err("Pull request is not mergeable".into());
    }
    let missing = required_checks(repo, &p.base)
        .into_iter()
        .find(|c| verdict_of(repo, &head, c) != Some(true));
    if let Some(c) = missing {
        return Err(format!(
            "Pull request is not mergeable: required status check \"{c}\" has not passed on its head"
        ));
    }
    let base = p.base.clone();
    let entry = QueueEntry {
        id: st.next_id(),
        number,
        head_sha: head,
        base: base.clone(),
        group_base: String::new(),
        group_sha: String::new(),
        group_branch: String::new(),
        enqueued_by: enqueuer.to_owned(),
        enqueued_at: st.clock.now(),
    };
    let queue = &mut st
        .repos
        .get_mut(at.key)
        .expect("repository exists")
        .merge_queue;
    queue.push(entry);
    let index = queue.len() - 1;
    build(st, at, index);
    let Some(entry) = st.repos[at.key].merge_queue.get(index).cloned() else {
        return Err("Pull request is not mergeable".into());
    };
    settle(st, at, &base);
    Ok((entry, index + 1))
}

/// Whether check `context` passed on `sha`: `None` when absent or running.
fn verdict_of(repo: &Repo, sha: &str, context: &str) -> Option<bool> {
    let run = repo
        .check_runs
        .iter()
        .rev()
        .find(|r| r.head_sha == sha && r.name == context)?;
    let passed = matches!(
        run.conclusion.as_deref(),
        Some("success" | "neutral" | "skipped")
    );
    (run.status == "completed").then_some(passed)
}

/// Builds the merge group of entry `index`: on the group ahead of it, or
/// on the base branch's head; its branch created (`create`, `push`), then
/// `merge_group` `checks_requested`. A pull request that no longer
/// merges leaves the queue.
fn build(st: &mut State, at: At, index: usize) {
    let repo = st.repos.get_mut(at.key).expect("repository exists");
    let entry = repo.merge_queue[index].clone();
    let on = match index {
        0 => repo.branches.get(&entry.base).cloned(),
        _ => Some(repo.merge_queue[index - 1].group_sha.clone()),
    };
    let Some(on) = on else { return };
    let Ok(sha) = group_commit(repo, &entry, &on) else {
        repo.merge_queue.remove(index);
        return;
    };
    let branch = format!("gh-readonly-queue/{}/pr-{}-{on}", entry.base, entry.number);
    repo.branches.insert(branch.clone(), sha.clone());
    let e = &mut repo.merge_queue[index];
    e.group_base = on;
    e.group_sha = sha;
    e.group_branch = branch.clone();
    let e = e.clone();
    emit::branch_moved(st, at, &branch, None, QUEUE_BOT);
    send(st, at, &e, "checks_requested", None);
}

/// The group's commit for `entry` on `on`, by the queue's merge method,
/// as GitHub builds it: a merge commit of `on` and the pull request's
/// head (`MERGE`); one commit on `on` alone with the pull request's
/// changes squashed (`SQUASH`); the pull request's commits replayed on
/// `on`, one new commit each, merge commits left out (`REBASE`).
fn group_commit(repo: &mut Repo, entry: &QueueEntry, on: &str) -> Result<String, MergeError> {
    let pull = repo.pulls.get(&entry.number);
    let (head_ref, title) = pull
        .map(|p| (p.head.clone(), p.title.clone()))
        .unwrap_or_default();
    let head = entry.head_sha.as_str();
    match method(repo, &entry.base).as_deref() {
        Some("SQUASH") => {
            let message = format!("{title} (#{})", entry.number);
            repo.commit_merge((on, head), vec![on.to_owned()], message)
        }
        Some("REBASE") => {
            let mut tip = on.to_owned();
            for sha in repo.commits_between(on, head) {
                let c = repo.commits[&sha].clone();
                let [parent] = c.parents.as_slice() else {
                    continue;
                };
                let before = repo.commits.get(parent).map(|p| p.files.clone());
                let ours = repo.commits[&tip].files.clone();
                let files = three_way(&before.unwrap_or_default(), &ours, &c.files)
                    .map_err(MergeError::Conflict)?;
                tip = repo.add_commit(vec![tip], &c.message, files);
            }
            Ok(tip)
        }
        _ => {
            let message = format!(
                "Merge pull request #{} from {}/{head_ref}",
                entry.number, repo.owner
            );
            let parents = vec![on.to_owned(), head.to_owned()];
            repo.commit_merge((on, head), parents, message)
        }
    }
}

/// The `merge_group` webhook for `e`.
fn send(st: &mut State, at: At, e: &QueueEntry, action: &str, reason: Option<&str>) {
    let e = e.clone();
    let action = action.to_owned();
    let reason = reason.map(str::to_owned);
    emit::send_event(st, at, "merge_group", move |st, r| {
        merge_group_in(st, r, at.base, &e, &action, reason.as_deref())
    });
}

fn merge_group_in(
    st: &State,
    r: &Repo,
    base: &str,
    e: &QueueEntry,
    action: &str,
    reason: Option<&str>,
) -> Value {
    let head_commit = r.commits.get(&e.group_sha).map_or(Value::Null, |c| {
        let who = json!({"name": QUEUE_BOT, "email": "noreply@github.com"});
        json!({"id": c.sha, "tree_id": c.tree, "message": c.message,
               "timestamp": render::ts(c.date), "author": who, "committer": who})
    });
    let mut v = json!({
        "action": action,
        "merge_group": {
            "head_sha": e.group_sha,
            "head_ref": format!("refs/heads/{}", e.group_branch),
            "base_sha": e.group_base,
            "base_ref": format!("refs/heads/{}", e.base),
            "head_commit": head_commit,
        },
    });
    if let Some(reason) = reason {
        v["reason"] = json!(reason);
    }
    payloads::envelope(st, r, base, &e.enqueued_by, v)
}

/// A check run on `sha` was written: the queues whose groups it concerns
/// move on.
pub(crate) fn on_check(st: &mut State, at: At, sha: &str) {
    let bases: Vec<String> = st.repos[at.key]
        .merge_queue
        .iter()
        .filter(|e| e.group_sha == sha)
        .map(|e| e.base.clone())
        .collect();
    for base in bases {
        settle(st, at, &base);
    }
}

/// `branch` of the repository moved to a new head: a queued pull request
/// whose head it is leaves the queue, as on GitHub.
pub(crate) fn on_head_moved(st: &mut State, at: At, branch: &str) {
    let repo = &st.repos[at.key];
    let moved: Vec<u64> = repo
        .merge_queue
        .iter()
        .filter(|e| {
            repo.pulls.get(&e.number).is_some_and(|p| p.head == branch)
                && repo.branches.get(branch) != Some(&e.head_sha)
        })
        .map(|e| e.number)
        .collect();
    for number in moved {
        let queue = &st.repos[at.key].merge_queue;
        if let Some(index) = queue.iter().position(|e| e.number == number) {
            dequeue(st, at, index, "dequeued");
        }
    }
}

/// The queue of `base` moves as far as its checks allow: a group whose
/// required checks failed is dequeued; the first group, once every
/// required check passed, lands.
fn settle(st: &mut State, at: At, base: &str) {
    loop {
        let repo = &st.repos[at.key];
        let entries: Vec<(usize, &crate::merge_queue::QueueEntry)> = repo
            .merge_queue
            .iter()
            .enumerate()
            .filter(|(_, e)| e.base == base)
            .collect();
        let failed = entries
            .iter()
            .find(|(_, e)| matches!(verdict(repo, base, &e.group_sha), Verdict::Failed(_)));
        if let Some((index, _)) = failed {
            let index = *index;
            dequeue(st, at, index, "dequeued");
            continue;
        }
        let Some((index, first)) = entries.first() else {
            return;
        };
        if verdict(repo, base, &first.group_sha) != Verdict::Passed {
            return;
        }
        let index = *index;
        if repo.branches.get(base) != Some(&first.group_base) {
            // The base moved outside the queue: every group is rebuilt.
            rebuild_from(st, at, index);
            continue;
        }
        land(st, at, index);
    }
}

/// The group of entry `index` lands: the base branch moves to its commit
/// (`push`, the pull request closed as merged), the group is destroyed
/// (`merged`) and its branch deleted.
fn land(st: &mut State, at: At, index: usize) {
    let repo = st.repos.get_mut(at.key).expect("repository exists");
    let e = repo.merge_queue.remove(index);
    let before = repo.branches.insert(e.base.clone(), e.group_sha.clone());
    emit::branch_moved(st, at, &e.base, before, QUEUE_BOT);
    // A squash or a rebase does not bring the head in: GitHub marks the
    // pull request merged all the same, as the group's commit.
    let open = st.repos[at.key]
        .pulls
        .get(&e.number)
        .is_some_and(|p| p.state == "open");
    if open {
        emit::marked_merged(st, at, e.number, &e.group_sha, QUEUE_BOT);
    }
    send(st, at, &e, "destroyed", Some("merged"));
    delete_branch(st, at, &e.group_branch);
}

/// Entry `index` leaves the queue (`reason`: `dequeued`); the groups
/// built on it are destroyed (`invalidated`) and built again.
fn dequeue(st: &mut State, at: At, index: usize, reason: &str) {
    let repo = st.repos.get_mut(at.key).expect("repository exists");
    let e = repo.merge_queue.remove(index);
    send(st, at, &e, "destroyed", Some(reason));
    delete_branch(st, at, &e.group_branch);
    rebuild_from(st, at, index);
}

/// The groups from `index` on are destroyed (`invalidated`) and built
/// again, each on the one ahead of it.
fn rebuild_from(st: &mut State, at: At, index: usize) {
    let len = st.repos[at.key].merge_queue.len();
    for i in index..len {
        let e = st.repos[at.key].merge_queue[i].clone();
        if !e.group_branch.is_empty() {
            send(st, at, &e, "destroyed", Some("invalidated"));
            delete_branch(st, at, &e.group_branch);
        }
    }
    let mut i = index;
    while i < st.repos[at.key].merge_queue.len() {
        let before = st.repos[at.key].merge_queue.len();
        build(st, at, i);
        if st.repos[at.key].merge_queue.len() == before {
            i += 1;
        }
    }
}

fn delete_branch(st: &mut State, at: At, branch: &str) {
    let repo = st.repos.get_mut(at.key).expect("repository exists");
    if let Some(before) = repo.branches.remove(branch) {
        emit::branch_moved(st, at, branch, Some(before), QUEUE_BOT);
    }
}
