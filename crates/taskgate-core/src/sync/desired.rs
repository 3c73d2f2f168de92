//! One reconciliation pass.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::effect::{Effect, IssueState};
use crate::ids::{CommitSha, IssueId, IssueNumber, RepoName, StoryId};
use crate::plan::{parent_state, Plan, RepoFiles, Task, TaskId, TaskState};
use crate::story::{
    labels, render_story_body, story_branch, task_branch, BranchStart, Marker, TaskBodies, TaskView,
};

/// What taskgate last wrote to (or read back from) one issue on GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueRecord {
    pub number: IssueNumber,
    pub id: IssueId,
    pub title: String,
    pub body: String,
    pub labels: BTreeSet<String>,
    pub open: bool,
    /// Marker key of the parent issue (sub-issue link), if linked.
    pub parent: Option<String>,
    /// Marker keys of the issues this one is blocked by.
    pub blocked_by: BTreeSet<String>,
}

/// The repository as taskgate knows it.
pub struct RepoView<'a> {
    pub repo: &'a RepoName,
    /// Head of the default branch at the plan's commit: branches start here.
    pub base_sha: &'a CommitSha,
    /// Issues by marker key.
    pub issues: &'a BTreeMap<String, IssueRecord>,
    pub branches: &'a BTreeSet<String>,
    pub labels: &'a BTreeSet<String>,
    /// Task states decided by runs and reviews (`core::task`); a task
    /// missing here takes its state from its `state:*` label, else is
    /// pending or ready by its dependencies.
    pub states: &'a BTreeMap<TaskId, TaskState>,
    /// What each task's branch was started from, once its task became
    /// ready (`core::story::start`), from the task records.
    pub starts: &'a BTreeMap<TaskId, BranchStart>,
}

struct Desired<'p> {
    key: String,
    task: Option<&'p Task>,
    parent_key: Option<String>,
}

/// One pass: the effects that bring GitHub closer to the plan.
pub fn reconcile(
    story: &StoryId,
    plan: &Plan,
    files: &dyn RepoFiles,
    view: &RepoView,
) -> Vec<Effect> {
    let keys = Keys::new(story);
    let states = task_states(plan, view, &|id| keys.task(id));
    let views = task_views(plan, view, &keys, &states);
    let pass = Pass {
        story,
        plan,
        files,
        view,
        keys,
        states,
        views: &views,
        bodies: TaskBodies::new(plan, &views),
    };
    let wanted = pass.wanted();
    let mut effects = pass.ensure_labels();

    // Pass 1: create what is missing; everything else waits for numbers.
    let missing: Vec<&Desired> = wanted
        .iter()
        .filter(|d| !view.issues.contains_key(&d.key))
        .collect();
    if !missing.is_empty() {
        pass.create_missing(&missing, &mut effects);
        return effects;
    }

    // Pass 2: every issue exists; bring each in line.
    for d in &wanted {
        pass.align_issue(d, &view.issues[&d.key], &mut effects);
    }
    pass.close_removed(&wanted, &mut effects);
    pass.create_branches(&mut effects);
    effects
}

/// The story's marker keys: its own, and each task's.
struct Keys<'s> {
    story: &'s StoryId,
    story_key: String,
}

impl<'s> Keys<'s> {
    fn new(story: &'s StoryId) -> Self {
        let story_key = Marker::Story {
            story: story.clone(),
        }
        .key();
        Keys { story, story_key }
    }

    fn task(&self, id: &TaskId) -> String {
        Marker::Task {
            story: self.story.clone(),
            task: id.clone(),
        }
        .key()
    }
}

/// What the bodies show of each task: its issue, state and marker.
fn task_views(
    plan: &Plan,
    view: &RepoView,
    keys: &Keys,
    states: &BTreeMap<TaskId, TaskState>,
) -> BTreeMap<TaskId, TaskView> {
    plan.walk()
        .iter()
        .map(|r| {
            let id = r.task.id.value.clone();
            let key = keys.task(&id);
            let issue = view.issues.get(&key).map(|i| i.number.get());
            let state = states[&id];
            let marker = Some(key);
            let branch = match (issue, view.starts.get(&id)) {
                (Some(n), Some(start)) => Some((task_branch(n, id.as_str()), start.clone())),
                _ => None,
            };
            (
                id,
                TaskView {
                    issue,
                    state,
                    marker,
                    branch,
                },
            )
        })
        .collect()
}

