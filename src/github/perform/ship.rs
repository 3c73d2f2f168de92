//! Effects of the ship queue → GitHub calls: the proving merge commit made
//! on `taskgate/ship-<issue>` (squashed onto the base where history must be
//! linear), a ship train car's commit (`build_car`), the landing (`perform::land`), the revert of a rollback, and the
//! queue's next look recorded through the inbox.
//! What GitHub answers (the merge commit, a conflict, a base that moved)
//! goes back to the story as an internal ship event; the core decides.
//! Every commit built here is the one GitHub's answers name, its parents
//! checked (`RepoClient::merge_onto`); a branch's tip is never adopted
//! (issue 51).

use serde_json::json;

use super::land::{land, Landing};
use super::runs::ship_event;
use super::Ctx;
use crate::github::client::GitHubError;
use crate::github::repo::{fresh_branch, CarBuild, Merged, BUILD_ATTEMPTS};
use taskgate_core::ids::{CommitSha, RepoName, StoryId};
use taskgate_core::ship::{self, CarHead, CarId, RacedBuild, ShipWhat};
use taskgate_core::Effect;

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
            linear,
        } => {
            let proof = Proof::new(repo, story, branch, *round);
            let done = prepare(ctx, &proof, (base, head), message, *linear).await;
            told_if_refused(ctx, &proof, done, |round, why| ShipWhat::ProofConflict {
                round,
                why: format!("GitHub refused to build the merge commit: {why}"),
            })
            .await
        }
        Effect::BuildShipCar {
            repo,
            car,
            branch,
            base,
            heads,
        } => build_car(ctx, repo, *car, branch, base, heads).await,
        Effect::LandShipCommit {
            repo,
            story,
            branch,
            commit,
            round,
            report_to,
            revert,
            pull,
            car,
        } => {
            let landing = Landing {
                repo,
                story,
                branch,
                round: *round,
                revert: *revert,
                car: *car,
            };
            land(ctx, &landing, commit, report_to, pull.as_ref()).await
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
            let proof = Proof {
                revert: true,
                ..Proof::new(repo, story, branch, *round)
            };
            let done = revert(ctx, &proof, reverts, onto, message).await;
            told_if_refused(ctx, &proof, done, |round, why| ShipWhat::RevertRefused {
                round,
                why: sentence(format!("GitHub refused to build the revert: {why}")),
            })
            .await
        }
        Effect::AdvanceShipQueue { repo } | Effect::WakeShipQueue { repo, .. } => {
            ship_event(
                ctx,
                repo,
                &StoryId::new(""),
                ShipWhat::Advance,
                "ship-queue",
            )
            .await?;
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
            let what = match &e {
                // A rule or a permission said no: said as one, with the
                // setting that lets taskgate through.
                GitHubError::Http {
                    status, message, ..
                } if !proof.revert
                    && taskgate_core::ship::violations(message)
                        .iter()
                        .any(|v| !matches!(v, taskgate_core::ship::Violation::Other(_))) =>
                {
                    ShipWhat::LandRefused {
                        round: proof.round,
                        status: *status,
                        message: message.clone(),
                        approvals: None,
                    }
                }
                _ => what(proof.round, &e),
            };
            ship_event(ctx, proof.repo, proof.story, what, "refused").await?;
            Err(e)
        }
        done => done,
    }
}

struct Proof<'a> {
    repo: &'a RepoName,
    story: &'a StoryId,
    branch: &'a str,
    round: u32,
    /// A rollback's revert, not a ship's proof.
    revert: bool,
}

impl<'a> Proof<'a> {
    fn new(repo: &'a RepoName, story: &'a StoryId, branch: &'a str, round: u32) -> Self {
        Proof {
            repo,
            story,
            branch,
            round,
            revert: false,
        }
    }
}

