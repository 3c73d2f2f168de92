//! Freeze: while a repository is frozen, nothing lands.
//! A freeze is either manual (`/taskgate freeze <reason>` until
//! `/taskgate unfreeze`) or a window of the week in `.github/taskgate.yml`
//! (`freeze_windows`, in UTC).
//!
//! Owns: the [`Freeze`] record, the [`FreezeWindow`]s and their reading
//! from the config, whether a freeze is in force at a time
//! ([`freeze_in_force`]) and the sentence that says why
//! ([`FrozenBecause`]), and the freeze and unfreeze decisions
//! ([`on_freeze`], [`on_unfreeze`]): the [`Change::FreezeChanged`] and its
//! audit entry, in one decision, or the typed refusal.
//! Must not: read the clock (`now_s` comes in), or store anything.
//!
//! Ideas a reader needs:
//! - **A manual freeze wins.** When both a manual freeze and a window are
//!   in force, the manual one is named: it is the one a person can lift.
//! - **Windows do not cross midnight.** `from` is before `to` (`to` may be
//!   `24:00`); Friday 22:00 to Saturday 06:00 is two windows. A window
//!   covers `from` and not `to`.

use chrono::{DateTime, Datelike, Timelike, Weekday};
use serde::{Deserialize, Serialize};

use super::audit::{AuditAction, AuditActor, AuditEntry, AuditVia, REPOSITORY};
use super::event::Change;
use super::plan::yaml::{self, as_str, Fields, Node, Value};
use super::plan::{Problem, ProblemKind};
use super::refusal::{Refusal, Refused};
use super::Decision;
use crate::ids::{RepoName, UserId};

/// A repository frozen by a person, until someone unfreezes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freeze {
    pub reason: String,
    /// Who froze it, or last changed its reason.
    pub by_login: String,
    pub by_id: Option<UserId>,
    /// When the freeze began (a new reason does not move it).
    pub since_s: i64,
}

/// A weekly window in which the repository is frozen, in UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FreezeWindow {
    pub days: Vec<Weekday>,
    /// Minutes after midnight: `from` included, `to` excluded (1440 is
    /// the end of the day).
    pub from_min: u16,
    pub to_min: u16,
    pub reason: Option<String>,
}

impl FreezeWindow {
    /// Whether `now_s` (unix seconds) falls inside this window.
    pub fn contains(&self, now_s: i64) -> bool {
        let Some(t) = DateTime::from_timestamp(now_s, 0) else {
            return false;
        };
        let minute = (t.hour() * 60 + t.minute()) as u16;
        self.days.contains(&t.weekday()) && self.from_min <= minute && minute < self.to_min
    }

    /// `Fri 16:00–24:00 UTC (weekend)`.
    pub fn render(&self) -> String {
        let days: Vec<String> = self.days.iter().map(|d| d.to_string()).collect();
        let reason = match &self.reason {
            Some(r) => format!(" ({r})"),
            None => String::new(),
        };
        format!(
            "{} {}–{} UTC{reason}",
            days.join(", "),
            clock(self.from_min),
            clock(self.to_min)
        )
    }
}

fn clock(minutes: u16) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

/// Why nothing lands now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrozenBecause {
    Manual(Freeze),
    Window(FreezeWindow),
}

impl FrozenBecause {
    /// One sentence for people: `frozen by @alice since 2026-11-27 09:00
    /// UTC: release in progress`, `inside the freeze window Fri
    /// 16:00–24:00 UTC (weekend)`.
    pub fn render(&self) -> String {
        match self {
            FrozenBecause::Manual(f) => format!(
                "frozen by @{} since {}: {}",
                f.by_login,
                utc_minute(f.since_s),
                f.reason
            ),
            FrozenBecause::Window(w) => format!("inside the freeze window {}", w.render()),
        }
    }
}

impl std::fmt::Display for FrozenBecause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

/// `2026-11-27 09:00 UTC`.
pub fn utc_minute(at_s: i64) -> String {
    DateTime::from_timestamp(at_s, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| format!("{at_s} (unix seconds)"))
}

