//! `RepoHandle`: what a test does to and reads from one repository, bypassing
//! HTTP — acting as a human (opening issues, commenting, pushing) or as
//! GitHub Actions (workflow runs, artifacts).
//!
//! A person's action echoes like the same write through the API, with that
//! person as `sender` (`emit`; each method's doc names its webhooks). Seeding
//! methods (`with_file`, `without_file`, `record_commit`, `add_workflow`,
//! `add_artifact`, ...) are silent: they prepare the repository's state
//! before the app under test starts.

use std::sync::{Arc, MutexGuard};

use serde_json::json;

use crate::emit::{self, At};
use crate::routes::{actions, issues as issue_routes};
use crate::state::{
    self, Artifact, CheckRun, Comment, Issue, Label, Pull, Repo, WorkflowDispatch, WorkflowRun,
};
use crate::Shared;

/// A handle on one repository of a [`crate::FakeGitHub`]. Cheap to clone.
#[derive(Clone)]
pub struct RepoHandle {
    inner: Arc<Shared>,
    key: String,
}

mod issues;
mod limits;
mod reviews;
mod rules;

impl RepoHandle {
    pub(crate) fn new(inner: Arc<Shared>, key: String) -> RepoHandle {
        RepoHandle { inner, key }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, state::State> {
        self.inner.lock()
    }

    fn read<T>(&self, f: impl FnOnce(&Repo) -> T) -> T {
        f(&self.state().repos[&self.key])
    }

    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut Repo, &mut state::IdGen) -> T) -> T {
        let mut st = self.state();
        let (repo, ids) = st.repo_ids(&self.key).expect("repository exists");
        f(repo, ids)
    }

    /// Changes the repository's settings under the state lock (no webhook).
    pub(crate) fn change(&self, f: impl FnOnce(&mut Repo)) {
        self.write(|r, _| f(r));
    }

    /// Runs one action under the state lock, then hands its echoes to the
    /// delivery task.
    pub(crate) fn act<T>(&self, f: impl FnOnce(&mut state::State, At) -> T) -> T {
        let mut st = self.state();
        let at = At {
            key: &self.key,
            base: &self.inner.base_url,
        };
        let out = f(&mut st, at);
        crate::echo::flush(&self.inner, &mut st);
        drop(st);
        crate::agents::react(&self.inner);
        out
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner
    }

    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Commits one file on `branch` (created from the default branch if
    /// new). Seeds the repository's state: no webhook.
    pub fn with_file(&self, branch: &str, path: &str, content: &str) -> &Self {
        self.write(|r, _| r.commit_file(branch, path, content, &format!("Update {path}")));
        self
    }

    /// Commits the removal of one file on `branch`. Seeds the repository's
    /// state: no webhook.
    pub fn without_file(&self, branch: &str, path: &str) -> &Self {
        self.write(|r, _| r.commit_change(branch, path, None, &format!("Remove {path}")));
        self
    }

    /// Opens an issue as `author_login` (created as a user if unknown).
    /// Sends `issues` opened.
    pub fn create_issue(&self, title: &str, body: &str, author_login: &str) -> u64 {
        self.state().user(author_login);
        let number = self.write(|r, ids| {
            issue_routes::open_issue(r, ids, title, Some(body.to_string()), author_login, &[])
        });
        self.act(|st, at| emit::issue_opened(st, at, number, author_login));
        number
    }

    /// Opens a pull request as `author_login`; returns its number. Sends
    /// `pull_request` opened.
    pub fn create_pull(&self, head: &str, base: &str, title: &str, author_login: &str) -> u64 {
        self.open_pull((head, base), title, None, author_login, false)
    }

    /// Opens a pull request `(head, base)` as `author_login`, with `body`,
    /// as a draft or not; returns its number. Sends `pull_request` opened.
    pub(crate) fn open_pull(
        &self,
        (head, base): (&str, &str),
        title: &str,
        body: Option<&str>,
        author_login: &str,
        draft: bool,
    ) -> u64 {
        self.state().user(author_login);
        let number = self.write(|r, ids| {
            let body = body.map(str::to_owned);
            let number = issue_routes::open_issue(r, ids, title, body.clone(), author_login, &[]);
            let issue = r.issues.get_mut(&number).expect("just opened");
            issue.is_pull_request = true;
            let now = r.clock.now();
            r.pulls.insert(
                number,
                Pull {
                    id: ids.next(),
                    number,
                    title: title.into(),
                    body,
                    head: head.into(),
                    base: base.into(),
                    state: "open".into(),
                    draft,
                    merged: false,
                    mergeable: true,
                    merge_commit_sha: None,
                    merged_by: None,
                    author: author_login.into(),
                    created_at: now,
                    updated_at: now,
                    closed_at: None,
                    merged_at: None,
                },
            );
            number
        });
        self.act(|st, at| emit::pull_opened(st, at, number, author_login));
        number
    }

    /// An issue (pull requests' issues included) by number.
    pub fn issue(&self, number: u64) -> Option<Issue> {
        self.read(|r| r.issues.get(&number).cloned())
    }

    /// Issues that are not pull requests, by number.
    pub fn issues(&self) -> Vec<Issue> {
        self.read(|r| {
            r.issues
                .values()
                .filter(|i| !i.is_pull_request)
                .cloned()
                .collect()
        })
    }

    pub fn comments(&self, number: u64) -> Vec<Comment> {
        self.read(|r| {
            r.comments
                .iter()
                .filter(|c| c.issue_number == number)
                .cloned()
                .collect()
        })
    }

    /// Comments as a user would (the author is created if unknown). Sends
    /// `issue_comment` created.
    pub fn add_comment(&self, number: u64, body: &str, author_login: &str) -> Comment {
        self.state().user(author_login);
        let c = self.write(|r, ids| issue_routes::add_comment(r, ids, number, body, author_login));
        self.act(|st, at| emit::comment(st, at, "created", &c, author_login, json!({})));
        c
    }

    /// `editor_login` (who may not be the author) edits comment `id`. Sends
    /// `issue_comment` edited, with `changes.body.from`.
    ///
    /// # Panics
    /// When the comment does not exist.
    pub fn edit_comment(&self, id: u64, body: &str, editor_login: &str) {
        self.state().user(editor_login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let now = r.clock.now();
            let c = r.comment_mut(id).expect("the comment exists");
            let from = std::mem::replace(&mut c.body, body.to_string());
            c.updated_at = now;
            let c = c.clone();
            let changes = json!({"changes": {"body": {"from": from}}});
            emit::comment(st, at, "edited", &c, editor_login, changes);
        });
    }

    /// `login` deletes comment `id`. Sends `issue_comment` deleted.
    ///
    /// # Panics
    /// When the comment does not exist.
    pub fn delete_comment(&self, id: u64, login: &str) {
        self.state().user(login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let i = r
                .comments
                .iter()
                .position(|c| c.id == id)
                .expect("the comment exists");
            let c = r.comments.remove(i);
            emit::comment(st, at, "deleted", &c, login, json!({}));
        });
    }

    pub fn check_runs(&self) -> Vec<CheckRun> {
        self.read(|r| r.check_runs.clone())
    }

    pub fn pulls(&self) -> Vec<Pull> {
        self.read(|r| r.pulls.values().cloned().collect())
    }

    /// Makes a pull request (un)mergeable: merging an unmergeable one is
    /// 405. (Branches that conflict make it unmergeable anyway.)
    pub fn set_mergeable(&self, number: u64, mergeable: bool) {
        self.write(|r, _| {
            if let Some(p) = r.pulls.get_mut(&number) {
                p.mergeable = mergeable;
            }
        });
    }

    pub fn branch_sha(&self, branch: &str) -> Option<String> {
        self.read(|r| r.branches.get(branch).cloned())
    }

    /// Contents of a file at a branch or sha.
    pub fn file(&self, git_ref: &str, path: &str) -> Option<String> {
        self.read(|r| r.resolve(git_ref).and_then(|c| c.files.get(path).cloned()))
    }

    pub fn labels(&self) -> Vec<Label> {
        self.read(|r| r.labels.clone())
    }

    pub fn dispatches(&self) -> Vec<WorkflowDispatch> {
        self.read(|r| r.dispatches.clone())
    }

    /// Registers a workflow file (e.g. `deploy.yml`) so it can be dispatched.
    pub fn add_workflow(&self, file: &str) -> u64 {
        self.write(|r, ids| {
            *r.workflows
                .entry(file.to_string())
                .or_insert_with(|| ids.next())
        })
    }

    /// Declares the `workflow_dispatch` inputs of workflow `file`, as its
    /// `on.workflow_dispatch.inputs` would: GitHub then refuses a dispatch
    /// with any other input (422 "Unexpected inputs provided: [...]").
    pub fn declare_workflow_inputs(&self, file: &str, inputs: &[&str]) {
        self.write(|r, _| {
            r.workflow_inputs.insert(
                file.to_string(),
                inputs.iter().map(|i| (*i).to_string()).collect(),
            );
        });
    }

    /// Gives workflow `file` a `run-name` (`${{ inputs.x }}` is filled
    /// from each dispatch's inputs), as the workflow file's key would.
    pub fn set_run_name(&self, file: &str, template: &str) {
        self.write(|r, _| {
            r.run_names.insert(file.to_string(), template.to_string());
        });
    }

    /// Records a workflow run on `branch`'s head; `conclusion` None = in
    /// progress. Sends `workflow_run` requested (then completed, when
    /// created with a conclusion).
    pub fn add_workflow_run(&self, workflow: &str, branch: &str, conclusion: Option<&str>) -> u64 {
        self.add_workflow(workflow);
        self.act(|st, at| {
            let id = actions::new_run(st, at.key, workflow, branch, conclusion);
            emit::workflow_run(st, at, "requested", id);
            if conclusion.is_some() {
                emit::workflow_run(st, at, "completed", id);
            }
            id
        })
    }

    /// Attaches an artifact (the bytes of its zip) to a workflow run.
    pub fn add_artifact(&self, run_id: u64, name: &str, bytes: &[u8]) -> u64 {
        self.write(|r, ids| {
            let id = ids.next();
            r.artifacts.push(Artifact {
                id,
                run_id,
                name: name.into(),
                bytes: bytes.to_vec(),
                reported_size: None,
                created_at: r.clock.now(),
            });
            id
        })
    }

    /// Moves `branch` to a commit made in a real git repository (the one a
    /// runner fetches from), keeping its `sha`: the fake then serves the
    /// same history the runner sees. `files` are changed on top of the
    /// branch's (or the default branch's) current files. Seeds the
    /// repository's state: no webhook (see [`RepoHandle::push_commit`]).
    ///
    /// When the repository is backed by git ([`RepoHandle::back_with_git`])
    /// and the bare repository has `sha`, the commit is read from there
    /// instead (`message` and `files` are then unused).
    pub fn record_commit(&self, branch: &str, sha: &str, message: &str, files: &[(&str, &str)]) {
        self.write(|r, _| {
            if r.import_real(sha) {
                r.branches.insert(branch.to_string(), sha.to_string());
                return;
            }
            let parent = r
                .branches
                .get(branch)
                .or_else(|| r.branches.get(&r.default_branch))
                .cloned();
            let mut all = parent
                .as_ref()
                .and_then(|p| r.commits.get(p))
                .map(|c| c.files.clone())
                .unwrap_or_default();
            for (path, content) in files {
                all.insert((*path).to_string(), (*content).to_string());
            }
            let tree = crate::trees::tree_id(&all);
            let date = r.clock.now();
            r.insert_commit(state::Commit {
                sha: sha.to_string(),
                parents: parent.into_iter().collect(),
                message: message.into(),
                files: all,
                tree,
                date,
                authorship: None,
            });
            r.branches.insert(branch.to_string(), sha.to_string());
        });
    }

    /// `login` adds labels to an issue or pull request (an unknown label is
    /// created, as GitHub does). Sends `issues` labeled per new label
    /// (`pull_request` labeled for a pull request).
    pub fn add_labels(&self, number: u64, labels: &[&str], login: &str) {
        self.state().user(login);
        let before = self.write(|r, ids| {
            let before = r.issues[&number].labels.clone();
            for name in labels {
                let name = crate::routes::labels::ensure_label(r, ids, name);
                let issue = r.issues.get_mut(&number).expect("the issue exists");
                if !issue.labels.iter().any(|l| l.eq_ignore_ascii_case(&name)) {
                    issue.labels.push(name);
                }
            }
            // GitHub moves `updated_at` on every label change.
            let now = r.clock.now();
            r.issues
                .get_mut(&number)
                .expect("the issue exists")
                .updated_at = now;
            if let Some(p) = r.pulls.get_mut(&number) {
                p.updated_at = now;
            }
            before
        });
        self.act(|st, at| emit::labels_changed(st, at, number, login, &before));
    }

    /// `login` removes `label` from an issue or pull request. Sends
    /// `issues` unlabeled (`pull_request` unlabeled for a pull request).
    pub fn remove_label(&self, number: u64, label: &str, login: &str) {
        self.state().user(login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let issue = r.issues.get_mut(&number).expect("the issue exists");
            let before = issue.labels.clone();
            issue.labels.retain(|l| !l.eq_ignore_ascii_case(label));
            emit::labels_changed(st, at, number, login, &before);
        });
    }

    /// `login` closes an issue (or a pull request, unmerged). Sends
    /// `issues` closed (`pull_request` closed).
    pub fn close_issue(&self, number: u64, login: &str) {
        self.state().user(login);
        self.act(|st, at| {
            let now = st.clock.now();
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let issue = r.issues.get_mut(&number).expect("the issue exists");
            let before = issue.clone();
            issue.state = "closed".into();
            issue.state_reason = Some("completed".into());
            issue.closed_at = Some(now);
            issue.updated_at = now;
            match r.pulls.get_mut(&number) {
                Some(p) => {
                    let before = p.clone();
                    p.state = "closed".into();
                    p.closed_at = Some(now);
                    p.updated_at = now;
                    emit::pull_changed(st, at, number, login, &before);
                }
                None => emit::issue_changed(st, at, number, login, &before),
            }
        });
    }

    /// `login` (usually its author) marks a pull request draft or ready
    /// for review. Sends `pull_request` converted_to_draft /
    /// ready_for_review when it changes.
    pub fn set_draft(&self, number: u64, draft: bool, login: &str) {
        self.state().user(login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let Some(p) = r.pulls.get_mut(&number) else {
                return;
            };
            let before = p.clone();
            p.draft = draft;
            emit::pull_changed(st, at, number, login, &before);
        });
    }

    /// `login` changes pull request `number`'s base branch (the "Edit"
    /// button beside its title). Sends `pull_request` edited with
    /// `changes.base` (the old ref and its sha), as GitHub does.
    pub fn set_base(&self, number: u64, base: &str, login: &str) {
        self.state().user(login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            assert!(r.branches.contains_key(base), "no branch {base}");
            let Some(p) = r.pulls.get_mut(&number) else {
                return;
            };
            let before = p.clone();
            p.base = base.to_owned();
            emit::pull_changed(st, at, number, login, &before);
        });
    }

    /// `login` presses the merge button: a merge commit on the base, its
    /// tree the 3-way merge of the branches. Sends `pull_request` closed
    /// (merged), the base's `push` and `check_suite` requested for the
    /// merge commit. Returns the merge commit's sha.
    ///
    /// # Panics
    /// When the pull request is not open, a branch is missing, or the
    /// branches conflict.
    pub fn merge_pull(&self, number: u64, login: &str) -> String {
        self.state().user(login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let open = r.pulls.get(&number).is_some_and(|p| p.state == "open");
            assert!(open, "fakehub: pull request #{number} is not open");
            let (sha, base_before) = crate::routes::pulls::merge(r, number, ("merge", None), login)
                .unwrap_or_else(|e| panic!("fakehub: merging #{number}: {e:?}"));
            emit::pull_merged(st, at, number, login, &base_before);
            sha
        })
    }

    /// Backs this repository's commits with real git objects in the bare
    /// repository at `bare_repo` (e.g. the `file://` remote a runner
    /// fetches from). From now on:
    /// - its branches are the bare repository's: each of the bare
    ///   repository's branches is imported, with its history and trees, and
    ///   the fake's branch of that name moved to it (silently, as seeding);
    /// - every commit the fake makes (pull request merges of any method,
    ///   `POST /merges`, `POST /git/commits`, [`RepoHandle::push_files`],
    ///   [`RepoHandle::with_file`]) is written there as a real commit,
    ///   whose sha the fake then uses;
    ///   a merge's tree is git's own merge of the parents' trees, and git's
    ///   conflicts are the fake's. Each is kept fetchable by sha under
    ///   `refs/fakehub/<sha>`; the bare repository's branches never move;
    /// - a commit the test pushed to the bare repository and reports with
    ///   [`RepoHandle::record_commit`] or [`RepoHandle::push_commit`] is
    ///   read from it: its parents, message and files are git's, not the
    ///   `files` given.
    ///
    /// Without it, commits are virtual (random shas), as before.
    ///
    /// # Panics
    /// When `bare_repo` is not a git repository.
    pub fn back_with_git(&self, bare_repo: &std::path::Path) -> &Self {
        let backing =
            crate::git_backing::GitBacking::open_at(bare_repo).unwrap_or_else(|e| panic!("{e}"));
        let branches = backing.branches().unwrap_or_else(|e| panic!("{e}"));
        self.write(|r, _| {
            r.git = Some(backing);
            for (name, sha) in branches {
                r.import_real(&sha);
                r.branches.insert(name, sha);
            }
        });
        self
    }

    /// `pusher` pushes one commit changing `files` (path, content) onto
    /// `branch` (created from the default branch if new). Sends `create`
    /// for a new branch, `push`, and `check_suite` requested. Returns the
    /// commit's sha.
    pub fn push_files(
        &self,
        branch: &str,
        files: &[(&str, &str)],
        message: &str,
        pusher: &str,
    ) -> String {
        self.state().user(pusher);
        let before = self.branch_sha(branch);
        let changes: Vec<(&str, Option<&str>)> =
            files.iter().map(|(p, c)| (*p, Some(*c))).collect();
        let sha = self.write(|r, _| r.commit_changes(branch, &changes, message));
        self.act(|st, at| emit::branch_moved(st, at, branch, before, pusher));
        sha
    }

    /// `pusher` force-pushes `branch` to one new commit on `from` changing
    /// `files`: what the branch held after `from` is gone from it. Sends
    /// `push` (forced) and `check_suite` requested. Returns the sha.
    pub fn force_push_files(
        &self,
        branch: &str,
        from: &str,
        files: &[(&str, &str)],
        message: &str,
        pusher: &str,
    ) -> String {
        self.state().user(pusher);
        let before = self.branch_sha(branch);
        let changes: Vec<(&str, Option<&str>)> =
            files.iter().map(|(p, c)| (*p, Some(*c))).collect();
        let sha = self.write(|r, _| {
            r.branches.insert(branch.to_string(), from.to_string());
            r.commit_changes(branch, &changes, message)
        });
        self.act(|st, at| emit::branch_moved(st, at, branch, before, pusher));
        sha
    }

    /// Several commits on `branch` in one push, as a `git push` of a local
    /// history: each of `commits` (files, message) on top of the one
    /// before. Sends `create` for a new branch, one `push` (listing at most
    /// [`crate::payloads::PUSH_COMMITS_MAX`] of them, as GitHub does), and
    /// `check_suite` requested. Returns the head's sha.
    pub fn push_commits(
        &self,
        branch: &str,
        commits: &[(Vec<(&str, &str)>, String)],
        pusher: &str,
    ) -> String {
        self.state().user(pusher);
        let before = self.branch_sha(branch);
        let mut head = String::new();
        for (files, message) in commits {
            let changes: Vec<(&str, Option<&str>)> =
                files.iter().map(|(p, c)| (*p, Some(*c))).collect();
            head = self.write(|r, _| r.commit_changes(branch, &changes, message));
        }
        self.act(|st, at| emit::branch_moved(st, at, branch, before, pusher));
        head
    }

    /// [`RepoHandle::record_commit`] (the caller's real git `sha` is kept)
    /// as a push by `pusher`: sends `create` for a new branch, `push`, and
    /// `check_suite` requested.
    pub fn push_commit(
        &self,
        branch: &str,
        sha: &str,
        message: &str,
        files: &[(&str, &str)],
        pusher: &str,
    ) {
        self.state().user(pusher);
        let before = self.branch_sha(branch);
        self.record_commit(branch, sha, message, files);
        self.act(|st, at| emit::branch_moved(st, at, branch, before, pusher));
    }

    /// What GitHub Actions does at the end of a run: marks it completed
    /// with `conclusion` and attaches the artifacts (name, zip bytes) it
    /// uploaded. Returns the artifacts' ids, in order. Sends `workflow_run`
    /// completed (once the artifacts are there, as on GitHub).
    pub fn complete_run(
        &self,
        run_id: u64,
        conclusion: &str,
        artifacts: &[(&str, &[u8])],
    ) -> Vec<u64> {
        let ids = artifacts
            .iter()
            .map(|(name, bytes)| self.add_artifact(run_id, name, bytes))
            .collect();
        self.set_run_status(run_id, "completed", Some(conclusion));
        ids
    }

    /// A runner picked up run `run_id`: it is `in_progress`. Sends
    /// `workflow_run` in_progress.
    pub fn start_run(&self, run_id: u64) {
        self.set_run_status(run_id, "in_progress", None);
    }

    fn set_run_status(&self, run_id: u64, status: &str, conclusion: Option<&str>) {
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let run = r
                .runs
                .iter_mut()
                .find(|run| run.id == run_id)
                .expect("the workflow run exists");
            run.status = status.into();
            run.conclusion = conclusion.map(Into::into);
            run.updated_at = r.clock.now();
            emit::workflow_run(st, at, status, run_id);
        });
    }

    /// Someone deleted run `run_id` (and its artifacts) in GitHub's UI.
    pub fn delete_run(&self, run_id: u64) {
        self.write(|r, _| {
            r.runs.retain(|run| run.id != run_id);
            r.artifacts.retain(|a| a.run_id != run_id);
        });
    }

    /// Makes the artifact listing announce `size` bytes for an artifact,
    /// whatever storage then sends.
    pub fn set_artifact_reported_size(&self, artifact_id: u64, size: u64) {
        self.write(|r, _| {
            r.artifacts
                .iter_mut()
                .find(|a| a.id == artifact_id)
                .expect("the artifact exists")
                .reported_size = Some(size);
        })
    }

    pub fn runs(&self) -> Vec<WorkflowRun> {
        self.read(|r| r.runs.clone())
    }

    pub fn id(&self) -> u64 {
        self.read(|r| r.id)
    }

    /// A commit by sha: its parents, tree and files.
    pub fn commit(&self, sha: &str) -> Option<state::Commit> {
        self.read(|r| r.commits.get(sha).cloned())
    }

    pub fn full_name(&self) -> String {
        self.read(|r| r.full_name())
    }

    /// The installation that has this repository, if any.
    pub fn installation_id(&self) -> Option<u64> {
        self.state()
            .installations
            .values()
            .find(|i| i.repos.contains(&self.key))
            .map(|i| i.id)
    }
}
