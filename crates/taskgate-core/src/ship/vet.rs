//! What is on the story branch came from a proven task PR, or a person
//! accepted it by name.
//!
//! Owns: [`Vetted`] (the story branch's check, kept on the story record),
//! which commits of the branch's first-parent line no task PR's merge
//! made ([`foreign_commits`]), the lines that keep such a story from
//! shipping, and `/taskgate accept-commits <commit>`
//! ([`on_accept_commits`]). Must not: read GitHub (the shell lists the
//! branch's commits with their parents, and the task PRs' merges).
//!
//! Ideas a reader needs:
//! - **The first-parent line is the story's history.** A task PR merged
//!   into the story branch adds one commit there (a merge or a squash),
//!   or one per commit of the PR (a rebase); the task's own commits behind
//!   a merge are proven with it. Anything else on that line was pushed
//!   straight onto the story branch: a writer's late commit, a fix for an
//!   integration milestone, "Update branch" merging the default branch in.
//! - **A person accepts history, not a diff.** Naming a commit accepts it
//!   and everything before it on the line (its sha covers its ancestry),
//!   as bors' `r+ <sha>` approves a head: a commit pushed after the name
//!   was read is not covered. It is recorded in the audit log.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::decide::{comment, ShipContext, ShipDecision};
use super::render_queue as render;
use super::{Shipper, StoryRecord};
use crate::audit::{story_object, AuditAction, AuditActor, AuditEntry, API_LOGIN};
use crate::ids::CommitSha;

/// The story branch's commits as last checked: at which head, and those
/// on its first-parent line that no proven task PR's merge made and no
/// person accepted, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vetted {
    pub head: CommitSha,
    pub foreign: Vec<CommitSha>,
    /// GitHub listed too many commits to check them all.
    #[serde(default)]
    pub too_many: bool,
}

/// How many commits a merged task PR made on the story branch, when more
/// than one: its `commits`, when taskgate rebased it (`merge_method:
/// rebase`, merged by the App's bot). Merged by anyone else the method is
/// unknown (GitHub does not say): one, and any other commit is named for a
/// person to accept.
pub fn rebased_commits(
    method: crate::config::MergeMethod,
    by_taskgate: bool,
    commits: Option<u32>,
) -> Option<u32> {
    let rebased = by_taskgate && method == crate::config::MergeMethod::Rebase;
    commits.filter(|n| rebased && *n > 1)
}

impl Vetted {
    /// Whether a new check at the same head would say the same: no commit
    /// this one named is now a task PR's merge (`merges`, as
    /// [`foreign_commits`] takes them). The commits behind a head never
    /// change; what a person accepted is taken off `foreign` at once.
    pub fn holds(&self, merges: &BTreeMap<CommitSha, u32>) -> bool {
        !self.foreign.iter().any(|c| merges.contains_key(c))
    }
}

/// The commits on the story branch's first-parent line from `head` back
/// to the default branch that no task PR's merge made, newest first.
///
/// `commits` are the story branch's commits the default branch lacks,
/// with their parents (GitHub's comparison). `merges` maps each task PR's
/// merge commit to how many first-parent commits ending there the merge
/// made (1, or the PR's commit count for a rebase). The walk stops at a
/// commit in `accepted`: a person took it and its ancestry.
pub fn foreign_commits(
    head: &CommitSha,
    commits: &[(CommitSha, Vec<CommitSha>)],
    merges: &BTreeMap<CommitSha, u32>,
    accepted: &[CommitSha],
) -> Vec<CommitSha> {
    let parents: BTreeMap<&CommitSha, &Vec<CommitSha>> =
        commits.iter().map(|(c, p)| (c, p)).collect();
    let mut foreign = Vec::new();
    let mut made_by_a_task = 0;
    let mut at = Some(head);
    while let Some(commit) = at {
        let Some(its) = parents.get(commit) else {
            break; // on the default branch: not the story's
        };
        if accepted.contains(commit) {
            break;
        }
        if let Some(n) = merges.get(commit) {
            made_by_a_task = *n;
        }
        if made_by_a_task == 0 {
            foreign.push(commit.clone());
        } else {
            made_by_a_task -= 1;
        }
        at = its.first();
    }
    foreign
}

