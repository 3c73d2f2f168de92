//! Shipping under the default branch's rules (issue 33 item 3): the
//! rules read as the App sees them, and a ship taken end to end under
//! rulesets in each combination — taskgate a bypass actor, not one,
//! linear history required, a merge queue (taskgate the CI of its merge
//! groups) — lands a proven tree or is refused with the rule named, once,
//! on the story PR; so is a merge queue whose `merge_group` webhooks the
//! installation does not receive.

use fakehub::{BypassActor, Rule, Ruleset};
use taskgate::github::RepoClient;
use taskgate_core::config::MergeMethod;
use taskgate_core::ids::RepoName;
use taskgate_core::ship::{BranchRule, Bypass, RuleKind};

use crate::support::CheckedFake;

/// The real client, as the App's installation `installation`.
fn installation(fake: &fakehub::FakeGitHub, installation: u64) -> octocrab::Octocrab {
    let key =
        jsonwebtoken::EncodingKey::from_rsa_pem(fakehub::FakeGitHub::private_key_pem().as_bytes())
            .unwrap();
    octocrab::Octocrab::builder()
        .base_uri(fake.url())
        .unwrap()
        .app(fake.app_id().into(), key)
        .build()
        .unwrap()
        .installation(installation.into())
        .unwrap()
}

#[tokio::test]
async fn the_rules_of_a_branch_are_read_with_whether_taskgate_may_bypass_each() {
    let fake = CheckedFake::start().await;
    let repo = fake.install(7, "acme/widgets");
    let closed = repo.with_ruleset(
        Ruleset::new("main")
            .rule(Rule::approvals(1).methods(&["squash"]))
            .rule(Rule::required_checks(&["taskgate/ship-gate", "ci"])),
    );
    let open = repo.with_ruleset(
        Ruleset::new("history")
            .rule(Rule::RequiredLinearHistory)
            .bypass(BypassActor::App(fake.app_id())),
    );
    repo.with_ruleset(Ruleset::classic("main").rule(Rule::required_checks(&["legacy"])));
    let client = installation(&fake, 7);
    let name = RepoName::parse("acme/widgets").unwrap();
    let rules = RepoClient::new(&client, &name)
        .branch_rules("main")
        .await
        .unwrap();
    assert!(rules.classic);
    assert_eq!(
        rules.rules,
        [
            BranchRule {
                rule: RuleKind::PullRequest {
                    approvals: 1,
                    methods: vec![MergeMethod::Squash],
                    review: Default::default(),
                },
                ruleset: Some(closed),
                bypass: Bypass::Never,
            },
            BranchRule {
                rule: RuleKind::RequiredChecks {
                    contexts: vec!["taskgate/ship-gate".into(), "ci".into()]
                },
                ruleset: Some(closed),
                bypass: Bypass::Never,
            },
            BranchRule {
                rule: RuleKind::LinearHistory,
                ruleset: Some(open),
                bypass: Bypass::Always,
            },
            BranchRule {
                rule: RuleKind::RequiredChecks {
                    contexts: vec!["legacy".into()]
                },
                ruleset: None,
                bypass: Bypass::Never,
            },
        ]
    );
    let other = RepoClient::new(&client, &name)
        .branch_rules("feature")
        .await
        .unwrap();
    assert!(other.rules.is_empty() && !other.classic);
}

/// The story's one check, held at `hold` in the proof (where the tree
/// holds `hold-proof`, pushed by [`hold_proofs`]) until the test has
/// acted while the proof runs.
fn held_check(hold: &Hold) -> String {
    format!("{}exit 0\n", hold.wait_where("hold-proof"))
}

/// From now on the proof's [`held_check`] waits at its hold.
async fn hold_proofs(sh: &Shipped) {
    sh.s.app.push_to_main(&[("hold-proof", "yes\n")]).await;
}
const CHECK: &str = "exit 0\n";
const CONFIG: &str = "ship_label: ship\n";