/// Everything one pass works from, with each task's state decided.
struct Pass<'a> {
    story: &'a StoryId,
    plan: &'a Plan,
    files: &'a dyn RepoFiles,
    view: &'a RepoView<'a>,
    keys: Keys<'a>,
    states: BTreeMap<TaskId, TaskState>,
    views: &'a BTreeMap<TaskId, TaskView>,
    bodies: TaskBodies<'a>,
}

impl<'a> Pass<'a> {
    /// The issues the plan wants: the story's, then every task's in walk
    /// order, each under its parent task or else the story.
    fn wanted(&self) -> Vec<Desired<'a>> {
        let story_key = &self.keys.story_key;
        let mut wanted = vec![Desired {
            key: story_key.clone(),
            task: None,
            parent_key: None,
        }];
        for r in self.plan.walk() {
            wanted.push(Desired {
                key: self.keys.task(&r.task.id.value),
                task: Some(r.task),
                parent_key: Some(
                    r.parent
                        .map(|p| self.keys.task(p))
                        .unwrap_or_else(|| story_key.clone()),
                ),
            });
        }
        wanted
    }

    /// The labels this story uses that the repository lacks.
    fn ensure_labels(&self) -> Vec<Effect> {
        needed_labels(&self.states)
            .iter()
            .filter(|name| !self.view.labels.contains(*name))
            .filter_map(|name| labels::spec(name))
            .map(|spec| Effect::EnsureLabel {
                repo: self.view.repo.clone(),
                name: spec.name,
                color: spec.color,
                description: spec.description,
            })
            .collect()
    }

    /// The title, body and type labels one issue should have.
    fn desired_issue(&self, d: &Desired) -> (String, String, BTreeSet<String>) {
        let (story, plan, files) = (self.story, self.plan, self.files);
        match d.task {
            None => (
                plan.story.clone(),
                render_story_body(story, plan, self.views, files),
                BTreeSet::from([labels::STORY.to_owned()]),
            ),
            Some(task) => (
                task.title.clone(),
                self.bodies.render(story, task, files),
                BTreeSet::from([labels::TASK.to_owned(), self.states[&task.id.value].label()]),
            ),
        }
    }

    /// Creates the missing issues, then asks for another pass once they
    /// have numbers.
    fn create_missing(&self, missing: &[&Desired], effects: &mut Vec<Effect>) {
        for d in missing {
            let (title, body, labels) = self.desired_issue(d);
            effects.push(Effect::CreateIssue {
                repo: self.view.repo.clone(),
                marker: d.key.clone(),
                title,
                body,
                labels: labels.into_iter().collect(),
                assignees: Vec::new(),
            });
        }
        effects.push(Effect::Reconcile {
            repo: self.view.repo.clone(),
            story: self.story.clone(),
            round: 0,
        });
    }

    /// Brings one existing issue in line: its text, labels and state, its
    /// parent link and, for a task, its blockers.
    fn align_issue(&self, d: &Desired, record: &IssueRecord, effects: &mut Vec<Effect>) {
        let change = self.update_issue(d, record);
        if !change.is_noop() {
            effects.push(change);
        }
        if let Some(parent) = &d.parent_key {
            if record.parent.as_ref() != Some(parent) {
                effects.push(Effect::LinkSubIssue {
                    repo: self.view.repo.clone(),
                    parent: parent.clone(),
                    child: d.key.clone(),
                    replace_parent: record.parent.is_some(),
                    child_repo: None,
                });
            }
        }
        if let Some(task) = d.task {
            self.align_blockers(d, task, record, effects);
        }
    }

    /// The update that gives one issue its title, body, labels and state
    /// (a no-op when it has them already).
    fn update_issue(&self, d: &Desired, record: &IssueRecord) -> Effect {
        let (title, body, type_labels) = self.desired_issue(d);
        let labels: BTreeSet<String> = record
            .labels
            .iter()
            .filter(|l| !l.starts_with("state:"))
            .cloned()
            .chain(type_labels)
            .collect();
        Effect::UpdateIssue {
            repo: self.view.repo.clone(),
            marker: d.key.clone(),
            title: (record.title != title).then_some(title),
            body: (record.body != body).then_some(body),
            labels: (record.labels != labels).then(|| labels.into_iter().collect()),
            // A task is closed when it completes (closing keywords do not
            // fire on merges into a story branch); everything else is open.
            state: match (record.open, d.task.map(|t| self.states[&t.id.value])) {
                (true, Some(TaskState::Completed)) => Some(IssueState::ClosedCompleted),
                (true, _) => None,
                (false, Some(TaskState::Completed)) => None,
                (false, _) => Some(IssueState::Open),
            },
        }
    }

    /// Makes a task's "blocked by" links match its dependencies.
    fn align_blockers(
        &self,
        d: &Desired,
        task: &Task,
        record: &IssueRecord,
        effects: &mut Vec<Effect>,
    ) {
        let blockers: BTreeSet<String> = task
            .depends_on
            .iter()
            .map(|dep| self.keys.task(&dep.value))
            .collect();
        for add in blockers.difference(&record.blocked_by) {
            effects.push(Effect::AddBlockedBy {
                repo: self.view.repo.clone(),
                marker: d.key.clone(),
                blocker: add.clone(),
                blocker_repo: None,
            });
        }
        for remove in record.blocked_by.difference(&blockers) {
            effects.push(Effect::RemoveBlockedBy {
                repo: self.view.repo.clone(),
                marker: d.key.clone(),
                blocker: remove.clone(),
                blocker_repo: None,
            });
        }
    }

    /// Tasks no longer in the plan: closed as not planned, with a comment.
    fn close_removed(&self, wanted: &[Desired], effects: &mut Vec<Effect>) {
        let wanted_keys: BTreeSet<&str> = wanted.iter().map(|d| d.key.as_str()).collect();
        let task_prefix = format!("{} task=", self.keys.story_key);
        for (key, record) in self.view.issues.range(task_prefix.clone()..) {
            if !key.starts_with(&task_prefix) {
                break;
            }
            // Branch todos share the prefix; only task issues are plan items.
            let is_task = matches!(Marker::from_key(key), Some(Marker::Task { .. }));
            if is_task && record.open && !wanted_keys.contains(key.as_str()) {
                effects.push(Effect::PostComment {
                    repo: self.view.repo.clone(),
                    issue: record.number,
                    body:
                        "This task was removed from the plan, so taskgate closes it as not planned."
                            .into(),
                    marker: format!("removed {key}"),
                });
                effects.push(Effect::UpdateIssue {
                    repo: self.view.repo.clone(),
                    marker: key.clone(),
                    title: None,
                    body: None,
                    labels: None,
                    state: Some(IssueState::ClosedNotPlanned),
                });
            }
        }
    }

    /// Branches: the story's from the default branch; a leaf task's from
    /// the story branch's head once the task is ready (SPEC §3), so that
    /// it holds its dependencies' merged work. The slug comes from the
    /// task id, which never changes, not from its title.
    fn create_branches(&self, effects: &mut Vec<Effect>) {
        let issues = self.view.issues;
        let story = story_branch(issues[&self.keys.story_key].number.get());
        if !self.view.branches.contains(&story) {
            effects.push(Effect::CreateBranch {
                repo: self.view.repo.clone(),
                name: story.clone(),
                sha: self.view.base_sha.clone(),
            });
        }
        for r in self.plan.walk() {
            let task = r.task;
            if task.is_parent() {
                continue;
            }
            let marker = self.keys.task(&task.id.value);
            let name = task_branch(issues[&marker].number.get(), task.id.value.as_str());
            if self.starts_branch(task, &name) {
                effects.push(Effect::StartTaskBranch {
                    repo: self.view.repo.clone(),
                    story: self.story.clone(),
                    task: task.id.value.clone(),
                    name,
                    story_branch: story.clone(),
                    marker,
                });
            }
        }
    }

    /// A leaf's branch is started once, when every dependency is complete
    /// and the task is not: made where taskgate has not made it, and for a
    /// task with dependencies brought up to date where it exists already
    /// (made at planning time by an older taskgate, or pushed by a person).
    fn starts_branch(&self, task: &Task, name: &str) -> bool {
        let id = &task.id.value;
        if self.view.starts.contains_key(id)
            || matches!(
                self.states[id],
                TaskState::Pending | TaskState::Completed | TaskState::Rejected
            )
        {
            return false;
        }
        let deps_done = task.depends_on.iter().all(|d| {
            self.states
                .get(&d.value)
                .is_none_or(|s| *s == TaskState::Completed)
        });
        deps_done && (!self.view.branches.contains(name) || !task.depends_on.is_empty())
    }
}

