//! Check runs: one-shot completed ones, and queued ones moved on by their
//! `external_id` key.

use serde::Deserialize;
use serde_json::{json, Value};

use super::{Created, RepoClient};
use crate::github::client::GitHubError;
use taskgate_core::ids::CommitSha;
use taskgate_core::report::CheckOutput;
use taskgate_core::{CheckRunSpec, CheckStatus, CheckUpdate, APPROVE_BRANCH_ACTION, RETRY_ACTION};

/// `GET /commits/{ref}/check-runs`, as far as taskgate reads it.
#[derive(Debug, Deserialize)]
struct CheckRunList {
    check_runs: Vec<ListedCheckRun>,
}

#[derive(Debug, Deserialize)]
struct ListedCheckRun {
    id: u64,
    /// `queued`, `in_progress`, `completed`, …
    status: String,
    /// Nullable in GitHub's schema: none until the run completes.
    conclusion: Option<String>,
    /// Nullable in GitHub's schema: set only by the App that made it.
    external_id: Option<String>,
    /// Nullable in GitHub's schema (`nullable-integration`).
    app: Option<CheckRunApp>,
}

#[derive(Debug, Deserialize)]
struct CheckRunApp {
    id: u64,
}

/// GitHub allows at most 50 annotations per check-run request.
const MAX_ANNOTATIONS: usize = 50;

impl RepoClient<'_> {
    /// A completed check run with its conclusion and annotations.
    pub(crate) async fn create_check_run(
        &self,
        check: &CheckRunSpec,
    ) -> Result<Created, GitHubError> {
        let annotations: Vec<Value> = check
            .annotations
            .iter()
            .take(MAX_ANNOTATIONS)
            .map(|a| {
                json!({
                    "path": a.path, "start_line": a.line, "end_line": a.line,
                    "annotation_level": "failure", "message": a.message,
                })
            })
            .collect();
        let body = json!({
            "name": check.name,
            "head_sha": check.head_sha,
            "status": "completed",
            "conclusion": check.conclusion,
            "output": { "title": check.title, "summary": check.summary, "annotations": annotations },
        });
        Created::read(
            &self.post(&self.path("check-runs"), Some(&body)).await?,
            "POST /check-runs",
        )
    }

    /// The id of App `app_id`'s check run named `name` on `head_sha` whose
    /// `external_id` is `key`. Another App's run of that name (a second
    /// taskgate App on the repository, staging beside production, makes
    /// the same names and keys) is never taken: GitHub would refuse to
    /// change it, and it is not taskgate's to change.
    pub(crate) async fn find_check_run(
        &self,
        app_id: u64,
        head_sha: &CommitSha,
        name: &str,
        key: &str,
    ) -> Result<Option<u64>, GitHubError> {
        let path = self.path(&format!(
            "commits/{head_sha}/check-runs?check_name={name}&app_id={app_id}&filter=all&per_page=100"
        ));
        let list: CheckRunList = self
            .get(&path)
            .await?
            .answer(&format!("GET /commits/{head_sha}/check-runs"))?;
        Ok(list
            .check_runs
            .iter()
            .filter(|r| r.app.as_ref().is_some_and(|app| app.id == app_id))
            .find(|r| r.external_id.as_deref() == Some(key))
            .map(|r| r.id))
    }

    /// Whether the newest check run named `name` on `sha` succeeded.
    pub(crate) async fn check_passed(
        &self,
        sha: &CommitSha,
        name: &str,
    ) -> Result<bool, GitHubError> {
        let path = self.path(&format!(
            "commits/{sha}/check-runs?check_name={name}&filter=latest&per_page=100"
        ));
        let list: CheckRunList = self
            .get(&path)
            .await?
            .answer(&format!("GET /commits/{sha}/check-runs"))?;
        let newest = list.check_runs.iter().max_by_key(|r| r.id);
        Ok(newest
            .is_some_and(|r| r.status == "completed" && r.conclusion.as_deref() == Some("success")))
    }

    /// A queued check run carrying `key` as its `external_id`.
    pub(crate) async fn create_queued_check_run(
        &self,
        key: &str,
        name: &str,
        head_sha: &CommitSha,
        title: &str,
        summary: &str,
    ) -> Result<Created, GitHubError> {
        let body = json!({
            "name": name,
            "head_sha": head_sha,
            "status": "queued",
            "external_id": key,
            "output": { "title": title, "summary": summary },
        });
        Created::read(
            &self.post(&self.path("check-runs"), Some(&body)).await?,
            "POST /check-runs",
        )
    }

    /// Moves check run `id` on: its status, conclusion, output and buttons;
    /// a start or an end is stamped `now` (unix seconds).
    pub(crate) async fn update_check_run(
        &self,
        id: u64,
        update: &CheckUpdate,
        now: i64,
    ) -> Result<(), GitHubError> {
        let path = self.path(&format!("check-runs/{id}"));
        self.patch(&path, &update_json(update, now)).await?;
        Ok(())
    }
}