use crate::support::eventually;
use crate::support::hold::Hold;
use crate::support::shipped::Shipped;

impl Shipped {
    fn ship_tip(&self) -> String {
        self.repo()
            .branch_sha(&format!("taskgate/ship-{}", self.story_issue))
            .expect("the proof's branch")
    }

    /// A commit's parents and tree, as the fake GitHub holds it.
    fn commit(&self, sha: &str) -> (Vec<String>, String) {
        let c = self.repo().commit(sha).expect("the commit exists");
        (c.parents, c.tree)
    }

    fn pr_notes(&self) -> Vec<String> {
        self.s.app.bot_comments(self.story_pr().unwrap().number)
    }

    /// Refused PATCHes of `main` (a landing GitHub's rules turned down).
    fn refused_landings(&self) -> usize {
        self.s
            .app
            .fake
            .requests()
            .iter()
            .filter(|r| r.method == "PATCH" && r.path.ends_with("/git/refs/heads/main"))
            .filter(|r| r.status >= 400)
            .count()
    }

    /// Waits until the ship ended without landing: shippable again, the
    /// label off.
    async fn refused(&self) {
        eventually("the ship was refused", || async {
            self.state().await == "shippable" && !self.pr_labels().contains(&"ship".to_owned())
        })
        .await;
        self.s.app.settle().await;
    }
}

/// Someone else's work on `main`, so the proof is a real merge.
async fn other_work(sh: &Shipped) -> String {
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    sh.main_head()
}

