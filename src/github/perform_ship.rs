//! Effects of the ship queue → GitHub calls: the proving merge commit made
//! on `taskgate/ship-<issue>`, the default branch fast-forwarded to the
//! tested commit, and the queue's next look recorded through the inbox.
//! What GitHub answers (the merge commit, a conflict, a base that moved)
//! goes back to the story as an internal ship event; the core decides.

use serde_json::json;

use super::client::GitHubError;
use super::perform::{post_comment, record, Ctx};
use super::perform_runs::ship_event;
use super::repo::{FastForward, MergeOutcome};
use crate::core::ship::ShipWhat;
use crate::core::Effect;
use crate::ids::{CommitSha, RepoName};

pub(super) async fn perform(ctx: &Ctx<'_>) -> Result<Option<String>, GitHubError> {
    match &ctx.row.effect {
        Effect::PrepareShipCommit {
            repo,
            story,
            branch,
            base,
            head,
            message,
            round,
        } => {
            let proof = Proof::new(repo, story, branch, *round);
            let done = prepare(ctx, &proof, base, head, message).await;
            told_if_refused(ctx, &proof, done, |round, why| ShipWhat::ProofConflict {
                round,
                why: format!("GitHub refused to build the merge commit: {why}"),
            })
            .await
        }
        Effect::LandShipCommit {
            repo,
            story,
            branch,
            commit,
            round,
            report_to,
            revert,
        } => {
            let landing = Landing {
                repo,
                story,
                branch,
                round: *round,
                revert: *revert,
            };
            land(ctx, &landing, commit, report_to).await
        }
        Effect::PrepareRevert {
            repo,
            story,
            branch,
            reverts,
            onto,
            message,
            round,
        } => {
            let proof = Proof::new(repo, story, branch, *round);
            let done = revert(ctx, &proof, reverts, onto, message).await;
            told_if_refused(ctx, &proof, done, |round, why| ShipWhat::RevertRefused {
                round,
                why: sentence(format!("GitHub refused to build the revert: {why}")),
            })
            .await
        }
        Effect::AdvanceShipQueue { repo } => {
            ship_event(ctx, repo, "", ShipWhat::Advance, "ship-queue").await?;
            Ok(None)
        }
        other => unreachable!("`{}` is not a ship effect", other.name()),
    }
}

/// An effect GitHub refused for good (the App may not push the branch,
/// say) is told to the story, which must not wait for it for ever.
async fn told_if_refused(
    ctx: &Ctx<'_>,
    proof: &Proof<'_>,
    done: Result<Option<String>, GitHubError>,
    what: impl FnOnce(u32, &GitHubError) -> ShipWhat,
) -> Result<Option<String>, GitHubError> {
    match done {
        Err(e) if !e.is_transient() && !matches!(e, GitHubError::Store(_)) => {
            let what = what(proof.round, &e);
            ship_event(ctx, proof.repo, proof.story, what, "refused").await?;
            Err(e)
        }
        done => done,
    }
}

struct Proof<'a> {
    repo: &'a RepoName,
    story: &'a str,
    branch: &'a str,
    round: u32,
}

impl<'a> Proof<'a> {
    fn new(repo: &'a RepoName, story: &'a str, branch: &'a str, round: u32) -> Self {
        Proof {
            repo,
            story,
            branch,
            round,
        }
    }
}

/// Sets the ship branch to `base` and merges `head` into it. A retry
/// after a lost answer finds the merge commit it made already (the ship
/// branch's head, whose parents are `base` and `head`).
async fn prepare(
    ctx: &Ctx<'_>,
    proof: &Proof<'_>,
    base: &CommitSha,
    head: &CommitSha,
    message: &str,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(proof.repo);
    if ctx.attempt > 1 {
        if let Some(tip) = gh.branch_head(proof.branch).await? {
            if gh.commit_parents(&tip).await? == [base.clone(), head.clone()] {
                return proof_commit(ctx, proof, tip).await;
            }
        }
    }
    gh.set_branch(proof.branch, base).await?;
    match gh.merge_into(proof.branch, head, message).await? {
        MergeOutcome::Merged(commit) => proof_commit(ctx, proof, commit).await,
        // The base contains the story already: the base itself is what
        // would land, and it is what gets tested.
        MergeOutcome::NothingToMerge => proof_commit(ctx, proof, base.clone()).await,
        MergeOutcome::Conflict(why) => {
            let what = ShipWhat::ProofConflict {
                round: proof.round,
                why: format!("it does not merge cleanly with the base (GitHub: {why})"),
            };
            ship_event(ctx, proof.repo, proof.story, what, "proof-conflict").await?;
            Ok(Some(json!({ "conflict": why }).to_string()))
        }
    }
}