/// Labels this story uses now.
fn needed_labels(states: &BTreeMap<TaskId, TaskState>) -> BTreeSet<String> {
    let mut needed = BTreeSet::from([labels::STORY.to_owned(), labels::TASK.to_owned()]);
    needed.extend(states.values().map(|s| s.label()));
    needed
}

/// Each task's state: what its issue's `state:*` label says once work has
/// begun; before that, `pending` while a dependency is incomplete and
/// `ready` otherwise. Parents aggregate their children.
fn task_states(
    plan: &Plan,
    view: &RepoView,
    task_key: &dyn Fn(&TaskId) -> String,
) -> BTreeMap<TaskId, TaskState> {
    let recorded = |id: &TaskId| {
        view.states.get(id).copied().or_else(|| {
            view.issues
                .get(&task_key(id))
                .and_then(|r| r.labels.iter().find_map(|l| TaskState::from_label(l)))
        })
    };
    let mut states = BTreeMap::new();
    // Completed first, since readiness depends on it.
    let completed: BTreeSet<TaskId> = plan
        .leaves()
        .iter()
        .filter(|t| recorded(&t.id.value) == Some(TaskState::Completed))
        .map(|t| t.id.value.clone())
        .collect();
    // Every task by id, found once: a lookup per dependency walking the
    // plan made a pass quadratic in it (issue 32).
    let by_id: HashMap<&TaskId, &Task> = plan
        .walk()
        .into_iter()
        .map(|r| (&r.task.id.value, r.task))
        .collect();
    let task = |id: &TaskId| by_id.get(id).copied();
    let done = |id: &TaskId| -> bool {
        match task(id) {
            Some(t) if t.is_parent() => {
                leaves_of(t).iter().all(|l| completed.contains(&l.id.value))
            }
            Some(_) => completed.contains(id),
            None => true,
        }
    };
    // A dependency whose tests are failing (or that is itself blocked)
    // blocks the tasks that wait for it, until it passes (SPEC §3). Passes
    // repeat until nothing changes, so blocking reaches the whole chain.
    let leaves = plan.leaves();
    for _ in 0..=leaves.len() {
        let bad = |id: &TaskId| {
            let s = states.get(id).copied().or_else(|| recorded(id));
            matches!(s, Some(TaskState::TestFailed | TaskState::Blocked))
        };
        let failing = |id: &TaskId| -> bool {
            match task(id) {
                Some(t) if t.is_parent() => leaves_of(t).iter().any(|l| bad(&l.id.value)),
                Some(_) => bad(id),
                None => false,
            }
        };
        let mut next = BTreeMap::new();
        for leaf in &leaves {
            let id = leaf.id.value.clone();
            let state = match recorded(&id) {
                Some(s)
                    if s != TaskState::Pending
                        && s != TaskState::Ready
                        && s != TaskState::Blocked =>
                {
                    s
                }
                // Blocked by its own failure loop: stays blocked.
                Some(TaskState::Blocked) if view.states.get(&id) == Some(&TaskState::Blocked) => {
                    TaskState::Blocked
                }
                _ if leaf.depends_on.iter().all(|d| done(&d.value)) => TaskState::Ready,
                _ if leaf.depends_on.iter().any(|d| failing(&d.value)) => TaskState::Blocked,
                _ => TaskState::Pending,
            };
            next.insert(id, state);
        }
        if next == states {
            break;
        }
        states = next;
    }
    // Parents, deepest first, so a parent of parents sees its children.
    let walk = plan.walk();
    for r in walk.iter().rev().filter(|r| r.task.is_parent()) {
        let children: Vec<TaskState> = r.task.tasks.iter().map(|c| states[&c.id.value]).collect();
        states.insert(r.task.id.value.clone(), parent_state(&children));
    }
    states
}

