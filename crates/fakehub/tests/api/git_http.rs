//! Git's smart HTTP on the fake's web host (`/OWNER/REPO.git`), as
//! github.com serves it to a runner that knows only `GITHUB_API_URL`:
//! GitHub's branches advertised (not the bare repository's), any commit
//! fetchable by sha, and the installation token as the password.

use git2::{Cred, FetchOptions, RemoteCallbacks, Repository};

use crate::git_backing::bare_with_main;
use crate::*;

/// Fetches `refspecs` from `url` with `password` as user `x-access-token`.
fn fetch(
    dir: &std::path::Path,
    url: &str,
    password: &str,
    refspecs: &[&str],
) -> Result<Repository, git2::Error> {
    let local = Repository::init_bare(dir.join(format!("fetch-{}", fastrand::u32(..)))).unwrap();
    let password = password.to_owned();
    let mut callbacks = RemoteCallbacks::new();
    let mut asked = 0;
    callbacks.credentials(move |_, _, _| {
        asked += 1;
        if asked > 1 {
            return Err(git2::Error::from_str("refused twice"));
        }
        Cred::userpass_plaintext("x-access-token", &password)
    });
    let mut options = FetchOptions::new();
    options.remote_callbacks(callbacks);
    local
        .remote_anonymous(url)?
        .fetch(refspecs, Some(&mut options), None)?;
    Ok(local)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backed_repository_is_fetched_over_http_with_the_installation_token() {
    let gh = FakeGitHub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (bare, start) = bare_with_main(dir.path());
    let repo = gh.install(7, "acme/widgets");
    repo.back_with_git(bare.path());
    // A commit the fake makes: on GitHub's `main`, not the bare's.
    let pushed = repo.push_files("main", &[("a.txt", "a\n")], "Add a", "octocat");
    let token = installation_client(&gh, 7)
        .await
        .auth
        .replacen("token ", "", 1);
    let url = format!("{}/acme/widgets.git", gh.url());
    let d = dir.path().to_owned();
    let (u, t) = (url.clone(), token.clone());
    let heads = tokio::task::spawn_blocking(move || {
        fetch(&d, &u, &t, &["+refs/heads/*:refs/heads/*"]).unwrap()
    })
    .await
    .unwrap();
    let main = heads.refname_to_id("refs/heads/main").unwrap().to_string();
    assert_eq!(
        main, pushed,
        "GitHub's main, not the bare repository's {start}"
    );
    let d = dir.path().to_owned();
    let (u, t, s) = (url.clone(), token.clone(), start.clone());
    let by_sha = tokio::task::spawn_blocking(move || fetch(&d, &u, &t, &[&s]).unwrap())
        .await
        .unwrap();
    assert!(by_sha
        .find_commit(git2::Oid::from_str(&start).unwrap())
        .is_ok());
    // Without a live token of an installation holding the repository:
    // refused, as GitHub refuses a private repository.
    let d = dir.path().to_owned();
    let refused = tokio::task::spawn_blocking(move || {
        fetch(&d, &url, "ghs_nope", &["+refs/heads/*:refs/heads/*"]).map(|_| ())
    })
    .await
    .unwrap();
    assert!(refused.is_err(), "a bad token is refused");
}
