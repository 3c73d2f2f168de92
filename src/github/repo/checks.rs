//! Check runs: one-shot completed ones, and queued ones moved on by their
//! `external_id` key.

use serde_json::{json, Value};

use super::{Created, RepoClient};
use crate::github::client::GitHubError;
use taskgate_core::ids::CommitSha;
use taskgate_core::report::CheckOutput;
use taskgate_core::{CheckRunSpec, CheckStatus, CheckUpdate, APPROVE_BRANCH_ACTION, RETRY_ACTION};

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
        Created::read(&self.post(&self.path("check-runs"), Some(&body)).await?)
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
        let list: Value = self.get(&path).await?.json()?;
        Ok(list["check_runs"].as_array().and_then(|runs| {
            runs.iter()
                .filter(|r| r["app"]["id"].as_u64() == Some(app_id))
                .find(|r| r["external_id"].as_str() == Some(key))
                .and_then(|r| r["id"].as_u64())
        }))
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
        let list: Value = self.get(&path).await?.json()?;
        let newest = list["check_runs"]
            .as_array()
            .into_iter()
            .flatten()
            .max_by_key(|r| r["id"].as_u64().unwrap_or(0));
        Ok(newest.is_some_and(|r| {
            r["status"] == "completed" && r["conclusion"].as_str() == Some("success")
        }))
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
        Created::read(&self.post(&self.path("check-runs"), Some(&body)).await?)
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