/// The freeze in force at `now_s`, if any: the manual one first, else the
/// first window (in the config's order) that contains `now_s`.
pub fn freeze_in_force(
    manual: Option<&Freeze>,
    windows: &[FreezeWindow],
    now_s: i64,
) -> Option<FrozenBecause> {
    if let Some(f) = manual {
        return Some(FrozenBecause::Manual(f.clone()));
    }
    windows
        .iter()
        .find(|w| w.contains(now_s))
        .map(|w| FrozenBecause::Window(w.clone()))
}

/// Why `unfreeze` did nothing; `Display` is the commenter's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FreezeRefusal {
    #[error("the repository is not frozen")]
    NotFrozen,
    #[error("the repository is not frozen by a command; it is {window}, which `freeze_windows` in .github/taskgate.yml sets")]
    OnlyWindow { window: String },
}

/// `/taskgate freeze <reason>`: freezes the repository, or gives a frozen
/// one its new reason (keeping when it began). Always takes effect.
pub fn on_freeze(
    repo: &RepoName,
    current: Option<&Freeze>,
    reason: &str,
    by: AuditActor<'_>,
    now_s: i64,
) -> Decision {
    let freeze = Freeze {
        reason: reason.to_owned(),
        by_login: by.login.to_owned(),
        by_id: by.id,
        since_s: current.map_or(now_s, |f| f.since_s),
    };
    let outcome = match current {
        Some(_) => format!("{repo} stays frozen, now because: {reason}"),
        None => format!("{repo} frozen: {reason}"),
    };
    let audit = AuditEntry::new(
        repo,
        now_s,
        by,
        AuditAction::Freeze,
        REPOSITORY,
        AuditVia::Command,
    )
    .because(Some(reason));
    Decision {
        changes: vec![
            Change::FreezeChanged {
                repo: repo.clone(),
                freeze: Some(freeze),
            },
            audit.change(),
        ],
        effects: vec![],
        outcome,
    }
}

/// `/taskgate unfreeze`: lifts the manual freeze, or refuses when there is
/// none (a window in force is named: only the config lifts it).
pub fn on_unfreeze(
    repo: &RepoName,
    current: Option<&Freeze>,
    windows: &[FreezeWindow],
    by: AuditActor<'_>,
    now_s: i64,
) -> Result<Decision, Refused> {
    if current.is_none() {
        let why = match freeze_in_force(None, windows, now_s) {
            Some(window) => FreezeRefusal::OnlyWindow {
                window: window.render(),
            },
            None => FreezeRefusal::NotFrozen,
        };
        return Err(Refused {
            decision: Decision::nothing(format!("unfreeze refused: {why}")),
            refusal: Refusal::Freeze(why),
        });
    }
    let audit = AuditEntry::new(
        repo,
        now_s,
        by,
        AuditAction::Unfreeze,
        REPOSITORY,
        AuditVia::Command,
    );
    Ok(Decision {
        changes: vec![
            Change::FreezeChanged {
                repo: repo.clone(),
                freeze: None,
            },
            audit.change(),
        ],
        effects: vec![],
        outcome: format!("{repo} unfrozen"),
    })
}

/// The repositories a decision unfreezes (a manual freeze lifted): where
/// the ship queue may start again.
pub fn unfrozen(changes: &[Change]) -> impl Iterator<Item = &RepoName> {
    changes.iter().filter_map(|c| match c {
        Change::FreezeChanged { repo, freeze: None } => Some(repo),
        _ => None,
    })
}

const DAYS: [(&str, &str, Weekday); 7] = [
    ("mon", "monday", Weekday::Mon),
    ("tue", "tuesday", Weekday::Tue),
    ("wed", "wednesday", Weekday::Wed),
    ("thu", "thursday", Weekday::Thu),
    ("fri", "friday", Weekday::Fri),
    ("sat", "saturday", Weekday::Sat),
    ("sun", "sunday", Weekday::Sun),
];

