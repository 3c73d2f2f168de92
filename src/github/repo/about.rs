//! What a repository is and allows, as `taskgate doctor` reads it: the
//! repository itself and its owner's plan, a file at a ref, whether a user
//! can be assigned, a workflow's state.

use base64::Engine as _;
use serde::Deserialize;

use super::RepoClient;
use crate::github::client::{ApiResponse, GitHubError};

/// `GET /repos/{owner}/{repo}`, as much as taskgate reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Repository {
    pub id: u64,
    pub default_branch: String,
    pub html_url: String,
    #[serde(default)]
    pub private: bool,
    pub owner: Owner,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct Owner {
    pub login: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// An entry of a folder as `GET /contents/{dir}` lists it.
#[derive(Debug, Deserialize)]
struct DirEntry {
    /// `file`, `dir`, `symlink` or `submodule`.
    #[serde(rename = "type")]
    kind: String,
    path: String,
}

/// Whether the contents API answered a folder's listing (an array)
/// rather than one object (a file, a symlink, a submodule).
fn is_array(response: &ApiResponse) -> bool {
    response.body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// `Ok(None)` for GitHub's 404, else the answer.
fn found<T>(result: Result<T, GitHubError>) -> Result<Option<T>, GitHubError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(GitHubError::Http { status: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

impl RepoClient<'_> {
    pub async fn repository(&self) -> Result<Repository, GitHubError> {
        let path = format!("/repos/{}", self.repo);
        self.get(&path).await?.answer(&format!("GET {path}"))
    }

    /// An organisation's GitHub plan (`free`, `team`, …); `None` when
    /// GitHub does not show it (the App lacks `organization_plan`).
    pub async fn org_plan(&self, org: &str) -> Result<Option<String>, GitHubError> {
        /// `GET /orgs/{org}`: `plan` is shown only to those allowed to
        /// see it (GitHub's schema leaves it out of `required`).
        #[derive(Deserialize)]
        struct Org {
            #[serde(default)]
            plan: Option<Plan>,
        }
        #[derive(Deserialize)]
        struct Plan {
            name: String,
        }
        let call = format!("GET /orgs/{org}");
        let org: Org = self.get(&format!("/orgs/{org}")).await?.answer(&call)?;
        Ok(org.plan.map(|p| p.name))
    }

    /// A file's text at `git_ref`; `None` when it is not there (or is a
    /// directory).
    pub async fn file(&self, path: &str, git_ref: &str) -> Result<Option<String>, GitHubError> {
        /// A file's contents; GitHub leaves `content` out (and `encoding`
        /// `none`) for a file over 1 MB, a symlink or a submodule.
        #[derive(Deserialize)]
        struct Contents {
            #[serde(default)]
            content: Option<String>,
            #[serde(default)]
            encoding: Option<String>,
        }
        let url = self.path(&format!("contents/{path}?ref={git_ref}"));
        let Some(response) = found(self.get(&url).await)? else {
            return Ok(None);
        };
        // A directory answers with an array: not a file.
        if is_array(&response) {
            return Ok(None);
        }
        let contents: Contents = response.answer(&format!("GET /contents/{path}"))?;
        let (Some(content), Some("base64")) = (contents.content, contents.encoding.as_deref())
        else {
            return Ok(None);
        };
        let cleaned: String = content.chars().filter(|c| !c.is_whitespace()).collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(cleaned)
            .map_err(|e| GitHubError::Unexpected(format!("{path}: content is not base64: {e}")))?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// The paths of the files directly in folder `dir` at `git_ref` (no
    /// sub-folders); none when the folder is not there. GitHub lists at
    /// most 1,000 entries of a folder.
    pub async fn dir_files(&self, dir: &str, git_ref: &str) -> Result<Vec<String>, GitHubError> {
        let url = self.path(&format!("contents/{dir}?ref={git_ref}"));
        let Some(response) = found(self.get(&url).await)? else {
            return Ok(Vec::new());
        };
        // A file answers with an object: not a folder.
        if !is_array(&response) {
            return Ok(Vec::new());
        }
        let entries: Vec<DirEntry> = response.answer(&format!("GET /contents/{dir}"))?;
        Ok(entries
            .into_iter()
            .filter(|e| e.kind == "file")
            .map(|e| e.path)
            .collect())
    }

    /// Whether `login` can be assigned to the repository's issues
    /// (GitHub: 204, else 404).
    pub async fn assignable(&self, login: &str) -> Result<bool, GitHubError> {
        let url = self.path(&format!("assignees/{login}"));
        Ok(found(self.get(&url).await)?.is_some())
    }

    /// A workflow's `state` (`active`, `disabled_manually`, …); `None`
    /// when GitHub knows no such workflow.
    pub async fn workflow_state(&self, file: &str) -> Result<Option<String>, GitHubError> {
        let url = self.path(&format!("actions/workflows/{file}"));
        let Some(response) = found(self.get(&url).await)? else {
            return Ok(None);
        };
        #[derive(Deserialize)]
        struct Workflow {
            state: String,
        }
        let workflow: Workflow = response.answer(&format!("GET /actions/workflows/{file}"))?;
        Ok(Some(workflow.state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &str) -> ApiResponse {
        ApiResponse {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: body.to_owned().into(),
        }
    }

    /// GitHub's documented example of a folder's contents (REST docs,
    /// "Get repository content", a directory), trimmed.
    const FOLDER: &str = r#"[
      {"type": "file", "size": 625, "name": "octokit.rb", "path": "lib/octokit.rb",
       "sha": "fff6fe3a23bf1c8ea0692b4a883af99bee26fd3b"},
      {"type": "dir", "size": 0, "name": "octokit", "path": "lib/octokit",
       "sha": "a84d88e7554fc1fa21bcbc4efae3c782a70d2b9d"}
    ]"#;

    #[test]
    fn folders_workflows_and_repositories_are_read_from_githubs_examples() {
        let folder = answer(FOLDER);
        assert!(is_array(&folder));
        let entries: Vec<DirEntry> = folder.answer("GET /contents/lib").unwrap();
        assert_eq!(entries[0].path, "lib/octokit.rb");
        assert_eq!(entries[1].kind, "dir");
        assert!(!is_array(&answer(
            r#" {"type": "file", "path": "README.md"}"#
        )));
        let repo = r#"{"id": 1296269, "name": "Hello-World", "full_name": "octocat/Hello-World",
          "owner": {"login": "octocat", "id": 1, "type": "User"}, "private": false,
          "html_url": "https://github.com/octocat/Hello-World", "default_branch": "master"}"#;
        let repo: Repository = answer(repo)
            .answer("GET /repos/octocat/Hello-World")
            .unwrap();
        assert_eq!(
            (repo.default_branch.as_str(), repo.owner.kind.as_str()),
            ("master", "User")
        );
    }

    #[test]
    fn a_folder_entry_missing_a_field_is_an_error_naming_the_call() {
        let err = answer(r#"[{"type": "file", "name": "a.yml"}]"#)
            .answer::<Vec<DirEntry>>("GET /contents/.taskgate")
            .unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: GET /contents/.taskgate: missing field `path` at line 1 column 34");
    }
}
