//! The ship queue end to end (issue 20): a shipped story is merged with the
//! default branch's current head on `taskgate/ship-<n>`, its gates run on
//! that merge commit, and only that commit lands, by fast-forward. The fake
//! GitHub's commits are real here (the runner checks the merge commit
//! out), and every write taskgate makes comes back as GitHub's webhooks.

use crate::support::eventually;
use crate::support::hold::Hold;
use crate::support::origin::git;
use crate::support::shipped::Shipped;

/// The task's check fails on any tree that has `main-broke` in it: a
/// change to main that breaks the story without touching its files.
const CHECK: &str = "if [ -f main-broke ]; then echo 'FAILED test_story: main broke the story'; exit 1; fi\nexit 0\n";
/// The same check, held at `hold` in the proof (where the tree holds
/// `hold-proof`, pushed by [`Shipped::hold_proofs`]) until the test has
/// acted while it runs.
fn held_check(hold: &Hold) -> String {
    format!("{}{CHECK}", hold.wait_where("hold-proof"))
}

/// Shipped with no deploy workflow: a landed story is `deployed` at once.
/// Through the one-story queue, whose mechanics (the proof on
/// `taskgate/ship-<issue>`, one story at a time) these tests watch; the
/// ship train, on by default, has its own (`ship_train*.rs`).
const CONFIG: &str = "ship_label: ship\nship_train: false\n";

impl Shipped {
    fn check_on(&self, sha: &str, name: &str) -> fakehub::CheckRun {
        self.s
            .checks(sha)
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} on {sha}: {:#?}", self.s.checks(sha)))
    }

    /// From now on the proof's [`held_check`] waits at its hold.
    async fn hold_proofs(&self) {
        self.s.app.push_to_main(&[("hold-proof", "yes\n")]).await;
    }

    /// Waits until the proof's check runs are on the ship branch's tip.
    async fn proof_running(&self) -> String {
        let ship_branch = format!("taskgate/ship-{}", self.story_issue);
        eventually("the proof runs", || async {
            self.repo()
                .branch_sha(&ship_branch)
                .is_some_and(|tip| !self.s.checks(&tip).is_empty())
        })
        .await;
        self.repo().branch_sha(&ship_branch).unwrap()
    }

    /// Comments taskgate wrote on the story issue and the story PR.
    fn notes(&self) -> Vec<String> {
        let mut all = self.s.app.bot_comments(self.story_issue);
        all.extend(self.s.app.bot_comments(self.story_pr().unwrap().number));
        all
    }
}

