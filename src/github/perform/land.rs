//! Landing a proven story (or a rollback's revert) on the default branch:
//! a fast-forward to the tested commit, or — where the branch's rules ask
//! for a pull request — the story PR merged with its proven head pinned,
//! only while the base is still the proven base, and the landed tree then
//! compared with the proven one.
//!
//! Owns: the calls of a landing and the reading of GitHub's answers into
//! what the story is told: landed, the base moved (`BaseMoved`), a rule
//! refused it (`LandRefused`, GitHub's message kept for the core to read),
//! or it failed otherwise (`LandFailed`). The default branch's rules are
//! read once more right before a ship moves it (one read per landing, not
//! the ship queue's cached copy): when they no longer allow the landing
//! the proof was made for (`core::ship::landing_holds`: linear history
//! required since a merge commit was proven, say), nothing lands and the
//! story is told (`RulesChanged`), to be proven again as they ask.
//! Nothing lands before
//! `taskgate/ship-gate` is green on the commit GitHub judges: required
//! checks are evaluated when the branch moves, and the outbox may have
//! put the gate's write off (then this effect waits and is tried again).
//! Must not: word what people read (the core does).

use serde_json::json;

use super::runs::ship_event;
use super::PerformStore;
use super::{post_comment, record, Ctx};
use crate::github::client::GitHubError;
use crate::github::repo::FastForward;
use crate::store::{EffectRow, NewDelivery};
use taskgate_core::ids::{CommitSha, RepoName, StoryId};
use taskgate_core::ship::{
    ApprovalFacts, CarId, LandVia, PullLanding, ShipWhat, Violation, SHIP_GATE,
};

/// What lands: a ship's proof, or a rollback's revert.
pub(super) struct Landing<'a> {
    pub repo: &'a RepoName,
    pub story: &'a StoryId,
    pub branch: &'a str,
    pub round: u32,
    pub revert: bool,
    /// A ship train car's landing: done is told to the train.
    pub car: Option<CarId>,
}

fn landed(commit: &CommitSha) -> Option<String> {
    Some(json!({ "sha": commit, "landed": true }).to_string())
}

/// Lands `commit` (by `pull`, the story PR's merge, when given).
pub(super) async fn land(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    commit: &CommitSha,
    report_to: &str,
    pull: Option<&PullLanding>,
) -> Result<Option<String>, GitHubError> {
    let done = match pull {
        Some(p) if p.queue => enqueue_story_pr(ctx, l, p).await,
        Some(p) => merge_story_pr(ctx, l, commit, p).await,
        None => fast_forward(ctx, l, commit).await,
    };
    let e = match done {
        Err(e) if !e.is_transient() && !matches!(e, GitHubError::Store(_)) => e,
        done => return done,
    };
    match &e {
        // A story branch that moved after its proof is no rule's refusal.
        GitHubError::Http {
            status: 409,
            message,
            ..
        } if message.contains("Head branch was modified") => {}
        GitHubError::Http {
            status: status @ (403 | 405 | 409 | 422),
            message,
            ..
        } => {
            refused(ctx, l, report_to, (*status, message), pull).await?;
            return Ok(Some(
                json!({ "landed": false, "status": status, "why": message }).to_string(),
            ));
        }
        _ => {}
    }
    // A 404 (the PR or the branch gone), or an answer taskgate cannot read.
    let why = e.to_string();
    let what = if l.revert {
        ShipWhat::RevertRefused {
            round: l.round,
            why: super::ship::sentence(why.clone()),
        }
    } else {
        ShipWhat::LandFailed {
            round: l.round,
            why: why.clone(),
        }
    };
    ship_event(ctx, l.repo, l.story, what, "land-failed").await?;
    Ok(Some(json!({ "landed": false, "why": why }).to_string()))
}

/// The rules of the default branch read now, at the landing, compared
/// with the landing the proof was made for (`via`): `None` while they
/// allow it; else nothing lands, and the story is told
/// (`ShipWhat::RulesChanged`) with the rules read. A revert lands as a
/// revert commit on the branch's head, whatever the rules say of proofs.
async fn rules_changed(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    via: LandVia,
) -> Result<Option<Option<String>>, GitHubError> {
    if l.revert {
        return Ok(None);
    }
    let rules = ctx.repo(l.repo).branch_rules(l.branch).await?;
    if taskgate_core::ship::landing_holds(via, &rules) {
        return Ok(None);
    }
    let what = ShipWhat::RulesChanged {
        round: l.round,
        rules,
    };
    ship_event(ctx, l.repo, l.story, what, "rules-changed").await?;
    let why = "the default branch's rules changed after the proof";
    Ok(Some(Some(
        json!({ "landed": false, "why": why }).to_string(),
    )))
}

