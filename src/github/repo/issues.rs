//! Issues, their comments and reactions, labels, sub-issues and
//! blocked-by dependencies.

use serde_json::{json, Value};

use serde::Deserialize;

use super::{
    done_if_exists, done_on, find_by_marker, Created, ListedComment, ListedIssue, OwnApp,
    RepoClient,
};
use crate::github::client::{GitHubError, ValidationError};
use taskgate_core::ids::{CommentId, IssueId, IssueNumber};
use taskgate_core::render::fit_github_body;
use taskgate_core::{IssueState, Reaction};

/// An issue GitHub made or lists: its number and database id, the two
/// taskgate keeps of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct IssueMade {
    pub number: IssueNumber,
    pub id: IssueId,
}

impl From<&ListedIssue> for IssueMade {
    fn from(issue: &ListedIssue) -> Self {
        IssueMade {
            number: IssueNumber::new(issue.number),
            id: IssueId::new(issue.id),
        }
    }
}

/// The fields of an issue to change; `None` leaves one as it is.
pub(crate) struct IssuePatch<'p> {
    pub title: Option<&'p str>,
    pub body: Option<&'p str>,
    pub labels: Option<&'p [String]>,
    pub state: Option<IssueState>,
}

impl<'p> IssuePatch<'p> {
    /// The patch an `UpdateIssue` effect's fields ask for.
    pub(crate) fn of(
        title: &'p Option<String>,
        body: &'p Option<String>,
        labels: &'p Option<Vec<String>>,
        state: Option<IssueState>,
    ) -> Self {
        IssuePatch {
            title: title.as_deref(),
            body: body.as_deref(),
            labels: labels.as_deref(),
            state,
        }
    }

    fn to_json(&self) -> Value {
        let mut patch = serde_json::Map::new();
        if let Some(title) = self.title {
            patch.insert("title".into(), json!(title));
        }
        if let Some(body) = self.body {
            patch.insert("body".into(), json!(fit_github_body(body)));
        }
        if let Some(labels) = self.labels {
            patch.insert("labels".into(), json!(labels));
        }
        let (state, reason) = match self.state {
            Some(IssueState::Open) => (Some("open"), None),
            Some(IssueState::ClosedCompleted) => (Some("closed"), Some("completed")),
            Some(IssueState::ClosedNotPlanned) => (Some("closed"), Some("not_planned")),
            None => (None, None),
        };
        if let Some(state) = state {
            patch.insert("state".into(), json!(state));
        }
        if let Some(reason) = reason {
            patch.insert("state_reason".into(), json!(reason));
        }
        Value::Object(patch)
    }
}