#[tokio::test]
async fn a_base_that_moved_compatibly_is_merged_tested_and_exactly_that_tree_lands() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    let story_head = sh.repo().branch_sha(&sh.branch).unwrap();
    // Someone else's work lands on main after the story was proven.
    sh.s.app.push_to_main(&[("NOTES.md", "other work\n")]).await;
    let base = sh.main_head();

    sh.add_ship_label().await;
    sh.s.app.settle().await;
    eventually("the story landed", || async {
        sh.story_pr().unwrap().merged
    })
    .await;
    sh.s.app.settle().await;

    let landed = sh.main_head();
    assert_eq!(
        sh.parents(&landed),
        [base.clone(), story_head],
        "main is the merge of the base and the story, nothing else"
    );
    assert_eq!(
        sh.repo()
            .branch_sha(&format!("taskgate/ship-{}", sh.story_issue)),
        Some(landed.clone()),
        "the commit that landed is the one built and tested on the ship branch"
    );
    let proof = sh.check_on(&landed, "taskgate/ship/check/test");
    assert_eq!(proof.conclusion.as_deref(), Some("success"));
    let gate = sh.check_on(&landed, "taskgate/ship-gate");
    assert_eq!(gate.conclusion.as_deref(), Some("success"));
    // The tree has both: the story's file and main's new one.
    assert!(sh.repo().file("main", "NOTES.md").is_some());
    assert!(sh.repo().file("main", "check.sh").is_some());
    assert_eq!(sh.merges(), 1, "one fast-forward");
    assert_eq!(sh.state().await, "deployed");
    let notes = sh.notes().join("\n");
    assert!(notes.contains("Queued to ship"), "{notes}");
    assert!(
        notes.contains(&format!("with the base at `{}`", &base[..7])),
        "{notes}"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_base_that_breaks_the_story_refuses_the_ship_and_nothing_lands() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    sh.s.app.push_to_main(&[("main-broke", "yes\n")]).await;
    let base = sh.main_head();

    sh.add_ship_label().await;
    sh.s.app.settle().await;
    eventually("the ship was refused", || async {
        sh.state().await == "shippable" && !sh.pr_labels().contains(&"ship".to_owned())
    })
    .await;
    sh.s.app.settle().await;

    assert_eq!(sh.main_head(), base, "nothing landed");
    assert!(!sh.story_pr().unwrap().merged);
    assert_eq!(sh.merges(), 0);
    let pr_notes =
        sh.s.app
            .bot_comments(sh.story_pr().unwrap().number)
            .join("\n");
    assert!(
        pr_notes.contains("does not pass on the current base"),
        "{pr_notes}"
    );
    assert!(pr_notes.contains(&base[..7]), "names the base: {pr_notes}");
    assert!(
        pr_notes.contains("`ship/check/test`"),
        "names the gate: {pr_notes}"
    );
    assert!(
        pr_notes.contains("main broke the story"),
        "names the test: {pr_notes}"
    );
    let gate = sh.gate();
    assert_eq!(gate.conclusion.as_deref(), Some("failure"), "{gate:#?}");
    // A branch todo on the story, routed like any failure.
    let todo = sh
        .repo()
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "taskgate:branch-todo"))
        .expect("a branch todo on the story");
    assert!(todo.title.contains("on the current base"), "{}", todo.title);
    assert!(
        todo.labels.iter().any(|l| l.starts_with("role:")),
        "{:?}",
        todo.labels
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_base_that_moves_during_the_proof_is_proven_again_then_lands() {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_check(&hold))
        .shippable()
        .await;
    sh.hold_proofs().await;
    sh.add_ship_label().await;
    let first = sh.proof_running().await;
    // main moves while the proof runs (its head read at once: the story
    // may land on it while the webhooks settle).
    let moved = sh.repo().push_files(
        "main",
        &[("NOTES.md", "meanwhile\n")],
        "Meanwhile",
        "octocat",
    );
    sh.s.app.settle().await;
    // The held first round is stopped, never finished; the second round
    // passes the hold.
    eventually("the first round's run is cancelled", || async {
        sh.s.checks(&first)
            .iter()
            .any(|c| c.conclusion.as_deref() == Some("cancelled"))
    })
    .await;
    hold.release();

    eventually("the story landed", || async {
        sh.story_pr().unwrap().merged
    })
    .await;
    sh.s.app.settle().await;
    let landed = sh.main_head();
    assert_ne!(landed, first, "the first proof's commit did not land");
    assert_eq!(
        sh.parents(&landed)[0],
        moved,
        "proven on the base it landed on"
    );
    assert_eq!(
        sh.check_on(&landed, "taskgate/ship/check/test")
            .conclusion
            .as_deref(),
        Some("success")
    );
    let notes = sh.notes().join("\n");
    assert!(
        notes.contains("Proving again on the new base (round 2"),
        "{notes}"
    );
    assert_eq!(sh.merges(), 1);
    // The push restarted the proof at once: the first round never tried to
    // land (no fast-forward GitHub had to refuse), and its run was
    // cancelled rather than left to finish.
    let refused: Vec<_> =
        sh.s.app
            .fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "PATCH" && r.path.ends_with("/git/refs/heads/main"))
            .filter(|r| r.status == 422)
            .collect();
    assert!(refused.is_empty(), "{refused:#?}");
    let first_run = sh.check_on(&first, "taskgate/ship/check/test");
    assert_eq!(
        first_run.conclusion.as_deref(),
        Some("cancelled"),
        "{first_run:#?}"
    );
}

