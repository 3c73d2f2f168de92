//! What the dashboard shows, as plain data built from stored records.
//!
//! Pure: no IO, no clock (`now` comes in, unix seconds). The handler loads
//! the records; the template only lays this out.

use std::collections::{BTreeMap, HashMap};

use crate::store::{AttemptSummary, IssueLink, StoryTasks};
use taskgate_core::config::{load_config, Limits};
use taskgate_core::failure::{max_attempts, Bound, LoopStats, Resolution, MAX_AGENTS};
use taskgate_core::ids::{IssueNumber, RepoName, StoryId};
use taskgate_core::plan::render::{progress, resolve_states};
use taskgate_core::plan::{Plan, Task, TaskId, TaskState};
use taskgate_core::report::render_duration;
use taskgate_core::ship::StoryRecord;
use taskgate_core::story::Marker;
use taskgate_core::task::milestone::{milestone_limits, milestone_task};
use taskgate_core::task::RunSubject;
use taskgate_core::task::TaskRecord;

/// Seed 000 asks to revisit the design when the bug hunters fix fewer than
/// half of the failures on their own.
pub const AUTONOMOUS_FIX_FLOOR: f64 = 0.5;
/// "Humans frequently override test failures": flagged from one override in
/// five completed tasks.
pub const OVERRIDE_CEILING: f64 = 0.2;

/// One story as stored: everything [`story_view`] reads.
pub struct StoryInput<'a> {
    pub repo: &'a RepoName,
    /// The story key (`file:momentum`).
    pub story: &'a StoryId,
    pub issue: IssueNumber,
    pub record: &'a StoryRecord,
    /// The stored plan text and repository config, when the plan is known.
    pub plan: Option<(&'a Plan, Option<&'a str>)>,
    /// The records of the tasks the page lists ([`listed_tasks`]), by
    /// task key: a plan of thousands is not decoded for a page of 300.
    pub tasks: &'a BTreeMap<String, TaskRecord>,
    /// Every task's state and the story's counts, read without the records.
    pub summary: &'a StoryTasks,
    /// The story's issues by marker key (tasks and branch todos).
    pub issues: &'a BTreeMap<String, IssueLink>,
    /// The newest attempts of each task, newest first.
    pub attempts: &'a [AttemptSummary],
}

