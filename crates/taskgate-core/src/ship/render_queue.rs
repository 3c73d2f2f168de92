//! Texts of the ship queue and the proof on the current base: the proving
//! merge commit's message and the comments on the story issue and PR.
//! Short, and each names the commits it is about.

use super::{Priority, ProofFailure, ShipProof, Shipper};
use crate::ids::{CommitSha, IssueNumber};
use crate::report::plain_text;

/// The message of the merge commit that is tested and lands.
pub fn ship_commit_message(title: &str, story: IssueNumber, pr: Option<IssueNumber>) -> String {
    let pr = pr.map(|n| format!(" (#{n})")).unwrap_or_default();
    format!(
        "Ship story #{story}: {}{pr}\n\nProven by taskgate: this merge commit passed the story's gates before it landed.",
        plain_text(title)
    )
}

pub fn queued(by: &Shipper, pr: IssueNumber, head: &str, ahead: usize) -> String {
    let (login, via) = (&by.login, by.via);
    let priority = match by.priority {
        Priority::Normal => String::new(),
        p => format!(
            " Priority {}: it goes ahead of {}.",
            super::queue::priority_name(p),
            match p {
                Priority::Hotfix => "every story waiting (a proof under way finishes first)",
                _ => "the normal stories waiting",
            }
        ),
    };
    let turn = match ahead {
        0 => "It is proven on the current base next.".to_owned(),
        1 => "One story ships before it.".to_owned(),
        n => format!("{n} stories ship before it."),
    };
    format!(
        "Queued to ship, as {login} asked (by {}): #{pr} at `{head}`.{priority} {turn} Its gates run on a merge with the default branch's head, and only that tested commit lands.",
        via.name()
    )
}

pub fn proving(proof: &ShipProof, story: IssueNumber) -> String {
    let commit = proof.commit.as_ref().map_or("?", CommitSha::short);
    format!(
        "Proving (round {}): `taskgate/ship-{story}` merges the story at `{}` with the base at `{}`; the story's gates run on `{commit}`.",
        proof.round,
        proof.head.short(),
        proof.base.short()
    )
}

pub fn enqueued(pr: IssueNumber, head: &CommitSha, branch: &str) -> String {
    format!(
        "Shipping through GitHub's merge queue: `{}` takes changes through it, so taskgate put #{pr} in the queue at `{}` (a later head is not shipped). GitHub merges it with the base in a merge group; the story's gates run on that group's commit, and GitHub lands exactly that commit once `taskgate/ship-gate` passed on it.",
        plain_text(branch),
        head.short()
    )
}

pub fn proving_group(proof: &ShipProof, group: &CommitSha) -> String {
    format!(
        "Proving merge group `{}` of GitHub's merge queue: the story at `{}` merged with {}. The story's gates run on it, and `taskgate/ship-gate` reports there.",
        group.short(),
        proof.head.short(),
        on_what(&proof.ahead)
    )
}

/// What a group is built on: the branch, or the groups ahead.
fn on_what(ahead: &[IssueNumber]) -> String {
    if ahead.is_empty() {
        return "the base".into();
    }
    let prs: Vec<String> = ahead.iter().map(|n| format!("#{n}")).collect();
    let them = if prs.len() == 1 { "it" } else { "them" };
    format!(
        "the base and the pull requests ahead of it in the queue ({}: the group's tree holds {them} too)",
        prs.join(", ")
    )
}

/// The summary of the red gate on a merge group that is not the shipped
/// story on its base (`why`: the gate's line).
pub fn group_refused(why: &str) -> String {
    format!(
        "The {why}.\n\ntaskgate proves a merge group only when its tree is exactly its base with the story head that was shipped merged, so GitHub's merge queue does not land this one."
    )
}

