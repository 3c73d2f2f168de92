//! The runner host's free-space floor (`TASKGATE_MIN_FREE_MIB`): below
//! it no run starts, each queued check run says why, `/healthz` tells the
//! token's holder; the runs start by themselves once space is back. The
//! free space is a reading the test sets (the harness's floor is 0, so a
//! nearly full CI disk holds no other test).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use taskgate::runner::sandbox::disk::FreeSpace;

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::{eventually, metric};

const HELD: &str = "Queued: taskgate's host is low on disk";

fn plan() -> String {
    Plan::story("Checked work")
        .task(Task::check().runs("sh lint.sh").gate("lint"))
        .yaml()
}

async fn healthz_with_token(url: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("{url}/healthz"))
        .bearer_auth("api-token")
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn below_the_free_space_floor_runs_are_held_and_each_check_run_says_why() {
    let free = Arc::new(AtomicU64::new(100 << 20));
    let reading = free.clone();
    let s = Story::of(&plan())
        .adjust(move |c| {
            c.min_free_mib = 2048;
            c.free_space = Some(FreeSpace::Set(reading));
        })
        .start()
        .await;
    let sha = s
        .push(&[("check.sh", "exit 0\n"), ("lint.sh", "exit 0\n")], "work")
        .await;
    eventually("each check run says why it is held", || async {
        let checks = s.checks(&sha);
        checks.len() == 2 && checks.iter().all(|c| c.title.as_deref() == Some(HELD))
    })
    .await;
    let checks = s.checks(&sha);
    assert!(checks.iter().all(|c| c.status == "queued"), "{checks:#?}");
    insta::assert_snapshot!(checks[0].summary.as_deref().unwrap_or(""), @"taskgate's runner host has 100 MiB of disk free, below its floor of 2048 MiB (TASKGATE_MIN_FREE_MIB), so no run starts. This run stays queued and starts by itself once space is freed under taskgate's work directory.");
    // Healthy (webhooks are still taken), and the operator is told why.
    let (status, body) = healthz_with_token(&s.app.url).await;
    assert_eq!(status, 200);
    insta::assert_snapshot!(body, @r"
    ok
    runs are held: taskgate's runner host has 100 MiB of disk free, below its floor of 2048 MiB (TASKGATE_MIN_FREE_MIB), so no run starts
    ");
    let anonymous = reqwest::get(format!("{}/healthz", s.app.url))
        .await
        .unwrap();
    assert_eq!(anonymous.text().await.unwrap(), "ok\n");

    // Space is freed: the held runs start by themselves.
    free.store(10 << 30, Ordering::SeqCst);
    let runs = s.completed(&sha, 2).await;
    assert!(
        runs.iter()
            .all(|c| c.conclusion.as_deref() == Some("success")),
        "{runs:#?}"
    );
    assert_eq!(healthz_with_token(&s.app.url).await.1, "ok\n");
    // Every workspace was removed: none waits for a retry.
    let text = s.app.metrics().await;
    assert_eq!(
        metric(&text, "taskgate_workspaces_unremoved"),
        0.0,
        "{text}"
    );
}
