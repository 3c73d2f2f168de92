//! A push webhook lists at most 2048 commits, as GitHub's description of
//! the push event's `commits` says; nothing else in the payload says it
//! was capped, and `compare` (`before...after`) still names every file the
//! push changed.

use fakehub::payloads::PUSH_COMMITS_MAX;
use serde_json::Value;

use crate::echoes::{echoing, settled};

#[tokio::test]
async fn a_push_of_more_commits_than_the_cap_lists_the_newest_and_compare_has_every_file() {
    let (gh, repo, c, inbox) = echoing().await;
    let before = repo.branch_sha("main").unwrap();
    let commits: Vec<(Vec<(&str, &str)>, String)> = (0..=PUSH_COMMITS_MAX)
        .map(|i| {
            let file = if i == 0 { "early.txt" } else { "counter.txt" };
            (vec![(file, "changed\n")], format!("Commit {i}"))
        })
        .collect();
    let after = repo.push_commits("main", &commits, "alice");
    let got = settled(&gh, &inbox).await;
    let push = got
        .iter()
        .find(|(e, _)| e == "push")
        .map(|(_, p)| p)
        .expect("a push");
    let listed = push["commits"].as_array().unwrap();
    assert_eq!(listed.len(), PUSH_COMMITS_MAX, "capped");
    assert_eq!(
        listed.last().unwrap()["id"],
        after.as_str(),
        "the newest kept"
    );
    let touched: Vec<&Value> = listed
        .iter()
        .flat_map(|c| {
            c["modified"]
                .as_array()
                .unwrap()
                .iter()
                .chain(c["added"].as_array().unwrap())
        })
        .collect();
    assert!(
        !touched.iter().any(|p| *p == "early.txt"),
        "the first commit is not listed"
    );
    assert!(push.get("size").is_none(), "no size in a webhook");

    let compare = c
        .get(&format!(
            "/repos/acme/widgets/compare/{before}...{after}?per_page=1"
        ))
        .await;
    assert_eq!(compare.status, 200);
    let files: Vec<&str> = compare.body["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["counter.txt", "early.txt"]);
}
