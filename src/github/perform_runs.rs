//! Effects of acceptance runs → GitHub calls: check runs opened and moved
//! on by their `external_id` key, task pull requests created and merged.

use http::Method;
use serde_json::{json, Value};

use super::client::{send, GitHubError};
use super::perform::{created_ref, post_comment, record, store_err, Ctx};
use crate::core::render::fit_github_body;
use crate::core::report::CheckOutput;
use crate::core::{CheckStatus, CheckUpdate, APPROVE_BRANCH_ACTION, RETRY_ACTION};
use crate::ids::{CommitSha, IssueNumber, RepoName};

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

/// Creates a queued check run, or on a retry finds the one GitHub already
/// has with this `external_id`, and records its id under the key.
pub(super) async fn open_check_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    key: &str,
    name: &str,
    head_sha: &CommitSha,
    title: &str,
    summary: &str,
) -> Result<Option<String>, GitHubError> {
    if ctx.attempt > 1 {
        let path = format!(
            "/repos/{repo}/commits/{head_sha}/check-runs?check_name={name}&filter=all&per_page=100"
        );
        let list: Value = send(ctx.client, Method::GET, &path, None).await?.json()?;
        let found = list["check_runs"].as_array().and_then(|runs| {
            runs.iter()
                .find(|r| r["external_id"].as_str() == Some(key))
                .and_then(|r| r["id"].as_u64())
        });
        if let Some(id) = found {
            ctx.store
                .put_check_run(repo, key, id)
                .await
                .map_err(store_err)?;
            return Ok(Some(json!({ "id": id }).to_string()));
        }
    }
    let body = json!({
        "name": name,
        "head_sha": head_sha,
        "status": "queued",
        "external_id": key,
        "output": { "title": title, "summary": summary },
    });
    let response = send(
        ctx.client,
        Method::POST,
        &format!("/repos/{repo}/check-runs"),
        Some(&body),
    )
    .await?;
    let created: Value = response.json()?;
    let id = created["id"]
        .as_u64()
        .ok_or_else(|| GitHubError::Unexpected("check run without an id".into()))?;
    ctx.store
        .put_check_run(repo, key, id)
        .await
        .map_err(store_err)?;
    Ok(Some(created_ref(&response)?))
}

