//! The default branch's rules read again at the landing (issue 51 item 4):
//! the ship queue keeps the rules it read for a minute, so a rule added
//! after a story's proof was made is not in the copy the proof was made
//! from. taskgate reads them again when it lands, and honours them from
//! then on: linear history required while a merge commit is being proven
//! (taskgate a bypass actor, which GitHub would let push it) lands no
//! merge commit; the story is proven again on a linear commit, and that
//! lands.

use fakehub::{BypassActor, Rule, Ruleset};
use taskgate_core::ids::RepoName;
use taskgate_core::ship::Train;

use crate::support::eventually;
use crate::support::hold::Hold;
use crate::support::shipped::Shipped;
use crate::support::REPO;

/// The story's gate: held at `hold` once `hold-proof` is on the default
/// branch (pushed just before the ship, so the task's own run is quick),
/// until the test has changed the rules while the proof runs.
fn held_check(hold: &Hold) -> String {
    format!("if [ -f hold-proof ]; then {}; fi\nexit 0\n", hold.wait())
}

/// Shipped by the label, landed through the one-story queue or the train.
async fn story(config: &str, hold: &Hold) -> Shipped {
    Shipped::story()
        .config(config)
        .check(&held_check(hold))
        .shippable()
        .await
}

/// Linear history, with taskgate on the ruleset's bypass list.
fn require_linear_history(sh: &Shipped) {
    sh.repo().with_ruleset(
        Ruleset::new("linear")
            .rule(Rule::RequiredLinearHistory)
            .bypass(BypassActor::App(sh.s.app.fake.app_id())),
    );
}

impl Shipped {
    async fn train(&self) -> Train {
        let repo = RepoName::parse(REPO).unwrap();
        self.s.app.store().ship_train(&repo).await.unwrap()
    }

    /// The commit whose proof runs now (a car of the train, or the
    /// one-story queue's `taskgate/ship-<issue>`), once its run started.
    async fn proving(&self) -> String {
        eventually("the proof runs", || async {
            self.proving_now().await.is_some()
        })
        .await;
        self.proving_now().await.expect("a proof runs")
    }

    async fn proving_now(&self) -> Option<String> {
        let ship_branch = format!("taskgate/ship-{}", self.story_issue);
        let car = self.train().await.cars.first().and_then(|c| {
            let built = c.built.as_ref().filter(|_| c.proving)?;
            Some(built.commit.as_str().to_owned())
        });
        let at = car.or_else(|| self.repo().branch_sha(&ship_branch))?;
        self.still_proving(&at).then_some(at)
    }

    /// Whether a `taskgate/ship/…` check on `sha` is still running.
    fn still_proving(&self, sha: &str) -> bool {
        self.s
            .checks(sha)
            .iter()
            .any(|c| c.name.starts_with("taskgate/ship/") && c.conclusion.is_none())
    }
}

/// Ships the story, requires linear history while its merge commit is
/// proven, and checks that what landed is linear and proven.
async fn linear_history_required_during_the_proof(config: &str) {
    let hold = Hold::new();
    let sh = story(config, &hold).await;
    sh.s.app
        .push_to_main(&[("hold-proof", "yes\n"), ("NOTES.md", "other work\n")])
        .await;
    let base = sh.main_head();
    sh.add_ship_label().await;
    let merge_proof = sh.proving().await;
    assert_eq!(
        sh.parents(&merge_proof).len(),
        2,
        "the proof made before the rule is a merge commit"
    );
    require_linear_history(&sh);
    assert!(
        sh.still_proving(&merge_proof),
        "the rule came while the proof ran"
    );
    hold.release();

    sh.landed().await;

    let landed = sh.main_head();
    assert_ne!(landed, merge_proof, "the merge commit did not land");
    assert_eq!(
        sh.parents(&landed),
        std::slice::from_ref(&base),
        "no merge commit landed"
    );
    let tree = |sha: &str| sh.repo().commit(sha).unwrap().tree;
    assert_eq!(tree(&landed), tree(&merge_proof), "the story's tree landed");
    let linear_proof = sh.s.checks(
        &sh.repo()
            .branch_sha(&format!("taskgate/ship-{}", sh.story_issue))
            .unwrap(),
    );
    assert!(
        linear_proof
            .iter()
            .any(|c| c.name.starts_with("taskgate/ship/")
                && c.conclusion.as_deref() == Some("success")),
        "proven again on the linear commit: {linear_proof:#?}"
    );
    let note =
        sh.s.app
            .bot_comments(sh.story_issue)
            .into_iter()
            .find(|c| c.contains("changed before the landing"))
            .expect("the story issue says the rules changed");
    insta::assert_snapshot!(
        "rules_changed_note",
        note.split("\n\n<!--").next().unwrap_or_default()
    );
    assert_eq!(sh.state().await, "deployed");
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn linear_history_required_while_a_batch_proves_lands_no_merge_commit_on_main() {
    linear_history_required_during_the_proof("ship_label: ship\nship_batch_wait: 0\n").await;
}

#[tokio::test]
async fn linear_history_required_while_a_story_proves_alone_lands_no_merge_commit_on_main() {
    linear_history_required_during_the_proof("ship_label: ship\nship_train: false\n").await;
}