fn update_json(update: &CheckUpdate, now: i64) -> Value {
    let at = chrono::DateTime::from_timestamp(now, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let mut body = json!({ "status": update.status.as_str() });
    if let Some(conclusion) = &update.conclusion {
        body["conclusion"] = json!(conclusion);
        body["completed_at"] = json!(at);
    }
    if update.status == CheckStatus::InProgress {
        body["started_at"] = json!(at);
    }
    if let Some(output) = &update.output {
        body["output"] = output_json(output);
    }
    let mut actions = Vec::new();
    if update.retry_button {
        actions.push(json!({
            "label": "Retry",
            "description": "Run this gate again",
            "identifier": RETRY_ACTION,
        }));
    }
    if update.approve_button {
        actions.push(json!({
            "label": "Approve branch todo",
            "description": "Open the proposed debug issue",
            "identifier": APPROVE_BRANCH_ACTION,
        }));
    }
    if !actions.is_empty() {
        body["actions"] = json!(actions);
    }
    body
}

fn output_json(o: &CheckOutput) -> Value {
    let mut out = json!({ "title": o.title, "summary": o.summary });
    if !o.text.is_empty() {
        out["text"] = json!(o.text);
    }
    if !o.annotations.is_empty() {
        out["annotations"] = json!(o.annotations);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::client::ApiResponse;

    /// GitHub's documented example of `GET /commits/{ref}/check-runs`
    /// (REST docs, "List check runs for a Git reference"), trimmed.
    const LISTED: &str = r#"{
      "total_count": 1,
      "check_runs": [{
        "id": 4, "head_sha": "ce587453ced02b1526dfb4cb910479d431683101",
        "node_id": "MDg6Q2hlY2tSdW40", "external_id": "",
        "url": "https://api.github.com/repos/github/hello-world/check-runs/4",
        "status": "completed", "conclusion": "neutral",
        "started_at": "2018-05-04T01:14:52Z", "completed_at": "2018-05-04T01:14:52Z",
        "name": "mighty_readme",
        "app": {"id": 1, "slug": "octoapp", "name": "Octocat App"},
        "pull_requests": []
      }]
    }"#;

    fn answer(body: &str) -> ApiResponse {
        ApiResponse {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: body.to_owned().into(),
        }
    }

    #[test]
    fn listed_check_runs_are_read_from_githubs_example() {
        let list: CheckRunList = answer(LISTED).answer("GET /check-runs").unwrap();
        let run = &list.check_runs[0];
        assert_eq!((run.id, run.status.as_str()), (4, "completed"));
        assert_eq!(run.conclusion.as_deref(), Some("neutral"));
        assert_eq!(run.app.as_ref().map(|a| a.id), Some(1));
        let queued = r#"{"check_runs": [{"id": 5, "status": "queued", "conclusion": null, "external_id": null, "app": null}]}"#;
        let list: CheckRunList = answer(queued).answer("GET /check-runs").unwrap();
        assert_eq!(list.check_runs[0].conclusion, None, "nullable until done");
    }

    #[test]
    fn a_check_run_list_missing_a_field_is_an_error_naming_the_call() {
        let without_status = r#"{"check_runs": [{"id": 5, "conclusion": null}]}"#;
        let err = answer(without_status)
            .answer::<CheckRunList>("GET /commits/abc/check-runs")
            .unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: GET /commits/abc/check-runs: missing field `status` at line 1 column 45");
    }
}