#[tokio::test]
async fn as_a_bypass_actor_taskgate_fast_forwards_to_the_proven_commit_once_its_gate_is_written() {
    let hold = Hold::new();
    // The one-story queue: the gate is written on its proof's commit.
    let sh = Shipped::story()
        .config("ship_label: ship\nship_train: false\n")
        .check(&held_check(&hold))
        .shippable()
        .await;
    let repo = sh.repo();
    repo.with_ruleset(
        Ruleset::new("main")
            .rule(Rule::pull_request())
            .rule(Rule::NonFastForward)
            .rule(Rule::Deletion)
            .bypass(BypassActor::App(sh.s.app.fake.app_id())),
    );
    repo.with_ruleset(Ruleset::new("gate").rule(Rule::required_checks(&["taskgate/ship-gate"])));
    hold_proofs(&sh).await;
    let base = other_work(&sh).await;
    sh.add_ship_label().await;
    let proof = {
        let ship_branch = format!("taskgate/ship-{}", sh.story_issue);
        eventually("the proof runs", || async {
            repo.branch_sha(&ship_branch)
                .is_some_and(|tip| !sh.s.checks(&tip).is_empty())
        })
        .await;
        repo.branch_sha(&ship_branch).unwrap()
    };
    // The gate's write on the tested commit fails once and comes later:
    // the landing waits for it rather than meet the rule without it.
    sh.s.app.fake.inject(
        "POST /repos/{owner}/{repo}/check-runs",
        fakehub::Fault::Status {
            status: 502,
            times: 1,
        },
    );
    hold.release();
    sh.landed().await;
    assert_eq!(sh.main_head(), proof, "exactly the tested commit landed");
    assert_eq!(sh.commit(&proof).0[0], base);
    assert_eq!(sh.refused_landings(), 0, "no landing met the rule unready");
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn without_bypass_the_story_pr_is_merged_at_its_proven_head_and_lands_the_proven_tree() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.repo().with_ruleset(
        Ruleset::new("main")
            .rule(Rule::pull_request())
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
    let base = other_work(&sh).await;
    let story_head = sh.repo().branch_sha(&sh.story_pr().unwrap().head).unwrap();
    sh.add_ship_label().await;
    sh.landed().await;
    let landed = sh.main_head();
    let (parents, tree) = sh.commit(&landed);
    assert_eq!(parents, [base, story_head.clone()]);
    assert_eq!(tree, sh.commit(&sh.ship_tip()).1, "the proven tree landed");
    let story_pr = format!("/pulls/{}/merge", sh.story_pr().unwrap().number);
    let merge =
        sh.s.app
            .fake
            .requests()
            .into_iter()
            .find(|r| r.method == "PUT" && r.path.ends_with(&story_pr) && r.status == 200)
            .expect("the story PR was merged");
    assert_eq!(merge.body["sha"], story_head, "its head pinned");
    assert_eq!(sh.refused_landings(), 0, "no push the rules refuse");
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn linear_history_is_honoured_where_taskgate_may_bypass_it_the_squash_of_the_proven_tree_lands(
) {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.repo().with_ruleset(
        Ruleset::new("linear")
            .rule(Rule::pull_request())
            .rule(Rule::RequiredLinearHistory)
            .bypass(BypassActor::App(sh.s.app.fake.app_id())),
    );
    let base = other_work(&sh).await;
    sh.add_ship_label().await;
    sh.landed().await;
    let proof = sh.ship_tip();
    let (proof_parents, proof_tree) = sh.commit(&proof);
    assert_eq!(
        proof_parents,
        std::slice::from_ref(&base),
        "the proof is linear"
    );
    let (parents, tree) = sh.commit(&sh.main_head());
    assert_eq!(parents, [base], "no merge commit landed");
    assert_eq!(tree, proof_tree, "the proven tree landed");
    assert!(sh.repo().file("main", "NOTES.md").is_some());
    assert!(sh.repo().file("main", "check.sh").is_some());
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_contract_kept();
}

/// `main` takes changes through GitHub's merge queue, which requires
/// taskgate's gate.
fn merge_queue(sh: &Shipped) {
    sh.repo().with_ruleset(
        Ruleset::new("queue")
            .rule(Rule::MergeQueue)
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
}

impl Shipped {
    /// The `Not shipped` notes on the story PR.
    fn not_shipped(&self) -> Vec<String> {
        self.pr_notes()
            .into_iter()
            .filter(|n| n.contains("Not shipped"))
            .map(|n| n.split("\n\n<!--").next().unwrap_or_default().to_owned())
            .collect()
    }

    /// Waits until GitHub's merge queue holds the story PR's group.
    async fn group_built(&self) -> fakehub::QueueEntry {
        eventually("the merge group is built", || async {
            !self.repo().merge_queue().is_empty()
        })
        .await;
        self.repo().merge_queue()[0].clone()
    }
}

#[tokio::test]
async fn through_the_merge_queue_taskgate_proves_the_merge_group_and_github_lands_that_commit() {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_check(&hold))
        .shippable()
        .await;
    merge_queue(&sh);
    hold_proofs(&sh).await;
    let base = other_work(&sh).await;
    let story_head = sh.repo().branch_sha(&sh.story_pr().unwrap().head).unwrap();
    sh.add_ship_label().await;
    let group = sh.group_built().await;
    assert_eq!(
        group.head_sha, story_head,
        "the head shipped is the head enqueued"
    );
    hold.release();
    sh.landed().await;
    let landed = sh.main_head();
    assert_eq!(landed, group.group_sha, "the merge group's commit landed");
    assert_eq!(
        sh.commit(&landed).0,
        [base, story_head],
        "the base with the story merged"
    );
    let proven: Vec<(String, Option<String>)> =
        sh.s.checks(&landed)
            .into_iter()
            .map(|c| (c.name, c.conclusion))
            .collect();
    assert!(
        proven.contains(&("taskgate/ship/check/test".into(), Some("success".into())))
            && proven.contains(&("taskgate/ship-gate".into(), Some("success".into()))),
        "the story's gates ran on the merge group and the gate reported there: {proven:#?}"
    );
    let writes = sh.s.app.fake.writes();
    let story_merge = format!("/pulls/{}/merge", sh.story_pr().unwrap().number);
    assert!(
        !writes
            .iter()
            .any(|w| (w.method == "PUT" && w.path.ends_with(&story_merge))
                || (w.method == "PATCH" && w.path.ends_with("/git/refs/heads/main"))),
        "taskgate moved nothing itself: the queue landed it"
    );
    assert!(
        sh.repo()
            .branch_sha(&format!("taskgate/ship-{}", sh.story_issue))
            .is_none(),
        "no proof of its own up front"
    );
    assert!(sh.not_shipped().is_empty());
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_merge_group_that_fails_the_storys_gates_is_dequeued_and_the_failure_said_once() {
    // The story passes alone and fails with the other work on `main`.
    let check = "test ! -f NOTES.md\n";
    let sh = Shipped::story()
        .config(CONFIG)
        .check(check)
        .shippable()
        .await;
    merge_queue(&sh);
    let before = other_work(&sh).await;
    sh.add_ship_label().await;
    let group = sh.group_built().await;
    sh.refused().await;
    eventually("GitHub's queue let it go", || async {
        sh.repo().merge_queue().is_empty()
    })
    .await;
    sh.s.app.settle().await;
    assert_eq!(sh.main_head(), before, "nothing landed");
    assert!(!sh.story_pr().unwrap().merged);
    let red =
        sh.s.checks(&group.group_sha)
            .into_iter()
            .find(|c| c.name == "taskgate/ship-gate")
            .expect("the gate on the merge group");
    assert_eq!(red.conclusion.as_deref(), Some("failure"));
    let notes = sh.not_shipped();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    assert!(notes[0].contains("ship/check/test"), "{}", notes[0]);
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_story_head_that_moves_after_ship_leaves_the_merge_queue_and_never_lands() {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_check(&hold))
        .shippable()
        .await;
    merge_queue(&sh);
    hold_proofs(&sh).await;
    let before = sh.main_head();
    sh.add_ship_label().await;
    let group = sh.group_built().await;
    sh.repo().push_files(
        &sh.branch,
        &[("late.txt", "late\n")],
        "Late work",
        "mallory",
    );
    // Out of the queue, and not shippable: no task PR made `Late work`.
    eventually("the ship was refused", || async {
        sh.state().await == "building" && !sh.pr_labels().contains(&"ship".to_owned())
    })
    .await;
    hold.release();
    sh.s.app.settle().await;
    assert_eq!(sh.main_head(), before, "nothing landed");
    assert!(!sh.story_pr().unwrap().merged);
    let notes = sh.not_shipped();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    // Whichever comes first, the push or GitHub's `dequeued` of the group
    // (shuffled webhooks), the reason said is the moved head.
    let (shipped, late) = (
        &group.head_sha[..7],
        &sh.repo().branch_sha(&sh.branch).unwrap()[..7],
    );
    insta::assert_snapshot!(notes[0].replace(shipped, "<shipped>").replace(late, "<late>"), @"**Not shipped: the story changed after `ship`: ship again to land it.** It was shipped at `<shipped>`; its branch is now at `<late>`. Nothing of it landed, and the `ship` label was removed. Look at what changed since `<shipped>` before you ship again.");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_merge_queue_that_would_not_wait_for_the_ship_gate_is_refused_with_the_setting_and_nothing_is_proven(
) {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.repo()
        .with_ruleset(Ruleset::new("queue").rule(Rule::MergeQueue));
    let before = sh.main_head();
    sh.add_ship_label().await;
    sh.refused().await;
    assert_eq!(sh.main_head(), before, "nothing landed");
    assert!(
        sh.repo()
            .branch_sha(&format!("taskgate/ship-{}", sh.story_issue))
            .is_none()
            && sh.repo().merge_queue().is_empty(),
        "no proof and nothing enqueued for a ship that cannot land tested"
    );
    let notes = sh.not_shipped();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    insta::assert_snapshot!(notes[0], @r"
    **Not shipped: the rules of `main` refused taskgate.** Nothing landed and the `ship` label was removed.

    - `main` takes changes through GitHub's merge queue, which does not require `taskgate/ship-gate`: it would land merge groups without waiting for taskgate's proof.

    To let taskgate land this story:
    - add `taskgate/ship-gate` to the required status checks of `main`, so the merge queue waits for taskgate's proof of each merge group ([GitHub's docs](https://docs.github.com/en/repositories/configuring-branches-and-merges-in-your-repository/configuring-pull-request-merges/managing-a-merge-queue)).

    Then ship again.
    ");
    let gate = sh.gate();
    assert_eq!(gate.conclusion.as_deref(), Some("failure"));
    assert!(
        gate.summary.unwrap_or_default().contains("merge queue"),
        "the gate says why"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn an_installation_without_the_merge_group_event_is_refused_before_anything_is_enqueued() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    merge_queue(&sh);
    // Installed before the App's manifest added `merge_group`, and the
    // new event never accepted: GitHub would send it no merge group.
    sh.s.app.fake.subscribe(
        crate::support::INSTALLATION,
        &[
            "check_run",
            "check_suite",
            "issue_comment",
            "issues",
            "pull_request",
            "push",
            "workflow_run",
        ],
    );
    let before = sh.main_head();
    sh.add_ship_label().await;
    sh.refused().await;
    assert_eq!(sh.main_head(), before, "nothing landed");
    assert!(
        sh.repo().merge_queue().is_empty()
            && sh
                .repo()
                .branch_sha(&format!("taskgate/ship-{}", sh.story_issue))
                .is_none(),
        "nothing enqueued and nothing proven for a queue taskgate would never hear from"
    );
    let notes = sh.not_shipped();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    insta::assert_snapshot!(notes[0], @r"
    **Not shipped: taskgate cannot ship through the merge queue of `main`.** Nothing landed and the `ship` label was removed.

    - `main` takes changes through GitHub's merge queue, and taskgate's installation does not receive the `merge_group` event: taskgate would never be asked to prove a merge group, and the queue would wait for it forever.

    To let taskgate land this story:
    - accept the `merge_group` event in the taskgate installation's settings (GitHub asks the owner to review the App's updated permissions and events) ([GitHub's docs](https://docs.github.com/en/apps/using-github-apps/approving-updated-permissions-for-a-github-app)).

    Then ship again.
    ");
    let gate = sh.gate();
    assert_eq!(gate.conclusion.as_deref(), Some("failure"));
    assert!(
        gate.summary.unwrap_or_default().contains("`merge_group`"),
        "the gate says why"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_rule_taskgate_cannot_meet_is_said_once_with_the_rule_the_branch_and_the_setting() {
    // (A rule asking for approvals is one taskgate waits for instead:
    // `ship/approvals.rs`.)
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.repo()
        .with_ruleset(Ruleset::new("ci").rule(Rule::required_checks(&["ci"])));
    let before = sh.main_head();
    sh.add_ship_label().await;
    sh.refused().await;
    assert_eq!(sh.main_head(), before, "nothing landed");
    assert!(!sh.story_pr().unwrap().merged);
    let notes: Vec<String> = sh
        .pr_notes()
        .into_iter()
        .filter(|n| n.contains("Not shipped"))
        .collect();
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    let note = &notes[0];
    assert!(
        note.contains("the rules of `main` refused taskgate"),
        "{note}"
    );
    assert!(note.contains("Required status check \"ci\""), "{note}");
    assert!(note.contains("required checks of `main`"), "{note}");
    assert!(note.contains("https://docs.github.com/"), "{note}");
    let gate = sh.gate();
    assert_eq!(gate.conclusion.as_deref(), Some("failure"));
    assert!(
        gate.summary
            .unwrap_or_default()
            .contains("Required status check"),
        "the gate says why"
    );
    sh.s.app.assert_contract_kept();
}