#[tokio::test]
async fn a_landing_github_refuses_is_reported_and_the_story_is_shippable_again() {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_check(&hold))
        .shippable()
        .await;
    sh.hold_proofs().await;
    sh.add_ship_label().await;
    sh.proof_running().await;
    // The default branch is protected against the App's push.
    sh.s.app.fake.inject(
        "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
        fakehub::Fault::Status {
            status: 403,
            times: 1,
        },
    );
    hold.release();
    eventually("the story is shippable again", || async {
        sh.state().await == "shippable"
    })
    .await;
    sh.s.app.settle().await;
    assert!(!sh.story_pr().unwrap().merged);
    // Said once, on the story PR, with what GitHub said and what to change.
    let notes =
        sh.s.app
            .bot_comments(sh.story_pr().unwrap().number)
            .join("\n");
    assert!(
        notes.contains("Not shipped: the rules of `main` refused taskgate"),
        "{notes}"
    );
    assert!(notes.contains("GitHub said: Forbidden"), "{notes}");
    assert!(!sh.pr_labels().contains(&"ship".to_owned()));
}

#[tokio::test]
async fn two_stories_shipped_together_land_one_after_another_each_proven_on_its_base() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    // A second story in the same repository, its one task done too.
    sh.second_story().await;
    let story_prs = || {
        sh.repo()
            .pulls()
            .into_iter()
            .filter(|p| p.head.starts_with("taskgate/story-") && p.base == "main")
            .collect::<Vec<_>>()
    };
    eventually("both story PRs are open", || async {
        story_prs().len() == 2
    })
    .await;

    // Both shipped at once.
    for pr in story_prs() {
        sh.repo().add_labels(pr.number, &["ship"], "octocat");
    }
    eventually("both stories landed", || async {
        story_prs().iter().all(|p| p.merged)
    })
    .await;
    sh.s.app.settle().await;

    // main's first-parent history: two ship commits, the second built on
    // the first (each proven on the base it landed on).
    let second = sh.main_head();
    let first = sh.parents(&second)[0].clone();
    for landed in [&first, &second] {
        let message = git(&sh.s.origin.bare(), &["log", "-1", "--format=%s", landed]);
        assert!(message.starts_with("Ship story #"), "{message}");
        let proofs: Vec<_> =
            sh.s.checks(landed)
                .into_iter()
                .filter(|c| c.name.starts_with("taskgate/ship/"))
                .collect();
        assert!(!proofs.is_empty(), "a proof on {landed}");
        assert!(
            proofs
                .iter()
                .all(|c| c.conclusion.as_deref() == Some("success")),
            "{proofs:#?}"
        );
    }
    assert_eq!(sh.merges(), 2);
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_freeze_refuses_ships_shows_on_the_gate_and_an_unfreeze_lifts_it() {
    let sh = Shipped::story()
        .config(CONFIG)
        .check(CHECK)
        .shippable()
        .await;
    let base = sh.main_head();
    sh.s.app
        .comment(
            sh.story_issue,
            "octocat",
            "/taskgate freeze release 2.0 in progress",
        )
        .await;
    sh.s.app.settle().await;
    let gate = sh.gate();
    assert_eq!(gate.conclusion.as_deref(), Some("failure"), "{gate:#?}");
    assert_eq!(gate.title.as_deref(), Some("Frozen"));
    assert!(
        gate.summary
            .as_deref()
            .unwrap()
            .contains("release 2.0 in progress"),
        "{gate:#?}"
    );

    // While frozen, the ship label is refused with the reason.
    sh.add_ship_label().await;
    sh.s.app.settle().await;
    assert!(
        !sh.pr_labels().contains(&"ship".to_owned()),
        "label removed"
    );
    let replies =
        sh.s.app
            .bot_comments(sh.story_pr().unwrap().number)
            .join("\n");
    assert!(replies.contains("nothing lands now"), "{replies}");
    assert!(replies.contains("release 2.0 in progress"), "{replies}");
    assert_eq!(sh.main_head(), base, "nothing landed");
    // The API says so too.
    let ship = format!("/api/stories/{}/ship", sh.story_issue);
    let (status, refused) = sh.api("POST", &ship, Some("api-token")).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["reasons"][0]
            .as_str()
            .unwrap()
            .contains("release 2.0 in progress"),
        "{refused}"
    );

    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate unfreeze")
        .await;
    sh.s.app.settle().await;
    let gate = sh.gate();
    assert_eq!(gate.conclusion.as_deref(), Some("success"), "{gate:#?}");
    // A second later, as a person would: the same label on the same state
    // in the same second is GitHub's same body, a replay (issue 45).
    sh.s.app.advance(std::time::Duration::from_secs(1));
    sh.add_ship_label().await;
    sh.landed().await;
    assert_eq!(sh.merges(), 1);

    // Each decision is in the audit log: who, what, on which object, why.
    let (status, log) = sh
        .api(
            "GET",
            "/api/audit?repo=octo-org/hello-world",
            Some("api-token"),
        )
        .await;
    assert_eq!(status, 200, "{log}");
    let actions: Vec<(&str, &str)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["via"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [
            ("ship", "label"),
            ("unfreeze", "command"),
            ("freeze", "command")
        ],
        "{log}"
    );
    let freeze = &log["entries"][2];
    assert_eq!(freeze["login"], "octocat");
    assert_eq!(freeze["reason"], "release 2.0 in progress");
}

