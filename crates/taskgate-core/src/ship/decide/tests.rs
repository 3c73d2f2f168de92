use super::*;
use crate::ids::UserId;
use crate::ship::{
    on_deploy_finished, on_story_pr_merged, on_validation_finished, on_workflow_refused, ShipVia,
    Shipper, StoryWorkflow,
};

/// The story key every context here names.
static STORY: std::sync::LazyLock<crate::ids::StoryId> =
    std::sync::LazyLock::new(|| crate::ids::StoryId::new("file:s"));

pub(crate) struct World {
    pub repo: RepoName,
    pub config: RepoConfig,
    pub labels: BTreeSet<String>,
}

impl World {
    pub(crate) fn new() -> World {
        World {
            repo: RepoName::parse("o/r").unwrap(),
            config: RepoConfig {
                deploy_workflow: Some("deploy.yml".into()),
                validation_workflow: Some("smoke.yml".into()),
                ..RepoConfig::default()
            },
            labels: BTreeSet::new(),
        }
    }

    pub(crate) fn ctx(&self) -> ShipContext<'_> {
        ShipContext {
            repo: &self.repo,
            story: &STORY,
            story_marker: "story=file:s",
            story_issue: IssueNumber::new(1),
            title: "The story",
            story_branch: "taskgate/story-1",
            default_branch: "main",
            config: &self.config,
            labels: &self.labels,
            frozen: None,
            now_ms: 1_000,
            queue_length: 0,
        }
    }
}

fn leaf(id: &str, state: Option<TaskState>) -> TaskProof {
    TaskProof {
        id: id.into(),
        title: id.to_uppercase(),
        issue: Some(IssueNumber::new(2)),
        top: id.into(),
        is_parent: false,
        state,
        proven: vec![("test".into(), crate::ids::sha(&"a".repeat(40)))],
        approval: None,
    }
}

pub(crate) fn head() -> CommitSha {
    crate::ids::sha(&"b".repeat(40))
}

pub(crate) fn octocat(via: ShipVia) -> Shipper {
    Shipper {
        user: Some(UserId::new(5)),
        login: "octocat".into(),
        via,
        priority: Default::default(),
    }
}

/// A shipped story proven on its base and landing (`shipping`).
pub(crate) fn landing(w: &World) -> StoryRecord {
    let queued = on_ship_request(&shippable_with_pr(w), &octocat(ShipVia::Api), &w.ctx()).record;
    let base = crate::ids::sha(&"c".repeat(40));
    let proving = crate::ship::start_proof(
        &queued,
        (&base, &head()),
        &crate::ship::BranchRules::default(),
        &w.ctx(),
    )
    .record;
    let merge = crate::ids::sha(&"d".repeat(40));
    let (d, _) =
        crate::ship::on_proof_commit(&proving, 1, &merge, &[base.clone(), head()], &w.ctx());
    let d = crate::ship::on_proof_passed(&d.record, &merge, &w.ctx());
    assert_eq!(d.record.state, ShipState::Shipping);
    d.record
}

pub(crate) fn names(effects: &[Effect]) -> Vec<&'static str> {
    effects.iter().map(Effect::name).collect()
}

/// Out of the queue, shippable again: the label off, the note, the gate
/// red, and the queue moves on.
pub(crate) fn assert_out_of_queue(d: &ShipDecision) {
    assert_eq!(d.record.state, ShipState::Shippable);
    assert_eq!(
        names(&d.effects),
        [
            "label_issue",
            "post_comment",
            "update_check_run",
            "advance_ship_queue"
        ]
    );
}

pub(crate) fn shippable_with_pr(w: &World) -> StoryRecord {
    let tasks = [leaf("a", Some(TaskState::Completed))];
    let ev = Evaluation {
        tasks: &tasks,
        loop_stats: None,
        milestones: &[],
        head: Some(head()),
    };
    let seen = on_story_pr_seen(&StoryRecord::default(), IssueNumber::new(9), &head(), false);
    evaluate(&seen, &ev, &w.ctx()).record
}

#[test]
fn a_draft_story_pr_is_marked_ready_once_when_the_story_becomes_shippable() {
    let w = World::new();
    let building = [leaf("a", Some(TaskState::Testing))];
    let done = [leaf("a", Some(TaskState::Completed))];
    let ev = |tasks| Evaluation {
        tasks,
        loop_stats: None,
        milestones: &[],
        head: Some(head()),
    };
    // A person opened the story PR as a draft while the task was running.
    let seen = on_story_pr_seen(&StoryRecord::default(), IssueNumber::new(9), &head(), true);
    let d = evaluate(&seen, &ev(&building), &w.ctx());
    assert!(!names(&d.effects).contains(&"mark_pull_request_ready"));

    let d = evaluate(&d.record, &ev(&done), &w.ctx());
    let ready: Vec<_> = d
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::MarkPullRequestReady { number, .. } if *number == IssueNumber::new(9)))
        .collect();
    assert_eq!(ready.len(), 1, "{:?}", d.effects);
    // Asked once: a person who turns it back into a draft is not overruled.
    let back = on_story_pr_seen(&d.record, IssueNumber::new(9), &head(), true);
    let again = evaluate(&back, &ev(&done), &w.ctx());
    assert!(!names(&again.effects).contains(&"mark_pull_request_ready"));
    // Another PR is asked about afresh.
    let other = on_story_pr_seen(&again.record, IssueNumber::new(10), &head(), true);
    let d = evaluate(&other, &ev(&done), &w.ctx());
    assert!(names(&d.effects).contains(&"mark_pull_request_ready"));
}

