//! One rate-limit pause per cluster: GitHub counts its limits per
//! installation token, so a pause one replica learned holds the calls of
//! every replica for that installation, through the database. Runs on
//! PostgreSQL whatever `TASKGATE_TEST_DATABASE` says: it is about replicas.

use std::time::Duration;

use fakehub::Fault;
use taskgate::app::ServeConfig;
use taskgate::clock::Clock;

use crate::support::{eventually, TestApp, REPO};

const CREATE_COMMENT: &str = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";

fn on_the_cluster(c: &mut ServeConfig, database_url: &str, clock: &Clock) {
    c.database_url = database_url.to_owned();
    c.clock = clock.clone();
    // Only a wake-up can reach the other replica while the test waits.
    c.idle_polls = crate::ops::wakeups::NO_POLLS;
}

#[tokio::test]
async fn a_rate_limit_met_by_one_replica_holds_the_other_until_it_ends() {
    let database = pgtest::fresh_database();
    let url = database.url().to_owned();
    let clock = Clock::movable();
    let a = TestApp::start_with(|c| on_the_cluster(c, &url, &clock)).await;
    let first = a.fake.repo(REPO).create_issue("Story", "", "octocat");
    let second = a.fake.repo(REPO).create_issue("Another", "", "octocat");

    // Replica A meets GitHub's secondary limit: wait a minute.
    a.fake.inject(
        CREATE_COMMENT,
        Fault::SecondaryRateLimit {
            retry_after_secs: 60,
        },
    );
    a.comment(first, "octocat", "/taskgate help").await;
    eventually("replica A rate limited", || async {
        a.statuses(CREATE_COMMENT) == vec![403]
    })
    .await;

    // Replica B starts afterwards, knowing nothing but the database, and
    // is asked for a reply on the same installation: it holds it. A,
    // which holds the installation's deliveries, decides the comment B
    // recorded, and B's executor looks at the reply A stored: each woken
    // by the other's commit, with no time moved on.
    let b = TestApp::with_config(a.fake.clone(), |c| on_the_cluster(c, &url, &clock)).await;
    b.comment(second, "octocat", "/taskgate help").await;
    eventually("the second reply queued", || async {
        b.store().effects().await.unwrap().len() == 2
    })
    .await;
    eventually("replica B puts the reply off for the pause", || async {
        let effects = b.store().effects().await.unwrap();
        effects.iter().any(|e| {
            e.last_error
                .as_deref()
                .is_some_and(|w| w.contains("asked another replica to wait"))
        })
    })
    .await;
    assert_eq!(
        a.statuses(CREATE_COMMENT),
        vec![403],
        "sent during the pause"
    );

    // Once the minute has passed, both replies go.
    clock.advance(Duration::from_secs(61));
    a.settle().await;
    assert_eq!(a.statuses(CREATE_COMMENT), vec![403, 201, 201]);
    assert_eq!(a.bot_comments(first).len(), 1);
    assert_eq!(a.bot_comments(second).len(), 1);
    drop((a, b));
    drop(database);
}
