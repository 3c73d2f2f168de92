//! The ship train's batching wait (issue 51 item 7, `ship_batch_wait`): a
//! burst of ships onto an idle train rides in one batch, proven once and
//! landed in one move of the default branch; the wait is clock time, so
//! the test moves the clock on rather than sleeping.

use std::time::Duration;

use taskgate_core::ids::RepoName;
use taskgate_core::ship::Train;

use crate::support::shipped::Shipped;
use crate::support::{eventually, train_landed, REPO};

/// The train waits half a minute for more stories when it is idle.
const CONFIG: &str = "ship_label: ship\nship_batch_wait: 30\n";

async fn train(sh: &Shipped) -> Train {
    let repo = RepoName::parse(REPO).unwrap();
    sh.s.app.store().ship_train(&repo).await.unwrap()
}

/// Another story `key`, shippable: its issue.
async fn another(sh: &Shipped, key: &str) -> u64 {
    let (title, task) = (format!("Story {key}"), format!("Work {key}"));
    let script = format!("{key}.sh");
    let lib = format!("{key}/lib.txt");
    let files = [(script.as_str(), "exit 0\n"), (lib.as_str(), "works\n")];
    let (issue, _) = sh.story_done_with(key, (&title, &task), &files).await;
    eventually("the story is shippable", || async {
        sh.state_of(issue).await == "shippable"
    })
    .await;
    issue
}

#[tokio::test]
async fn three_stories_shipped_within_a_second_land_in_one_batch_after_the_wait() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    let stories = [
        sh.story_issue,
        another(&sh, "bravo").await,
        another(&sh, "charlie").await,
    ];
    let base = sh.main_head();

    let shipped_at = sh.s.app.clock.now_ms();
    for issue in stories {
        sh.s.app.comment(issue, "octocat", "/taskgate ship").await;
    }
    sh.s.app.settle().await;
    let waiting = train(&sh).await;
    assert!(
        sh.s.app.clock.now_ms() - shipped_at < 30_000,
        "shipped within the wait"
    );
    assert_eq!(
        (waiting.cars.len(), waiting.waiting.len()),
        (0, 3),
        "the idle train waits for more: {waiting:?}"
    );

    sh.s.app.advance(Duration::from_secs(30));
    for issue in stories {
        eventually(&format!("#{issue} landed"), || async {
            sh.state_of(issue).await == "deployed"
        })
        .await;
    }
    sh.s.app.settle().await;

    let train = train(&sh).await;
    assert_eq!(
        train.stats.batch_sizes,
        [(3, 1)].into(),
        "one batch of three, proven once"
    );
    assert_eq!(train.stats.proof_runs, 1);
    let landed = train_landed::landed_since(&sh.repo(), sh.main_head(), &base);
    let batches = landed
        .iter()
        .filter(|sha| {
            let message = sh.repo().commit(sha).unwrap().message;
            message.contains("into ship batch")
        })
        .count();
    assert_eq!(
        batches, 3,
        "the three stories merged into one batch: {landed:?}"
    );
    assert_eq!(
        sh.repo().branch_sha(&taskgate_core::ship::car_branch(
            taskgate_core::ship::CarId(train.next_car)
        )),
        Some(sh.main_head()),
        "main moved once, to the batch's commit"
    );
    let moves =
        sh.s.app
            .fake
            .requests()
            .iter()
            .filter(|r| r.method == "PATCH" && r.path.ends_with("/git/refs/heads/main"))
            .filter(|r| r.status < 300)
            .count();
    assert_eq!(moves, 1, "one move of main for the three stories");
    train_landed::assert_landed_proven(&sh.repo(), sh.main_head(), &base);
    sh.s.app.assert_contract_kept();
}
