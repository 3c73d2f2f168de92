//! Pull requests that are not a story's, and merge groups that hold no
//! story: where `taskgate/ship-gate` is a required check (the merge-queue
//! route needs it), they could never be merged or enqueued if taskgate
//! said nothing on them. It reports its gate there as neutral, which
//! GitHub counts as passing: the repository's own checks and reviews
//! decide, and taskgate vouches only for what it proved.
//!
//! Owns: which pull requests and groups get the neutral gate, and the
//! words of it. Must not: read GitHub (the shell says what the group's
//! tree holds ahead of it) or touch a story's record.
//!
//! Ideas a reader needs:
//! - **Neutral is not a proof.** It says "taskgate does not gate this";
//!   a story's own gate is green only where its gates passed.
//! - **A group's tree holds every group ahead of it.** Under GitHub's
//!   `HEADGREEN` grouping, a passing group lands the groups ahead on its
//!   strength: a group of no story with a story's group ahead would then
//!   land that story unproven, so its gate is red there, and says why.

use super::rules::QueueGrouping;
use super::SHIP_GATE;
use crate::effect::{CheckConclusion, CheckRunSpec, Effect};
use crate::ids::{CommitSha, IssueNumber, RepoName};
use crate::story::BranchName;
use crate::webhook::action::PullRequestAction;
use crate::webhook::PullRequestEvent;

/// The title of the neutral gate.
pub const NOT_A_STORY: &str = "Not a story: taskgate does not gate it";

/// The neutral gate on pull request `e`'s head when it is not a story's
/// (or a revert's) and merges into the default branch, as it is opened,
/// reopened, marked ready or pushed to; `None` otherwise.
///
/// A check run belongs to a commit, not to a pull request: a neutral gate
/// on a commit that is a story's head (`story_heads`: each story's head,
/// pinned head and proof as last recorded), or on a branch named as a
/// story's (a fork's), would pass that story's required gate unproven.
/// None is written there.
pub fn gate_of_ordinary_pull(e: &PullRequestEvent, story_heads: &[&CommitSha]) -> Option<Effect> {
    let touched = matches!(
        e.action,
        PullRequestAction::Opened
            | PullRequestAction::Reopened
            | PullRequestAction::Synchronize
            | PullRequestAction::ReadyForReview
    );
    let into_default = e.default_branch.as_deref() == Some(e.base.as_str());
    let storys_name = matches!(e.head.branch, BranchName::Story(_) | BranchName::Revert(_));
    let storys_head = story_heads.contains(&&e.head.sha);
    if !touched || !into_default || e.for_ship().is_some() || storys_name || storys_head {
        return None;
    }
    let summary = format!(
        "#{} is not a taskgate story, so taskgate does not gate it: `{SHIP_GATE}` is neutral here, which GitHub counts as passing. The repository's own required checks and reviews decide whether it merges.",
        e.number
    );
    Some(neutral(&e.repo, &e.head.sha, summary))
}

/// The gate on merge group `group` of pull request `number`, which is no
/// story's. `stories_ahead`: the stories whose groups are ahead of it
/// (its tree holds them); `None` when taskgate could not tell what is
/// ahead of it.
pub fn gate_of_group_without_story(
    repo: &RepoName,
    (group, number): (&CommitSha, IssueNumber),
    stories_ahead: Option<&[IssueNumber]>,
    grouping: QueueGrouping,
) -> Effect {
    let head_green = grouping == QueueGrouping::HeadGreen;
    match stories_ahead {
        Some([]) => neutral(repo, group, format!(
            "This merge group adds #{number}, which is not a taskgate story, and holds no story: taskgate does not gate it. `{SHIP_GATE}` is neutral here, which GitHub counts as passing; the repository's own required checks decide."
        )),
        Some(stories) if !head_green => neutral(repo, group, format!(
            "This merge group adds #{number}, which is not a taskgate story, on top of the merge group of {}: taskgate does not gate #{number}. GitHub lands the story ahead only once `{SHIP_GATE}` passed on that story's own group (the queue's grouping is `ALLGREEN`).",
            stories_list(stories)
        )),
        Some(stories) => refused(repo, group, format!(
            "This merge group adds #{number}, which is not a taskgate story, on top of the merge group of {}. The queue's grouping is `HEADGREEN`: a passing group lands the groups ahead of it on its strength, so a green gate here would land that story without taskgate's proof of it. Enqueue #{number} again once the story ahead landed.",
            stories_list(stories)
        )),
        None if !head_green => neutral(repo, group, format!(
            "This merge group adds #{number}, which is not a taskgate story: taskgate does not gate it. GitHub lands any story ahead of it only once `{SHIP_GATE}` passed on that story's own group (the queue's grouping is `ALLGREEN`)."
        )),
        None => refused(repo, group, format!(
            "This merge group adds #{number}, which is not a taskgate story, and taskgate could not tell which merge groups are ahead of it. The queue's grouping is `HEADGREEN`: a passing group lands the groups ahead of it on its strength, and one of them may be a story taskgate has not proven. Enqueue #{number} again."
        )),
    }
}

fn stories_list(stories: &[IssueNumber]) -> String {
    let listed: Vec<String> = stories.iter().map(|n| format!("#{n}")).collect();
    let noun = if listed.len() == 1 {
        "pull request"
    } else {
        "pull requests"
    };
    format!("taskgate's story {noun} {}", listed.join(", "))
}

fn neutral(repo: &RepoName, head: &CommitSha, summary: String) -> Effect {
    check(repo, head, CheckConclusion::Neutral, NOT_A_STORY, summary)
}