/// The summary of the green gate on a proven merge group.
pub fn proven_group(proof: &ShipProof, group: &CommitSha, story: IssueNumber) -> String {
    let mut out = format!(
        "The story of #{story} passed its gates on this merge group's commit `{}`: its tree is the story at `{}` merged with the group's base, and nothing else.",
        group.short(),
        proof.head.short()
    );
    if !proof.ahead.is_empty() {
        let prs: Vec<String> = proof.ahead.iter().map(|n| format!("#{n}")).collect();
        out.push_str(&format!(
            "\n\nThe tree also holds the pull requests ahead of the story in GitHub's merge queue: {}. taskgate does not gate them; the story's gates passed with them in the tree.",
            prs.join(", ")
        ));
    }
    out
}

/// The gate's line on a merge group whose tree is not the shipped head
/// merged into its base.
pub fn group_without_head(group: &CommitSha, base: &CommitSha, head: &CommitSha) -> String {
    format!(
        "merge group `{}` is not its base `{}` with the shipped story head `{}` merged and nothing else: its tree differs",
        group.short(),
        base.short(),
        head.short()
    )
}

/// The gate's line on a merge group taskgate could not judge, by what
/// GitHub answered when asked to merge the shipped head into its base.
pub fn group_unjudged(
    group: &CommitSha,
    base: &CommitSha,
    head: &CommitSha,
    reference: &super::merge_queue::GroupReference,
) -> String {
    use super::merge_queue::GroupReference;
    let why = match reference {
        GroupReference::Held => format!("its base `{}` holds that head already", base.short()),
        GroupReference::Conflict(said) => format!(
            "GitHub could not merge it into the group's base `{}` ({})",
            base.short(),
            plain_text(said)
        ),
        GroupReference::OtherParents { commit, parents } => {
            let listed: Vec<String> = parents.iter().map(|p| format!("`{}`", p.short())).collect();
            format!(
                "GitHub's merge of it into `{}` came back as `{}` with the parents {}, not exactly those two",
                base.short(),
                commit.short(),
                listed.join(", ")
            )
        }
        GroupReference::Tree(_) | GroupReference::Unread => "it was not read".to_owned(),
    };
    format!(
        "merge group `{}` could not be checked to hold exactly the story head `{}` that was shipped: {why}",
        group.short(),
        head.short(),
    )
}

pub fn dequeued_line(group: &CommitSha, reason: &str) -> String {
    format!(
        "GitHub's merge queue destroyed merge group `{}` without merging it (`{}`)",
        group.short(),
        plain_text(reason)
    )
}

pub fn dequeued(group: &CommitSha, reason: &str, label: &str) -> String {
    format!(
        "**Not shipped: GitHub's merge queue took the story PR out.** It destroyed merge group `{}` without merging it (GitHub's reason: `{}`): a required check failed on the group, or the story PR's head moved. Nothing landed and the `{}` label was removed; ship again to retry.",
        group.short(),
        plain_text(reason),
        plain_text(label)
    )
}

pub fn proven_but_frozen(commit: &CommitSha, frozen: &str) -> String {
    format!(
        "Proven at `{}`, but nothing lands while the repository is frozen ({frozen}). The story waits at the head of the queue and is proven again on the base as it is when the freeze lifts.",
        commit.short()
    )
}

/// A ship train's car started proving: its stories, in queue order.
pub fn proving_batch(
    car: super::CarId,
    (base, commit): (&CommitSha, &CommitSha),
    stories: &[String],
) -> String {
    let what = if stories.len() == 1 {
        format!("the story {}", stories[0])
    } else {
        format!(
            "{} stories in queue order: {}",
            stories.len(),
            stories.join(", ")
        )
    };
    format!(
        "Proving in ship batch {car}: `taskgate/ship-batch-{car}` merges {what} with the base at `{}`; the gates run on `{}`, and only that commit lands.",
        base.short(),
        commit.short()
    )
}

/// A ship train's car proven during a freeze.
pub fn batch_proven_but_frozen(car: super::CarId, commit: &CommitSha, frozen: &str) -> String {
    format!(
        "Proven in ship batch {car} at `{}`, but nothing lands while the repository is frozen ({frozen}). The story waits in the queue, and its batch is formed and proven again on the base as it is when the freeze lifts.",
        commit.short()
    )
}

