//! What the failure loop has done, summed over tasks, for `/metrics`, the
//! dashboard and the story PR (SPEC §9): branch todos opened by kind and
//! role, how long fixed ones took, the share fixed without a human,
//! blocked tasks, and the fix rate per agent and failure kind.
//!
//! Owns: [`FixTotals`] and their counting as todos open and close, the
//! sums over tasks ([`LoopStats`]), the cap on how many agents are named
//! ([`LoopStats::fix_rates`]) and the fix-rate table people read
//! ([`render_fix_rates`]). Must not: do IO, or decide when a todo opens or
//! closes (`core::failure`).
//!
//! Ideas a reader needs:
//! - **The agent** of a todo is its role's `agent:` route when the todo
//!   opened ([`crate::config::AgentRoute::name`]), or [`NO_AGENT`]; it is
//!   kept in the todo, so a later change of config does not move it.
//! - **Fixed counts at completion** (issue 50): a todo a green run closed
//!   is *green* then ([`FixTotals::greened`], its attempts and time to
//!   green counted), and *fixed* when its task completes: without a
//!   person when no person acted from its opening to the completion (a
//!   review command, a ready for review, a push or retry of theirs:
//!   `TaskRecord::note_person`), else with one; and when the person's
//!   action came only after it went green, the task *waited for a
//!   person*, counted with the wait.
//! - **Attempts to green** of a green todo are its failed runs: each one
//!   started the agent once, and the run after the last one passed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{GreenFix, LoopState, LoopTotals, OpenTodo, Resolution};

/// The agent of a role without one.
pub const NO_AGENT: &str = "none";
/// The agent of a todo opened before taskgate recorded agents.
pub const UNRECORDED_AGENT: &str = "unknown";
/// Where the agents beyond [`MAX_AGENTS`] are summed.
pub const OTHER_AGENTS: &str = "other";
/// Agents named in the fix-rate figures; the ones with fewer todos are
/// summed as [`OTHER_AGENTS`]. With the ten failure kinds, a series has at
/// most 11 × 10 label sets.
pub const MAX_AGENTS: usize = 10;

pub(super) fn unrecorded_agent() -> String {
    UNRECORDED_AGENT.to_owned()
}

/// Upper bounds, in seconds, of the buckets of the time-to-green and
/// waiting-for-a-person histograms (`/metrics`): a minute to a week.
pub const SECONDS_BUCKETS: [u64; 10] = [
    60, 300, 900, 1_800, 3_600, 7_200, 21_600, 86_400, 259_200, 604_800,
];

/// Durations counted by the bucket of [`SECONDS_BUCKETS`] they fell in: by
/// the bucket's upper bound, those over the bound before it and up to it
/// (not cumulative, so records add up); a duration over the last bound is
/// in the count only. Fixes counted before buckets were kept are in none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecondsBuckets(pub BTreeMap<u64, u64>);

impl SecondsBuckets {
    pub fn observe(&mut self, seconds: u64) {
        if let Some(le) = SECONDS_BUCKETS.iter().find(|le| seconds <= **le) {
            *self.0.entry(*le).or_default() += 1;
        }
    }

    fn add(&mut self, o: &SecondsBuckets) {
        for (le, n) in &o.0 {
            *self.0.entry(*le).or_default() += n;
        }
    }

    /// For each bound of [`SECONDS_BUCKETS`], the durations over the
    /// bound before it and up to it (a count kept under a bound no longer
    /// listed falls in the next listed one).
    pub fn per_bound(&self) -> Vec<(u64, u64)> {
        let mut lower = None;
        SECONDS_BUCKETS
            .iter()
            .map(|le| {
                let range = match lower.replace(*le) {
                    Some(l) => self.0.range(l + 1..=*le),
                    None => self.0.range(..=*le),
                };
                (*le, range.map(|(_, n)| *n).sum())
            })
            .collect()
    }
}

/// What the todos of one agent and one failure kind came to, counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, from = "StoredFixTotals")]
pub struct FixTotals {
    pub opened: u64,
    /// Green, and the task completed with no person's action from the
    /// todo's opening to the completion (counted at completion).
    pub fixed_without_human: u64,
    /// Green, and the task completed after a person's action (a review
    /// command, a ready for review, a push or retry of theirs) since the
    /// todo opened (counted at completion).
    pub fixed_with_human: u64,
    /// A bound was hit on it and a person was called.
    pub escalated: u64,
    /// Its attempts ran out and a deeper todo took over.
    pub superseded: u64,
    /// Closed by a green run, whether or not its task completed since:
    /// what the attempts and the seconds to green are summed over.
    pub greened: u64,
    /// Over the green ones: their failed runs, and their lifetimes.
    pub attempts_to_green: u64,
    pub seconds_to_green: u64,
    pub seconds_to_green_buckets: SecondsBuckets,
    /// Of the fixed with a person: green with no person's action while
    /// open, then the task waited for a person; and how long, from the
    /// green run to the completion.
    pub waited_for_person: u64,
    pub seconds_waiting_for_person: u64,
    pub waiting_buckets: SecondsBuckets,
}

