//! The ship train end to end (issue 31), behind `ship_train: true`:
//! shipped stories are merged in batches on `taskgate/ship-batch-<car>`,
//! each batch's commit is proven with the gates, and a proven batch lands
//! as one fast-forward of the default branch; a failure is narrowed down
//! to the story that caused it, which alone is refused.
//!
//! The fake GitHub's commits are real (the runner checks each batch out).
//! Every story's gate is the same script ([`CHECK`]): held on the first
//! batch until the test releases it (so stories queue up behind its
//! proof), and failing, with a
//! JUnit report naming the test's file, on a tree that has both
//! `main-moved` and a story's `*/broken` file. Every test
//! checks that what landed is a tree a proof passed on.

use crate::support::hold::Hold;
use crate::support::shipped::Shipped;
use crate::support::{eventually, train_landed, REPO};
use taskgate_core::ids::RepoName;
use taskgate_core::ship::{car_branch, Train};

/// One story at a time per batch is not the point: up to four, one batch
/// proving at a time (so stories queue up behind it).
const CONFIG: &str = "ship_label: ship\nship_train: true\nship_parallel: 1\n";

/// The gate of every story, `HOLD` being [`Rig::check`]'s hold. Held on
/// the first story's batch once `hold-proof` is on the default branch
/// (pushed just before the ships, so the tasks' own runs are quick) until
/// the test releases it ([`Rig::release_proofs`]), once the other stories
/// are shipped behind it.
const CHECK: &str = r#"if [ -f hold-proof ] && [ ! -f bravo.sh ]; then HOLD; fi
for broken in */broken; do
  [ -f "$broken" ] && [ -f main-moved ] || continue
  dir=${broken%/broken}
  printf '<testsuite name="merge" tests="1" failures="1"><testcase classname="%s.test_merge" name="test_merge" file="%s/test_merge.py"><failure message="broken on main"/></testcase></testsuite>' "$dir" "$dir" > junit.xml
  echo "FAILED $dir/test_merge.py::test_merge - broken on main"
  exit 1
done
exit 0
"#;

/// A test's stories.
struct Rig {
    sh: Shipped,
    /// Where [`CHECK`] holds the first story's batch.
    hold: Hold,
}

impl Rig {
    /// The first story (`check`, issue `sh.story_issue`) shippable with
    /// `config`, one run at a time.
    async fn start(config: &str) -> Rig {
        Rig::start_with(config, 1).await
    }

    /// [`Rig::start`] with `runners` runs at once.
    async fn start_with(config: &str, runners: usize) -> Rig {
        let hold = Hold::new();
        let sh = Shipped::story()
            .config(config)
            .check(&Rig::check_of(&hold))
            .runners(runners)
            .shippable()
            .await;
        Rig { sh, hold }
    }

    fn check_of(hold: &Hold) -> String {
        CHECK.replace("HOLD", &hold.wait())
    }

    /// [`CHECK`] with this test's hold.
    fn check(&self) -> String {
        Rig::check_of(&self.hold)
    }

    /// Another story `key`, shippable: its issue and story PR. `broken`:
    /// it fails once `main-moved` is on the default branch.
    async fn story(&self, key: &str, broken: bool) -> (u64, u64) {
        let (marker, body) = if broken {
            (format!("{key}/broken"), "yes\n")
        } else {
            (format!("{key}/lib.txt"), "works\n")
        };
        self.story_gated(key, &self.check(), (&marker, body)).await
    }

    /// Another story `key` whose gate (`<key>.sh`) is `gate`, with one
    /// more file, shippable: its issue and story PR.
    async fn story_gated(&self, key: &str, gate: &str, file: (&str, &str)) -> (u64, u64) {
        let script = format!("{key}.sh");
        let files = [(script.as_str(), gate), file];
        let (title, task) = (format!("Story {key}"), format!("Work {key}"));
        let (issue, branch) = self.sh.story_done_with(key, (&title, &task), &files).await;
        eventually("the story is shippable", || async {
            self.sh.state_of(issue).await == "shippable"
        })
        .await;
        (issue, self.sh.pull_of(&branch).unwrap().number)
    }

    /// From now on the first story's batch is held as it proves, until
    /// [`Rig::release_proofs`].
    async fn hold_proofs(&self, also: &[(&str, &str)]) {
        let mut files = vec![("hold-proof", "yes\n")];
        files.extend_from_slice(also);
        self.sh.s.app.push_to_main(&files).await;
    }

    /// Lets the held proof go on, and every later one pass the hold.
    fn release_proofs(&self) {
        self.hold.release();
    }