/// `freeze_windows`: a list of `{ days, from, to, reason }`, every
/// problem reported at its place; a window with a problem is left out.
pub(crate) fn read_freeze_windows(n: &Node, p: &mut Vec<Problem>) -> Vec<FreezeWindow> {
    let items = match &n.value {
        Value::Seq(items) => items.as_slice(),
        Value::Null => &[],
        _ => {
            p.push(yaml::wrong_type(n, "freeze_windows", "a list of windows"));
            return Vec::new();
        }
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| read_window(i, item, p))
        .collect()
}

fn read_window(i: usize, n: &Node, p: &mut Vec<Problem>) -> Option<FreezeWindow> {
    let what = format!("freeze_windows[{i}]");
    let f = Fields::of(n, &what, &crate::schema::config::WINDOW, p)?;
    let before = p.len();
    let days = read_days(&f, &what, p);
    let from = read_time(&f, &what, "from", p);
    let to = read_time(&f, &what, "to", p);
    let reason = f.str("reason", p);
    if let (Some(from), Some(to)) = (from, to) {
        if from >= to {
            p.push(window_problem(
                Some(n.pos),
                &what,
                format!(
                    "`from` ({}) must be before `to` ({}); a window across midnight is written as two windows",
                    clock(from),
                    clock(to)
                ),
            ));
        }
    }
    for key in ["days", "from", "to"] {
        if f.get(key).is_none() {
            p.push(Problem::new(
                Some(n.pos),
                ProblemKind::MissingField {
                    field: key.into(),
                    context: what.clone(),
                },
            ));
        }
    }
    (p.len() == before).then(|| FreezeWindow {
        days,
        from_min: from.unwrap_or_default(),
        to_min: to.unwrap_or_default(),
        reason,
    })
}

fn read_days(f: &Fields, what: &str, p: &mut Vec<Problem>) -> Vec<Weekday> {
    let Some(node) = f.get("days") else {
        return Vec::new();
    };
    let field = format!("{what}.days");
    let mut days = Vec::new();
    for (word, pos) in f.str_list("days", p) {
        let lower = word.to_ascii_lowercase();
        match DAYS
            .iter()
            .find(|(short, long, _)| lower == *short || lower == *long)
        {
            Some((_, _, day)) if !days.contains(day) => days.push(*day),
            Some(_) => {}
            None => p.push(Problem::new(
                Some(pos),
                ProblemKind::InvalidValue {
                    field: field.clone(),
                    suggestion: yaml::did_you_mean(&lower, DAYS.iter().map(|d| d.0)),
                    value: word,
                    expected: DAYS.map(|d| d.0).join(", "),
                },
            )),
        }
    }
    if days.is_empty() && matches!(&node.value, Value::Seq(s) if s.is_empty()) {
        p.push(window_problem(
            Some(node.pos),
            &field,
            "names no day".into(),
        ));
    }
    days
}

/// `HH:MM` from `00:00` to `24:00`, in minutes after midnight.
fn read_time(f: &Fields, what: &str, key: &str, p: &mut Vec<Problem>) -> Option<u16> {
    let node = f.get(key)?;
    let text = as_str(node, key, p)?;
    let parsed = parse_time(&text);
    if parsed.is_none() {
        p.push(window_problem(
            Some(node.pos),
            &format!("{what}.{key}"),
            format!("`{text}` is not a time of day; write HH:MM in UTC, from 00:00 to 24:00"),
        ));
    }
    parsed
}

fn parse_time(text: &str) -> Option<u16> {
    let (h, m) = text.trim().split_once(':')?;
    let digits = |s: &str, len: std::ops::RangeInclusive<usize>| {
        (len.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u16>().ok())
            .flatten()
    };
    let (h, m) = (digits(h, 1..=2)?, digits(m, 2..=2)?);
    let minutes = h * 60 + m;
    (m < 60 && minutes <= 24 * 60).then_some(minutes)
}

fn window_problem(pos: Option<super::plan::Pos>, field: &str, problem: String) -> Problem {
    Problem::new(
        pos,
        ProblemKind::FreezeWindow {
            field: field.to_owned(),
            problem,
        },
    )
}

#[cfg(test)]
mod tests;
