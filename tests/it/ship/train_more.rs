//! More of the ship train end to end (issue 31), behind `ship_train:
//! true`: a test that fails once in a batch's proof and passes when the
//! same tree is proven again is a flaky event, recorded and quarantined
//! as a task's are (kept when too few to quarantine, so it counts with a
//! later one), and nobody is refused for it; a story whose check aside
//! proved its tree lands on that tree with no new run.
//!
//! Every story's gate is [`CHECK`]: held on the first story's batch
//! until the test releases it (so the others queue behind it), and failing `tests/test_net.py::
//! test_fetch` only on ship batch 2's commit — the batch of the three
//! stories behind it. The split car built with the same changes has the
//! same tree on another commit: the same test, passing. Every test checks
//! that what landed is a tree a proof passed on.

use crate::support::hold::Hold;
use crate::support::shipped::Shipped;
use crate::support::{eventually, train_landed, REPO};
use taskgate_core::ids::RepoName;
use taskgate_core::ship::Train;

/// Up to four stories a batch, one batch proving at a time; one flaky
/// event quarantines (so the quarantine shows the event).
const CONFIG: &str =
    "ship_label: ship\nship_train: true\nship_parallel: 1\nflaky: { quarantine_after: 1 }\n";

/// The gate of every story (see the module's header), `HOLD` being the
/// test's hold ([`Rig::check`]). The commit's message is read with git:
/// the workspace is a real checkout.
const CHECK: &str = r#"if [ -f hold-proof ] && [ ! -f bravo.sh ]; then HOLD; fi
if git log -1 --format=%s | grep -q 'into ship batch 2$'; then
  printf '<testsuite name="net" tests="1" failures="1"><testcase classname="tests.test_net" name="test_fetch" file="tests/test_net.py"><failure message="timed out"/></testcase></testsuite>' > junit.xml
  echo "FAILED tests/test_net.py::test_fetch - timed out"
  exit 1
fi
exit 0
"#;

/// A test's stories.
struct Rig {
    sh: Shipped,
    /// Where [`CHECK`] holds the first story's batch.
    hold: Hold,
}

impl Rig {
    async fn start(config: &str) -> Rig {
        let hold = Hold::new();
        let sh = Shipped::story()
            .config(config)
            .check(&CHECK.replace("HOLD", &hold.wait()))
            .shippable()
            .await;
        Rig { sh, hold }
    }

    /// [`CHECK`] with this test's hold.
    fn check(&self) -> String {
        CHECK.replace("HOLD", &self.hold.wait())
    }

    /// Another story `key`, shippable: its issue and story PR.
    async fn story(&self, key: &str) -> (u64, u64) {
        self.story_with(key, &[]).await
    }

    /// [`Rig::story`] whose work also holds `more`.
    async fn story_with(&self, key: &str, more: &[(&str, &str)]) -> (u64, u64) {
        let gate = format!("{key}.sh");
        let marker = format!("{key}/lib.txt");
        let check = self.check();
        let mut files = vec![
            (gate.as_str(), check.as_str()),
            (marker.as_str(), "works\n"),
        ];
        files.extend_from_slice(more);
        let (title, task) = (format!("Story {key}"), format!("Work {key}"));
        let (issue, branch) = self.sh.story_done_with(key, (&title, &task), &files).await;
        eventually("the story is shippable", || async {
            self.sh.state_of(issue).await == "shippable"
        })
        .await;
        (issue, self.sh.pull_of(&branch).unwrap().number)
    }

    async fn ship(&self, issue: u64) {
        self.sh
            .s
            .app
            .comment(issue, "octocat", "/taskgate ship")
            .await;
        self.sh.s.app.settle().await;
    }

    /// The first story and bravo, charlie and delta, shipped in that
    /// order once the first story's batch is held as it proves (until
    /// [`Rig::release_proof`]): their issues, and the default branch's
    /// head before.
    async fn four_shipped_behind_a_held_proof(&self) -> (Vec<u64>, String) {
        let mut issues = vec![self.sh.story_issue];
        for key in ["bravo", "charlie", "delta"] {
            issues.push(self.story(key).await.0);
        }
        self.sh.s.app.push_to_main(&[("hold-proof", "yes\n")]).await;
        let base = self.sh.main_head();
        for &issue in &issues {
            self.ship(issue).await;
        }
        (issues, base)
    }

    /// Lets the held proof go on, and every later one pass the hold.
    fn release_proof(&self) {
        self.hold.release();
    }

    async fn train(&self) -> Train {
        let repo = RepoName::parse(REPO).unwrap();
        self.sh.s.app.store().ship_train(&repo).await.unwrap()
    }