    /// The stories shipped behind the held first batch wait in the train.
    async fn assert_waiting(&self, stories: usize) {
        let train = self.train().await;
        assert_eq!(
            (train.cars.len(), train.waiting.len()),
            (1, stories),
            "shipped while the first batch proves: {train:?}"
        );
        assert!(train.cars[0].proving, "{train:?}");
    }

    async fn ship(&self, issue: u64, how: &str) {
        self.sh.s.app.comment(issue, "octocat", how).await;
        self.sh.s.app.settle().await;
    }

    async fn train(&self) -> Train {
        let repo = RepoName::parse(REPO).unwrap();
        self.sh.s.app.store().ship_train(&repo).await.unwrap()
    }

    /// Waits until story `issue` is `state` (and fails at once on a state
    /// a story of the train never reaches on the way there).
    async fn until(&self, issue: u64, state: &str) {
        eventually(&format!("#{issue} {state}"), || async {
            let now = self.sh.state_of(issue).await;
            let ok = ["queued", "proving", "shipping", "shippable", "deployed"];
            assert!(ok.contains(&now.as_str()), "#{issue} is {now}");
            if state == "deployed" && now == "shippable" {
                // Refused: fail at once, with why and the train.
                self.sh.s.app.settle().await;
                let branch = format!("taskgate/story-{issue}");
                let pr = self.sh.pull_of(&branch).map(|p| p.number);
                let told = pr.map(|p| self.told(p)).unwrap_or_default();
                let train = self.train().await;
                panic!("#{issue} was refused: {told}\n{train:#?}");
            }
            now == state
        })
        .await;
    }

    /// [`train_landed::assert_landed_proven`] since `since`.
    fn assert_landed_proven(&self, since: &str) {
        train_landed::assert_landed_proven(&self.sh.repo(), self.sh.main_head(), since);
    }

    /// What landed since `since` ([`train_landed::landed_since`]).
    fn landed_since(&self, since: &str) -> Vec<String> {
        train_landed::landed_since(&self.sh.repo(), self.sh.main_head(), since)
    }

    /// The comments taskgate wrote on PR (or issue) `number`.
    fn told(&self, number: u64) -> String {
        self.sh.s.app.bot_comments(number).join("\n")
    }
}