/// The story's line for each commit that did not come from a proven task
/// PR, when the story branch was checked at `head`: it is not shippable.
pub(super) fn foreign_lines(record: &StoryRecord, head: &CommitSha, prefix: &str) -> Vec<String> {
    let Some(vetted) = record.vetted.as_ref().filter(|v| v.head == *head) else {
        return vec![];
    };
    let mut lines: Vec<String> = vetted
        .foreign
        .iter()
        .map(|c| render::foreign_commit(c, prefix))
        .collect();
    if vetted.too_many {
        lines.push(render::too_many_commits(head));
    }
    lines
}

/// Why `accept-commits` did nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AcceptRefusal {
    #[error("every commit on the story branch came from a proven task PR or was accepted: there is nothing to accept")]
    NothingWaiting,
    #[error("`{given}` is not one of the commits waiting on the story branch ({}): name one of them", waiting_list(.waiting))]
    NotWaiting {
        given: String,
        waiting: Vec<CommitSha>,
    },
}

fn waiting_list(waiting: &[CommitSha]) -> String {
    let shas: Vec<String> = waiting
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect();
    shas.join(", ")
}

/// `accept-commits <given>` by `by`: the waiting commit `given` names (its
/// full sha: a prefix can be made to collide) and every waiting commit
/// before it are accepted. A commit no longer waiting (force-pushed away
/// since the comment was written) is refused: the name covers only it.
/// The decision records them and says so where the story is discussed;
/// the shell evaluates the story afterwards, and keeps the audit entry.
pub fn on_accept_commits(
    record: &StoryRecord,
    given: &str,
    by: &Shipper,
    ctx: &ShipContext,
) -> Result<(ShipDecision, AuditEntry), AcceptRefusal> {
    let head = record.head.as_ref();
    let waiting = match record.vetted.as_ref() {
        Some(v) if Some(&v.head) == head && !v.foreign.is_empty() => v.foreign.clone(),
        _ => return Err(AcceptRefusal::NothingWaiting),
    };
    let given = given.to_ascii_lowercase();
    let named: Vec<usize> = (0..waiting.len())
        .filter(|i| waiting[*i].as_str() == given)
        .collect();
    let [at] = named.as_slice() else {
        return Err(AcceptRefusal::NotWaiting { given, waiting });
    };
    let accepted = waiting[*at].clone();
    let covered = &waiting[*at..];
    let mut next = record.clone();
    next.accepted.push(accepted.clone());
    if let Some(v) = next.vetted.as_mut() {
        v.foreign.truncate(*at);
    }
    let note = render::commits_accepted(&by.login, covered, ctx.story_branch);
    let marker = format!("commits-accepted {}", accepted.short());
    let on = record.pr.unwrap_or(ctx.story_issue);
    let mut audit = AuditEntry::new(
        ctx.repo,
        ctx.now_ms.div_euclid(1000),
        match by.user {
            Some(id) => AuditActor::user(id, &by.login),
            None => AuditActor {
                id: None,
                login: API_LOGIN,
            },
        },
        AuditAction::AcceptCommits,
        story_object(ctx.story_issue, ctx.story),
        by.via.into(),
    );
    audit.reason = Some(covered_list(covered));
    let decision = ShipDecision {
        effects: vec![comment(ctx, on, note, marker)],
        outcome: format!("commits accepted up to {}", accepted.short()),
        ..ShipDecision::unchanged(&next, "")
    };
    Ok((decision, audit))
}

