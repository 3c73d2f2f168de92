//! Texts of the ship gate: the story PR body (what was proven), the gate's
//! check-run output, and the comments on the story issue and PR.

use super::decide::TaskProof;
use crate::failure::{render_fix_rates, LoopStats, MAX_AGENTS};
use crate::ids::IssueNumber;
use crate::plan::TaskState;
use crate::report::plain_text;

/// What is missing, one bullet per reason.
pub fn render_missing(missing: &[String]) -> String {
    missing
        .iter()
        .map(|m| format!("- {m}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The story PR's body: the story, each task with the gates that proved
/// it and the commit they passed at, and, once a branch todo was opened,
/// the story's fix-rate figures (`core::failure::render_fix_rates`).
pub fn render_story_pr_body(
    story: IssueNumber,
    tasks: &[TaskProof],
    missing: &[String],
    loop_stats: Option<&LoopStats>,
) -> String {
    let mut out = format!(
        "Story #{story}, opened by taskgate. Add the `ship` label (or comment `/taskgate ship`) to merge and deploy it; nothing ships by itself.\n\n### What was proven\n\n"
    );
    for t in tasks {
        let indent = if t.top == t.id { "" } else { "  " };
        let issue = t.issue.map(|n| format!("#{n} ")).unwrap_or_default();
        let title = plain_text(&t.title);
        if t.is_parent {
            out.push_str(&format!("{indent}- {issue}{title} (`{}`)\n", t.id));
            continue;
        }
        let proof = match (t.state, t.proven.is_empty()) {
            (Some(TaskState::Completed), true) => {
                format!("merged; needs no testing; {}", approved(t))
            }
            (Some(TaskState::Completed), false) => {
                let gates = t
                    .proven
                    .iter()
                    .map(|(gate, sha)| format!("`{gate}` passed at `{}`", sha.short()))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("{gates}; {}", approved(t))
            }
            (state, _) => format!(
                "not complete ({})",
                state.map(|s| s.name()).unwrap_or("not started")
            ),
        };
        out.push_str(&format!("{indent}- {issue}{title} (`{}`): {proof}\n", t.id));
    }
    if let Some(table) = loop_stats.and_then(|l| render_fix_rates(&l.fix_rates(MAX_AGENTS))) {
        out.push_str(&format!(
            "\n### Branch todos\n\nWhat failed on the way, by the agent each todo was routed to and the failure kind:\n\n{table}"
        ));
    }
    if !missing.is_empty() {
        out.push_str(&format!(
            "\n### Not shippable yet\n\n{}\n",
            render_missing(missing)
        ));
    }
    out
}

/// Who approved a completed task, at which commit: a person (named
/// without pinging them), or auto review.
fn approved(t: &TaskProof) -> String {
    match &t.approval {
        Some(a) => format!(
            "approved by {} at `{}`",
            plain_text(&a.login).replace('@', ""),
            a.sha.short()
        ),
        None => "approved: auto".to_owned(),
    }
}

/// The `taskgate/ship-gate` output: title and summary.
pub fn gate_output(missing: &[String], frozen: Option<&str>, ship_label: &str) -> (String, String) {
    if let Some(frozen) = frozen {
        let mut summary = format!("Nothing lands while the repository is frozen: {frozen}.");
        if !missing.is_empty() {
            summary.push_str(&format!(
                "\n\nAnd the story is not shippable yet:\n\n{}",
                render_missing(missing)
            ));
        }
        return ("Frozen".into(), summary);
    }
    if missing.is_empty() {
        return (
            "Shippable".into(),
            format!("Every task of this story is complete. A person ships it with the `{ship_label}` label, `/taskgate ship` or the API."),
        );
    }
    (
        format!("Not shippable: {} missing", missing.len()),
        format!(
            "This story ships only when every task is complete.\n\n{}",
            render_missing(missing)
        ),
    )
}

pub fn ship_refused(login: &str, ship_label: &str, missing: &[String]) -> String {
    format!(
        "@{login} this story is not shippable yet, so taskgate removed the `{ship_label}` label. Missing:\n\n{}",
        render_missing(missing)
    )
}

pub fn merged_past_gate(pr: u64, missing: &[String]) -> String {
    let why = if missing.is_empty() {
        "without a ship request".to_owned()
    } else {
        format!(
            "while the story was not shippable:\n\n{}",
            render_missing(missing)
        )
    };
    format!("**Merged past the ship gate.** The story pull request #{pr} was merged by hand {why}\n\ntaskgate records this and does not deploy it.")
}

pub fn deploying(pr: u64, workflow: &str) -> String {
    format!(
        "#{pr} is merged. Deploy workflow `{}` dispatched.",
        plain_text(workflow)
    )
}

pub fn deployed_without_workflow(pr: u64) -> String {
    format!(
        "#{pr} is merged. No `deploy_workflow` is configured, so the story counts as deployed now."
    )
}

pub fn deploy_succeeded(report: &str) -> String {
    format!("Deployed: {report}.")
}

pub fn deploy_failed(report: &str) -> String {
    format!("**Deploy failed**: {report}. The story needs a fix; ship again once fixed.")
}

pub fn validation_passed(report: &str) -> String {
    format!("Post-deploy validation passed: {report}. The story is review-ready.")
}

pub fn validation_failed(report: &str) -> String {
    format!("**Post-deploy validation failed**: {report}. Fix what it found on a new branch from the default branch, then validate again.")
}

pub fn workflow_refused(which: &str, why: &str) -> String {
    format!(
        "The {which} workflow could not start: {}. The story needs a fix.",
        plain_text(why)
    )
}

/// GitHub refused to merge the story PR (posted on the story issue).
pub fn render_merge_refused(pr: IssueNumber, status: u16, message: &str) -> String {
    format!(
        "Shipping stopped: GitHub refused to merge the story pull request #{pr} (it answered {status}: \"{}\"). The story stays shippable; resolve the conflict or branch protection and ship again.",
        plain_text(message)
    )
}

pub fn closed_unmerged(pr: u64) -> String {
    format!("The story pull request #{pr} was closed without merging. taskgate will not open another by itself; reopen it to ship.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, state: Option<TaskState>, proven: &[(&str, &str)]) -> TaskProof {
        TaskProof {
            id: id.into(),
            title: format!("Task {id}"),
            issue: Some(IssueNumber::new(4)),
            top: id.into(),
            is_parent: false,
            state,
            proven: proven
                .iter()
                .map(|(g, s)| ((*g).to_owned(), crate::ids::sha(s)))
                .collect(),
            approval: None,
        }
    }

    #[test]
    fn the_story_pr_body_shows_each_gate_and_its_commit() {
        let mut data = task(
            "data",
            Some(TaskState::Completed),
            &[
                ("test", "0123456789abcdef0123456789abcdef01234567"),
                ("lint", "0123456789abcdef0123456789abcdef01234567"),
            ],
        );
        data.approval = Some(crate::task::Approval {
            by: crate::ids::UserId::new(78),
            login: "mia".into(),
            sha: crate::ids::sha("0123456789abcdef0123456789abcdef01234567"),
            at: 0,
            review: Some(5),
        });
        let tasks = [
            data,
            task("docs", Some(TaskState::Completed), &[]),
            task("entry", Some(TaskState::Testing), &[]),
        ];
        let missing = vec!["task `entry` (Task entry) is `testing`".to_owned()];
        insta::assert_snapshot!(render_story_pr_body(IssueNumber::new(2), &tasks, &missing, None), @r"
        Story #2, opened by taskgate. Add the `ship` label (or comment `/taskgate ship`) to merge and deploy it; nothing ships by itself.

        ### What was proven

        - #4 Task data (`data`): `test` passed at `0123456`, `lint` passed at `0123456`; approved by mia at `0123456`
        - #4 Task docs (`docs`): merged; needs no testing; approved: auto
        - #4 Task entry (`entry`): not complete (testing)

        ### Not shippable yet

        - task `entry` (Task entry) is `testing`
        ");
    }

    #[test]
    fn the_story_pr_body_gives_the_storys_fix_rate_once_a_todo_was_opened() {
        let tasks = [task(
            "data",
            Some(TaskState::Completed),
            &[("test", "0123456789abcdef0123456789abcdef01234567")],
        )];
        let mut stats = LoopStats::default();
        let none = render_story_pr_body(IssueNumber::new(2), &tasks, &[], Some(&stats));
        assert!(
            !none.contains("Branch todos"),
            "no todo, no figures: {none}"
        );
        let fix = crate::failure::FixTotals {
            opened: 2,
            fixed_without_human: 1,
            superseded: 1,
            greened: 1,
            attempts_to_green: 2,
            seconds_to_green: 420,
            ..Default::default()
        };
        stats.add_fixes("workflow:agent.yml", "test_failure", &fix);
        insta::assert_snapshot!(render_story_pr_body(IssueNumber::new(2), &tasks, &[], Some(&stats)), @r"
            Story #2, opened by taskgate. Add the `ship` label (or comment `/taskgate ship`) to merge and deploy it; nothing ships by itself.

            ### What was proven

            - #4 Task data (`data`): `test` passed at `0123456`; approved: auto

            ### Branch todos

            What failed on the way, by the agent each todo was routed to and the failure kind:

            | agent | failure kind | todos | fixed without a person | fixed after a person stepped in | escalated | attempts to green | time to green |
            |---|---|---:|---:|---:|---:|---:|---:|
            | `workflow:agent.yml` | test_failure | 2 | 1 | 0 | 0 | 2.0 | 7 min |
            ");
    }

    #[test]
    fn gate_and_refusal_texts() {
        let missing = vec![
            "task `check` (Make the check pass) is not started".to_owned(),
            "integration milestone `backtest` has not passed".to_owned(),
        ];
        let (title, summary) = gate_output(&missing, None, "ship");
        insta::assert_snapshot!(format!("{title}\n{summary}"), @r"
        Not shippable: 2 missing
        This story ships only when every task is complete.

        - task `check` (Make the check pass) is not started
        - integration milestone `backtest` has not passed
        ");
        insta::assert_snapshot!(ship_refused("octocat", "ship", &missing), @r"
        @octocat this story is not shippable yet, so taskgate removed the `ship` label. Missing:

        - task `check` (Make the check pass) is not started
        - integration milestone `backtest` has not passed
        ");
        insta::assert_snapshot!(merged_past_gate(9, &missing[..1]), @r"
        **Merged past the ship gate.** The story pull request #9 was merged by hand while the story was not shippable:

        - task `check` (Make the check pass) is not started

        taskgate records this and does not deploy it.
        ");
    }
}