#[test]
fn a_story_with_an_incomplete_task_is_building_and_opens_no_pr() {
    let w = World::new();
    let tasks = [
        leaf("a", Some(TaskState::Completed)),
        leaf("b", Some(TaskState::Testing)),
    ];
    let ev = Evaluation {
        tasks: &tasks,
        loop_stats: None,
        milestones: &[],
        head: None,
    };
    let d = evaluate(&StoryRecord::default(), &ev, &w.ctx());
    assert_eq!(d.record.state, ShipState::Building);
    assert_eq!(d.record.missing, vec!["task `b` (B) is `testing`"]);
    assert!(d.effects.is_empty(), "{:?}", d.effects);
}

#[test]
fn a_complete_story_opens_its_pr_once_then_labels_it_and_turns_the_gate_green() {
    let w = World::new();
    let tasks = [leaf("a", Some(TaskState::Completed))];
    let ev = Evaluation {
        tasks: &tasks,
        loop_stats: None,
        milestones: &[],
        head: None,
    };
    let d = evaluate(&StoryRecord::default(), &ev, &w.ctx());
    assert_eq!(d.record.state, ShipState::Shippable);
    assert_eq!(names(&d.effects), vec!["create_pull_request"]);
    let again = evaluate(&d.record, &ev, &w.ctx());
    assert!(again.effects.is_empty(), "asked for once");

    let seen = on_story_pr_seen(&d.record, IssueNumber::new(9), &head(), false);
    let ev = Evaluation {
        head: Some(head()),
        ..ev
    };
    let d = evaluate(&seen, &ev, &w.ctx());
    assert_eq!(
        names(&d.effects),
        vec![
            "ensure_label",
            "label_issue",
            "open_check_run",
            "update_check_run"
        ]
    );
    let Effect::UpdateCheckRun { update, .. } = &d.effects[3] else {
        panic!()
    };
    assert_eq!(update.conclusion.map(|c| c.as_str()), Some("success"));
    assert!(
        evaluate(&d.record, &ev, &w.ctx()).effects.is_empty(),
        "an unchanged gate costs nothing"
    );
}

#[test]
fn milestones_and_parents_block_shipping() {
    let w = World::new();
    let mut child = leaf("c", Some(TaskState::Review));
    child.top = "p".into();
    let parent = TaskProof {
        is_parent: true,
        state: None,
        ..leaf("p", None)
    };
    let tasks = [parent, child];
    let milestones = ["backtest".to_owned()];
    let ev = Evaluation {
        tasks: &tasks,
        loop_stats: None,
        milestones: &milestones,
        head: None,
    };
    let d = evaluate(&StoryRecord::default(), &ev, &w.ctx());
    assert_eq!(
        d.record.missing,
        vec![
            "task `p` (P): 1 of 1 subtasks not complete",
            "integration milestone `backtest` has not passed"
        ]
    );
}

#[test]
fn shipping_queues_once_and_a_second_request_is_a_no_op() {
    let w = World::new();
    let record = shippable_with_pr(&w);
    let d = on_ship_request(&record, &octocat(ShipVia::Label), &w.ctx());
    assert!(d.accepted);
    assert_eq!(d.record.state, ShipState::Queued);
    assert_eq!(d.record.queued_at_ms, Some(1_000));
    assert_eq!(
        names(&d.effects),
        vec!["post_comment", "advance_ship_queue"]
    );
    let again = on_ship_request(&d.record, &octocat(ShipVia::Label), &w.ctx());
    assert!(!again.accepted && again.effects.is_empty());
}

#[test]
fn the_label_on_a_story_not_shippable_is_removed_with_a_reply() {
    let w = World::new();
    let tasks = [leaf("a", None)];
    let ev = Evaluation {
        tasks: &tasks,
        loop_stats: None,
        milestones: &[],
        head: Some(head()),
    };
    let seen = on_story_pr_seen(&StoryRecord::default(), IssueNumber::new(9), &head(), false);
    let record = evaluate(&seen, &ev, &w.ctx()).record;
    let d = on_ship_request(&record, &octocat(ShipVia::Label), &w.ctx());
    assert!(!d.accepted);
    let Effect::LabelIssue { remove, issue, .. } = &d.effects[0] else {
        panic!("{:?}", d.effects)
    };
    assert_eq!(
        (remove.as_slice(), *issue),
        (&["ship".to_owned()][..], IssueNumber::new(9))
    );
    let Effect::PostComment { body, .. } = &d.effects[1] else {
        panic!()
    };
    assert!(body.contains("task `a` (A) is not started"), "{body}");
    // The command route only answers (the command dispatcher replies).
    let d = on_ship_request(&record, &octocat(ShipVia::Command), &w.ctx());
    assert!(d.effects.is_empty());
    assert!(d.outcome.starts_with("ship refused: "), "{}", d.outcome);
}