#[tokio::test]
async fn a_proof_that_passes_during_a_freeze_waits_and_lands_after_the_unfreeze() {
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(CONFIG)
        .check(&held_check(&hold))
        .shippable()
        .await;
    sh.hold_proofs().await;
    sh.add_ship_label().await;
    sh.proof_running().await;
    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate freeze incident")
        .await;
    sh.s.app.settle().await;
    hold.release();
    sh.story_told(
        "the proven story waits",
        "but nothing lands while the repository is frozen",
    )
    .await;
    assert!(!sh.story_pr().unwrap().merged, "nothing lands while frozen");
    assert_eq!(sh.state().await, "queued");

    // What a person sees on the dashboard now: the queue, the freeze, and
    // the decisions that led here.
    let browser = crate::browser::Browser::start().await;
    let url = format!("{}/", sh.s.app.url);
    let page = browser.open_signed_in(&url, "someone", "api-token").await;
    page.screenshot("a_proof_that_passes_during_a_freeze_waits_in_the_queue")
        .await;
    let queue = page.section("Ship queue").await;
    assert!(
        queue.contains(&format!("#{} Shipped work", sh.story_issue)),
        "{queue}"
    );
    assert!(queue.contains("@octocat by label"), "{queue}");
    assert!(queue.contains("waiting for the freeze to lift"), "{queue}");
    let text = page.text().await;
    assert!(
        text.contains("frozen by @octocat") && text.contains("incident"),
        "the freeze and its reason: {text}"
    );
    assert!(text.contains("until /taskgate unfreeze"), "{text}");
    let audit = page.section("Audit log").await;
    assert!(
        audit.contains("freeze") && audit.contains("ship"),
        "{audit}"
    );
    assert!(audit.contains("@octocat"), "{audit}");
    drop(browser);

    sh.s.app
        .comment(sh.story_issue, "octocat", "/taskgate unfreeze")
        .await;
    sh.landed().await;
    assert_eq!(sh.merges(), 1);
}