/// Waits (by failing transiently) until `taskgate/ship-gate` is green on
/// `sha`: GitHub judges the required checks of the commit it moves to.
async fn gate_written(ctx: &Ctx<'_>, l: &Landing<'_>, sha: &CommitSha) -> Result<(), GitHubError> {
    if l.revert || ctx.repo(l.repo).check_passed(sha, SHIP_GATE).await? {
        return Ok(());
    }
    Err(GitHubError::NotYetVisible(format!(
        "`{SHIP_GATE}` is not green on {} yet",
        sha.short()
    )))
}

/// Fast-forwards the default branch to the tested commit. Already in its
/// history (a retry after a lost answer: GitHub moved it, and others may
/// have pushed on top since) is done; moved elsewhere is told to the
/// story, which proves again.
async fn fast_forward(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    commit: &CommitSha,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(l.repo);
    if ctx.attempt > 1 && gh.branch_contains(l.branch, commit).await? {
        return car_landed(ctx, l, commit).await;
    }
    if let Some(told) = rules_changed(ctx, l, LandVia::FastForward).await? {
        return Ok(told);
    }
    gate_written(ctx, l, commit).await?;
    match gh.fast_forward(l.branch, commit).await? {
        FastForward::Done => car_landed(ctx, l, commit).await,
        FastForward::NotFastForward(why) => base_moved(ctx, l, &why).await,
    }
}

/// Landed; a train car's landing is told to the train (on its first
/// story), whose next car may land on it.
async fn car_landed(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    commit: &CommitSha,
) -> Result<Option<String>, GitHubError> {
    if let Some(car) = l.car {
        ship_event(
            ctx,
            l.repo,
            l.story,
            ShipWhat::CarLanded { car },
            "car-landed",
        )
        .await?;
    }
    Ok(landed(commit))
}

async fn base_moved(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    why: &str,
) -> Result<Option<String>, GitHubError> {
    let what = if l.revert {
        ShipWhat::RevertBaseMoved { round: l.round }
    } else {
        ShipWhat::BaseMoved { round: l.round }
    };
    ship_event(ctx, l.repo, l.story, what, "base-moved").await?;
    Ok(Some(json!({ "landed": false, "why": why }).to_string()))
}

/// Merges the story PR at its proven head, while the default branch is
/// still the base it was proven on; then the landed tree must be the
/// tested tree.
async fn merge_story_pr(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    commit: &CommitSha,
    p: &PullLanding,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(l.repo);
    if ctx.attempt > 1 {
        if let Some(sha) = gh.get_pull(p.number).await?.merged_as(p.number)? {
            return Ok(landed(&sha));
        }
    }
    let via = taskgate_core::ship::planned_via(Some(p));
    if let Some(told) = rules_changed(ctx, l, via).await? {
        return Ok(told);
    }
    gate_written(ctx, l, &p.head).await?;
    let base = gh.branch_head(l.branch).await?;
    if base.as_ref() != Some(&p.base) {
        return base_moved(ctx, l, "the default branch moved after the proof").await;
    }
    let merged = match gh.merge_pull(p.number, &p.head, p.method, &p.title).await {
        Ok(v) => v,
        // GitHub's "Base branch was modified": prove again on the new base.
        Err(GitHubError::Http {
            status: 405,
            message,
            ..
        }) if message.contains("Base branch was modified") => {
            return base_moved(ctx, l, &message).await
        }
        Err(e) => return Err(e),
    };
    let sha = merged.sha;
    if gh.commit_tree(&sha).await? != gh.commit_tree(commit).await? {
        // The base moved between the look and the merge: what landed was
        // not what was proven. Said on the story; it stays landed.
        let what = ShipWhat::LandedUntested {
            round: l.round,
            commit: sha.clone(),
        };
        ship_event(ctx, l.repo, l.story, what, "landed-untested").await?;
    }
    Ok(landed(&sha))
}