#[test]
fn merged_deploys_then_validates_to_review_ready() {
    let w = World::new();
    let shipping = landing(&w);
    let d = on_story_pr_merged(&shipping, None, &w.ctx());
    assert_eq!(
        names(&d.effects).last(),
        Some(&"advance_ship_queue"),
        "landed: the queue moves on"
    );
    let Some(Effect::DispatchWorkflow {
        workflow,
        story_run,
        git_ref,
        ..
    }) = d.effects.iter().rev().nth(1)
    else {
        panic!("{:?}", d.effects)
    };
    assert_eq!(
        (workflow.as_str(), git_ref.as_str()),
        ("deploy.yml", "main")
    );
    assert_eq!(story_run.as_ref().unwrap().workflow, StoryWorkflow::Deploy);
    let d = on_deploy_finished(&d.record, 77, true, "run 77 succeeded", &w.ctx());
    assert_eq!(d.record.state, ShipState::Deployed);
    assert!(
        matches!(d.effects.last(), Some(Effect::DispatchWorkflow { workflow, .. }) if workflow == "smoke.yml")
    );
    let d = on_validation_finished(&d.record, 78, true, "run 78 succeeded", &w.ctx());
    assert_eq!(d.record.state, ShipState::ReviewReady);
}

#[test]
fn failed_validation_needs_a_fix_and_opens_an_issue_on_the_story() {
    let w = World::new();
    let mut record = shippable_with_pr(&w);
    record.state = ShipState::Deployed;
    let d = on_validation_finished(&record, 78, false, "run 78 concluded `failure`", &w.ctx());
    assert_eq!(d.record.state, ShipState::NeedsFix);
    let created = d.effects.iter().find_map(|e| match e {
        Effect::CreateIssue { marker, labels, .. } => Some((marker.clone(), labels.clone())),
        _ => None,
    });
    assert_eq!(
        created,
        Some((
            "story=file:s fix=1".to_owned(),
            vec!["taskgate:branch-todo".to_owned(), "needs-fix".to_owned()]
        ))
    );
    assert!(
        matches!(d.effects.last(), Some(Effect::LinkSubIssue { parent, .. }) if parent == "story=file:s")
    );
}

#[test]
fn a_merge_outside_a_ship_is_recorded_past_the_gate() {
    let w = World::new();
    let d = on_story_pr_merged(&shippable_with_pr(&w), None, &w.ctx());
    assert!(d.record.merged_past_gate);
    assert_eq!(names(&d.effects), vec!["post_comment"]);
}

#[test]
fn without_a_deploy_workflow_the_story_is_deployed_at_once() {
    let mut w = World::new();
    w.config.deploy_workflow = None;
    let shipping = landing(&w);
    let d = on_story_pr_merged(&shipping, None, &w.ctx());
    assert_eq!(d.record.state, ShipState::Deployed);
}

#[test]
fn a_refused_merge_or_a_closed_pr_makes_a_shipping_story_shippable_again() {
    let w = World::new();
    let shipping = landing(&w);
    assert_eq!(
        on_merge_refused(&shipping, "405", &w.ctx()).record.state,
        ShipState::Shippable
    );
    let d = on_story_pr_closed_unmerged(&shipping, &w.ctx());
    assert_eq!(d.record.state, ShipState::Shippable);
    assert!(d.record.pr.is_none() && d.record.pr_closed);
}

#[test]
fn a_refused_deploy_dispatch_needs_a_fix() {
    let w = World::new();
    let shipping = landing(&w);
    let d = on_workflow_refused(&shipping, StoryWorkflow::Deploy, "404", &w.ctx());
    assert_eq!(d.record.state, ShipState::NeedsFix);
}

#[test]
fn ship_while_a_task_is_re_testing_is_refused_with_what_is_missing() {
    let w = World::new();
    let shippable = shippable_with_pr(&w);
    assert_eq!(shippable.state, ShipState::Shippable);
    // A task goes back to testing (e.g. reopened work on its branch).
    let tasks = [
        leaf("a", Some(TaskState::Completed)),
        leaf("b", Some(TaskState::Testing)),
    ];
    let ev = Evaluation {
        tasks: &tasks,
        loop_stats: None,
        milestones: &[],
        head: Some(head()),
    };
    let building = evaluate(&shippable, &ev, &w.ctx()).record;
    assert_eq!(building.state, ShipState::Building);
    let d = on_ship_request(&building, &octocat(ShipVia::Command), &w.ctx());
    assert!(!d.accepted);
    assert!(!names(&d.effects).contains(&"merge_pull_request"));
    assert_eq!(d.outcome, "ship refused: task `b` (B) is `testing`");
}
