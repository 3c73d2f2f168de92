//! The ship train end to end (issue 31), behind `ship_train: true`: a
//! shipped story goes to the train, which merges it on the default
//! branch's head on `taskgate/ship-batch-<car>` and proves that commit
//! with the story's gates. The shell does not land cars yet, so nothing
//! lands: the one-story queue stays the product until it does.

use crate::support::shipped::Shipped;
use crate::support::{eventually, REPO};
use taskgate_core::ids::RepoName;
use taskgate_core::ship::{car_branch, Train};

const CONFIG: &str = "ship_label: ship\nship_train: true\n";

impl Shipped {
    async fn train(&self) -> Train {
        let repo = RepoName::parse(REPO).unwrap();
        self.s.app.store().ship_train(&repo).await.unwrap()
    }
}

#[tokio::test]
async fn a_shipped_story_is_merged_on_its_batch_branch_and_that_commit_is_proven() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    let story_head = sh.repo().branch_sha(&sh.branch).unwrap();
    let base = sh.main_head();

    sh.add_ship_label().await;
    eventually("the car's proof passed", || async {
        sh.train()
            .await
            .cars
            .first()
            .and_then(|car| {
                let tip = sh.repo().branch_sha(&car_branch(car.id))?;
                let proof = sh.s.checks(&tip);
                Some(proof.iter().any(|c| {
                    c.name == "taskgate/ship/check/test"
                        && c.conclusion.as_deref() == Some("success")
                }))
            })
            .unwrap_or(false)
    })
    .await;
    sh.s.app.settle().await;

    let train = sh.train().await;
    let car = &train.cars[0];
    let built = car.built.clone().expect("the car was built");
    let tip = sh.repo().branch_sha(&car_branch(car.id)).unwrap();
    assert_eq!(
        built.commit.0, tip,
        "the train holds the commit GitHub built"
    );
    assert_eq!(built.tree.0, sh.repo().commit(&tip).unwrap().tree);
    assert_eq!(
        sh.parents(&tip),
        [base.clone(), story_head],
        "the car is the story merged on the default branch's head"
    );
    let message = sh.repo().commit(&tip).unwrap().message;
    let headline = format!("Merge {} into ship batch {}", car.stories[0].story, car.id);
    assert!(message.starts_with(&headline), "{message}");
    assert_eq!(car.runs, 1, "one proof run on the car's commit");
    assert_eq!(train.stats.proof_runs, 1);
    // Landing a car is not performed yet: nothing lands.
    assert_eq!(sh.main_head(), base);
    assert!(!sh.story_pr().unwrap().merged);
    sh.s.app.assert_contract_kept();
}
