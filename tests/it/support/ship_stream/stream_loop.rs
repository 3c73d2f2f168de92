//! Owns: the stream's loop ([`ShipStream::run`]): ship each story at its
//! arrival, let taskgate and the played Actions settle, watch each story
//! land or be refused (a person ships an innocent one again at once), and
//! move both clocks straight to the next arrival, run's end or wake-up
//! taskgate asked for (the ship train's batching wait).
//! Must not: step the clock by a fixed amount while something is due (a
//! day of clock time would be thousands of steps), or wait forever: a
//! queue that stops moving ends the run with [`Stuck`], saying where each
//! story is.

use std::time::Duration;

use super::{ShipState, ShipStream, Tracked};

/// How far the clocks move when nothing is due (no arrival left, no run
/// open): taskgate's own periodic looks get their turn.
const IDLE_STEP_MS: i64 = 5 * 60_000;
/// Clock time with nothing due, and stories not landed or refused, after
/// which the queue is stuck.
const IDLE_LIMIT_MS: i64 = 60 * 60_000;

/// The stream did not end: why, and where the stories are.
#[derive(Debug)]
pub struct Stuck(pub String);

impl std::fmt::Display for Stuck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Tracked {
    /// Landed, or refused for its own fault (nobody ships it again).
    fn resolved(&self) -> bool {
        self.landed_ms.is_some() || (self.shipped && !self.waiting && self.spec.broken)
    }
}

impl ShipStream {
    /// Ships every story at its arrival and moves the clocks on until each
    /// landed or was refused for its own fault; [`Stuck`] when that takes
    /// more than `bound` of clock time, or nothing is due for an hour.
    pub async fn run(&mut self, bound: Duration) -> Result<(), Stuck> {
        self.t0_ms = self.app.clock.now_ms();
        self.main_at_start = self.repo().branch_sha("main").unwrap_or_default();
        let bound_ms = bound.as_millis() as i64;
        let mut idle_ms = 0;
        loop {
            self.quiet().await;
            if self.observe().await + self.ship_arrivals().await > 0 {
                continue;
            }
            if self.stories.iter().all(Tracked::resolved) {
                return Ok(());
            }
            let now = self.app.clock.now_ms();
            if now - self.t0_ms > bound_ms {
                return Err(self
                    .stuck(&format!(
                        "not done after {} min of clock time",
                        bound_ms / 60_000
                    ))
                    .await);
            }
            let arrival = self
                .stories
                .iter()
                .filter(|t| !t.shipped)
                .map(|t| self.t0_ms + t.spec.at_ms)
                .min();
            // taskgate's own next effect due later: the end of the ship
            // train's batching wait (`Effect::WakeShipQueue`).
            let wake = self.app.store().due_by_installation(now, 1).await;
            let wake = wake.ok().and_then(|d| d.next_due_ms);
            let by = match [arrival, self.player.next_due_ms(), wake]
                .into_iter()
                .flatten()
                .min()
            {
                Some(at) => {
                    idle_ms = 0;
                    (at - now).max(0)
                }
                None if idle_ms >= IDLE_LIMIT_MS => {
                    return Err(self
                        .stuck(&format!(
                            "nothing ran or arrived for {} min of clock time",
                            IDLE_LIMIT_MS / 60_000
                        ))
                        .await)
                }
                None => {
                    idle_ms += IDLE_STEP_MS;
                    IDLE_STEP_MS
                }
            };
            self.app.advance(Duration::from_millis(by as u64));
            self.steps += 1;
        }
    }

    /// Ships the stories whose time has come; how many.
    async fn ship_arrivals(&mut self) -> usize {
        let now = self.app.clock.now_ms();
        let mut shipped = 0;
        for i in 0..self.stories.len() {
            let t = &self.stories[i];
            if t.shipped || self.t0_ms + t.spec.at_ms > now {
                continue;
            }
            let issue = t.issue;
            self.app.comment(issue, "octocat", "/taskgate ship").await;
            let t = &mut self.stories[i];
            t.shipped = true;
            t.waiting = true;
            shipped += 1;
        }
        shipped
    }

    /// Notes landings and refusals since the last look; a story refused
    /// that was not broken is shipped again by a person, as they would
    /// (counted). How many were shipped again.
    async fn observe(&mut self) -> usize {
        let records = self.records().await;
        let mut again = 0;
        for i in 0..self.stories.len() {
            let t = &self.stories[i];
            if !t.waiting {
                continue;
            }
            let Some((_, record)) = records.iter().find(|(s, _)| *s == t.story) else {
                continue;
            };
            if let Some(at) = record.landed_at_ms {
                let t = &mut self.stories[i];
                t.landed_ms = Some(at);
                t.waiting = false;
                continue;
            }
            if record.state != ShipState::Shippable {
                continue;
            }
            let issue = t.issue;
            let innocent = !t.spec.broken;
            let t = &mut self.stories[i];
            t.refusals += 1;
            t.waiting = false;
            if innocent {
                t.requeues += 1;
                t.waiting = true;
                self.app.comment(issue, "octocat", "/taskgate ship").await;
                again += 1;
            }
        }
        again
    }

    /// [`Stuck`], saying `why` and where the stories not done are (the
    /// harness's view, and taskgate's state of the story).
    async fn stuck(&self, why: &str) -> Stuck {
        let records = self.records().await;
        let mut by_state = std::collections::BTreeMap::<String, Vec<&str>>::new();
        for t in self.stories.iter().filter(|t| !t.resolved()) {
            let at = if !t.shipped {
                "not shipped yet"
            } else if t.waiting {
                "shipped, neither landed nor refused"
            } else {
                "refused"
            };
            let state = records
                .iter()
                .find(|(s, _)| *s == t.story)
                .map_or("unknown", |(_, r)| r.state.name());
            by_state
                .entry(format!("{at} (taskgate: {state})"))
                .or_default()
                .push(&t.spec.key);
        }
        let landed = self
            .stories
            .iter()
            .filter(|t| t.landed_ms.is_some())
            .count();
        let mut text = format!(
            "the {} queue is stuck: {why}; {landed} of {} stories landed, {} proof runs open",
            self.queue.name(),
            self.stories.len(),
            self.player.open()
        );
        for (at, keys) in by_state {
            text.push_str(&format!("\n  {at}: {}", keys.join(" ")));
        }
        if let Some(t) = self.stories.iter().find(|t| t.shipped && !t.resolved()) {
            let said = self.app.bot_comments(t.issue);
            let last = said.last().map_or("nothing", String::as_str);
            text.push_str(&format!(
                "\n  taskgate's last word on {}: {last}",
                t.spec.key
            ));
        }
        Stuck(text)
    }
}