/// Sets the ship branch to `base` and merges `head` into it; with
/// `linear`, commits the merge's tree again on `base` alone (the story
/// squashed onto the base) and points the ship branch there. What is
/// proven is the commit GitHub's answers name, never the branch's tip: a
/// merge that came back on someone else's commit is built again on a
/// fresh branch (at most [`BUILD_ATTEMPTS`] in all, then the proof is
/// refused), and a retry after a lost answer builds again rather than
/// adopting whatever the branch holds.
async fn prepare(
    ctx: &Ctx<'_>,
    proof: &Proof<'_>,
    (base, head): (&CommitSha, &CommitSha),
    message: &str,
    linear: bool,
) -> Result<Option<String>, GitHubError> {
    let gh = ctx.repo(proof.repo);
    let mut on = proof.branch.to_owned();
    for attempt in 1..=BUILD_ATTEMPTS {
        if attempt > 1 {
            on = fresh_branch(proof.branch);
        }
        gh.set_branch(&on, base).await?;
        let commit = match gh.merge_onto(&on, base, head, message).await? {
            Merged::Made(commit) if linear => {
                let tree = gh.commit_tree(&commit).await?;
                let squashed = gh
                    .create_commit(message, &tree, std::slice::from_ref(base))
                    .await?;
                gh.set_branch(&on, &squashed).await?;
                squashed
            }
            Merged::Made(commit) => commit,
            // The base contains the story already: the base itself is what
            // would land, and it is what gets tested.
            Merged::Contained => base.clone(),
            Merged::Conflict(why) => {
                let what = ShipWhat::ProofConflict {
                    round: proof.round,
                    why: format!("it does not merge cleanly with the base (GitHub: {why})"),
                };
                ship_event(ctx, proof.repo, proof.story, what, "proof-conflict").await?;
                return Ok(Some(json!({ "conflict": why }).to_string()));
            }
            Merged::Raced { found } => {
                tracing::warn!(branch = %on, ?found, "a merge came back on someone else's commit: built again on a fresh branch");
                continue;
            }
        };
        return proof_commit(ctx, proof, commit).await;
    }
    let what = ShipWhat::ProofConflict {
        round: proof.round,
        why: ship::raced(RacedBuild::Proof, &on, BUILD_ATTEMPTS),
    };
    ship_event(ctx, proof.repo, proof.story, what, "proof-raced").await?;
    Ok(Some(json!({ "raced": on }).to_string()))
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

/// Builds a train car's commit and tells the train through the inbox,
/// on the car's first story (whose config the train reads): its commit
/// and tree, or the story whose head conflicts. A retry starts again from
/// the base (`build_car` resets the branch first). A car raced on every
/// branch it was tried on is not built: the train forms it again.
async fn build_car(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    car: CarId,
    branch: &str,
    base: &CommitSha,
    heads: &[CarHead],
) -> Result<Option<String>, GitHubError> {
    let pairs: Vec<(StoryId, CommitSha)> = heads
        .iter()
        .map(|h| (h.story.clone(), h.head.clone()))
        .collect();
    let message = |story: &StoryId| {
        heads
            .iter()
            .find(|h| h.story == *story)
            .map(|h| h.message.clone())
            .unwrap_or_default()
    };
    let first = heads
        .first()
        .map_or_else(|| StoryId::new(""), |h| h.story.clone());
    let built = ctx
        .repo(repo)
        .build_car(branch, base, &pairs, message)
        .await;
    let built = match built {
        // A rule or a permission said no (a retry would hear it again):
        // the train is told, and the executor records the failure.
        Err(e) if !e.is_transient() && !matches!(e, GitHubError::Store(_)) => {
            let why = match &e {
                // GitHub's paragraphs on one line: the comment quotes it.
                GitHubError::Http {
                    status, message, ..
                } => format!("GitHub answered {status}: {}", one_line(message)),
                e => e.to_string(),
            };
            let what = ShipWhat::CarFailed {
                car,
                why,
                refused: true,
            };
            ship_event(ctx, repo, &first, what, "car-refused").await?;
            return Err(e);
        }
        built => built?,
    };
    let (what, name, result) = match built {
        CarBuild::Built(built) => {
            let result = json!({ "sha": built.commit, "tree": built.tree });
            (ShipWhat::CarBuilt { car, built }, "car-built", result)
        }
        CarBuild::Conflict { story, why } => {
            let result = json!({ "conflict": why, "story": story });
            let what = ShipWhat::CarConflict {
                car,
                conflict: story,
                why,
            };
            (what, "car-conflict", result)
        }
        CarBuild::Refused { story, message } => {
            let result = json!({ "refused": message, "story": story });
            let what = ShipWhat::CarStoryRefused {
                car,
                story,
                message,
            };
            (what, "car-story-refused", result)
        }
        CarBuild::Raced { branch } => {
            let result = json!({ "raced": branch });
            let what = ShipWhat::CarFailed {
                car,
                why: ship::raced(RacedBuild::Car, &branch, BUILD_ATTEMPTS),
                refused: false,
            };
            (what, "car-raced", result)
        }
    };
    ship_event(ctx, repo, &first, what, name).await?;
    Ok(Some(result.to_string()))
}

/// Builds the revert commit: the tree of `reverts`' first parent on top of
/// `reverts`, then `onto`'s head merged in (nothing to merge when `onto`
/// is still at `reverts`). As for a proof, what lands is the commit
/// GitHub's answers name: a merge that came back on someone else's commit
/// is built again on a fresh branch, and the revert branch (the revert
/// PR's head) is then pointed at what was built.
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
    let head = gh
        .branch_head(onto)
        .await?
        .ok_or_else(|| GitHubError::Unexpected(format!("`{onto}` has no head")))?;
    let merge = format!("Merge {onto} into the revert\n\n{message}");
    let mut on = proof.branch.to_owned();
    for attempt in 1..=BUILD_ATTEMPTS {
        if attempt > 1 {
            on = fresh_branch(proof.branch);
        }
        gh.set_branch(&on, &undone).await?;
        let commit = match gh.merge_onto(&on, &undone, &head, &merge).await? {
            Merged::Made(commit) => commit,
            Merged::Contained => undone.clone(),
            Merged::Conflict(why) => {
                let what = ShipWhat::RevertRefused {
                    round: proof.round,
                    why: format!(
                        "The revert does not merge with `{onto}` as it is now (GitHub: {why})."
                    ),
                };
                ship_event(ctx, proof.repo, proof.story, what, "revert-commit").await?;
                return Ok(None);
            }
            Merged::Raced { found } => {
                tracing::warn!(branch = %on, ?found, "a merge came back on someone else's commit: built again on a fresh branch");
                continue;
            }
        };
        if on != proof.branch {
            gh.set_branch(proof.branch, &commit).await?;
        }
        let what = ShipWhat::RevertCommit {
            round: proof.round,
            commit,
        };
        ship_event(ctx, proof.repo, proof.story, what, "revert-commit").await?;
        return Ok(None);
    }
    let what = ShipWhat::RevertRefused {
        round: proof.round,
        why: ship::raced(RacedBuild::Revert, &on, BUILD_ATTEMPTS),
    };
    ship_event(ctx, proof.repo, proof.story, what, "revert-raced").await?;
    Ok(None)
}

/// GitHub's paragraphs on one line: a ruleset's "Repository rule
/// violations found" followed by its violations.
fn one_line(message: &str) -> String {
    let mut paragraphs = message
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty());
    let first = paragraphs.next().unwrap_or_default();
    let rest: Vec<String> = paragraphs.collect();
    if rest.is_empty() {
        first
    } else {
        format!("{first}: {}", rest.join(" "))
    }
}

/// A rollback's refusal is told as a sentence between others ("The
/// rollback did not land. {why} Nothing changed on …"): it ends with a
/// full stop, whatever GitHub's message ended with.
pub(super) fn sentence(why: String) -> String {
    if why.ends_with(['.', '!', '?']) {
        why
    } else {
        why + "."
    }
}