/// [`FixTotals`] as stored: a record written before `greened` was kept
/// counted its fixes at the green run, so they are its green ones.
#[derive(Deserialize, Default)]
#[serde(default)]
struct StoredFixTotals {
    opened: u64,
    fixed_without_human: u64,
    fixed_with_human: u64,
    escalated: u64,
    superseded: u64,
    greened: Option<u64>,
    attempts_to_green: u64,
    seconds_to_green: u64,
    seconds_to_green_buckets: SecondsBuckets,
    waited_for_person: u64,
    seconds_waiting_for_person: u64,
    waiting_buckets: SecondsBuckets,
}

impl From<StoredFixTotals> for FixTotals {
    fn from(s: StoredFixTotals) -> FixTotals {
        FixTotals {
            greened: s
                .greened
                .unwrap_or(s.fixed_without_human + s.fixed_with_human),
            opened: s.opened,
            fixed_without_human: s.fixed_without_human,
            fixed_with_human: s.fixed_with_human,
            escalated: s.escalated,
            superseded: s.superseded,
            attempts_to_green: s.attempts_to_green,
            seconds_to_green: s.seconds_to_green,
            seconds_to_green_buckets: s.seconds_to_green_buckets,
            waited_for_person: s.waited_for_person,
            seconds_waiting_for_person: s.seconds_waiting_for_person,
            waiting_buckets: s.waiting_buckets,
        }
    }
}

impl FixTotals {
    pub fn fixed(&self) -> u64 {
        self.fixed_without_human + self.fixed_with_human
    }

    fn add(&mut self, o: &FixTotals) {
        self.opened += o.opened;
        self.fixed_without_human += o.fixed_without_human;
        self.fixed_with_human += o.fixed_with_human;
        self.escalated += o.escalated;
        self.superseded += o.superseded;
        self.greened += o.greened;
        self.attempts_to_green += o.attempts_to_green;
        self.seconds_to_green += o.seconds_to_green;
        self.seconds_to_green_buckets
            .add(&o.seconds_to_green_buckets);
        self.waited_for_person += o.waited_for_person;
        self.seconds_waiting_for_person += o.seconds_waiting_for_person;
        self.waiting_buckets.add(&o.waiting_buckets);
    }
}

fn fix_key(kind: crate::classify::FailureKind, agent: &str) -> String {
    // A kind has no `/`: the first one ends it (a label may have more).
    format!("{}/{agent}", kind.as_str())
}

impl LoopTotals {
    pub(super) fn count_opened(&mut self, todo: &OpenTodo) {
        *self
            .opened
            .entry(format!("{}/{}", todo.kind.as_str(), todo.role))
            .or_default() += 1;
        self.fixes
            .entry(fix_key(todo.kind, &todo.agent))
            .or_default()
            .opened += 1;
    }

    /// `todo` closed at `now`. A fixed one counts its attempts and time
    /// to green now, and as fixed when its task completes
    /// ([`LoopTotals::count_completed`]).
    pub(super) fn count_closed(&mut self, todo: &OpenTodo, resolution: Resolution, now: i64) {
        let seconds = now.saturating_sub(todo.opened_at).max(0) as u64;
        let fix = self
            .fixes
            .entry(fix_key(todo.kind, &todo.agent))
            .or_default();
        match resolution {
            Resolution::Fixed => {
                self.fixed += 1;
                self.fixed_seconds += seconds;
                fix.greened += 1;
                fix.attempts_to_green += u64::from(todo.failed_runs);
                fix.seconds_to_green += seconds;
                fix.seconds_to_green_buckets.observe(seconds);
            }
            Resolution::Escalated => fix.escalated += 1,
            Resolution::Superseded => fix.superseded += 1,
        }
    }

