//! The git data API's commits (`GET`/`POST /git/commits`) and tree ids:
//! a commit's `tree.sha` is git's id of its files wherever it is shown,
//! a commit can be made on an existing tree (how a revert of a landed
//! merge is built), GitHub's refusals, and no webhook for a commit object.

use git2::{Oid, Repository};
use octocrab::models::repos::CommitAuthor;
use serde_json::{json, Value};

use crate::echoes::{echoing, settled, BOT};
use crate::git_backing::{bare_with_main, fetch_by_sha, pairs, tree_of};
use crate::*;

const GIT_COMMITS: &str = "/repos/acme/widgets/git/commits";

async fn git_commit(c: &Client, sha: &str) -> Value {
    let r = c.get(&format!("{GIT_COMMITS}/{sha}")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

fn shas(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|p| p["sha"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_commit_read_and_created_through_the_git_data_api_round_trips() {
    let (gh, repo, c) = setup().await;
    let start = repo.branch_sha("main").unwrap();
    let base = repo.push_files("main", &[("a.txt", "a\n")], "Add a", "alice");
    let git = octocrab_for(&gh, 7);
    let read = git.git("acme", "widgets").get_commit(&base).await.unwrap();
    let shown = c.get(&format!("/repos/acme/widgets/commits/{base}")).await;
    assert_eq!(read.sha, base);
    assert_eq!(read.message, "Add a");
    assert_eq!(read.tree.sha, shown.body["commit"]["tree"]["sha"]);
    assert_ne!(read.tree.sha, base);
    assert_eq!(read.parents[0].sha.as_deref(), Some(start.as_str()));

    let author = CommitAuthor {
        name: "Alice".into(),
        email: Some("alice@example.com".into()),
        date: Some("2026-01-02T03:04:05Z".parse().unwrap()),
    };
    let created = git
        .git("acme", "widgets")
        .create_commit("Again", &read.tree.sha)
        .parents(vec![base.clone()])
        .author(author.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(created.tree.sha, read.tree.sha);
    assert_eq!(created.parents[0].sha.as_deref(), Some(base.as_str()));
    assert_eq!(
        (created.author.clone(), created.committer),
        (author.clone(), author)
    );
    assert_eq!(
        created.html_url,
        format!("https://github.com/acme/widgets/commit/{}", created.sha)
    );

    // Read back, it is the same object; its files are its tree's.
    let again = git_commit(&c, &created.sha).await;
    assert_eq!(again["message"], "Again");
    assert_eq!(again["verification"]["reason"], "unsigned");
    assert_eq!(
        again["parents"][0]["url"],
        format!("{}{GIT_COMMITS}/{base}", gh.url())
    );
    assert_eq!(repo.file(&created.sha, "a.txt").as_deref(), Some("a\n"));
    assert_eq!(repo.branch_sha("main"), Some(base));
    gh.assert_contract_kept();
}

#[tokio::test]
async fn tree_ids_are_gits_own_and_the_same_files_share_one() {
    let (gh, repo, c) = setup().await;
    let start = repo.branch_sha("main").unwrap();
    // The id git gives the initial `README.md`, computed by git itself.
    let dir = tempfile::tempdir().unwrap();
    let real = Repository::init_bare(dir.path()).unwrap();
    let mut tree = real.treebuilder(None).unwrap();
    let blob = real.blob(b"# widgets\n").unwrap();
    tree.insert("README.md", blob, 0o100_644).unwrap();
    let expected = tree.write().unwrap().to_string();
    assert_eq!(git_commit(&c, &start).await["tree"]["sha"], expected);

    // Changed, then changed back: the tree of the start again.
    repo.push_files("main", &[("README.md", "other\n")], "Change", "alice");
    let back = repo.push_files("main", &[("README.md", "# widgets\n")], "Back", "alice");
    assert_eq!(git_commit(&c, &back).await["tree"]["sha"], expected);
    let r = c.get("/repos/acme/widgets/branches/main").await;
    assert_eq!(r.body["commit"]["commit"]["tree"]["sha"], expected);
    gh.assert_contract_kept();
}

/// A landed merge M = [B, H] is reverted as taskgate does it: R = B's tree
/// on top of M, a branch at R, and the default branch (moved past M)
/// merged into it.
#[tokio::test]
async fn a_revert_of_a_landed_merge_is_a_real_commit_with_the_first_parents_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, _) = bare_with_main(dir.path());
    let (gh, repo, c) = setup().await;
    repo.back_with_git(bare.path());
    repo.push_files("feature", &[("a.txt", "a\n")], "Add a", "alice");
    let b = repo.push_files("main", &[("b.txt", "b\n")], "Add b", "bob");
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "main", "head": "feature"}),
        )
        .await;
    let m = r.body["sha"].as_str().unwrap().to_string();
    let later = repo.push_files("main", &[("c.txt", "c\n")], "Add c", "bob");

    let base_tree = git_commit(&c, &b).await["tree"]["sha"].clone();
    let r = c
        .post(
            GIT_COMMITS,
            json!({"message": "Revert the merge", "tree": base_tree, "parents": [m]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let revert = r.body["sha"].as_str().unwrap().to_string();
    assert_eq!(shas(&r.body["parents"]), [m.as_str()]);
    assert_eq!(r.body["tree"]["sha"], base_tree);

    // Fetched by sha from the bare repository: git's tree is B's.
    let fetched = fetch_by_sha(dir.path(), bare.path(), &revert);
    let commit = fetched
        .find_commit(Oid::from_str(&revert).unwrap())
        .unwrap();
    let parents: Vec<String> = commit.parent_ids().map(|p| p.to_string()).collect();
    assert_eq!(parents, [m.as_str()]);
    assert_eq!(commit.message(), Some("Revert the merge"));
    let b_tree = bare
        .find_commit(Oid::from_str(&b).unwrap())
        .unwrap()
        .tree_id();
    assert_eq!(commit.tree_id(), b_tree);
    assert_eq!(json!(b_tree.to_string()), base_tree);

    let branch = json!({"ref": "refs/heads/taskgate/revert-1", "sha": revert});
    assert_eq!(
        c.post("/repos/acme/widgets/git/refs", branch).await.status,
        201
    );
    let r = c
        .post(
            "/repos/acme/widgets/merges",
            json!({"base": "taskgate/revert-1", "head": "main"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let merged = r.body["sha"].as_str().unwrap().to_string();
    assert_eq!(shas(&r.body["parents"]), [revert, later]);
    let fetched = fetch_by_sha(dir.path(), bare.path(), &merged);
    assert_eq!(
        tree_of(&fetched, &merged),
        pairs(&[("README.md", "hello\n"), ("b.txt", "b\n"), ("c.txt", "c\n")])
    );
    gh.assert_contract_kept();
}

fn fakehub_refs(bare: &Repository) -> Vec<String> {
    bare.references_glob("refs/fakehub/*")
        .unwrap()
        .map(|r| r.unwrap().name().unwrap().to_string())
        .collect()
}

const BAD_TREE: &str =
    "The tree parameter must be exactly 40 characters and contain only [0-9a-f].";
const BAD_PARENT: &str =
    "Each SHA in the 'parents' parameter must be exactly 40 characters and contain only [0-9a-f].";
const NO_PARENT: &str = "Parent SHA does not exist or is not a commit object";

#[tokio::test]
async fn unknown_commits_are_404_and_bad_trees_or_parents_422_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (bare, start) = bare_with_main(dir.path());
    let (gh, repo, c) = setup().await;
    repo.back_with_git(bare.path());
    let unknown = "1234567890123456789012345678901234567890";
    for sha in [unknown, &start[..7], "main"] {
        let r = c.get(&format!("{GIT_COMMITS}/{sha}")).await;
        assert_eq!(
            (r.status, r.body["message"].clone()),
            (404, json!("Not Found")),
            "{sha}"
        );
    }
    let tree = git_commit(&c, &start).await["tree"]["sha"].clone();
    let written = fakehub_refs(&bare);
    let refusals = [
        (json!("main"), json!([start]), BAD_TREE),
        (json!(unknown), json!([start]), "Tree SHA does not exist"),
        (
            json!(start),
            json!([start]),
            "Tree SHA is not a tree object",
        ),
        (tree.clone(), json!([&start[..7]]), BAD_PARENT),
        (tree.clone(), json!([start, unknown]), NO_PARENT),
        (tree.clone(), json!([tree]), NO_PARENT),
    ];
    for (tree, parents, message) in refusals {
        let body = json!({"message": "m", "tree": tree, "parents": parents});
        let r = c.post(GIT_COMMITS, body).await;
        assert_eq!(
            (r.status, r.body["message"].clone()),
            (422, json!(message)),
            "{tree} {parents}"
        );
    }
    assert_eq!(fakehub_refs(&bare), written);
    // Without a tree, the contract refuses it (and records taskgate's
    // mistake).
    let r = c.post(GIT_COMMITS, json!({"message": "m"})).await;
    assert_eq!(r.body["errors"][0]["code"], "missing_field");
    assert_eq!(gh.contract_violations().len(), 1);
}

#[tokio::test]
async fn a_created_commit_moves_no_branch_sends_no_webhook_and_is_the_bots() {
    let (gh, repo, c, inbox) = echoing().await;
    let head = repo.push_files("main", &[("x.txt", "x\n")], "Add x", "alice");
    let pushed = settled(&gh, &inbox).await;
    let push = pushed.iter().find(|(e, _)| e == "push").unwrap();
    let tree = git_commit(&c, &head).await["tree"]["sha"].clone();
    // The push payload names the same tree.
    assert_eq!(push.1["head_commit"]["tree_id"], tree);

    let r = c
        .post(
            GIT_COMMITS,
            json!({"message": "Loose", "tree": tree, "parents": [head]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["author"]["name"], BOT);
    assert_eq!(
        r.body["author"]["email"],
        format!("41898282000+{BOT}@users.noreply.github.com")
    );
    assert_eq!(
        (
            r.body["committer"]["name"].clone(),
            r.body["committer"]["email"].clone()
        ),
        (json!("GitHub"), json!("noreply@github.com"))
    );
    assert!(settled(&gh, &inbox).await.is_empty());
    assert_eq!(repo.branch_sha("main"), Some(head));
    gh.assert_contract_kept();
}
