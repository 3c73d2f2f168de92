//! Branches and pull requests: creating, editing, merging, marking a
//! draft ready for review and enqueueing in GitHub's merge queue (both
//! GraphQL's, as REST has no such calls).

use serde::Deserialize;
use serde_json::json;

use super::{done_if_exists, Created, RepoClient};
use crate::github::client::{send, GitHubError};
use taskgate_core::config::MergeMethod;
use taskgate_core::ids::{CommitSha, IssueNumber};
use taskgate_core::render::fit_github_body;

/// GraphQL's way to mark a draft ready for review (REST has none). The
/// fake GitHub checks it against GitHub's published schema.
pub const MARK_READY_MUTATION: &str = "mutation MarkReady($id: ID!) { \
    markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";

/// GitHub's refusal of a draft where the owner's plan has none.
const DRAFTS_NOT_SUPPORTED: &str = "Draft pull requests are not supported in this repository";

/// The fields of `GET /pulls/{n}` taskgate reads: a missing one is an
/// error naming the call, never an empty value.
#[derive(Debug, Deserialize)]
pub(crate) struct PullAnswer {
    pub node_id: String,
    pub draft: bool,
    pub merged: bool,
    /// Set once GitHub made the merge (and, before that, its test merge).
    #[serde(default, deserialize_with = "CommitSha::deserialize_checked_option")]
    pub merge_commit_sha: Option<CommitSha>,
}

impl PullAnswer {
    /// The commit the merge made, when the pull request is merged. A
    /// merged pull request without one is an answer taskgate cannot use.
    pub fn merged_as(&self, number: IssueNumber) -> Result<Option<CommitSha>, GitHubError> {
        match (self.merged, &self.merge_commit_sha) {
            (false, _) => Ok(None),
            (true, Some(sha)) => Ok(Some(sha.clone())),
            (true, None) => Err(GitHubError::Unexpected(format!(
                "GET /pulls/{number}: merged without a merge_commit_sha"
            ))),
        }
    }
}

/// GitHub's answer to `PUT /pulls/{n}/merge`: the commit it made.
#[derive(Debug, Deserialize)]
pub(crate) struct MergeAnswer {
    #[serde(deserialize_with = "CommitSha::deserialize_checked")]
    pub sha: CommitSha,
}

/// What [`RepoClient::create_pull_or_normal`] did.
pub(crate) struct Opened {
    /// The pull request, or `None` when there was nothing to open.
    pub created: Option<Created>,
    /// GitHub refused a draft here: the repository has none.
    pub drafts_refused: bool,
}

/// GraphQL's way to add a pull request to its base branch's merge queue
/// (REST has none), only while its head is `$head`.
pub const ENQUEUE_MUTATION: &str = "mutation Enqueue($id: ID!, $head: GitObjectID) { \
    enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $head}) { mergeQueueEntry { position } } }";