#[derive(Debug, Clone, PartialEq)]
pub struct DashboardView {
    pub generated_at: String,
    pub stories: Vec<StoryView>,
    pub totals: Totals,
    pub triggers: Vec<Trigger>,
    /// Every repository with a story, for the page's repository filter;
    /// `current` marks the one shown, if the page is filtered.
    pub repos: Vec<RepoChoice>,
    pub only: Option<String>,
    /// Repositories in which nothing lands now (`audit_view`).
    pub freezes: Vec<super::audit_view::FreezeLine>,
    /// Repositories whose ship train stepped aside (`queue_view`).
    pub trains_off: Vec<super::queue_view::TrainOffLine>,
    /// The stories shipped and not landed yet, in landing order.
    pub queue: Vec<super::queue_view::QueueRow>,
    /// The queue's last day as a chart, with the waits' p50 and p95.
    pub queue_chart: super::queue_chart::QueueChart,
    /// The latest audit entries of each repository shown.
    pub audit: Vec<super::audit_view::AuditSection>,
    /// Each repository's tests quarantined as flaky now.
    pub quarantined: Vec<super::quarantine_view::QuarantineSection>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RepoChoice {
    pub name: String,
    pub current: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StoryView {
    pub repo: String,
    pub issue: u64,
    pub issue_url: String,
    pub title: String,
    pub state: &'static str,
    pub pr: Option<Link>,
    /// Leaf tasks completed, of all leaves.
    pub done: usize,
    pub total: usize,
    pub missing: Vec<String>,
    /// The plan's first [`SHOWN_TASKS`] tasks, then its milestones.
    pub tasks: Vec<TaskRow>,
    /// The tasks past [`SHOWN_TASKS`], not listed (`GET /api/stories/{id}`
    /// lists every one).
    pub more_tasks: usize,
    /// Every leaf task (listed or not) by state, for the totals.
    pub leaf_states: BTreeMap<&'static str, usize>,
    /// Its slowest and most-failing tests (filled by the handler, which
    /// reads the history).
    pub tests: super::tests_view::StoryTests,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub number: u64,
    pub url: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub id: String,
    pub title: String,
    pub issue: Option<Link>,
    /// 0 for a top-level task.
    pub indent: usize,
    pub state: &'static str,
    /// Parents: direct children complete, of all.
    pub progress: Option<(usize, usize)>,
    /// An integration milestone (runs on the story branch), not a task.
    pub milestone: bool,
    /// Acceptance runs started.
    pub runs: u32,
    /// The newest of them, newest first.
    pub recent: Vec<AttemptCell>,
    pub gates: Vec<GateCell>,
    pub todo: Option<TodoCell>,
    /// Branch todos a green run closed.
    pub fixed: u32,
    /// The bound hit, when the task was escalated to a person.
    pub escalated: Option<&'static str>,
    pub overrides: u32,
    /// A completed leaf's approval: the approver's login and the commit
    /// approved (short), or `None` for auto review.
    pub approved: Option<Option<(String, String)>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AttemptCell {
    pub number: u32,
    pub sha: String,
    pub commit_url: String,
    pub status: String,
    /// How long it ran, once it has finished.
    pub took: Option<String>,
    pub runner: String,
    /// Its gates' check runs on GitHub.
    pub checks: Vec<CheckLink>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckLink {
    pub gate: String,
    pub url: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GateCell {
    pub name: String,
    pub passed: bool,
    pub kind: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TodoCell {
    pub issue: Option<Link>,
    pub kind: &'static str,
    pub role: String,
    /// The agent working on it, as the role's route named it when it
    /// opened (`@claude`, `Copilot`, `the workflow agent.yml`); `None` for
    /// a role without one, or a todo older than the record of agents.
    pub agent: Option<String>,
    /// Failed runs on it, of the most it may take (`attempt n/N`).
    pub attempt: u32,
    pub max_attempts: u32,
    pub depth: u32,
    pub max_depth: u32,
    pub age: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub stories: usize,
    /// Leaf tasks by state, in the order of [`TaskState::ALL`]; empty ones
    /// left out.
    pub by_state: Vec<(&'static str, usize)>,
    pub todos_open: usize,
    pub todos_fixed: u64,
    /// "47 %", or "—" before any todo was fixed.
    pub fixed_without_human: String,
    /// Mean lifetime of the fixed todos ("12 min"), or "—".
    pub mean_resolution: String,
    pub escalated: u64,
    pub overrides: u64,
    /// The fix rate by agent and failure kind, agents capped as in
    /// `/metrics`; empty before any todo was counted by agent.
    pub fix_rates: Vec<FixRateRow>,
}

/// What the todos of one agent and one failure kind came to.
#[derive(Debug, Clone, PartialEq)]
pub struct FixRateRow {
    pub agent: String,
    pub kind: String,
    pub opened: u64,
    pub fixed_without_human: u64,
    pub fixed_with_human: u64,
    pub escalated: u64,
    /// Means over the fixed ones ("1.5", "12 min"), or "—".
    pub attempts_to_green: String,
    pub time_to_green: String,
}

/// A seed 000 review trigger that fired: the design needs a look.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    pub title: String,
    pub detail: String,
}

/// The whole page: every story and the totals over all of them.
pub fn dashboard_view(stories: &[StoryInput<'_>], web_base: &str, now: i64) -> DashboardView {
    let views: Vec<StoryView> = stories
        .iter()
        .map(|s| story_view(s, web_base, now))
        .collect();
    // Summed from each story's counts, as `/metrics` sums them over every
    // task record (milestones too), none of them decoded here.
    let mut rows = BTreeMap::new();
    for s in stories {
        s.summary.add_rows(&mut rows);
    }
    let counts = StoryTasks::counts(&rows);
    let stats = counts.loop_stats;
    let overrides = counts.overrides.max(0) as u64;
    let completed = counts
        .by_state
        .get(TaskState::Completed.name())
        .map_or(0, |n| (*n).max(0) as usize);
    let mut by_state: HashMap<&'static str, usize> = HashMap::new();
    // Leaves only, as `/metrics` counts them: a parent's state is its
    // children's. Every leaf, listed or not.
    for (state, n) in views.iter().flat_map(|s| &s.leaf_states) {
        *by_state.entry(state).or_default() += n;
    }
    let totals = Totals {
        stories: views.len(),
        by_state: TaskState::ALL
            .iter()
            .filter_map(|s| by_state.get(s.name()).map(|n| (s.name(), *n)))
            .collect(),
        todos_open: stories.iter().map(|s| s.summary.todos_open).sum(),
        todos_fixed: stats.todos_fixed,
        fixed_without_human: stats
            .autonomous_fix_rate()
            .map(percent)
            .unwrap_or_else(|| "—".into()),
        mean_resolution: match stats.todos_fixed {
            0 => "—".into(),
            n => duration((stats.fixed_seconds_total / n) as i64),
        },
        escalated: stats.escalated_tasks,
        overrides,
        fix_rates: fix_rate_rows(&stats),
    };
    DashboardView {
        generated_at: chrono::DateTime::from_timestamp(now, 0)
            .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default(),
        triggers: triggers(&stats, overrides, completed),
        stories: views,
        totals,
        repos: Vec::new(),
        only: None,
        freezes: Vec::new(),
        trains_off: Vec::new(),
        queue: Vec::new(),
        queue_chart: Default::default(),
        audit: Vec::new(),
        quarantined: Vec::new(),
    }
}

/// The view of `shown` (the stories of `only`, or all when `None`), with
/// totals and triggers counted over those alone, and `repos` (every
/// repository that has a story) to choose from.
pub fn filtered_view<'r>(
    shown: &[StoryInput<'_>],
    repos: impl IntoIterator<Item = &'r RepoName>,
    only: Option<&RepoName>,
    web_base: &str,
    now: i64,
) -> DashboardView {
    let mut view = dashboard_view(shown, web_base, now);
    let names: std::collections::BTreeSet<&RepoName> = repos.into_iter().collect();
    view.repos = names
        .into_iter()
        .map(|name| RepoChoice {
            name: name.to_string(),
            current: only == Some(name),
        })
        .collect();
    view.only = only.map(RepoName::to_string);
    view
}

/// Seed 000's review triggers that taskgate can measure.
fn triggers(stats: &LoopStats, overrides: u64, completed: usize) -> Vec<Trigger> {
    let mut out = Vec::new();
    if let Some(rate) = stats.autonomous_fix_rate() {
        if rate < AUTONOMOUS_FIX_FLOOR {
            let all = stats.fixed_without_human + stats.fixed_with_human;
            out.push(Trigger {
                title: format!("Autonomous fix rate {} (below 50 %)", percent(rate)),
                detail: format!(
                    "{} of {all} fixed branch todos needed a person's command. Look at the \
                     routing, the agents' instructions or the size of the tasks.",
                    stats.fixed_with_human
                ),
            });
        }
    }
    if overrides > 0 && overrides as f64 > OVERRIDE_CEILING * completed as f64 {
        out.push(Trigger {
            title: format!("Frequent overrides ({overrides} for {completed} completed tasks)"),
            detail: "People accept tasks over a failing checker often: the acceptance tests \
                     may be testing the wrong thing."
                .into(),
        });
    }
    out
}

/// Tasks a story lists on the dashboard: a plan of thousands lists its
/// first ones (a page a person can read, answered in milliseconds) and
/// says how many more there are; its progress counts every task.
pub const SHOWN_TASKS: usize = 300;

pub fn story_view(s: &StoryInput<'_>, web_base: &str, now: i64) -> StoryView {
    let issue_url = |n: u64| format!("{web_base}/{}/issues/{n}", s.repo);
    let (tasks, counts, title) = match s.plan {
        Some((plan, config)) => {
            let limits = load_config(config)
                .unwrap_or_default()
                .effective_limits(&plan.settings);
            let (rows, counts) = task_rows(s, plan, &limits, web_base, now);
            (rows, counts, plan.story.clone())
        }
        None => (Vec::new(), TaskCounts::default(), s.story.to_string()),
    };
    StoryView {
        repo: s.repo.as_str().to_owned(),
        issue: s.issue.get(),
        issue_url: issue_url(s.issue.get()),
        title,
        state: s.record.state.name(),
        pr: s.record.pr.map(|n| Link {
            number: n.get(),
            url: format!("{web_base}/{}/pull/{}", s.repo, n.get()),
        }),
        done: counts.done,
        total: counts.leaves,
        missing: s.record.missing.clone(),
        tasks,
        more_tasks: counts.walked.saturating_sub(SHOWN_TASKS),
        leaf_states: counts.by_state,
        tests: Default::default(),
    }
}

/// A plan's tasks counted, whether listed or not.
#[derive(Default)]
struct TaskCounts {
    /// Leaf tasks, and those completed.
    leaves: usize,
    done: usize,
    /// Every task of the plan's tree, parents included.
    walked: usize,
    /// Leaf tasks by state.
    by_state: BTreeMap<&'static str, usize>,
}

/// The task keys a story's page lists: its first [`SHOWN_TASKS`] tasks
/// and its milestones. Only their records are read in full.
pub fn listed_tasks(plan: &Plan) -> Vec<String> {
    let tasks = plan.walk().into_iter().take(SHOWN_TASKS);
    let tasks = tasks.map(|r| r.task.id.value.as_str().to_owned());
    let milestones = plan
        .integration
        .iter()
        .map(|m| RunSubject::Milestone(m.id.value.clone()).key());
    tasks.chain(milestones).collect()
}

/// The rows of the plan's first [`SHOWN_TASKS`] tasks and its milestones,
/// and the counts of all its tasks.
fn task_rows(
    s: &StoryInput<'_>,
    plan: &Plan,
    limits: &Limits,
    web_base: &str,
    now: i64,
) -> (Vec<TaskRow>, TaskCounts) {
    let link = |n: IssueNumber| Link {
        number: n.get(),
        url: format!("{web_base}/{}/issues/{}", s.repo, n.get()),
    };
    let issue_of = |id: &TaskId| {
        let key = Marker::Task {
            story: s.story.to_owned(),
            task: id.clone(),
        }
        .key();
        s.issues.get(&key)
    };
    let walked = plan.walk();
    // Leaves as recorded (or labelled); parents from their children, as
    // the story issue shows them.
    let leaves: HashMap<TaskId, TaskState> = walked
        .iter()
        .filter(|r| !r.task.is_parent())
        .map(|r| {
            let id = &r.task.id.value;
            (
                id.clone(),
                leaf_state(s.summary.states.get(id.as_str()), issue_of(id)),
            )
        })
        .collect();
    let states = resolve_states(plan, &leaves);
    let counts = TaskCounts {
        leaves: leaves.len(),
        done: (leaves.values())
            .filter(|s| **s == TaskState::Completed)
            .count(),
        walked: walked.len(),
        by_state: leaves.values().fold(BTreeMap::new(), |mut by, state| {
            *by.entry(state.name()).or_default() += 1;
            by
        }),
    };
    let mut rows: Vec<TaskRow> = walked
        .iter()
        .take(SHOWN_TASKS)
        .map(|r| {
            let task = r.task;
            let id = &task.id.value;
            Row {
                id: id.as_str(),
                task,
                limits: limits.clone(),
                issue: issue_of(id).map(|i| link(i.number)),
                indent: r.depth - 1,
                state: states.get(id).copied().unwrap_or(TaskState::Pending),
                progress: task.is_parent().then(|| progress(task, &states)),
            }
            .build(s, web_base, now)
        })
        .collect();
    // Integration milestones run as pseudo tasks with their own limits;
    // they have no issue of their own (their todos hang off the story).
    for m in &plan.integration {
        let id = RunSubject::Milestone(m.id.value.clone()).key();
        let task = milestone_task(m);
        let after: Vec<&str> = m.after.iter().map(|a| a.value.as_str()).collect();
        let mut row = Row {
            id: &id,
            task: &task,
            limits: milestone_limits(limits),
            issue: None,
            indent: 0,
            state: (s.summary.states.get(&id).copied()).unwrap_or(TaskState::Pending),
            progress: None,
        }
        .build(s, web_base, now);
        row.title = format!("{} (after {})", task.title, after.join(", "));
        row.milestone = true;
        rows.push(row);
    }
    (rows, counts)
}

/// What differs between a task's row and a milestone's.
struct Row<'t> {
    id: &'t str,
    task: &'t Task,
    limits: Limits,
    issue: Option<Link>,
    indent: usize,
    state: TaskState,
    progress: Option<(usize, usize)>,
}

impl Row<'_> {
    fn build(self, s: &StoryInput<'_>, web_base: &str, now: i64) -> TaskRow {
        let record = s.tasks.get(self.id);
        let link = |n: IssueNumber| Link {
            number: n.get(),
            url: format!("{web_base}/{}/issues/{}", s.repo, n.get()),
        };
        TaskRow {
            id: self.id.to_owned(),
            title: self.task.title.clone(),
            issue: self.issue,
            indent: self.indent,
            state: self.state.name(),
            progress: self.progress,
            milestone: false,
            runs: record.map_or(0, |t| t.attempts),
            recent: s
                .attempts
                .iter()
                .filter(|a| a.task == self.id)
                .map(|a| attempt_cell(a, web_base, s.repo))
                .collect(),
            gates: record.map(gate_cells).unwrap_or_default(),
            todo: record.and_then(|t| {
                let open = t.failure.open.as_ref()?;
                Some(TodoCell {
                    issue: s.issues.get(&open.marker).map(|i| link(i.number)),
                    kind: open.kind.as_str(),
                    role: open.role.clone(),
                    agent: named_agent(&open.agent),
                    attempt: open.failed_runs,
                    max_attempts: max_attempts(self.task, &self.limits),
                    depth: open.depth,
                    max_depth: self.limits.max_branch_depth,
                    age: duration(now - open.opened_at),
                })
            }),
            fixed: record.map_or(0, |t| {
                t.failure
                    .history
                    .iter()
                    .filter(|c| c.resolution == Resolution::Fixed)
                    .count() as u32
            }),
            escalated: record
                .and_then(|t| t.failure.escalation.as_ref())
                .map(|e| bound_text(e.reason)),
            overrides: record.map_or(0, |t| t.override_count),
            approved: record
                .filter(|t| t.state == Some(TaskState::Completed))
                .map(|t| {
                    (t.approval.as_ref()).map(|a| (a.login.clone(), a.sha.short().to_owned()))
                }),
        }
    }
}

/// A leaf's state as taskgate recorded it; before any work, the `state:*`
/// label the reconciler put on its issue; else `pending`.
fn leaf_state(recorded: Option<&TaskState>, issue: Option<&IssueLink>) -> TaskState {
    recorded
        .copied()
        .or_else(|| issue.and_then(|i| i.labels.iter().find_map(|l| TaskState::from_label(l))))
        .unwrap_or(TaskState::Pending)
}

fn attempt_cell(a: &AttemptSummary, web_base: &str, repo: &RepoName) -> AttemptCell {
    AttemptCell {
        number: a.attempt,
        sha: a.sha.as_str().chars().take(7).collect(),
        commit_url: format!("{web_base}/{repo}/commit/{}", a.sha.as_str()),
        status: a.status.clone(),
        took: match (a.started_ms, a.finished_ms) {
            (Some(start), Some(end)) => Some(render_duration((end - start).max(0) as u64)),
            _ => None,
        },
        runner: a.runner.clone(),
        checks: a
            .checks
            .iter()
            .map(|(gate, id)| CheckLink {
                gate: gate.clone(),
                // Where GitHub shows a check run (its `html_url`).
                url: format!("{web_base}/{repo}/runs/{id}"),
            })
            .collect(),
    }
}

fn bound_text(bound: Bound) -> &'static str {
    match bound {
        Bound::Attempts => "attempts used up",
        Bound::Depth => "depth limit",
        Bound::Timeout => "branch todo timed out",
    }
}

fn gate_cells(record: &TaskRecord) -> Vec<GateCell> {
    record
        .verdicts
        .iter()
        .map(|(name, v)| GateCell {
            name: name.clone(),
            passed: v.passed,
            kind: v.kind.map(|k| k.as_str()),
        })
        .collect()
}

fn fix_rate_rows(stats: &LoopStats) -> Vec<FixRateRow> {
    stats
        .fix_rates(MAX_AGENTS)
        .into_iter()
        .filter(|(_, f)| f.opened > 0)
        .map(|((agent, kind), f)| {
            // Over the todos a green run closed (fixes count at completion).
            let green = f.greened;
            let mean = |total: u64| (green > 0).then(|| total as f64 / green as f64);
            FixRateRow {
                agent,
                kind,
                opened: f.opened,
                fixed_without_human: f.fixed_without_human,
                fixed_with_human: f.fixed_with_human,
                escalated: f.escalated,
                attempts_to_green: mean(f.attempts_to_green)
                    .map_or_else(|| "—".into(), |m| format!("{m:.1}")),
                time_to_green: mean(f.seconds_to_green)
                    .map_or_else(|| "—".into(), |m| duration(m as i64)),
            }
        })
        .collect()
}

fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// A short human duration: "40 s", "12 min", "3 h", "2 d".
pub fn duration(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3_600 => format!("{} min", s / 60),
        3_600..172_800 => format!("{} h", s / 3_600),
        _ => format!("{} d", s / 86_400),
    }
}

/// `agent` when it names one ([`taskgate_core::failure::NO_AGENT`] and
/// [`taskgate_core::failure::UNRECORDED_AGENT`] do not).
/// The agent working on an open todo, as a person knows it: the handle
/// mentioned, Copilot, or what starts it (a label, a workflow). `None`
/// for a role without an agent, or a todo older than the record.
fn named_agent(agent: &str) -> Option<String> {
    use taskgate_core::config::AgentRoute;
    use taskgate_core::failure::{NO_AGENT, UNRECORDED_AGENT};
    if agent == NO_AGENT || agent == UNRECORDED_AGENT {
        return None;
    }
    Some(match AgentRoute::from_name(agent) {
        Some(AgentRoute::Mention(handle)) => handle,
        Some(AgentRoute::Copilot) => "Copilot".to_owned(),
        Some(AgentRoute::Label(label)) => format!("the agent labelled {label}"),
        Some(AgentRoute::Workflow(file)) => format!("the workflow {file}"),
        None => agent.to_owned(),
    })
}