    /// The task of the green `fix` completed at `now`.
    pub(super) fn count_completed(&mut self, fix: &GreenFix, now: i64) {
        let totals = self.fixes.entry(fix_key(fix.kind, &fix.agent)).or_default();
        if !fix.person && !fix.person_after {
            totals.fixed_without_human += 1;
            return;
        }
        totals.fixed_with_human += 1;
        if !fix.person {
            let wait = now.saturating_sub(fix.at).max(0) as u64;
            totals.waited_for_person += 1;
            totals.seconds_waiting_for_person += wait;
            totals.waiting_buckets.observe(wait);
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoopStats {
    /// Todos ever opened (open and closed), by (kind, role).
    pub todos_opened: BTreeMap<(String, String), u64>,
    /// Todos closed by a green run, and their total lifetime.
    pub todos_fixed: u64,
    pub fixed_seconds_total: u64,
    pub fixed_without_human: u64,
    pub fixed_with_human: u64,
    /// Tasks escalated to a person (blocked, `needs-human`).
    pub escalated_tasks: u64,
    /// The fix rate, by (agent, kind), every agent named.
    pub fixes: BTreeMap<(String, String), FixTotals>,
}

impl LoopStats {
    pub fn add(&mut self, s: &LoopState) {
        for (kind_role, n) in &s.totals.opened {
            let (kind, role) = kind_role.split_once('/').unwrap_or((kind_role, ""));
            *self
                .todos_opened
                .entry((kind.to_owned(), role.to_owned()))
                .or_default() += n;
        }
        for (kind_agent, fix) in &s.totals.fixes {
            let (kind, agent) = kind_agent.split_once('/').unwrap_or((kind_agent, ""));
            self.add_fixes(agent, kind, fix);
        }
        self.todos_fixed += s.totals.fixed;
        self.fixed_seconds_total += s.totals.fixed_seconds;
        self.fixed_without_human += u64::from(s.fixed_without_human);
        self.fixed_with_human += u64::from(s.fixed_with_human);
        self.escalated_tasks += u64::from(s.escalation.is_some());
    }

    /// Adds `fix` to the figures of (`agent`, `kind`).
    pub fn add_fixes(&mut self, agent: &str, kind: &str, fix: &FixTotals) {
        self.fixes
            .entry((agent.to_owned(), kind.to_owned()))
            .or_default()
            .add(fix);
    }

    /// The share of fixed branch todos no person touched; `None` before
    /// any was fixed. Seed 000 flags a rate below 50 % for review.
    pub fn autonomous_fix_rate(&self) -> Option<f64> {
        let all = self.fixed_without_human + self.fixed_with_human;
        (all > 0).then(|| self.fixed_without_human as f64 / all as f64)
    }

    /// The todos opened by (kind, role), with the `max_roles` roles that
    /// opened the most named (ties by name) and the others summed as
    /// [`OTHER_AGENTS`]: role names come from every repository's config,
    /// so a scrape must neither grow with them nor show one tenant's names
    /// beyond the busiest.
    pub fn todos_opened_by_role(&self, max_roles: usize) -> BTreeMap<(String, String), u64> {
        let mut by_role: BTreeMap<&str, u64> = BTreeMap::new();
        for ((_, role), n) in &self.todos_opened {
            *by_role.entry(role).or_default() += n;
        }
        let mut ranked: Vec<(&str, u64)> = by_role.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let named: Vec<&str> = ranked.iter().take(max_roles).map(|(r, _)| *r).collect();
        let mut out: BTreeMap<(String, String), u64> = BTreeMap::new();
        for ((kind, role), n) in &self.todos_opened {
            let role = if named.contains(&role.as_str()) {
                role.clone()
            } else {
                OTHER_AGENTS.to_owned()
            };
            *out.entry((kind.clone(), role)).or_default() += n;
        }
        out
    }

    /// The fix rate by (agent, kind), with the `max_agents` agents that
    /// opened the most todos named (ties by name) and the others summed
    /// as [`OTHER_AGENTS`].
    pub fn fix_rates(&self, max_agents: usize) -> BTreeMap<(String, String), FixTotals> {
        let mut by_agent: BTreeMap<&str, u64> = BTreeMap::new();
        for ((agent, _), fix) in &self.fixes {
            *by_agent.entry(agent).or_default() += fix.opened;
        }
        let mut ranked: Vec<(&str, u64)> = by_agent.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let named: Vec<&str> = ranked.iter().take(max_agents).map(|(a, _)| *a).collect();
        let mut out: BTreeMap<(String, String), FixTotals> = BTreeMap::new();
        for ((agent, kind), fix) in &self.fixes {
            let agent = if named.contains(&agent.as_str()) {
                agent.clone()
            } else {
                OTHER_AGENTS.to_owned()
            };
            out.entry((agent, kind.clone())).or_default().add(fix);
        }
        out
    }
}

/// The fix-rate table (markdown, also shown as is in a terminal): one row
/// per agent and failure kind; `None` when no todo was opened.
pub fn render_fix_rates(rates: &BTreeMap<(String, String), FixTotals>) -> Option<String> {
    if rates.values().all(|f| f.opened == 0) {
        return None;
    }
    let mut out = String::from(
        "| agent | failure kind | todos | fixed without a person | fixed after a person stepped in | escalated | attempts to green | time to green |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for ((agent, kind), f) in rates.iter().filter(|(_, f)| f.opened > 0) {
        let (attempts, time) = match f.greened {
            0 => ("—".to_owned(), "—".to_owned()),
            n => (
                format!("{:.1}", f.attempts_to_green as f64 / n as f64),
                short_duration(f.seconds_to_green / n),
            ),
        };
        out.push_str(&format!(
            "| {} | {kind} | {} | {} | {} | {} | {attempts} | {time} |\n",
            // Mentions neutralised (no agent is called by a table); a `|`
            // escaped, as a table cell needs.
            crate::report::code_span(agent).replace('|', "\\|"),
            f.opened,
            f.fixed_without_human,
            f.fixed_with_human,
            f.escalated,
        ));
    }
    Some(out)
}

/// A mean lifetime, "40 s", "12 min", "3 h", "2 d".
fn short_duration(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3_600 => format!("{} min", seconds / 60),
        3_600..172_800 => format!("{} h", seconds / 3_600),
        _ => format!("{} d", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests;
