//! What a repository is and allows, as `taskgate doctor` reads it: the
//! repository itself and its owner's plan, a file at a ref, whether a user
//! can be assigned, a workflow's state.

use base64::Engine as _;
use serde_json::Value;

use super::RepoClient;
use crate::github::client::GitHubError;

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
        self.get(&format!("/repos/{}", self.repo)).await?.json()
    }

    /// An organisation's GitHub plan (`free`, `team`, …); `None` when
    /// GitHub does not show it (the App lacks `organization_plan`).
    pub async fn org_plan(&self, org: &str) -> Result<Option<String>, GitHubError> {
        let org: Value = self.get(&format!("/orgs/{org}")).await?.json()?;
        Ok(org["plan"]["name"].as_str().map(str::to_owned))
    }

    /// A file's text at `git_ref`; `None` when it is not there (or is a
    /// directory).
    pub async fn file(&self, path: &str, git_ref: &str) -> Result<Option<String>, GitHubError> {
        #[derive(serde::Deserialize)]
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
        let Ok(contents) = response.json::<Contents>() else {
            return Ok(None);
        };
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
        let Ok(entries) = response.json::<Vec<Value>>() else {
            return Ok(Vec::new());
        };
        Ok(entries
            .iter()
            .filter(|e| e["type"] == "file")
            .filter_map(|e| e["path"].as_str().map(str::to_owned))
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
        let workflow: Value = response.json()?;
        Ok(workflow["state"].as_str().map(str::to_owned))
    }
}