/// The full shas an acceptance covered, newest first.
fn covered_list(covered: &[CommitSha]) -> String {
    let shas: Vec<&str> = covered.iter().map(CommitSha::as_str).collect();
    shas.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::TaskState;
    use crate::ship::decide::tests::{head, octocat, shippable_with_pr, World};
    use crate::ship::{
        evaluate, on_ship_request, Evaluation, ShipRefusal, ShipState, ShipVia, TaskProof,
    };
    use crate::Effect;

    fn sha(c: char) -> CommitSha {
        crate::ids::sha(&c.to_string().repeat(40))
    }

    fn merges(of: &[(&CommitSha, u32)]) -> BTreeMap<CommitSha, u32> {
        of.iter().map(|(c, n)| ((*c).clone(), *n)).collect()
    }

    #[test]
    fn a_commit_no_task_pr_merged_is_named_and_task_commits_behind_a_merge_are_not() {
        let (m1, m2, x, t1, t2) = (sha('1'), sha('2'), sha('e'), sha('t'), sha('u'));
        // main ← m1 (task 1's squash) ← x (pushed by hand) ← m2 (task 2's
        // merge of t2, itself on t1).
        let commits = vec![
            (m1.clone(), vec![sha('0')]),
            (x.clone(), vec![m1.clone()]),
            (t1.clone(), vec![m1.clone()]),
            (t2.clone(), vec![t1.clone()]),
            (m2.clone(), vec![x.clone(), t2.clone()]),
        ];
        let merges = merges(&[(&m1, 1), (&m2, 1)]);
        assert_eq!(
            foreign_commits(&m2, &commits, &merges, &[]),
            vec![x.clone()]
        );
        assert_eq!(foreign_commits(&m1, &commits, &merges, &[]), vec![]);
        assert_eq!(foreign_commits(&x, &commits, &merges, &[]), vec![x.clone()]);
        // Accepted by name: it and what is before it.
        assert_eq!(foreign_commits(&m2, &commits, &merges, &[x]), vec![]);
    }

    #[test]
    fn a_rebase_covers_as_many_commits_as_the_pr_had_and_no_more() {
        // main ← x (pushed by hand) ← r1 ← r2 ← r3 (a three-commit PR
        // rebased by taskgate; r3 is its merge commit) ← y (by hand).
        let (x, r1, r2, r3, y) = (sha('e'), sha('1'), sha('2'), sha('3'), sha('d'));
        let commits = vec![
            (x.clone(), vec![sha('0')]),
            (r1.clone(), vec![x.clone()]),
            (r2.clone(), vec![r1.clone()]),
            (r3.clone(), vec![r2.clone()]),
            (y.clone(), vec![r3.clone()]),
        ];
        let rebased = merges(&[(&r3, 3)]);
        assert_eq!(
            foreign_commits(&y, &commits, &rebased, &[]),
            vec![y.clone(), x.clone()]
        );
        // Taken as one commit (a squash or a merge by someone else): the
        // other two are named.
        let one = merges(&[(&r3, 1)]);
        assert_eq!(foreign_commits(&y, &commits, &one, &[]), vec![y, r2, r1, x]);
    }

    #[test]
    fn a_check_holds_until_a_commit_it_named_is_recorded_as_a_task_merge() {
        let checked = Vetted {
            head: sha('h'),
            foreign: vec![sha('h')],
            too_many: false,
        };
        assert!(checked.holds(&merges(&[(&sha('o'), 1)])));
        // The merge's `closed` came after the push that made it the head.
        assert!(!checked.holds(&merges(&[(&sha('h'), 1)])));
    }

    #[test]
    fn only_a_rebase_by_taskgate_counts_the_prs_commits() {
        use crate::config::MergeMethod::{Merge, Rebase, Squash};
        assert_eq!(rebased_commits(Rebase, true, Some(3)), Some(3));
        assert_eq!(rebased_commits(Rebase, true, Some(1)), None);
        assert_eq!(rebased_commits(Rebase, false, Some(3)), None, "by a person");
        assert_eq!(rebased_commits(Squash, true, Some(3)), None);
        assert_eq!(rebased_commits(Merge, true, Some(3)), None);
    }

    fn story_with_foreign(w: &World, foreign: Vec<CommitSha>) -> StoryRecord {
        let mut record = shippable_with_pr(w);
        record.vetted = Some(Vetted {
            head: head(),
            foreign,
            too_many: false,
        });
        record
    }

    fn evaluated(record: &StoryRecord, w: &World) -> ShipDecision {
        let tasks = [TaskProof {
            id: "a".into(),
            title: "A".into(),
            issue: None,
            top: "a".into(),
            is_parent: false,
            state: Some(TaskState::Completed),
            proven: vec![],
            approval: None,
        }];
        let ev = Evaluation {
            tasks: &tasks,
            loop_stats: None,
            milestones: &[],
            head: Some(head()),
        };
        evaluate(record, &ev, &w.ctx())
    }

    #[test]
    fn a_foreign_commit_makes_the_story_not_shippable_and_ship_is_refused_naming_it() {
        let w = World::new();
        let d = evaluated(&story_with_foreign(&w, vec![sha('e')]), &w);
        assert_eq!(d.record.state, ShipState::Building, "not shippable");
        let asked = on_ship_request(&d.record, &octocat(ShipVia::Command), &w.ctx());
        let Some(ShipRefusal::NotShippable { missing }) = asked.refused else {
            panic!("{:?}", asked.refused)
        };
        insta::assert_snapshot!(missing.join("\n"), @"commit `eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee` on the story branch did not come from a proven task PR: look at it, then `/taskgate accept-commits eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee` accepts it and the commits before it (recorded), or move the story branch back before it");
    }

    #[test]
    fn accepting_a_commit_accepts_those_before_it_and_the_story_ships_again() {
        let w = World::new();
        let record = story_with_foreign(&w, vec![sha('f'), sha('d'), sha('e')]);
        let by = octocat(ShipVia::Command);
        let (d, audit) = on_accept_commits(&record, &"D".repeat(40), &by, &w.ctx()).unwrap();
        assert_eq!(d.record.accepted, vec![sha('d')]);
        assert_eq!(d.record.vetted.as_ref().unwrap().foreign, vec![sha('f')]);
        let [Effect::PostComment { issue, body, .. }] = d.effects.as_slice() else {
            panic!("{:?}", d.effects)
        };
        assert_eq!(issue.get(), 9, "on the story PR");
        insta::assert_snapshot!(body, @"**octocat accepted 2 commits on `taskgate/story-1` that no task PR made:** `dddddddddddddddddddddddddddddddddddddddd`, `eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee`. They count as the story's from now on (recorded in the audit log); a commit pushed after them does not.");
        assert_eq!(audit.action, AuditAction::AcceptCommits);
        assert_eq!(audit.reason.as_deref(), Some("dddddddddddddddddddddddddddddddddddddddd, eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"));
        assert_eq!(evaluated(&d.record, &w).record.state, ShipState::Building);
        let (all, _) = on_accept_commits(&d.record, &"f".repeat(40), &by, &w.ctx()).unwrap();
        assert_eq!(
            evaluated(&all.record, &w).record.state,
            ShipState::Shippable
        );
    }

    #[test]
    fn a_commit_not_waiting_or_nothing_waiting_is_refused_and_changes_nothing() {
        let w = World::new();
        let by = octocat(ShipVia::Command);
        let record = story_with_foreign(&w, vec![sha('d'), sha('e')]);
        let why = on_accept_commits(&record, &"a".repeat(40), &by, &w.ctx()).unwrap_err();
        insta::assert_snapshot!(why.to_string(), @"`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa` is not one of the commits waiting on the story branch (`dddddddddddddddddddddddddddddddddddddddd`, `eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee`): name one of them");
        // A prefix names no commit: one can be made to collide.
        assert!(matches!(
            on_accept_commits(&record, "ddddddd", &by, &w.ctx()),
            Err(AcceptRefusal::NotWaiting { .. })
        ));
        let clean = story_with_foreign(&w, vec![]);
        let why = on_accept_commits(&clean, &"a".repeat(40), &by, &w.ctx()).unwrap_err();
        insta::assert_snapshot!(why.to_string(), @"every commit on the story branch came from a proven task PR or was accepted: there is nothing to accept");
        // Checked at another head than the story's: nothing to accept yet.
        let mut stale = record.clone();
        stale.head = Some(sha('q'));
        assert_eq!(
            on_accept_commits(&stale, &"d".repeat(40), &by, &w.ctx()).unwrap_err(),
            AcceptRefusal::NothingWaiting
        );
    }

    #[test]
    fn a_full_sha_read_before_a_force_push_accepts_nothing_after_it() {
        let w = World::new();
        let by = octocat(ShipVia::Command);
        // A maintainer read `x…` and names it; the writer force-pushed
        // `w…` in its place before the comment was decided.
        let forced = story_with_foreign(&w, vec![sha('w')]);
        let why = on_accept_commits(&forced, &"e".repeat(40), &by, &w.ctx()).unwrap_err();
        assert!(matches!(why, AcceptRefusal::NotWaiting { .. }), "{why}");
    }
}