/// A repository that asked for the ship train ships one story at a time.
pub fn ships_serially(why: &str) -> String {
    format!(
        "Shipping one story at a time, not in batches (`ship_train`): {why}, and a batch lands only as one fast-forward to the commit its proof passed on. This story is proven on the default branch's head and lands the way the rules ask. To ship in batches, let taskgate move the default branch itself (the app on the rule's bypass list); `ship_train: false` in `.github/taskgate.yml` ships one story at a time without this note."
    )
}

/// Why a story ships alone while GitHub refuses the batch branches, and
/// the setting that lets batches run again.
pub fn batch_branch_refused(off: &super::TrainOff) -> String {
    // A story's change the app may not write (a workflow file): the fix is
    // the permission a one-story landing would name too.
    let story_refused = (super::rules::violations(&off.why).into_iter())
        .find(|v| matches!(v, super::Violation::WorkflowsPermission { .. }));
    if let Some(v) = story_refused {
        return format!(
            "Shipping one story at a time for now, not in batches (`ship_train`): GitHub refused a story's merge into the batch branch `{}` ({}). To ship it, {}. Batches are tried again a day after the refusal. This story is proven on the default branch's head and lands the way the rules ask.",
            off.branch,
            off.why.trim_end_matches('.'),
            super::landing::fix(&v, &off.branch)
        );
    }
    let pattern = off
        .branch
        .rsplit_once('-')
        .map_or_else(|| off.branch.clone(), |(stem, _)| format!("{stem}-*"));
    // A rule names branches; anything else is the installation's access.
    let fix = if off.why.to_ascii_lowercase().contains("rule") {
        "add the taskgate app to the bypass list of the ruleset that restricts those branches"
    } else {
        "give the taskgate app's installation write access to the repository's contents"
    };
    format!(
        "Shipping one story at a time for now, not in batches (`ship_train`): GitHub refused to create the batch branch `{}` ({}). To prove stories in batches, let taskgate create and update `{pattern}`: {fix}. Batches are tried again a day after the refusal. This story is proven on the default branch's head and lands the way the rules ask.",
        off.branch,
        off.why.trim_end_matches('.')
    )
}

pub fn base_moved(proof: &ShipProof, max_rounds: u32) -> String {
    format!(
        "The default branch moved past `{}` before the tested commit could land, so nothing landed. Proving again on the new base (round {} of at most {max_rounds}).",
        proof.base.short(),
        proof.round + 1
    )
}

pub fn base_kept_moving(rounds: u32) -> String {
    format!(
        "the default branch moved during each of {rounds} proofs; ship again when it is quieter"
    )
}

pub fn render_land_refused(branch: &str, status: u16, message: &str) -> String {
    format!(
        "GitHub refused to move `{}` to the tested commit ({status}: {}). Nothing landed; the story is shippable again. If `{}` is protected, allow taskgate to push to it (see the README, \"Shipping\").",
        plain_text(branch),
        plain_text(message),
        plain_text(branch)
    )
}

/// On the story PR when its head moved after `ship`.
pub fn story_changed(pinned: &CommitSha, head: &CommitSha, label: &str) -> String {
    format!(
        "**Not shipped: the story changed after `ship`: ship again to land it.** It was shipped at `{}`; its branch is now at `{}`. Nothing of it landed, and the `{}` label was removed. Look at what changed since `{}` before you ship again.",
        pinned.short(),
        head.short(),
        plain_text(label),
        pinned.short()
    )
}

/// What keeps a story with a commit no proven task PR made from shipping
/// (`vet`), with the way out.
pub fn foreign_commit(commit: &CommitSha, prefix: &str) -> String {
    format!(
        "commit `{c}` on the story branch did not come from a proven task PR: look at it, then `{prefix} accept-commits {c}` accepts it and the commits before it (recorded), or move the story branch back before it",
        c = commit.as_str()
    )
}

pub fn too_many_commits(head: &CommitSha) -> String {
    format!(
        "the story branch at `{}` has more commits than taskgate checks (1,000): each must come from a proven task PR",
        head.short()
    )
}