fn refused(repo: &RepoName, head: &CommitSha, summary: String) -> Effect {
    let title = "Holds a story taskgate has not proven on this tree";
    check(repo, head, CheckConclusion::Failure, title, summary)
}

fn check(
    repo: &RepoName,
    head: &CommitSha,
    conclusion: CheckConclusion,
    title: &str,
    summary: String,
) -> Effect {
    Effect::CreateCheckRun {
        repo: repo.clone(),
        check: CheckRunSpec {
            name: SHIP_GATE.to_owned(),
            head_sha: head.clone(),
            conclusion,
            title: title.to_owned(),
            summary,
            annotations: vec![],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::BranchRef;

    fn spec(e: &Effect) -> (&str, String) {
        let Effect::CreateCheckRun { check, .. } = e else {
            panic!("{e:?}")
        };
        (
            check.conclusion.as_str(),
            format!("{}\n{}", check.title, check.summary),
        )
    }

    fn repo() -> RepoName {
        RepoName::parse("octo/app").unwrap()
    }

    fn pull(action: &str, head: &str, base: &str) -> PullRequestEvent {
        PullRequestEvent {
            repo: repo(),
            installation: None,
            action: PullRequestAction::parse(action),
            number: IssueNumber::new(12),
            head: BranchRef::new(head, crate::ids::sha(&"a".repeat(40))),
            base: base.into(),
            repo_id: 1,
            head_repo_id: Some(1),
            default_branch: Some("main".into()),
            draft: false,
            merged: false,
            merge_commit: None,
            merged_by: None,
            commits: None,
            label: None,
            sender: None,
            author: None,
            closes: vec![],
            before: None,
            base_changed: false,
        }
    }

    #[test]
    fn an_ordinary_pull_request_into_the_default_branch_gets_the_neutral_gate_as_it_moves() {
        let opened =
            gate_of_ordinary_pull(&pull("opened", "deps/bump", "main"), &[]).expect("a gate");
        let (conclusion, text) = spec(&opened);
        assert_eq!(conclusion, "neutral");
        insta::assert_snapshot!(text, @r"
            Not a story: taskgate does not gate it
            #12 is not a taskgate story, so taskgate does not gate it: `taskgate/ship-gate` is neutral here, which GitHub counts as passing. The repository's own required checks and reviews decide whether it merges.
            ");
        for action in ["synchronize", "reopened", "ready_for_review"] {
            assert!(gate_of_ordinary_pull(&pull(action, "deps/bump", "main"), &[]).is_some());
        }
        // Not on other actions, other bases, stories or reverts.
        assert_eq!(
            gate_of_ordinary_pull(&pull("labeled", "deps/bump", "main"), &[]),
            None
        );
        assert_eq!(
            gate_of_ordinary_pull(
                &pull("opened", "taskgate/task-3-x", "taskgate/story-2"),
                &[]
            ),
            None
        );
        assert_eq!(
            gate_of_ordinary_pull(&pull("opened", "taskgate/story-2", "main"), &[]),
            None
        );
        assert_eq!(
            gate_of_ordinary_pull(&pull("opened", "taskgate/revert-2", "main"), &[]),
            None
        );
    }

    #[test]
    fn a_group_of_no_story_is_neutral_and_one_behind_a_story_depends_on_the_grouping() {
        let group = crate::ids::sha(&"9".repeat(40));
        let n = IssueNumber::new(12);
        let alone =
            gate_of_group_without_story(&repo(), (&group, n), Some(&[]), QueueGrouping::HeadGreen);
        let (conclusion, text) = spec(&alone);
        assert_eq!(conclusion, "neutral");
        insta::assert_snapshot!(text, @r"
            Not a story: taskgate does not gate it
            This merge group adds #12, which is not a taskgate story, and holds no story: taskgate does not gate it. `taskgate/ship-gate` is neutral here, which GitHub counts as passing; the repository's own required checks decide.
            ");
        let story = [IssueNumber::new(7)];
        let all_green = gate_of_group_without_story(
            &repo(),
            (&group, n),
            Some(&story),
            QueueGrouping::AllGreen,
        );
        let (conclusion, text) = spec(&all_green);
        assert_eq!(conclusion, "neutral");
        insta::assert_snapshot!(text, @r"
            Not a story: taskgate does not gate it
            This merge group adds #12, which is not a taskgate story, on top of the merge group of taskgate's story pull request #7: taskgate does not gate #12. GitHub lands the story ahead only once `taskgate/ship-gate` passed on that story's own group (the queue's grouping is `ALLGREEN`).
            ");
        let head_green = gate_of_group_without_story(
            &repo(),
            (&group, n),
            Some(&story),
            QueueGrouping::HeadGreen,
        );
        let (conclusion, text) = spec(&head_green);
        assert_eq!(
            conclusion, "failure",
            "never lands the story ahead unproven"
        );
        insta::assert_snapshot!(text, @r"
            Holds a story taskgate has not proven on this tree
            This merge group adds #12, which is not a taskgate story, on top of the merge group of taskgate's story pull request #7. The queue's grouping is `HEADGREEN`: a passing group lands the groups ahead of it on its strength, so a green gate here would land that story without taskgate's proof of it. Enqueue #12 again once the story ahead landed.
            ");
        let unknown =
            gate_of_group_without_story(&repo(), (&group, n), None, QueueGrouping::HeadGreen);
        assert_eq!(spec(&unknown).0, "failure");
        let unknown =
            gate_of_group_without_story(&repo(), (&group, n), None, QueueGrouping::AllGreen);
        assert_eq!(spec(&unknown).0, "neutral");
    }
}