    /// Waits until story `issue` is deployed; fails at once if it is
    /// refused (back to `shippable`).
    async fn until_deployed(&self, issue: u64) {
        eventually(&format!("#{issue} deployed"), || async {
            let now = self.sh.state_of(issue).await;
            assert_ne!(
                now,
                "shippable",
                "#{issue} was refused: {:#?}",
                self.train().await
            );
            now == "deployed"
        })
        .await;
    }

    /// While its car proves, story `issue` is shown `proving` in its
    /// batch by `GET /api/queue` (stored, it stays queued: the train's
    /// transitions read that); the stories waiting behind it are
    /// `queued`.
    async fn assert_shown_proving(&self, issue: u64) {
        let sh = &self.sh;
        let path = format!("/api/queue?repo={REPO}");
        let (status, v) = sh.api("GET", &path, Some("api-token")).await;
        assert_eq!(status, 200, "{v}");
        let first = &v["queue"][0];
        assert_eq!(
            (first["issue"].as_u64(), first["state"].as_str()),
            (Some(issue), Some("proving")),
            "{v}"
        );
        assert_eq!(first["batch"]["issues"], serde_json::json!([issue]), "{v}");
        assert_eq!(v["queue"][1]["state"], "queued", "{v}");
    }

    /// Every batch commit the default branch was fast-forwarded to since
    /// `since` has a tree a proof passed on.
    fn assert_landed_proven(&self, since: &str) {
        train_landed::assert_landed_proven(&self.sh.repo(), self.sh.main_head(), since);
    }
}

#[tokio::test]
async fn a_test_failing_once_in_a_batch_is_a_flaky_event_and_the_whole_batch_lands() {
    let t = Rig::start(CONFIG).await;
    let sh = &t.sh;
    let (issues, base) = t.four_shipped_behind_a_held_proof().await;
    let train = t.train().await;
    assert_eq!((train.cars.len(), train.waiting.len()), (1, 3), "{train:?}");
    t.assert_shown_proving(sh.story_issue).await;
    t.release_proof();
    for &issue in &issues {
        t.until_deployed(issue).await;
    }
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    let train = t.train().await;
    assert_eq!(
        (train.stats.landed, train.stats.refused),
        (4, 0),
        "{:?}",
        train.stats
    );
    assert_eq!(train.stats.flaky_retries, 1, "{:?}", train.stats);
    // Where the product keeps flaky tests: the quarantine, with the one
    // event that started it (`/dashboard`'s quarantined tests read it).
    let repo = RepoName::parse(REPO).unwrap();
    let quarantines = sh.s.app.store().quarantines(&repo).await.unwrap();
    assert_eq!(quarantines.len(), 1, "{quarantines:?}");
    let q = &quarantines[0];
    assert!(q.test_id.as_str().contains("test_fetch"), "{q:?}");
    assert_eq!(q.events.len(), 1, "{q:?}");
    assert!(
        q.events[0].task.starts_with("taskgate/ship-batch-"),
        "{q:?}"
    );
    sh.s.app.assert_contract_kept();
}

/// Two flaky events quarantine: the train's one is kept until another
/// comes.
const CONFIG_TWO: &str =
    "ship_label: ship\nship_train: true\nship_parallel: 1\nflaky: { quarantine_after: 2 }\n";

/// A task's gate that writes `tests/test_net.py::test_fetch` failing
/// (`sh echo.sh fail`) or passing (`sh echo.sh pass`): the plan on the
/// default branch says which, so a retry of the same commit flips it.
const ECHO: &str = r#"if [ "$1" = fail ]; then
  printf '<testsuite name="net" tests="1" failures="1"><testcase classname="tests.test_net" name="test_fetch" file="tests/test_net.py"><failure message="timed out"/></testcase></testsuite>' > junit.xml
  exit 1
fi
printf '<testsuite name="net" tests="1" failures="0"><testcase classname="tests.test_net" name="test_fetch" file="tests/test_net.py"/></testsuite>' > junit.xml
exit 0
"#;

impl Rig {
    /// Story `echo`'s task runs its gate with `mode` (the plan on the
    /// default branch).
    async fn echo_mode(&self, mode: &str) {
        let plan = crate::support::plan::Plan::story("Story echo")
            .task(
                crate::support::plan::Task::new("echo", "Work echo")
                    .runs(&format!("sh echo.sh {mode}")),
            )
            .yaml();
        let app = &self.sh.s.app;
        app.push_to_main(&[(".taskgate/stories/echo.yml", plan.as_str())])
            .await;
    }