pub(super) async fn update_check_run(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    key: &str,
    update: &CheckUpdate,
) -> Result<Option<String>, GitHubError> {
    let id = ctx
        .store
        .check_run_id(repo, key)
        .await
        .map_err(store_err)?
        // Its create may still be backing off: a transient wait, not a
        // failure, so the update runs once the create has.
        .ok_or_else(|| GitHubError::Transport(format!("check run `{key}` is not created yet")))?;
    let mut body = json!({ "status": update.status.as_str() });
    if let Some(conclusion) = &update.conclusion {
        body["conclusion"] = json!(conclusion);
        body["completed_at"] = json!(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
    if update.status == CheckStatus::InProgress {
        body["started_at"] = json!(chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string());
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
    send(
        ctx.client,
        Method::PATCH,
        &format!("/repos/{repo}/check-runs/{id}"),
        Some(&body),
    )
    .await?;
    Ok(None)
}

/// Opens a pull request; GitHub's "already exists" counts as done, and so
/// does "No commits between" (nothing to open yet).
pub(super) async fn create_pull_request(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    head: &str,
    base: &str,
    title: &str,
    body: &str,
    draft: bool,
) -> Result<Option<String>, GitHubError> {
    let body = fit_github_body(body);
    let payload =
        json!({ "title": title, "head": head, "base": base, "body": body, "draft": draft });
    match send(
        ctx.client,
        Method::POST,
        &format!("/repos/{repo}/pulls"),
        Some(&payload),
    )
    .await
    {
        Ok(response) => Ok(Some(created_ref(&response)?)),
        Err(GitHubError::Http {
            status: 422,
            message,
            ..
        }) if message.contains("already exists") => Ok(None),
        // The branch has no commits of its own yet (it was just made at
        // its base): not a failure. The task asks again when work lands.
        Err(GitHubError::Http {
            status: 422,
            message,
            ..
        }) if message.contains("No commits between") => Ok(None),
        Err(e) => Err(e),
    }
}

/// Merges a pull request at `sha`. GitHub refusing the merge (405 not
/// mergeable, 409 the head moved) is told on the `report_to` issue and the
/// effect fails without retrying: a conflict needs a person or a new push.
pub(super) async fn merge_pull_request(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    number: IssueNumber,
    sha: &CommitSha,
    method: crate::core::config::MergeMethod,
    title: &str,
    report_to: &str,
) -> Result<Option<String>, GitHubError> {
    let body = json!({ "sha": sha, "merge_method": method, "commit_title": title });
    let path = format!("/repos/{repo}/pulls/{number}/merge");
    match send(ctx.client, Method::PUT, &path, Some(&body)).await {
        Ok(response) => Ok(Some(response.json::<Value>()?.to_string())),
        Err(GitHubError::Http {
            status: status @ (405 | 409),
            message,
            headers,
        }) => {
            // A retry after a lost answer meets the merge it already made
            // (GitHub then says "not mergeable"): that is success.
            if ctx.attempt > 1 {
                let pull: Value = send(
                    ctx.client,
                    Method::GET,
                    &format!("/repos/{repo}/pulls/{number}"),
                    None,
                )
                .await?
                .json()?;
                if pull["merged"].as_bool() == Some(true) {
                    return Ok(Some(
                        json!({ "sha": pull["merge_commit_sha"], "merged": true }).to_string(),
                    ));
                }
            }
            let issue = record(ctx, repo, report_to).await?;
            let hidden = crate::core::hidden_marker(report_to);
            let story = match crate::core::story::Marker::find_in(&hidden) {
                Some(crate::core::story::Marker::Story { story }) => Some(story),
                _ => None,
            };
            let note = match story {
                Some(_) => crate::core::ship::render_merge_refused(number, status, &message),
                None => crate::core::task::render_merge_refused(number, status, &message),
            };
            post_comment(
                ctx,
                repo,
                issue.number,
                &note,
                &format!("merge-refused effect={}", ctx.row.id),
            )
            .await?;
            // A story PR's refusal also reaches its ship gate.
            if let Some(story) = story {
                let what = crate::core::ship::ShipWhat::MergeRefused {
                    why: format!("GitHub answered {status}: {message}"),
                };
                super::perform::ship_event(ctx, repo, &story, what, "merge-refused").await?;
            }
            Err(GitHubError::Http {
                status,
                message,
                headers,
            })
        }
        Err(e) => Err(e),
    }
}

/// Adds and removes labels by issue number; a label already gone is fine.
pub(super) async fn label_issue(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    issue: IssueNumber,
    add: &[String],
    remove: &[String],
) -> Result<Option<String>, GitHubError> {
    if !add.is_empty() {
        let path = format!("/repos/{repo}/issues/{issue}/labels");
        send(
            ctx.client,
            Method::POST,
            &path,
            Some(&json!({ "labels": add })),
        )
        .await?;
    }
    for name in remove {
        let path = format!("/repos/{repo}/issues/{issue}/labels/{}", path_segment(name));
        match send(ctx.client, Method::DELETE, &path, None).await {
            Ok(_) | Err(GitHubError::Http { status: 404, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// `PATCH /pulls/{n}` with the fields to change.
pub(super) async fn update_pull_request(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    number: IssueNumber,
    title: Option<&str>,
    body: Option<&str>,
) -> Result<Option<String>, GitHubError> {
    let mut payload = json!({});
    if let Some(title) = title {
        payload["title"] = json!(title);
    }
    if let Some(body) = body {
        payload["body"] = json!(fit_github_body(body));
    }
    let path = format!("/repos/{repo}/pulls/{number}");
    send(ctx.client, Method::PATCH, &path, Some(&payload)).await?;
    Ok(None)
}

/// GraphQL's way to mark a draft ready for review (REST has none). The
/// fake GitHub checks it against GitHub's published schema.
pub const MARK_READY_MUTATION: &str = "mutation MarkReady($id: ID!) { \
    markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";

/// Marks pull request `number` ready for review if it is still a draft:
/// reads its node id over REST, then runs [`MARK_READY_MUTATION`].
pub(super) async fn mark_pull_request_ready(
    ctx: &Ctx<'_>,
    repo: &RepoName,
    number: IssueNumber,
) -> Result<Option<String>, GitHubError> {
    let path = format!("/repos/{repo}/pulls/{number}");
    // The pull request exists (taskgate knows its number from GitHub); a
    // 404 right after it was opened is GitHub's lag.
    let pr: Value = send(ctx.client, Method::GET, &path, None)
        .await
        .map_err(GitHubError::lagging)?
        .json()?;
    if pr["draft"] != json!(true) {
        // Ready already: a person was quicker, or a retry after success.
        return Ok(None);
    }
    let id = pr["node_id"]
        .as_str()
        .ok_or_else(|| GitHubError::Unexpected(format!("{path} names no node_id")))?;
    let request = json!({ "query": MARK_READY_MUTATION, "variables": { "id": id } });
    let answer: Value = send(ctx.client, Method::POST, "/graphql", Some(&request))
        .await?
        .json()?;
    match graphql_refusal(&answer) {
        Some(why) => Err(GitHubError::Unexpected(format!(
            "GraphQL refused markPullRequestReadyForReview: {why}"
        ))),
        None => Ok(None),
    }
}

/// GraphQL answers 200 and reports a refusal in `errors`: their messages.
fn graphql_refusal(answer: &Value) -> Option<String> {
    let errors = answer["errors"].as_array().filter(|e| !e.is_empty())?;
    let messages: Vec<&str> = errors
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    Some(messages.join("; "))
}

/// Everything but RFC 3986's unreserved characters is encoded.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `name` percent-encoded for one URL path segment.
fn path_segment(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, UNRESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graphql_refusal_is_read_from_errors_in_a_200_answer() {
        let ok = json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"number": 9, "isDraft": false}}}});
        assert_eq!(graphql_refusal(&ok), None);
        let refused = json!({
            "data": {"markPullRequestReadyForReview": null},
            "errors": [
                {"type": "NOT_FOUND", "message": "Could not resolve to a node with the global id of 'PR_x'"},
                {"type": "FORBIDDEN", "message": "Resource not accessible by integration"},
            ],
        });
        assert_eq!(
            graphql_refusal(&refused).as_deref(),
            Some("Could not resolve to a node with the global id of 'PR_x'; Resource not accessible by integration")
        );
        assert_eq!(graphql_refusal(&json!({"data": null, "errors": []})), None);
    }
}
