//! GitHub Actions: dispatching a workflow, finding the runs dispatches
//! started, cancelling a run.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;

use super::{done_on, RepoClient};
use crate::github::client::GitHubError;

/// A workflow run as a dispatch's retry looks for it.
pub(crate) struct WorkflowRun {
    pub id: u64,
    /// When GitHub made it; `i64::MIN` when GitHub's time is unreadable.
    pub created_ms: i64,
}

/// GitHub's 200 to a dispatch with `return_run_details`: the run it made.
#[derive(Debug, Deserialize)]
struct Dispatched {
    workflow_run_id: u64,
}

/// `GET /actions/workflows/{id}/runs`, as far as taskgate reads it.
#[derive(Debug, Deserialize)]
struct RunList {
    workflow_runs: Vec<ListedRun>,
}

#[derive(Debug, Deserialize)]
struct ListedRun {
    id: u64,
    /// RFC 3339; kept as text so that one GitHub writes otherwise sorts
    /// first instead of failing the whole list ([`WorkflowRun::created_ms`]).
    created_at: String,
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
        if response.body.iter().all(u8::is_ascii_whitespace) {
            // 204 No Content: a host that does not return run details.
            return Ok(None);
        }
        let call = format!("POST /actions/workflows/{workflow}/dispatches");
        Ok(Some(response.answer::<Dispatched>(&call)?.workflow_run_id))
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
        let list: RunList = match self.get(&path).await {
            Ok(response) => response.answer(&format!("GET /actions/workflows/{workflow}/runs"))?,
            Err(GitHubError::Http { status: 404, .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        Ok(list
            .workflow_runs
            .into_iter()
            .map(|run| WorkflowRun {
                id: run.id,
                created_ms: chrono::DateTime::parse_from_rfc3339(&run.created_at)
                    .map(|t| t.timestamp_millis())
                    .unwrap_or(i64::MIN),
            })
            .collect())
    }

    /// Cancels run `run`; GitHub's 409 (it is completed already) is fine.
    pub(crate) async fn cancel_run(&self, run: u64) -> Result<(), GitHubError> {
        let path = self.path(&format!("actions/runs/{run}/cancel"));
        done_on(self.post(&path, None).await, 409)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::client::ApiResponse;

    fn answer(body: &str) -> ApiResponse {
        ApiResponse {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: body.to_owned().into(),
        }
    }

    /// GitHub's documented example of `GET /actions/workflows/{id}/runs`
    /// (REST docs, "List workflow runs for a workflow"), trimmed.
    const RUNS: &str = r#"{
      "total_count": 1,
      "workflow_runs": [{
        "id": 30433642, "name": "Build", "node_id": "MDEyOldvcmtmbG93IFJ1bjI2OTI4OQ==",
        "head_branch": "master", "head_sha": "acb5820ced9479c074f688cc328bf03f341a511d",
        "run_number": 562, "event": "push", "status": "queued", "conclusion": null,
        "workflow_id": 159038, "created_at": "2020-01-22T19:33:08Z",
        "updated_at": "2020-01-22T19:33:08Z"
      }]
    }"#;

    #[test]
    fn workflow_runs_and_dispatch_details_are_read_from_githubs_examples() {
        let list: RunList = answer(RUNS).answer("GET /runs").unwrap();
        assert_eq!(list.workflow_runs[0].id, 30433642);
        assert_eq!(list.workflow_runs[0].created_at, "2020-01-22T19:33:08Z");
        let details = r#"{"workflow_run_id": 22103, "run_url": "https://api.github.com/repos/o/r/actions/runs/22103", "html_url": "https://github.com/o/r/actions/runs/22103"}"#;
        let made: Dispatched = answer(details).answer("POST /dispatches").unwrap();
        assert_eq!(made.workflow_run_id, 22103);
    }

    #[test]
    fn a_workflow_run_missing_a_field_is_an_error_naming_the_call() {
        let err = answer(r#"{"workflow_runs": [{"id": 1}]}"#)
            .answer::<RunList>("GET /actions/workflows/taskgate.yml/runs")
            .unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: GET /actions/workflows/taskgate.yml/runs: missing field `created_at` at line 1 column 28");
    }
}