/// On the story PR (or issue) when a person accepted commits no task PR
/// made (`accept-commits`).
pub fn commits_accepted(login: &str, covered: &[CommitSha], branch: &str) -> String {
    let shas: Vec<String> = covered
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect();
    let (n, s) = (covered.len(), if covered.len() == 1 { "" } else { "s" });
    format!(
        "**{} accepted {n} commit{s} on `{}` that no task PR made:** {}. They count as the story's from now on (recorded in the audit log); a commit pushed after them does not.",
        plain_text(login),
        plain_text(branch),
        shas.join(", ")
    )
}

/// The proof's line when its commit does not merge exactly what it
/// should.
pub fn unexpected_parents(
    commit: &CommitSha,
    parents: &[CommitSha],
    expected: &[CommitSha],
) -> String {
    let list = |shas: &[CommitSha]| {
        if shas.is_empty() {
            return "none".to_owned();
        }
        shas.iter()
            .map(|s| format!("`{}`", s.short()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let what = if expected.len() == 1 {
        "exactly the base"
    } else {
        "exactly the base and the shipped head"
    };
    format!(
        "the proof commit `{}` has the parents {}, not {what} ({}): nothing of it was tested or landed",
        commit.short(),
        list(parents),
        list(expected)
    )
}

/// The gate's lines for a failed proof.
pub fn proof_failure_lines(failure: &ProofFailure) -> Vec<String> {
    let on = match &failure.commit {
        Some(c) => format!(
            "on the merge with base `{}` (tested at `{}`)",
            failure.base.short(),
            c.short()
        ),
        None => format!("with base `{}`", failure.base.short()),
    };
    failure
        .failures
        .iter()
        .map(|f| format!("the story at `{}` fails {on}: {f}", failure.head.short()))
        .collect()
}

pub fn proof_refused(failure: &ProofFailure, ship_label: &str) -> String {
    let lines: Vec<String> = proof_failure_lines(failure)
        .iter()
        .map(|l| format!("- {l}"))
        .collect();
    format!(
        "**Not shipped: the story does not pass on the current base.** Nothing landed and the `{ship_label}` label was removed.\n\n{}\n\nThe story's branch todo says what failed; ship again once it is fixed.",
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ship::ShipVia;

    fn sha(c: char) -> CommitSha {
        crate::ids::sha(&c.to_string().repeat(40))
    }

    fn by(via: ShipVia, priority: Priority) -> Shipper {
        Shipper {
            user: None,
            login: "octocat".into(),
            via,
            priority,
        }
    }

    #[test]
    fn the_queue_comment_says_the_priority() {
        let say = |p| queued(&by(ShipVia::Command, p), IssueNumber::new(9), "abc1234", 1);
        insta::assert_snapshot!(say(Priority::High), @"Queued to ship, as octocat asked (by command): #9 at `abc1234`. Priority high: it goes ahead of the normal stories waiting. One story ships before it. Its gates run on a merge with the default branch's head, and only that tested commit lands.");
        insta::assert_snapshot!(say(Priority::Hotfix), @"Queued to ship, as octocat asked (by command): #9 at `abc1234`. Priority hotfix: it goes ahead of every story waiting (a proof under way finishes first). One story ships before it. Its gates run on a merge with the default branch's head, and only that tested commit lands.");
    }

    #[test]
    fn a_refused_batch_branch_names_the_fix_a_rule_or_the_installations_access() {
        let off = |why: &str| super::super::TrainOff {
            branch: "taskgate/ship-batch-3".into(),
            why: why.into(),
            until_ms: 0,
        };
        insta::assert_snapshot!(batch_branch_refused(&off("GitHub answered 422: Repository rule violations found: Cannot create ref due to creations being restricted.")), @"Shipping one story at a time for now, not in batches (`ship_train`): GitHub refused to create the batch branch `taskgate/ship-batch-3` (GitHub answered 422: Repository rule violations found: Cannot create ref due to creations being restricted). To prove stories in batches, let taskgate create and update `taskgate/ship-batch-*`: add the taskgate app to the bypass list of the ruleset that restricts those branches. Batches are tried again a day after the refusal. This story is proven on the default branch's head and lands the way the rules ask.");
        insta::assert_snapshot!(batch_branch_refused(&off("GitHub answered 409: refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission")), @"Shipping one story at a time for now, not in batches (`ship_train`): GitHub refused a story's merge into the batch branch `taskgate/ship-batch-3` (GitHub answered 409: refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission). To ship it, grant the taskgate App the `Workflows: Read and write` repository permission and accept it on the installation ([GitHub's docs](https://docs.github.com/en/apps/maintaining-github-apps/modifying-a-github-app-registration#changing-the-permissions-of-a-github-app)). Batches are tried again a day after the refusal. This story is proven on the default branch's head and lands the way the rules ask.");
        insta::assert_snapshot!(batch_branch_refused(&off("GitHub answered 403: Resource not accessible by integration")), @"Shipping one story at a time for now, not in batches (`ship_train`): GitHub refused to create the batch branch `taskgate/ship-batch-3` (GitHub answered 403: Resource not accessible by integration). To prove stories in batches, let taskgate create and update `taskgate/ship-batch-*`: give the taskgate app's installation write access to the repository's contents. Batches are tried again a day after the refusal. This story is proven on the default branch's head and lands the way the rules ask.");
    }

    #[test]
    fn queue_and_proof_texts_name_their_commits() {
        insta::assert_snapshot!(queued(&by(ShipVia::Label, Priority::Normal), IssueNumber::new(9), "abc1234", 0), @"Queued to ship, as octocat asked (by label): #9 at `abc1234`. It is proven on the current base next. Its gates run on a merge with the default branch's head, and only that tested commit lands.");
        insta::assert_snapshot!(queued(&by(ShipVia::Api, Priority::Normal), IssueNumber::new(9), "abc1234", 2), @"Queued to ship, as octocat asked (by API): #9 at `abc1234`. 2 stories ship before it. Its gates run on a merge with the default branch's head, and only that tested commit lands.");
        let proof = ShipProof {
            round: 1,
            base: sha('b'),
            head: sha('e'),
            commit: Some(sha('f')),
            landing: Default::default(),
            ahead: vec![],
        };
        insta::assert_snapshot!(proving(&proof, IssueNumber::new(3)), @"Proving (round 1): `taskgate/ship-3` merges the story at `eeeeeee` with the base at `bbbbbbb`; the story's gates run on `fffffff`.");
        insta::assert_snapshot!(base_moved(&proof, 3), @"The default branch moved past `bbbbbbb` before the tested commit could land, so nothing landed. Proving again on the new base (round 2 of at most 3).");
        insta::assert_snapshot!(ship_commit_message("Shipped *work*", IssueNumber::new(3), Some(IssueNumber::new(7))), @r"
        Ship story #3: Shipped *work* (#7)

        Proven by taskgate: this merge commit passed the story's gates before it landed.
        ");
    }

    #[test]
    fn a_refusal_names_the_gate_the_test_and_the_base() {
        let failure = ProofFailure {
            base: sha('b'),
            head: sha('e'),
            commit: Some(sha('f')),
            failures: vec!["`ship/check/test` (test_failure): test_fetch: assert 3 == 4".into()],
        };
        insta::assert_snapshot!(proof_refused(&failure, "ship"), @r"
        **Not shipped: the story does not pass on the current base.** Nothing landed and the `ship` label was removed.

        - the story at `eeeeeee` fails on the merge with base `bbbbbbb` (tested at `fffffff`): `ship/check/test` (test_failure): test_fetch: assert 3 == 4

        The story's branch todo says what failed; ship again once it is fixed.
        ");
        let conflict = ProofFailure {
            commit: None,
            failures: vec!["it does not merge cleanly (GitHub: Merge conflict)".into()],
            ..failure
        };
        insta::assert_snapshot!(proof_failure_lines(&conflict).join("\n"), @"the story at `eeeeeee` fails with base `bbbbbbb`: it does not merge cleanly (GitHub: Merge conflict)");
    }
}