    /// A flaky event of `test_fetch` in a task's history: story `echo`'s
    /// task fails on its commit, and passes when that commit is run again.
    async fn task_flakes(&self) {
        self.echo_mode("fail").await;
        let s = &self.sh.s;
        let (task_issue, branch) = s.app.task_and_branch("Work echo", "echo");
        let sha = s.push_on(&branch, &[("echo.sh", ECHO)], "works").await;
        s.completed(&sha, 1).await;
        self.echo_mode("pass").await;
        s.app
            .comment(task_issue, "octocat", "/taskgate retry")
            .await;
        let runs = s.completed(&sha, 2).await;
        let last = runs.into_iter().max_by_key(|c| c.id).unwrap();
        assert_eq!(last.conclusion.as_deref(), Some("success"), "{last:#?}");
    }
}

#[tokio::test]
async fn a_trains_flaky_event_below_the_threshold_is_kept_and_counts_with_a_later_one() {
    let t = Rig::start(CONFIG_TWO).await;
    let sh = &t.sh;
    let (issues, base) = t.four_shipped_behind_a_held_proof().await;
    t.release_proof();
    for &issue in &issues {
        t.until_deployed(issue).await;
    }
    sh.s.app.settle().await;
    t.assert_landed_proven(&base);
    assert_eq!(t.train().await.stats.flaky_retries, 1);
    let repo = RepoName::parse(REPO).unwrap();
    let store = sh.s.app.store();
    assert!(
        store.quarantines(&repo).await.unwrap().is_empty(),
        "one event of two"
    );

    // A later flaky event of the same test, from a task's retry.
    t.task_flakes().await;
    let quarantines = store.quarantines(&repo).await.unwrap();
    assert_eq!(quarantines.len(), 1, "{quarantines:?}");
    let q = &quarantines[0];
    assert!(q.test_id.as_str().contains("test_fetch"), "{q:?}");
    let tasks: Vec<&str> = q.events.iter().map(|e| e.task.as_str()).collect();
    assert_eq!(tasks.len(), 2, "{q:?}");
    assert!(
        tasks.iter().any(|t| t.starts_with("taskgate/ship-batch-")),
        "{q:?}"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_suspect_whose_check_passed_lands_on_that_proven_tree_with_no_new_run() {
    let t = Rig::start(CONFIG).await;
    let sh = &t.sh;
    let mut issues = vec![sh.story_issue];
    for key in ["bravo", "charlie"] {
        issues.push(t.story(key).await.0);
    }
    // The failing test's own file: the evidence names delta the suspect,
    // checked aside on the others' batch (the failed tree again).
    let test_file = [("tests/test_net.py", "def test_fetch(): pass\n")];
    let (delta, delta_pr) = t.story_with("delta", &test_file).await;
    issues.push(delta);
    sh.s.app.push_to_main(&[("hold-proof", "yes\n")]).await;
    let base = sh.main_head();
    for &issue in &issues {
        t.ship(issue).await;
    }
    let train = t.train().await;
    assert_eq!((train.cars.len(), train.waiting.len()), (1, 3), "{train:?}");
    t.release_proof();
    for &issue in &issues {
        t.until_deployed(issue).await;
    }
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    let train = t.train().await;
    // The first batch, the three, the two others, delta's check aside;
    // delta's own batch reused the check's tree.
    let stats = &train.stats;
    assert_eq!((stats.landed, stats.refused), (4, 0), "{stats:?}");
    assert_eq!((stats.proof_runs, stats.reused_proofs), (4, 1), "{stats:?}");
    let head = sh.main_head();
    let tip = sh.repo().commit(&head).unwrap();
    let runs: Vec<String> = (sh.s.checks(&head).into_iter())
        .map(|c| c.name)
        .filter(|name| name != "taskgate/ship-gate")
        .collect();
    assert!(
        runs.is_empty(),
        "no run on the commit that landed last: {runs:?}"
    );
    assert!(tip.message.contains("into ship batch 5"), "{}", tip.message);
    // The tree that landed is the one delta's check aside proved green.
    let check = sh.repo().branch_sha("taskgate/ship-batch-4").unwrap();
    assert_eq!(tip.tree, sh.repo().commit(&check).unwrap().tree);
    let green =
        sh.s.checks(&check)
            .into_iter()
            .any(|c| c.name != "taskgate/ship-gate" && c.conclusion.as_deref() == Some("success"));
    assert!(green, "{:?}", sh.s.checks(&check));
    let note =
        sh.s.app
            .bot_comments(delta_pr)
            .into_iter()
            .find(|c| c.contains("Landed in ship batch"))
            .expect("delta's story PR is told it landed");
    let note = note.replace(&head[..7], "<commit>");
    insta::assert_snapshot!(note, @r"
    **Landed in ship batch 5** (on its own). `main` was fast-forwarded to `<commit>`, the batch's commit. Its tree had already been proven green with the same gates, so no new proof run was needed.

    <!-- taskgate:car-landed car=5 -->
    ");
    sh.s.app.assert_contract_kept();
}
