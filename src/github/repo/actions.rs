//! GitHub Actions: dispatching a workflow, finding the runs dispatches
//! started, cancelling a run.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{done_on, RepoClient};
use crate::github::client::GitHubError;

/// A workflow run as a dispatch's retry looks for it.
pub(crate) struct WorkflowRun {
    pub id: u64,
    /// When GitHub made it; `i64::MIN` when GitHub's time is unreadable.
    pub created_ms: i64,
}

impl RepoClient<'_> {
    /// `POST …/dispatches`, asking for the run's id (`return_run_details`,
    /// which GitHub answers with 200 and the run; older hosts answer 204
    /// without it).
    pub(crate) async fn dispatch_workflow(
        &self,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<Option<u64>, GitHubError> {
        let path = self.path(&format!("actions/workflows/{workflow}/dispatches"));
        let body = json!({ "ref": git_ref, "inputs": inputs, "return_run_details": true });
        let response = self.post(&path, Some(&body)).await?;
        Ok(response
            .json::<Value>()
            .ok()
            .and_then(|v| v.get("workflow_run_id").and_then(Value::as_u64)))
    }

    /// The latest `workflow_dispatch` runs of `workflow` on `branch`; none
    /// when GitHub has no such workflow (the dispatch itself will say so).
    pub(crate) async fn dispatched_runs(
        &self,
        workflow: &str,
        branch: &str,
    ) -> Result<Vec<WorkflowRun>, GitHubError> {
        let path = self.path(&format!(
            "actions/workflows/{workflow}/runs?event=workflow_dispatch&branch={branch}&per_page=30"
        ));
        let list: Value = match self.get(&path).await {
            Ok(response) => response.json()?,
            Err(GitHubError::Http { status: 404, .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let runs = list["workflow_runs"].as_array().into_iter().flatten();
        Ok(runs
            .filter_map(|run| {
                let (id, created) = (run["id"].as_u64()?, run["created_at"].as_str()?);
                let created_ms = chrono::DateTime::parse_from_rfc3339(created)
                    .map(|t| t.timestamp_millis())
                    .unwrap_or(i64::MIN);
                Some(WorkflowRun { id, created_ms })
            })
            .collect())
    }

    /// Cancels run `run`; GitHub's 409 (it is completed already) is fine.
    pub(crate) async fn cancel_run(&self, run: u64) -> Result<(), GitHubError> {
        let path = self.path(&format!("actions/runs/{run}/cancel"));
        done_on(self.post(&path, None).await, 409)
    }
}
