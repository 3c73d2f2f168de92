//! A repository backed by a real bare git repository
//! (`RepoHandle::back_with_git`): the commits the fake makes are real, with
//! git's merge as their tree and git's conflicts as the fake's, and a
//! `file://` fetch by sha finds them; the bare repository's branches never
//! move.

use std::path::Path;

use git2::{FetchOptions, Oid, Repository, Signature};
use serde_json::json;

use crate::*;

/// A bare repository whose `main` has one commit writing `README.md`.
pub(crate) fn bare_with_main(dir: &Path) -> (Repository, String) {
    let bare = Repository::init_bare(dir.join("widgets.git")).unwrap();
    let sha = {
        let blob = bare.blob(b"hello\n").unwrap();
        let mut builder = bare.treebuilder(None).unwrap();
        builder.insert("README.md", blob, 0o100_644).unwrap();
        let tree = bare.find_tree(builder.write().unwrap()).unwrap();
        let who = Signature::now("agent", "agent@example.com").unwrap();
        bare.commit(Some("refs/heads/main"), &who, &who, "start", &tree, &[])
            .unwrap()
            .to_string()
    };
    (bare, sha)
}

/// Fetches `sha` alone from `bare` over `file://`, as taskgate's runner
/// does for a commit on no branch, into a fresh repository.
pub(crate) fn fetch_by_sha(dir: &Path, bare: &Path, sha: &str) -> Repository {
    let local = Repository::init_bare(dir.join(format!("fetch-{}", &sha[..8]))).unwrap();
    let url = format!("file://{}", bare.display());
    local
        .remote_anonymous(&url)
        .unwrap()
        .fetch(&[sha], Some(&mut FetchOptions::new()), None)
        .unwrap();
    local
}

/// `path → content` of commit `sha`'s tree.
pub(crate) fn tree_of(repo: &Repository, sha: &str) -> Vec<(String, String)> {
    let commit = repo.find_commit(Oid::from_str(sha).unwrap()).unwrap();
    let mut files = Vec::new();
    let tree = commit.tree().unwrap();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
        if let Ok(blob) = repo.find_blob(e.id()) {
            let content = String::from_utf8_lossy(blob.content()).into_owned();
            files.push((format!("{dir}{}", e.name().unwrap()), content));
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    files
}

pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect()
}

#[tokio::test]
async fn merges_are_real_commits_fetchable_by_sha_with_gits_merged_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, start) = bare_with_main(dir.path());
    let (gh, repo, c) = setup().await;
    repo.back_with_git(bare.path());
    // The fake's main is the bare repository's.
    assert_eq!(repo.branch_sha("main"), Some(start.clone()));
    assert_eq!(repo.file("main", "README.md").as_deref(), Some("hello\n"));

    let head = repo.push_files("feature", &[("a.txt", "a\n")], "Add a", "alice");
    let base = repo.push_files("main", &[("b.txt", "b\n")], "Add b", "bob");
    assert!(bare.find_commit(Oid::from_str(&head).unwrap()).is_ok());
    let r = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "A", "head": "feature", "base": "main"}),
        )
        .await;
    let n = r.body["number"].as_u64().unwrap();
    let r = c
        .call(
            "PUT",
            &format!("/repos/acme/widgets/pulls/{n}/merge"),
            Some(json!({})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let merged = r.body["sha"].as_str().unwrap().to_string();
    assert_eq!(repo.branch_sha("main"), Some(merged.clone()));

    let fetched = fetch_by_sha(dir.path(), bare.path(), &merged);
    let commit = fetched
        .find_commit(Oid::from_str(&merged).unwrap())
        .unwrap();
    let parents: Vec<String> = commit.parent_ids().map(|p| p.to_string()).collect();
    assert_eq!(parents, [base.clone(), head.clone()]);
    assert_eq!(
        tree_of(&fetched, &merged),
        pairs(&[("README.md", "hello\n"), ("a.txt", "a\n"), ("b.txt", "b\n")])
    );

    // `POST /merges` onto a temporary branch, as a ship does.
    let next = repo.push_files("next", &[("dir/c.txt", "c\n")], "Add c", "alice");
    let ship = json!({"ref": "refs/heads/taskgate/ship-2", "sha": merged});
    assert_eq!(
        c.post("/repos/acme/widgets/git/refs", ship).await.status,
        201
    );
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "taskgate/ship-2", "head": next}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let tested = r.body["sha"].as_str().unwrap().to_string();
    let fetched = fetch_by_sha(dir.path(), bare.path(), &tested);
    assert_eq!(
        tree_of(&fetched, &tested),
        pairs(&[
            ("README.md", "hello\n"),
            ("a.txt", "a\n"),
            ("b.txt", "b\n"),
            ("dir/c.txt", "c\n"),
        ])
    );
    assert_eq!(repo.file(&tested, "dir/c.txt").as_deref(), Some("c\n"));
    // The tests' branches in the bare repository have not moved.
    let main = bare.find_reference("refs/heads/main").unwrap();
    assert_eq!(main.target().unwrap().to_string(), start);
    assert!(bare.find_reference("refs/heads/feature").is_err());
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_real_conflict_refuses_merges_as_the_fake_does() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, _) = bare_with_main(dir.path());
    let (gh, repo, c) = setup().await;
    repo.back_with_git(bare.path());
    repo.push_files("feature", &[("README.md", "feature\n")], "F", "alice");
    let base = repo.push_files("main", &[("README.md", "main\n")], "M", "bob");
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "main", "head": "feature"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["message"].clone()),
        (409, json!("Merge conflict"))
    );
    let r = c
        .post(
            "/repos/acme/widgets/pulls",
            json!({"title": "F", "head": "feature", "base": "main"}),
        )
        .await;
    let n = r.body["number"].as_u64().unwrap();
    assert_eq!(r.body["mergeable"], false);
    let r = c
        .call(
            "PUT",
            &format!("/repos/acme/widgets/pulls/{n}/merge"),
            Some(json!({})),
        )
        .await;
    assert_eq!(r.status, 405);
    assert_eq!(repo.branch_sha("main"), Some(base));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn a_commit_pushed_to_the_bare_repository_is_read_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, start) = bare_with_main(dir.path());
    let (_gh, repo, _c) = setup().await;
    repo.back_with_git(bare.path());
    // A test commits in git itself, then tells the fake.
    let parent = bare.find_commit(Oid::from_str(&start).unwrap()).unwrap();
    let mut tree = bare.treebuilder(Some(&parent.tree().unwrap())).unwrap();
    tree.insert("x.txt", bare.blob(b"x\n").unwrap(), 0o100_644)
        .unwrap();
    let tree = bare.find_tree(tree.write().unwrap()).unwrap();
    let who = Signature::now("agent", "agent@example.com").unwrap();
    let sha = bare
        .commit(
            Some("refs/heads/work"),
            &who,
            &who,
            "Add x\n",
            &tree,
            &[&parent],
        )
        .unwrap()
        .to_string();
    repo.push_commit("work", &sha, "ignored", &[("ignored.txt", "-")], "agent");
    assert_eq!(repo.file("work", "x.txt").as_deref(), Some("x\n"));
    assert_eq!(repo.file("work", "ignored.txt"), None);
    assert_eq!(repo.file("work", "README.md").as_deref(), Some("hello\n"));
}