#[tokio::test]
async fn a_shipped_story_is_merged_on_its_batch_branch_proven_and_that_commit_lands() {
    let t = Rig::start(CONFIG).await;
    let sh = &t.sh;
    let story_head = sh.repo().branch_sha(&sh.branch).unwrap();
    let base = sh.main_head();

    t.ship(sh.story_issue, "/taskgate ship").await;
    t.until(sh.story_issue, "deployed").await;
    sh.s.app.settle().await;

    let landed = sh.main_head();
    let car = t.train().await.next_car;
    assert_eq!(
        sh.repo()
            .branch_sha(&car_branch(taskgate_core::ship::CarId(car))),
        Some(landed.clone()),
        "the batch's commit is what landed"
    );
    assert_eq!(
        sh.parents(&landed),
        [base.clone(), story_head],
        "the batch is the story merged on the default branch's head"
    );
    let message = sh.repo().commit(&landed).unwrap().message;
    assert!(
        message.contains(&format!("into ship batch {car}")),
        "{message}"
    );
    t.assert_landed_proven(&base);
    let train = t.train().await;
    assert_eq!(train.stats.proof_runs, 1, "one proof run");
    assert_eq!(train.stats.landed, 1);
    assert!(
        train.cars.is_empty() && train.waiting.is_empty(),
        "{train:?}"
    );
    assert!(sh.story_pr().unwrap().merged, "the story PR is merged");
    let pr = sh.story_pr().unwrap().number;
    let told = t.told(pr);
    assert!(
        told.contains(&format!("**Landed in ship batch {car}** (on its own)")),
        "{told}"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_batch_of_three_with_one_broken_story_lands_the_two_others_and_refuses_it() {
    let t = Rig::start(CONFIG).await;
    let sh = &t.sh;
    let (b, b_pr) = t.story("bravo", false).await;
    let (c, c_pr) = t.story("charlie", true).await;
    let (d, d_pr) = t.story("delta", false).await;
    t.hold_proofs(&[("main-moved", "yes\n")]).await;
    let base = sh.main_head();

    // The first story proves alone; the three behind it wait for it, and
    // then ride together.
    t.ship(sh.story_issue, "/taskgate ship").await;
    for issue in [b, c, d] {
        t.ship(issue, "/taskgate ship").await;
    }
    t.assert_waiting(3).await;
    // `GET /api/stories` shows the first story proving in its batch.
    assert_eq!(sh.state_of(sh.story_issue).await, "proving");
    assert_eq!(sh.state_of(b).await, "queued");
    t.release_proofs();
    for issue in [sh.story_issue, b, d] {
        t.until(issue, "deployed").await;
    }
    t.until(c, "shippable").await;
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    assert!(sh.repo().file("main", "bravo/lib.txt").is_some());
    assert!(sh.repo().file("main", "delta/lib.txt").is_some());
    assert!(
        sh.repo().file("main", "charlie/broken").is_none(),
        "the broken story did not land"
    );
    let train = t.train().await;
    // The first story's proof, then the batch's: the batch of three
    // failed once, the evidence (charlie changed the failing test's
    // folder) split it into the two others and charlie on top of them,
    // proven side by side. The two passed and landed; charlie's tree was
    // the failed batch's tree, failing again: confirmed, not a flake.
    assert_eq!(train.stats.proof_runs, 4, "{:?}", train.stats);
    assert_eq!(train.stats.bisection_runs, 2, "{:?}", train.stats);
    assert_eq!((train.stats.landed, train.stats.refused), (3, 1));
    // The queue's own figure (proof runs per landed story) counts the
    // train's runs: each on its car's first story.
    let metrics = sh.s.app.metrics().await;
    let counted = crate::support::metric(&metrics, "taskgate_ship_proof_runs_total ");
    assert_eq!(counted, 4.0, "taskgate_ship_proof_runs_total");
    assert_eq!(train.stats.innocents_refused, 0);
    for pr in [b_pr, d_pr] {
        assert!(
            t.told(pr).contains("**Landed in ship batch"),
            "{}",
            t.told(pr)
        );
    }
    let refused = t.told(c_pr);
    assert!(
        refused.contains("Not shipped: the story does not pass"),
        "{refused}"
    );
    assert!(refused.contains("charlie"), "names the test: {refused}");
    assert!(
        refused.contains(&format!(
            "It was tried in a ship batch of 3 stories with #{b} (PR #{b_pr}), #{d} (PR #{d_pr})"
        )),
        "{refused}"
    );
    sh.s.app.assert_contract_kept();
}

/// A gate red only on the merge with the default branch once it has
/// `main-moved`: no other story's gate fails there.
const RED_ON_THE_MERGE: &str =
    "if [ -f main-moved ]; then echo 'FAILED bravo_gate - red on the merge'; exit 1; fi\nexit 0\n";

#[tokio::test]
async fn a_batch_runs_every_story_s_gates_so_only_the_second_story_s_red_gate_refuses_it() {
    let t = Rig::start(CONFIG).await;
    let sh = &t.sh;
    let (c, c_pr) = t.story("charlie", false).await;
    let (b, b_pr) = (t.story_gated("bravo", RED_ON_THE_MERGE, ("bravo/lib.txt", "new\n"))).await;
    t.hold_proofs(&[("main-moved", "yes\n")]).await;
    let base = sh.main_head();

    // charlie first, bravo second in the batch behind the first story:
    // charlie's gates pass on the batch, bravo's do not.
    t.ship(sh.story_issue, "/taskgate ship").await;
    for issue in [c, b] {
        t.ship(issue, "/taskgate ship").await;
    }
    t.assert_waiting(2).await;
    t.release_proofs();
    for issue in [sh.story_issue, c] {
        t.until(issue, "deployed").await;
    }
    t.until(b, "shippable").await;
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    assert!(sh.repo().file("main", "charlie/lib.txt").is_some());
    assert!(
        sh.repo().file("main", "bravo.sh").is_none(),
        "the story whose gate is red on the merge did not land"
    );
    let train = t.train().await;
    assert_eq!((train.stats.landed, train.stats.refused), (2, 1));
    assert_eq!(train.stats.innocents_refused, 0);
    assert!(t.told(c_pr).contains("**Landed in ship batch"));
    let refused = t.told(b_pr);
    assert!(
        refused.contains("Not shipped: the story does not pass"),
        "{refused}"
    );
    assert!(refused.contains("bravo_gate"), "names the test: {refused}");
    // A todo for the refused story only: the batch's failed run is on
    // its first story, charlie, who was not blamed for it.
    let todos: Vec<String> = (sh.repo().issues().into_iter())
        .filter(|i| i.labels.iter().any(|l| l == "taskgate:branch-todo"))
        .map(|i| i.title)
        .collect();
    assert_eq!(todos.len(), 1, "{todos:?}");
    assert!(todos[0].contains("Story bravo"), "{todos:?}");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_speculative_batch_built_on_a_failing_one_is_rebuilt_on_the_default_branch() {
    let t = Rig::start("ship_label: ship\nship_train: true\nship_batch_max: 1\n").await;
    let sh = &t.sh;
    let (a, a_pr) = t.story("alpha", true).await;
    let (b, _) = t.story("bravo", false).await;
    t.hold_proofs(&[("main-moved", "yes\n")]).await;
    let base = sh.main_head();

    t.ship(a, "/taskgate ship").await;
    t.ship(b, "/taskgate ship").await;
    // bravo is proven on top of alpha while alpha proves.
    let train = t.train().await;
    assert_eq!(train.cars.len(), 2, "{train:?}");
    let speculative = train.cars[1].clone();
    let on_alpha = speculative.base.clone().expect("built on the batch ahead");
    assert_eq!(
        Some(&on_alpha),
        train.cars[0].built.as_ref().map(|b| &b.commit)
    );
    t.release_proofs();
    t.until(a, "shippable").await;
    t.until(b, "deployed").await;
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    let main = sh.main_head();
    assert_eq!(
        sh.parents(&main)[0],
        base,
        "bravo was rebuilt on the default branch, not on alpha"
    );
    assert!(sh.repo().file("main", "alpha/broken").is_none());
    let train = t.train().await;
    assert_eq!((train.stats.landed, train.stats.refused), (1, 1));
    assert_eq!(train.stats.innocents_refused, 0);
    assert!(t.told(a_pr).contains("Not shipped"), "{}", t.told(a_pr));
    sh.s.app.assert_contract_kept();
}

/// A gate held, by a hold nobody releases, only on a tree holding
/// alpha's broken change (`HOLD`): the run outlives alpha's failing
/// proof, unless it is stopped.
const HELD_ON_ALPHA: &str = "if [ -f alpha/broken ]; then HOLD; fi\nexit 0\n";

#[tokio::test]
async fn the_proof_of_a_batch_dissolved_by_a_failure_ahead_is_stopped() {
    // Two runners: alpha's retry does not wait for bravo's run.
    let config = "ship_label: ship\nship_train: true\nship_batch_max: 1\n";
    let t = Rig::start_with(config, 2).await;
    let sh = &t.sh;
    let (a, _) = t.story("alpha", true).await;
    let never = Hold::new();
    let gate = HELD_ON_ALPHA.replace("HOLD", &never.wait());
    let (b, _) = (t.story_gated("bravo", &gate, ("bravo/lib.txt", "new\n"))).await;
    // alpha's proof is held: bravo's, on top of it, starts meanwhile.
    t.hold_proofs(&[("main-moved", "yes\n")]).await;
    let base = sh.main_head();

    t.ship(a, "/taskgate ship").await;
    t.ship(b, "/taskgate ship").await;
    let train = t.train().await;
    assert!(
        train.cars.len() == 2 && train.cars.iter().all(|c| c.proving),
        "bravo proves on top of alpha while alpha proves: {train:?}"
    );
    never.until_held().await;
    t.release_proofs();
    t.until(a, "shippable").await;
    t.until(b, "deployed").await;
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    // Every run of bravo's gates on a batch holding alpha was stopped,
    // not left to wait, and alpha's failure said so.
    let on_alpha: Vec<_> = (sh.repo().check_runs().into_iter())
        .filter(|c| c.name.contains("bravo"))
        .filter(|c| sh.repo().file(&c.head_sha, "alpha/broken").is_some())
        .collect();
    assert!(!on_alpha.is_empty(), "bravo's proof ran on alpha's batch");
    eventually("its processes are gone", || async { !never.is_held() }).await;
    for check in &on_alpha {
        assert_eq!(check.conclusion.as_deref(), Some("cancelled"), "{check:?}");
    }
    let dissolved = "the ship batch it proved was dissolved";
    assert!(
        (on_alpha.iter()).any(|c| c.summary.as_deref().is_some_and(|s| s.contains(dissolved))),
        "{on_alpha:#?}"
    );
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_high_priority_story_overtakes_the_normal_stories_waiting() {
    let t = Rig::start("ship_label: ship\nship_train: true\nship_batch_max: 1\nship_parallel: 1\n")
        .await;
    let sh = &t.sh;
    let (b, _) = t.story("bravo", false).await;
    let (c, _) = t.story("charlie", false).await;
    let (d, _) = t.story("delta", false).await;
    t.hold_proofs(&[]).await;
    let base = sh.main_head();

    t.ship(sh.story_issue, "/taskgate ship").await;
    t.ship(b, "/taskgate ship").await;
    t.ship(c, "/taskgate ship").await;
    t.ship(d, "/taskgate ship --priority high").await;
    t.assert_waiting(3).await;
    t.release_proofs();
    for issue in [sh.story_issue, b, c, d] {
        t.until(issue, "deployed").await;
    }
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    let messages: Vec<String> = t
        .landed_since(&base)
        .into_iter()
        .rev()
        .map(|sha| sh.repo().commit(&sha).unwrap().message)
        .collect();
    let order: Vec<&str> = messages
        .iter()
        .map(|s| {
            ["bravo", "charlie", "delta"]
                .into_iter()
                .find(|k| s.contains(k))
                .unwrap_or("first")
        })
        .collect();
    let log = messages.join("\n");
    assert_eq!(order, ["first", "delta", "bravo", "charlie"], "{log}");
}

#[tokio::test]
async fn a_story_whose_head_moved_while_it_waits_leaves_the_train_and_does_not_land() {
    let t = Rig::start(CONFIG).await;
    let sh = &t.sh;
    let (b, _) = t.story("bravo", false).await;
    t.hold_proofs(&[]).await;
    let base = sh.main_head();

    t.ship(sh.story_issue, "/taskgate ship").await;
    t.ship(b, "/taskgate ship").await;
    t.assert_waiting(1).await;
    // Someone pushes to bravo's story branch: what was shipped is not its
    // head any more, so it leaves the queue, and the train.
    let branch = format!("taskgate/story-{b}");
    (sh.s)
        .push_on(&branch, &[("bravo/more.txt", "more\n")], "More")
        .await;
    sh.s.app.settle().await;
    let train = t.train().await;
    assert!(train.waiting.is_empty(), "{train:?}");
    t.release_proofs();
    t.until(sh.story_issue, "deployed").await;
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    assert!(sh.repo().file("main", "bravo/lib.txt").is_none());
    let state = sh.state_of(b).await;
    assert!(!["queued", "deployed"].contains(&state.as_str()), "{state}");
    let train = t.train().await;
    assert!(
        train.cars.is_empty() && train.waiting.is_empty(),
        "{train:?}"
    );
}

/// The installation's permissions, with or without `workflows: write`.
fn permissions(workflows: bool) -> serde_json::Value {
    let mut p = serde_json::json!({"actions": "write", "checks": "write", "contents": "write",
        "issues": "write", "metadata": "read", "pull_requests": "write"});
    if workflows {
        p["workflows"] = "write".into();
    }
    p
}

#[tokio::test]
async fn a_story_whose_workflow_change_github_refuses_is_refused_alone_and_the_others_still_batch()
{
    let t = Rig::start(CONFIG).await;
    let sh = &t.sh;
    let fake = &sh.s.app.fake;
    // Charlie's work changes a workflow, merged while the App could; the
    // permission is taken back before it ships.
    fake.grant(crate::support::INSTALLATION, permissions(true));
    let (b, b_pr) = t.story("bravo", false).await;
    let ci = (".github/workflows/ci.yml", "on: push\njobs: {}\n");
    let (c, c_pr) = t.story_gated("charlie", &t.check(), ci).await;
    let (d, d_pr) = t.story("delta", false).await;
    fake.grant(crate::support::INSTALLATION, permissions(false));
    t.hold_proofs(&[]).await;
    let base = sh.main_head();

    t.ship(sh.story_issue, "/taskgate ship").await;
    for issue in [b, c, d] {
        t.ship(issue, "/taskgate ship").await;
    }
    t.assert_waiting(3).await;
    t.release_proofs();
    for issue in [sh.story_issue, b, d] {
        t.until(issue, "deployed").await;
    }
    t.until(c, "shippable").await;
    sh.s.app.settle().await;

    t.assert_landed_proven(&base);
    assert!(sh.repo().file("main", ".github/workflows/ci.yml").is_none());
    // Charlie is told the permission once; bravo and delta land together
    // in a batch, and the train stays on.
    let refused: Vec<String> = (sh.s.app.bot_comments(c_pr).into_iter())
        .filter(|n| n.contains("`workflows`"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert!(
        refused[0].contains("`Workflows: Read and write`"),
        "{refused:#?}"
    );
    for pr in [b_pr, d_pr] {
        let told = t.told(pr);
        assert!(told.contains("**Landed in ship batch"), "{told}");
    }
    let train = t.train().await;
    assert_eq!(train.off, None, "{train:?}");
    assert_eq!((train.stats.landed, train.stats.refused), (3, 1));
    let stepped_aside =
        (sh.s.app.bot_comments(b).into_iter()).any(|n| n.contains("not in batches"));
    assert!(!stepped_aside, "the train did not step aside");
    sh.s.app.assert_contract_kept();
}