impl RepoClient<'_> {
    /// Creates branch `name` at `sha`; one that exists already is kept.
    pub(crate) async fn create_branch(
        &self,
        name: &str,
        sha: &CommitSha,
    ) -> Result<(), GitHubError> {
        let body = json!({ "ref": format!("refs/heads/{name}"), "sha": sha });
        let answer = self.post(&self.path("git/refs"), Some(&body)).await;
        done_if_exists(answer, "already exists")
    }

    /// Opens a pull request. `None` when there is nothing to open: GitHub
    /// has one for `head` already, or the branch has no commits of its
    /// own yet (it was just made at its base).
    pub(crate) async fn create_pull(
        &self,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
        draft: bool,
    ) -> Result<Option<Created>, GitHubError> {
        let body = fit_github_body(body);
        let payload =
            json!({ "title": title, "head": head, "base": base, "body": body, "draft": draft });
        match self.post(&self.path("pulls"), Some(&payload)).await {
            Ok(response) => Ok(Some(Created::read(&response, "POST /pulls")?)),
            Err(GitHubError::Http {
                status: 422,
                message,
                ..
            }) if message.contains("already exists") || message.contains("No commits between") => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Opens a pull request as a draft where the repository has drafts:
    /// where GitHub refuses one ("Draft pull requests are not supported in
    /// this repository": a private repository on GitHub Free), it is
    /// opened as a normal one. The answer says which happened
    /// ([`Opened::drafts_refused`]), for the caller to remember.
    pub(crate) async fn create_pull_or_normal(
        &self,
        head: &str,
        base: &str,
        title: &str,
        body: &str,
        draft: bool,
    ) -> Result<Opened, GitHubError> {
        match self.create_pull(head, base, title, body, draft).await {
            Err(GitHubError::Http {
                status: 422,
                message,
                ..
            }) if draft && message.contains(DRAFTS_NOT_SUPPORTED) => Ok(Opened {
                created: self.create_pull(head, base, title, body, false).await?,
                drafts_refused: true,
            }),
            other => Ok(Opened {
                created: other?,
                drafts_refused: false,
            }),
        }
    }

    /// The pull request as GitHub shows it.
    pub(crate) async fn get_pull(&self, number: IssueNumber) -> Result<PullAnswer, GitHubError> {
        let call = format!("GET /pulls/{number}");
        self.get(&self.path(&format!("pulls/{number}")))
            .await?
            .answer(&call)
    }

    /// `PATCH /pulls/{n}` with the fields to change.
    pub(crate) async fn update_pull(
        &self,
        number: IssueNumber,
        title: Option<&str>,
        body: Option<&str>,
    ) -> Result<(), GitHubError> {
        let mut payload = json!({});
        if let Some(title) = title {
            payload["title"] = json!(title);
        }
        if let Some(body) = body {
            payload["body"] = json!(fit_github_body(body));
        }
        self.patch(&self.path(&format!("pulls/{number}")), &payload)
            .await?;
        Ok(())
    }

    /// Merges pull request `number` at `sha`; GitHub's answer. GitHub's 405
    /// "Base branch was modified" (the base moved during the merge; nothing
    /// was merged, and GitHub asks to try again) is
    /// [`GitHubError::TryAgain`]: the merge is pinned to `sha`, so trying
    /// again merges the same head into the moved base, or is refused then
    /// for what it is.
    pub(crate) async fn merge_pull(
        &self,
        number: IssueNumber,
        sha: &CommitSha,
        method: MergeMethod,
        title: &str,
    ) -> Result<MergeAnswer, GitHubError> {
        let body = json!({ "sha": sha, "merge_method": method, "commit_title": title });
        match self
            .put(&self.path(&format!("pulls/{number}/merge")), &body)
            .await
        {
            Ok(answer) => answer.answer(&format!("PUT /pulls/{number}/merge")),
            Err(GitHubError::Http {
                status: 405,
                message,
                ..
            }) if message.contains("Base branch was modified") => Err(GitHubError::TryAgain(
                format!("405 merging #{number}: {message}"),
            )),
            Err(e) => Err(e),
        }
    }

    /// Runs [`MARK_READY_MUTATION`] on the pull request with `node_id`.
    pub(crate) async fn mark_ready(&self, node_id: &str) -> Result<(), GitHubError> {
        let request = json!({ "query": MARK_READY_MUTATION, "variables": { "id": node_id } });
        let answer: GraphQlAnswer =
            send(self.client, http::Method::POST, "/graphql", Some(&request))
                .await?
                .answer("POST /graphql markPullRequestReadyForReview")?;
        match graphql_refusal(&answer) {
            Some(why) => Err(GitHubError::Unexpected(format!(
                "GraphQL refused markPullRequestReadyForReview: {why}"
            ))),
            None => Ok(()),
        }
    }
}

impl RepoClient<'_> {
    /// Runs [`ENQUEUE_MUTATION`] on the pull request with `node_id` at
    /// `head`. GitHub's refusal (not mergeable, a required check not
    /// passed, another head) is a 422 with its words.
    pub(crate) async fn enqueue(&self, node_id: &str, head: &CommitSha) -> Result<(), GitHubError> {
        let request =
            json!({ "query": ENQUEUE_MUTATION, "variables": { "id": node_id, "head": head } });
        let answer: GraphQlAnswer =
            send(self.client, http::Method::POST, "/graphql", Some(&request))
                .await?
                .answer("POST /graphql enqueuePullRequest")?;
        match graphql_refusal(&answer) {
            Some(why) => Err(GitHubError::Http {
                status: 422,
                message: why,
                headers: Box::default(),
            }),
            None => Ok(()),
        }
    }
}