fn leaves_of(task: &Task) -> Vec<&Task> {
    if task.is_parent() {
        task.tasks.iter().flat_map(leaves_of).collect()
    } else {
        vec![task]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{parse_plan, NoFiles};
    use crate::sync::test_support::{story_key, task_key as task, todo_key as todo};

    fn record(number: u64, key: &str) -> IssueRecord {
        crate::sync::test_support::record(number, key, true)
    }

    #[test]
    fn tasks_removed_from_the_plan_close_but_branch_todos_stay_open() {
        let (plan, problems) = parse_plan(
            "story: S\ntasks:\n  - { id: a, title: A, acceptance: { tests: [{ cmd: 'true' }] } }\n",
        );
        let plan = plan.unwrap_or_else(|| panic!("{problems:?}"));
        let repo = RepoName::parse("o/r").unwrap();
        let story = story_key();
        let issues: BTreeMap<String, IssueRecord> = [
            (story.clone(), 1),
            (task("a"), 2),
            (task("gone"), 3),
            (todo("a"), 4),
            (todo("gone"), 5),
        ]
        .into_iter()
        .map(|(k, n)| (k.clone(), record(n, &k)))
        .collect();
        let sha = crate::ids::sha(&"0".repeat(40));
        let view = RepoView {
            repo: &repo,
            base_sha: &sha,
            issues: &issues,
            branches: &BTreeSet::new(),
            labels: &BTreeSet::new(),
            states: &BTreeMap::new(),
            starts: &BTreeMap::new(),
        };
        let effects = reconcile(&StoryId::new("file:s"), &plan, &NoFiles, &view);
        let closed = crate::sync::test_support::closed_not_planned(&effects);
        assert_eq!(closed, vec![task("gone").as_str()]);
    }

    fn labels_and_bodies(states: &[(&str, TaskState)]) -> BTreeMap<String, (Vec<String>, String)> {
        let (plan, problems) = parse_plan(
            "story: S\ntasks:\n  - { id: a, title: A, acceptance: { tests: [{ cmd: 'true' }] } }\n  - { id: b, title: B, depends_on: [a], acceptance: { tests: [{ cmd: 'true' }] } }\n  - { id: c, title: C, depends_on: [b], acceptance: { tests: [{ cmd: 'true' }] } }\n",
        );
        let plan = plan.unwrap_or_else(|| panic!("{problems:?}"));
        let repo = RepoName::parse("o/r").unwrap();
        let story = story_key();
        let issues: BTreeMap<String, IssueRecord> = [
            (story.clone(), 1),
            (task("a"), 2),
            (task("b"), 3),
            (task("c"), 4),
        ]
        .into_iter()
        .map(|(k, n)| (k.clone(), record(n, &k)))
        .collect();
        let states: BTreeMap<TaskId, TaskState> = states
            .iter()
            .map(|(id, s)| (TaskId::new(*id), *s))
            .collect();
        let sha = crate::ids::sha(&"0".repeat(40));
        let view = RepoView {
            repo: &repo,
            base_sha: &sha,
            issues: &issues,
            branches: &BTreeSet::new(),
            labels: &BTreeSet::new(),
            states: &states,
            starts: &BTreeMap::new(),
        };
        reconcile(&StoryId::new("file:s"), &plan, &NoFiles, &view)
            .into_iter()
            .filter_map(|e| match e {
                Effect::UpdateIssue {
                    marker,
                    labels: Some(labels),
                    body,
                    ..
                } => Some((marker, (labels, body.unwrap_or_default()))),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn dependents_of_a_failing_task_are_blocked_and_say_by_what_until_it_passes() {
        let task = |id: &str| format!("story=file:s task={id}");
        let red = labels_and_bodies(&[("a", TaskState::TestFailed)]);
        let (b_labels, b_body) = &red[&task("b")];
        assert!(
            b_labels.contains(&"state:blocked".to_string()),
            "{b_labels:?}"
        );
        assert!(b_body.contains("**Blocked** by"), "{b_body}");
        // Transitively: c waits for b, which is blocked.
        assert!(red[&task("c")].0.contains(&"state:blocked".to_string()));

        let green = labels_and_bodies(&[("a", TaskState::Review)]);
        assert!(green[&task("b")].0.contains(&"state:pending".to_string()));
        assert!(!green[&task("b")].1.contains("Blocked"));
        let done = labels_and_bodies(&[("a", TaskState::Completed)]);
        assert!(done[&task("b")].0.contains(&"state:ready".to_string()));
    }

    #[test]
    fn a_task_blocked_by_its_own_failure_loop_stays_blocked() {
        let task = |id: &str| format!("story=file:s task={id}");
        let escalated = labels_and_bodies(&[("a", TaskState::Blocked)]);
        let (labels, body) = &escalated[&task("a")];
        assert!(labels.contains(&"state:blocked".to_string()));
        assert!(body.contains("needs a person"), "{body}");
        assert!(escalated[&task("b")]
            .0
            .contains(&"state:blocked".to_string()));
    }
}
