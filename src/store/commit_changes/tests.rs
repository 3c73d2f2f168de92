use super::*;
use crate::store::testing::on_both_backends;

fn repo() -> RepoName {
    RepoName::parse("acme/a").unwrap()
}

fn pair(base: char, head: char) -> CommitPair {
    CommitPair {
        base: base.to_string().repeat(40),
        head: head.to_string().repeat(40),
    }
}

on_both_backends! {
    async fn changed_files_are_kept_per_pair_once_and_too_many_is_kept_as_unknown(store: Store) {
        let files = vec!["README.md".to_string(), "src/app.py".to_string()];
        store.record_commit_changes(&repo(), &pair('a', 'b'), Some(files.clone())).await.unwrap();
        // Written again (another replica, a retry): the first stays.
        store.record_commit_changes(&repo(), &pair('a', 'b'), Some(vec![])).await.unwrap();
        let too_many = vec!["f".to_string(); MAX_CHANGED_FILES + 1];
        store.record_commit_changes(&repo(), &pair('b', 'c'), Some(too_many)).await.unwrap();
        let known = store
            .commit_changes(&repo(), vec![pair('a', 'b'), pair('b', 'c'), pair('c', 'd')])
            .await
            .unwrap();
        assert_eq!(known.len(), 2, "an unrecorded pair is absent");
        assert_eq!(known[&pair('a', 'b')], Some(files));
        assert_eq!(known[&pair('b', 'c')], None);
        let other = RepoName::parse("acme/b").unwrap();
        assert!(store.commit_changes(&other, vec![pair('a', 'b')]).await.unwrap().is_empty());
    }

    async fn the_previously_tested_commit_is_the_newest_finished_attempt_on_another_commit(store: Store) {
        let rows = [(1, 'a', "failed"), (2, 'b', "passed"), (3, 'c', "cancelled"), (4, 'd', "failed"), (5, 'd', "running")];
        store
            .write(move |db| {
                for (attempt, sha, status) in rows {
                    db.execute(
                        "INSERT INTO attempts (repo, story, task, attempt, installation_id, sha, gates, status, queued_ms, runner)
                         VALUES ('acme/a', 's', 'check', ?1, 1, ?2, '[]', ?3, 0, 'local')",
                        params![attempt, sha.to_string().repeat(40), status],
                    )?;
                }
                Ok(())
            })
            .await
            .unwrap();
        let previous = |attempt: u32, sha: char| {
            let store = store.clone();
            async move {
                store
                    .previously_tested_commit(&repo(), &StoryId::new("s"), &taskgate_core::task::RunSubject::Task("check".into()), attempt, &sha.to_string().repeat(40))
                    .await
                    .unwrap()
            }
        };
        // Attempt 5 retries d: b was tested before it (c was cancelled).
        assert_eq!(previous(5, 'd').await, Some("b".repeat(40)));
        assert_eq!(previous(4, 'd').await, Some("b".repeat(40)));
        assert_eq!(previous(2, 'b').await, Some("a".repeat(40)));
        assert_eq!(previous(1, 'a').await, None, "the first tested commit");
    }
}