/// A GraphQL answer, as far as its refusals: GraphQL answers 200 and
/// reports them in `errors`, which the GraphQL spec leaves out when there
/// are none and in which every entry has a `message`.
#[derive(Debug, Deserialize)]
struct GraphQlAnswer {
    #[serde(default)]
    errors: Vec<GraphQlError>,
}

#[derive(Debug, Deserialize)]
struct GraphQlError {
    message: String,
}

/// The messages of a GraphQL answer's `errors`, when it has any.
fn graphql_refusal(answer: &GraphQlAnswer) -> Option<String> {
    if answer.errors.is_empty() {
        return None;
    }
    let messages: Vec<&str> = answer.errors.iter().map(|e| e.message.as_str()).collect();
    Some(messages.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::client::ApiResponse;
    use serde_json::Value;

    fn answer(body: Value) -> ApiResponse {
        ApiResponse {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: body.to_string().into(),
        }
    }

    #[test]
    fn a_pull_answer_missing_a_field_taskgate_reads_is_an_error_naming_the_call() {
        let without_merged = answer(json!({"node_id": "PR_1", "draft": false}));
        let err = without_merged
            .answer::<PullAnswer>("GET /pulls/3")
            .unwrap_err();
        assert!(matches!(err, GitHubError::Unexpected(_)), "{err}");
        assert!(
            err.to_string()
                .contains("GET /pulls/3: missing field `merged`"),
            "{err}"
        );
        let merge = answer(json!({"merged": true, "message": "Pull Request successfully merged"}));
        let err = merge
            .answer::<MergeAnswer>("PUT /pulls/3/merge")
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("PUT /pulls/3/merge: missing field `sha`"),
            "{err}"
        );
    }

    #[test]
    fn a_sha_in_an_answer_that_is_no_sha_is_an_error_naming_the_call() {
        let merge = answer(
            json!({"sha": "", "merged": true, "message": "Pull Request successfully merged"}),
        );
        let err = merge
            .answer::<MergeAnswer>("PUT /pulls/3/merge")
            .unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: PUT /pulls/3/merge: `` is not a full commit sha (40 or 64 lowercase hex digits) at line 1 column 69");
        let pull = answer(
            json!({"node_id": "PR_1", "draft": false, "merged": true, "merge_commit_sha": "6dcb09b"}),
        );
        let err = pull.answer::<PullAnswer>("GET /pulls/3").unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: GET /pulls/3: `6dcb09b` is not a full commit sha (40 or 64 lowercase hex digits) at line 1 column 43");
    }

    #[test]
    fn a_merged_pull_request_without_its_merge_commit_is_refused_not_read_as_empty() {
        let read = |v: Value| serde_json::from_value::<PullAnswer>(v).unwrap();
        let number = IssueNumber::new(3);
        let open = read(
            json!({"node_id": "PR_1", "draft": true, "merged": false, "merge_commit_sha": null}),
        );
        assert_eq!(open.merged_as(number).unwrap(), None);
        let sha = "a".repeat(40);
        let merged = read(
            json!({"node_id": "PR_1", "draft": false, "merged": true, "merge_commit_sha": sha}),
        );
        assert_eq!(
            merged.merged_as(number).unwrap(),
            Some(crate::testing::sha(&sha))
        );
        let broken = read(
            json!({"node_id": "PR_1", "draft": false, "merged": true, "merge_commit_sha": null}),
        );
        let err = broken.merged_as(number).unwrap_err();
        assert!(
            err.to_string()
                .contains("GET /pulls/3: merged without a merge_commit_sha"),
            "{err}"
        );
    }

    #[test]
    fn a_graphql_refusal_is_read_from_errors_in_a_200_answer() {
        let graphql_refusal =
            |v: Value| graphql_refusal(&serde_json::from_value::<GraphQlAnswer>(v).unwrap());
        let ok = json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"number": 9, "isDraft": false}}}});
        assert_eq!(graphql_refusal(ok), None);
        let refused = json!({
            "data": {"markPullRequestReadyForReview": null},
            "errors": [
                {"type": "NOT_FOUND", "message": "Could not resolve to a node with the global id of 'PR_x'"},
                {"type": "FORBIDDEN", "message": "Resource not accessible by integration"},
            ],
        });
        assert_eq!(
            graphql_refusal(refused).as_deref(),
            Some("Could not resolve to a node with the global id of 'PR_x'; Resource not accessible by integration")
        );
        assert_eq!(graphql_refusal(json!({"data": null, "errors": []})), None);
    }
}
