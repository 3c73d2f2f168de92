//! What the App's installation reaches, for a plan whose tasks name other
//! repositories (`core::sync::reach`): the installation's repositories,
//! asked of GitHub (`GET /installation/repositories`, every page) only when
//! the plan names a repository besides its own.
//!
//! Owns: that read and its typed answer. Must not: judge the plan (the
//! core says which `repo:` lines are refused and why).

use std::collections::BTreeSet;

use http::Method;
use octocrab::Octocrab;
use serde::Deserialize;

use crate::github::{client::send, GitHubError};
use taskgate_core::ids::RepoName;
use taskgate_core::sync::reach::{named_repos, Reach};

const CALL: &str = "GET /installation/repositories";

/// One page of the answer: the fields taskgate uses.
#[derive(Deserialize)]
struct Page {
    repositories: Vec<Listed>,
}

#[derive(Deserialize)]
struct Listed {
    full_name: String,
}

/// What the installation reaches of the repositories the plan texts name
/// besides `home`: nothing asked when they name none.
pub(super) async fn reach_of(
    client: &Octocrab,
    home: &RepoName,
    plan_texts: &[&str],
) -> Result<Reach, GitHubError> {
    if plan_texts
        .iter()
        .all(|text| named_repos(home, text).is_empty())
    {
        return Ok(Reach::default());
    }
    let mut url = "/installation/repositories?per_page=100".to_owned();
    let mut installed = BTreeSet::new();
    loop {
        let response = send(client, Method::GET, &url, None).await?;
        let page: Page = response.answer(CALL)?;
        for listed in page.repositories {
            let name = RepoName::parse(&listed.full_name)
                .map_err(|e| GitHubError::Unexpected(format!("{CALL}: {e}")))?;
            installed.insert(name);
        }
        match response.next_page() {
            Some(next) => url = next,
            None => return Ok(Reach { installed }),
        }
    }
}