async fn proof_commit(
    ctx: &Ctx<'_>,
    proof: &Proof<'_>,
    commit: CommitSha,
) -> Result<Option<String>, GitHubError> {
    let result = json!({ "sha": commit }).to_string();
    let what = ShipWhat::ProofCommit {
        round: proof.round,
        commit,
    };
    ship_event(ctx, proof.repo, proof.story, what, "proof-commit").await?;
    Ok(Some(result))
}

/// What lands: a ship's proof, or a rollback's revert.
struct Landing<'a> {
    repo: &'a RepoName,
    story: &'a str,
    branch: &'a str,
    round: u32,
    revert: bool,
}

/// Fast-forwards the default branch to the tested commit. Already in its
/// history (a retry after a lost answer: GitHub moved it, and others may
/// have pushed on top since) is done; moved elsewhere is told to the
/// story, which proves again.
async fn land(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    commit: &CommitSha,
    report_to: &str,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(l.repo);
    if ctx.attempt > 1 && gh.branch_contains(l.branch, commit).await? {
        return Ok(Some(json!({ "sha": commit, "landed": true }).to_string()));
    }
    match gh.fast_forward(l.branch, commit).await {
        Ok(FastForward::Done) => Ok(Some(json!({ "sha": commit, "landed": true }).to_string())),
        Ok(FastForward::NotFastForward(why)) => {
            let what = if l.revert {
                ShipWhat::RevertBaseMoved { round: l.round }
            } else {
                ShipWhat::BaseMoved { round: l.round }
            };
            ship_event(ctx, l.repo, l.story, what, "base-moved").await?;
            Ok(Some(json!({ "landed": false, "why": why }).to_string()))
        }
        Err(GitHubError::Http {
            status: status @ (403 | 409 | 422),
            message,
            headers,
        }) => {
            // A protected branch the App may not push to, say: a person
            // has to act, so it is told and not retried.
            land_refused(ctx, l, report_to, status, &message).await?;
            Err(GitHubError::Http {
                status,
                message,
                headers,
            })
        }
        Err(e) => Err(e),
    }
}

/// Builds the revert commit: the tree of `reverts`' first parent on top of
/// `reverts`, then `onto`'s head merged in (nothing to merge when `onto`
/// is still at `reverts`).
async fn revert(
    ctx: &Ctx<'_>,
    proof: &Proof<'_>,
    reverts: &CommitSha,
    onto: &str,
    message: &str,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(proof.repo);
    let parents = gh.commit_parents(reverts).await?;
    let Some(before) = parents.first() else {
        let what = ShipWhat::RevertRefused {
            round: proof.round,
            why: format!("`{}` has no parent to go back to.", reverts.short()),
        };
        ship_event(ctx, proof.repo, proof.story, what, "revert-refused").await?;
        return Ok(None);
    };
    let tree = gh.commit_tree(before).await?;
    let undone = gh
        .create_commit(message, &tree, std::slice::from_ref(reverts))
        .await?;
    gh.set_branch(proof.branch, &undone).await?;
    let head = gh
        .branch_head(onto)
        .await?
        .ok_or_else(|| GitHubError::Unexpected(format!("`{onto}` has no head")))?;
    let merge = format!("Merge {onto} into the revert\n\n{message}");
    let what = match gh.merge_into(proof.branch, &head, &merge).await? {
        MergeOutcome::Merged(commit) => ShipWhat::RevertCommit {
            round: proof.round,
            commit,
        },
        MergeOutcome::NothingToMerge => ShipWhat::RevertCommit {
            round: proof.round,
            commit: undone,
        },
        MergeOutcome::Conflict(why) => ShipWhat::RevertRefused {
            round: proof.round,
            why: format!("The revert does not merge with `{onto}` as it is now (GitHub: {why})."),
        },
    };
    ship_event(ctx, proof.repo, proof.story, what, "revert-commit").await?;
    Ok(None)
}

/// Tells the story issue that GitHub refused the landing, and the story
/// (`MergeRefused`, or the rollback's `RevertRefused`).
async fn land_refused(
    ctx: &Ctx<'_>,
    l: &Landing<'_>,
    report_to: &str,
    status: u16,
    message: &str,
) -> Result<(), GitHubError> {
    let issue = record(ctx, l.repo, report_to).await?;
    let note = crate::core::ship::render_land_refused(l.branch, status, message);
    let marker = format!("land-refused effect={}", ctx.row.id);
    post_comment(ctx, l.repo, issue.number, &note, &marker).await?;
    let why = format!("GitHub answered {status}: {message}");
    let what = if l.revert {
        ShipWhat::RevertRefused {
            round: l.round,
            why: sentence(why),
        }
    } else {
        ShipWhat::MergeRefused { why }
    };
    ship_event(ctx, l.repo, l.story, what, "land-refused").await
}

/// A rollback's refusal is told as a sentence between others ("The
/// rollback did not land. {why} Nothing changed on …"): it ends with a
/// full stop, whatever GitHub's message ended with.
fn sentence(why: String) -> String {
    if why.ends_with(['.', '!', '?']) {
        why
    } else {
        why + "."
    }
}