/// Enqueues the story PR in GitHub's merge queue at its shipped head,
/// once `taskgate/ship-gate` is green there (GitHub judges the required
/// checks on the head when it enqueues). What lands is then the merge
/// group taskgate proves when GitHub asks (`merge_group`).
async fn enqueue_story_pr(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    p: &PullLanding,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(l.repo);
    let pull = gh.get_pull(p.number).await?;
    if let Some(sha) = pull.merged_as(p.number)? {
        return Ok(landed(&sha));
    }
    if let Some(told) = rules_changed(ctx, l, LandVia::MergeQueue).await? {
        return Ok(told);
    }
    gate_written(ctx, l, &p.head).await?;
    gh.enqueue(&pull.node_id, &p.head).await?;
    Ok(Some(
        json!({ "enqueued": true, "head": p.head }).to_string(),
    ))
}

/// GitHub refused the landing for good: a rule (told to the story, which
/// says it once on the story PR), or for a rollback's revert the old way
/// (a note on the story issue, and the rollback told).
async fn refused(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    report_to: &str,
    (status, message): (u16, &str),
    pull: Option<&PullLanding>,
) -> Result<(), GitHubError> {
    if !l.revert {
        let what = ShipWhat::LandRefused {
            round: l.round,
            status,
            message: message.to_owned(),
            approvals: approval_facts(ctx, l, message, pull).await,
        };
        return ship_event(ctx, l.repo, l.story, what, "land-refused").await;
    }
    let issue = record(ctx, l.repo, report_to).await?;
    let note = taskgate_core::ship::render_land_refused(l.branch, status, message);
    let marker = format!("land-refused effect={}", ctx.row.id);
    post_comment(ctx, l.repo, issue.number, &note, &marker).await?;
    let why = format!("GitHub answered {status}: {message}");
    let what = ShipWhat::RevertRefused {
        round: l.round,
        why: super::ship::sentence(why),
    };
    ship_event(ctx, l.repo, l.story, what, "land-refused").await
}

/// What the story PR's reviews are when GitHub refused its merge for
/// them (the core says from that how many approvals are missing and from
/// whom); `None` for another refusal, or when they could not be read (the
/// refusal is then said in GitHub's words).
async fn approval_facts(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    message: &str,
    pull: Option<&PullLanding>,
) -> Option<ApprovalFacts> {
    let p = pull?;
    let reviews = taskgate_core::ship::violations(message)
        .iter()
        .any(|v| matches!(v, Violation::Reviews(_)));
    if !reviews {
        return None;
    }
    let gh = ctx.repo(l.repo);
    match gh.approval_facts(p.number, l.branch, p.head.as_str()).await {
        Ok(facts) => Some(facts),
        Err(e) => {
            tracing::warn!(error = %e, "reading the story PR's reviews failed");
            None
        }
    }
}

/// The executor gave a ship effect up (5xx or no answer past its
/// retries): the story is told, so that it leaves the queue and the
/// repository's queue moves on.
pub(crate) async fn given_up(store: &PerformStore, row: &EffectRow, why: &str) {
    use taskgate_core::Effect;
    let (repo, story, what) = match &row.effect {
        Effect::PrepareShipCommit {
            repo, story, round, ..
        }
        | Effect::LandShipCommit {
            repo,
            story,
            round,
            revert: false,
            ..
        } => (
            repo,
            story,
            ShipWhat::LandFailed {
                round: *round,
                why: why.to_owned(),
            },
        ),
        Effect::PrepareRevert {
            repo, story, round, ..
        }
        | Effect::LandShipCommit {
            repo, story, round, ..
        } => (
            repo,
            story,
            ShipWhat::RevertRefused {
                round: *round,
                why: super::ship::sentence(format!("GitHub did not answer: {why}")),
            },
        ),
        Effect::BuildShipCar {
            repo, car, heads, ..
        } => {
            let Some(first) = heads.first() else {
                return;
            };
            let what = ShipWhat::CarFailed {
                car: *car,
                why: super::ship::sentence(format!("GitHub did not answer: {why}")),
                refused: false,
            };
            (repo, &first.story, what)
        }
        _ => return,
    };
    let event = taskgate_core::ship::ShipEvent {
        repo: repo.clone(),
        story: story.clone(),
        what,
    };
    let delivery = NewDelivery::internal(
        taskgate_core::ids::DeliveryId::new(format!("taskgate-given-up-{}", row.id)),
        row.installation,
        &taskgate_core::internal::InternalEvent::Ship(event),
    )
    .with_action("given-up");
    if let Err(e) = store.record_delivery(delivery).await {
        tracing::warn!(error = %e, "could not tell the story its ship effect was given up");
    }
}