/// The cost of a ship (docs/benchmarks.md, "Shipping"): GitHub writes
/// per ship and the time from the label to the merge, less the time the
/// proof's tests took. Not a test: run it with
/// `cargo test --test it bench_ship_cost -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn bench_ship_cost() {
    const SHIPS: usize = 5;
    let mut rows = Vec::new();
    for round in 0..SHIPS {
        let sh = Shipped::story()
            .config(CONFIG)
            .check(CHECK)
            .shippable()
            .await;
        sh.s.app
            .push_to_main(&[("NOTES.md", &format!("round {round}\n"))])
            .await;
        let before = sh.s.app.fake.writes().len();
        let started = std::time::Instant::now();
        sh.add_ship_label().await;
        loop {
            if sh.story_pr().unwrap().merged {
                break;
            }
            // allowed sleep: the benchmark's 5 ms poll, finer than
            // `eventually`'s so it does not blur the time measured.
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let to_merge = started.elapsed().as_millis() as i64;
        sh.s.app.settle().await;
        let writes: Vec<String> = sh.s.app.fake.writes()[before..]
            .iter()
            .map(|w| format!("{} {}", w.method, w.route.clone().unwrap_or_default()))
            .collect();

        let repo = taskgate_core::ids::RepoName::parse(crate::support::REPO).unwrap();
        let story =
            sh.s.app
                .store()
                .story_by_issue(&repo, taskgate_core::ids::IssueNumber::new(sh.story_issue))
                .await
                .unwrap()
                .unwrap();
        let proof =
            sh.s.app
                .store()
                .attempts(&repo, &story, &taskgate_core::task::RunSubject::ShipProof)
                .await
                .unwrap();
        let tests_ms: i64 = proof
            .iter()
            .filter_map(|a| Some(a.finished_ms? - a.started_ms?))
            .sum();
        rows.push((writes, to_merge, tests_ms));
    }
    println!("ship | writes | label→merge ms | proof run ms | overhead ms");
    for (i, (writes, to_merge, tests)) in rows.iter().enumerate() {
        println!(
            "{} | {} | {to_merge} | {tests} | {}",
            i + 1,
            writes.len(),
            to_merge - tests
        );
    }
    let mut by_route = std::collections::BTreeMap::<&str, usize>::new();
    for w in &rows[0].0 {
        *by_route.entry(w.as_str()).or_default() += 1;
    }
    println!("writes of one ship, by route:");
    for (route, n) in by_route {
        println!("  {n} × {route}");
    }
}

#[tokio::test]
async fn a_freeze_window_holds_a_proven_story_and_the_queue_moves_on_when_it_ends() {
    // A window tomorrow from 01:10 to 01:20 UTC; taskgate's clock is moved
    // there (whatever the time the test runs at).
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let tomorrow = now_s.div_euclid(86_400) + 1;
    let day = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"][((tomorrow + 3) % 7) as usize];
    let config = format!(
        "ship_train: false\nfreeze_windows:\n  - {{ days: [{day}], from: \"01:10\", to: \"01:20\", reason: \"release train\" }}\n"
    );
    let hold = Hold::new();
    let sh = Shipped::story()
        .config(&config)
        .check(&held_check(&hold))
        .shippable()
        .await;
    sh.hold_proofs().await;
    let minutes = |m: u64| std::time::Duration::from_secs(60 * m);
    let to_one_am = (tomorrow * 86_400 + 3_600 - now_s) as u64;
    sh.s.app
        .clock
        .advance(std::time::Duration::from_secs(to_one_am));

    sh.add_ship_label().await;
    sh.proof_running().await;
    // The window opens while the proof runs: it passes, and waits.
    sh.s.app.clock.advance(minutes(10));
    hold.release();
    sh.story_told(
        "the proven story waits for the window to end",
        "release train",
    )
    .await;
    assert!(
        !sh.story_pr().unwrap().merged,
        "nothing lands inside the window"
    );
    assert_eq!(sh.state().await, "queued");

    // The window ends: the periodic look at the queue proves it again, and
    // it lands. Nobody asked.
    sh.s.app.clock.advance(minutes(15));
    sh.landed().await;
    assert_eq!(sh.merges(), 1);
}