impl RepoClient<'_> {
    fn comments_path(&self, issue: IssueNumber) -> String {
        self.path(&format!("issues/{issue}/comments"))
    }

    /// The App's comment on `issue` holding `marker`, among those updated
    /// since `since_ms` when given.
    pub(crate) async fn find_comment(
        &self,
        own: &OwnApp,
        issue: IssueNumber,
        marker: &str,
        since_ms: Option<i64>,
    ) -> Result<Option<ListedComment>, GitHubError> {
        let list = self.comments_path(issue);
        find_by_marker(self.client, own, &list, marker, since_ms).await
    }

    pub(crate) async fn create_comment(
        &self,
        issue: IssueNumber,
        body: &str,
    ) -> Result<Created, GitHubError> {
        let body = json!({ "body": fit_github_body(body) });
        let call = format!("POST /issues/{issue}/comments");
        Created::read(
            &self.post(&self.comments_path(issue), Some(&body)).await?,
            &call,
        )
    }

    pub(crate) async fn update_comment(&self, id: u64, body: &str) -> Result<Created, GitHubError> {
        let body = json!({ "body": fit_github_body(body) });
        let path = self.path(&format!("issues/comments/{id}"));
        Created::read(
            &self.patch(&path, &body).await?,
            &format!("PATCH /issues/comments/{id}"),
        )
    }

    pub(crate) async fn react_to_comment(
        &self,
        comment: CommentId,
        reaction: Reaction,
    ) -> Result<(), GitHubError> {
        let path = self.path(&format!("issues/comments/{comment}/reactions"));
        self.post(&path, Some(&json!({ "content": reaction })))
            .await?;
        Ok(())
    }

    /// The App's issue labelled `label` (open or closed) holding `marker`.
    pub(crate) async fn find_issue(
        &self,
        own: &OwnApp,
        label: &str,
        marker: &str,
    ) -> Result<Option<ListedIssue>, GitHubError> {
        let list = self.path(&format!("issues?state=all&labels={label}"));
        find_by_marker(self.client, own, &list, marker, None).await
    }

    /// Opens an issue; GitHub's answer (its `number` and `id`).
    pub(crate) async fn create_issue(
        &self,
        title: &str,
        body: &str,
        labels: &[String],
        assignees: &[String],
    ) -> Result<IssueMade, GitHubError> {
        let mut payload =
            json!({ "title": title, "body": fit_github_body(body), "labels": labels });
        if !assignees.is_empty() {
            payload["assignees"] = json!(assignees);
        }
        self.post(&self.path("issues"), Some(&payload))
            .await?
            .answer("POST /issues")
    }

    /// Opens an issue with `assignees`; where GitHub refuses the whole
    /// issue for a login it cannot assign (422, `assignees` `invalid`),
    /// opens it without them. GitHub's answer, and the logins it refused
    /// (all of them when it does not name them).
    pub(crate) async fn create_issue_assigning(
        &self,
        title: &str,
        body: &str,
        labels: &[String],
        assignees: &[String],
    ) -> Result<(IssueMade, Vec<String>), GitHubError> {
        match self.create_issue(title, body, labels, assignees).await {
            Err(e) if !assignees.is_empty() => {
                let errors = e.validation_errors();
                let refused: Vec<&ValidationError> = errors
                    .iter()
                    .filter(|v| matches!(v.field.as_deref(), Some("assignees" | "assignee")))
                    .collect();
                if refused.is_empty() {
                    return Err(e);
                }
                let mut logins: Vec<String> = refused
                    .iter()
                    .filter_map(|v| v.value.as_ref()?.as_str().map(str::to_owned))
                    .collect();
                if logins.is_empty() {
                    logins = assignees.to_vec();
                }
                let created = self.create_issue(title, body, labels, &[]).await?;
                Ok((created, logins))
            }
            other => Ok((other?, Vec::new())),
        }
    }

    pub(crate) async fn update_issue(
        &self,
        issue: IssueNumber,
        patch: &IssuePatch<'_>,
    ) -> Result<(), GitHubError> {
        let path = self.path(&format!("issues/{issue}"));
        self.patch(&path, &patch.to_json()).await?;
        Ok(())
    }

    /// Creates a repository label; one that exists already is kept as is
    /// (someone, or a lost run, made it).
    pub(crate) async fn ensure_label(
        &self,
        name: &str,
        color: &str,
        description: &str,
    ) -> Result<(), GitHubError> {
        let body = json!({ "name": name, "color": color, "description": description });
        let answer = self.post(&self.path("labels"), Some(&body)).await;
        done_if_exists(answer, "already_exists")
    }

    pub(crate) async fn add_labels(
        &self,
        issue: IssueNumber,
        labels: &[String],
    ) -> Result<(), GitHubError> {
        let path = self.path(&format!("issues/{issue}/labels"));
        self.post(&path, Some(&json!({ "labels": labels }))).await?;
        Ok(())
    }

    /// Takes a label off an issue; one already gone is fine.
    pub(crate) async fn remove_label(
        &self,
        issue: IssueNumber,
        name: &str,
    ) -> Result<(), GitHubError> {
        let path = self.path(&format!("issues/{issue}/labels/{}", path_segment(name)));
        done_on(self.delete(&path).await, 404)
    }

    /// Takes `logins` off an issue's assignees (issues/remove-assignees);
    /// GitHub ignores one the issue does not carry.
    pub(crate) async fn remove_assignees(
        &self,
        issue: IssueNumber,
        logins: &[String],
    ) -> Result<(), GitHubError> {
        let path = self.path(&format!("issues/{issue}/assignees"));
        self.delete_with(&path, &json!({ "assignees": logins }))
            .await?;
        Ok(())
    }

    /// Makes `child` (by database id) a sub-issue of `parent`.
    pub(crate) async fn add_sub_issue(
        &self,
        parent: IssueNumber,
        child: IssueId,
        replace_parent: bool,
    ) -> Result<(), GitHubError> {
        let path = self.path(&format!("issues/{parent}/sub_issues"));
        let body = json!({ "sub_issue_id": child.get(), "replace_parent": replace_parent });
        self.post(&path, Some(&body)).await?;
        Ok(())
    }

    fn blocked_by_path(&self, issue: IssueNumber) -> String {
        self.path(&format!("issues/{issue}/dependencies/blocked_by"))
    }

    /// Whether `issue` is blocked by `blocker` (by database id) on
    /// GitHub now: one page of 100, GitHub's most dependencies an issue
    /// may have being 50.
    pub(crate) async fn is_blocked_by(
        &self,
        issue: IssueNumber,
        blocker: IssueId,
    ) -> Result<bool, GitHubError> {
        let path = format!("{}?per_page=100", self.blocked_by_path(issue));
        let blockers: Vec<IssueMade> = self
            .get(&path)
            .await?
            .answer(&format!("GET /issues/{issue}/dependencies/blocked_by"))?;
        Ok(blockers.iter().any(|b| b.id == blocker))
    }

    /// Marks `issue` blocked by `blocker` (by database id).
    pub(crate) async fn add_blocked_by(
        &self,
        issue: IssueNumber,
        blocker: IssueId,
    ) -> Result<(), GitHubError> {
        let body = json!({ "issue_id": blocker.get() });
        self.post(&self.blocked_by_path(issue), Some(&body)).await?;
        Ok(())
    }

    /// Removes a blocked-by link; one GitHub no longer has is fine.
    pub(crate) async fn remove_blocked_by(
        &self,
        issue: IssueNumber,
        blocker: IssueId,
    ) -> Result<(), GitHubError> {
        let path = format!("{}/{blocker}", self.blocked_by_path(issue));
        done_on(self.delete(&path).await, 404)
    }
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
    fn an_issue_patch_sends_only_what_changes() {
        let (title, none, labels) = (Some("T".to_owned()), None, Some(vec!["a".to_owned()]));
        let closed = IssuePatch::of(&title, &none, &labels, Some(IssueState::ClosedNotPlanned));
        assert_eq!(
            closed.to_json(),
            json!({ "title": "T", "labels": ["a"], "state": "closed", "state_reason": "not_planned" })
        );
        let open = IssuePatch::of(&none, &none, &None, Some(IssueState::Open));
        assert_eq!(open.to_json(), json!({ "state": "open" }));
    }

    #[test]
    fn label_names_are_encoded_as_one_path_segment() {
        assert_eq!(
            path_segment("taskgate: needs/review"),
            "taskgate%3A%20needs%2Freview"
        );
        assert_eq!(path_segment("a-b_c.d~e"), "a-b_c.d~e");
    }
}
