//! Which issues and comments are taskgate's own: made by its App.
//!
//! Owns: the one test every read-back uses before taking a marker at its
//! word (the executor's marker recovery, `resync`, the first sync's read
//! back), and the typed shapes of an issue and a comment as GitHub lists
//! them. A marker is text: anyone who can comment can paste one, and any
//! other App's bot can write one, so a marker says which object an item
//! claims to be, and this says whether taskgate made it.
//! Must not: call GitHub (the App's slug is learnt once, at start, by
//! `GitHubApp::app_info`).

use serde::Deserialize;

/// taskgate's App, as GitHub names it on what it made: its id (in
/// `performed_via_github_app.id`) and, once known, its bot account
/// (`<app-slug>[bot]`, the item's `user.login`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnApp {
    pub app_id: u64,
    pub bot_login: Option<String>,
}

/// Who made an issue or a comment, as GitHub lists it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Authorship {
    /// Nullable in GitHub's schema (`simple-user` or null: a deleted
    /// account): such an item is nobody's, so not taskgate's.
    #[serde(default)]
    pub user: Option<Actor>,
    /// Nullable in GitHub's schema: set only on what an App made.
    #[serde(default)]
    pub performed_via_github_app: Option<AppRef>,
}

/// An item's `user`: its login and account type (`User`, `Bot`, …).
#[derive(Debug, Clone, Deserialize)]
pub struct Actor {
    pub login: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// An item's `performed_via_github_app`: the App's id.
#[derive(Debug, Clone, Deserialize)]
pub struct AppRef {
    pub id: u64,
}

/// An issue as `GET /repos/{o}/{r}/issues` lists it, as far as taskgate
/// reads one.
#[derive(Debug, Clone, Deserialize)]
pub struct ListedIssue {
    pub id: u64,
    pub number: u64,
    pub title: String,
    /// Nullable in GitHub's schema: an issue opened without a body.
    #[serde(default)]
    pub body: Option<String>,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub labels: Vec<ListedLabel>,
    #[serde(flatten)]
    pub made_by: Authorship,
}

/// A label on a listed issue. GitHub's schema allows a label as a bare
/// string too (`oneOf`); the issues API answers objects.
#[derive(Debug, Clone, Deserialize)]
pub struct ListedLabel {
    pub name: String,
}

/// A comment as `GET …/issues/{n}/comments` lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct ListedComment {
    pub id: u64,
    /// Optional in GitHub's schema (`issue-comment.body` is not required).
    #[serde(default)]
    pub body: Option<String>,
    pub html_url: String,
    #[serde(flatten)]
    pub made_by: Authorship,
}

/// An item listed by a page that holds markers: its body and who made it.
pub(crate) trait Marked {
    fn body(&self) -> Option<&str>;
    fn made_by(&self) -> &Authorship;
}

impl Marked for ListedIssue {
    fn body(&self) -> Option<&str> {
        self.body.as_deref()
    }
    fn made_by(&self) -> &Authorship {
        &self.made_by
    }
}

impl Marked for ListedComment {
    fn body(&self) -> Option<&str> {
        self.body.as_deref()
    }
    fn made_by(&self) -> &Authorship {
        &self.made_by
    }
}

impl OwnApp {
    /// Whether GitHub says the App made an item (an issue or a comment as
    /// the REST API lists it): performed via the App, or written by its bot.
    pub fn made(&self, item: &Authorship) -> bool {
        let via_app = item
            .performed_via_github_app
            .as_ref()
            .is_some_and(|app| app.id == self.app_id);
        let by_bot = match (&self.bot_login, &item.user) {
            (Some(bot), Some(user)) => user.kind == "Bot" && user.login.eq_ignore_ascii_case(bot),
            _ => false,
        };
        via_app || by_bot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn item(login: &str, kind: &str, via: Option<u64>) -> Authorship {
        let via = via.map_or(Value::Null, |id| json!({ "id": id }));
        serde_json::from_value(
            json!({ "user": { "login": login, "type": kind }, "performed_via_github_app": via }),
        )
        .unwrap()
    }

    #[test]
    fn only_the_apps_own_items_are_its() {
        let own = OwnApp {
            app_id: 7,
            bot_login: Some("taskgate[bot]".into()),
        };
        assert!(own.made(&item("taskgate[bot]", "Bot", Some(7))));
        assert!(own.made(&item("taskgate[bot]", "Bot", None)), "by its bot");
        assert!(
            own.made(&item("Taskgate[bot]", "Bot", None)),
            "logins ignore case"
        );
        assert!(own.made(&item("someone", "User", Some(7))), "via the App");
        assert!(
            !own.made(&item("other[bot]", "Bot", Some(8))),
            "another App"
        );
        assert!(!own.made(&item("other[bot]", "Bot", None)));
        assert!(!own.made(&item("octocat", "User", None)), "a person");
        assert!(!own.made(&Authorship::default()), "a deleted account");
        let unnamed = OwnApp {
            app_id: 7,
            bot_login: None,
        };
        assert!(unnamed.made(&item("taskgate[bot]", "Bot", Some(7))));
        assert!(!unnamed.made(&item("taskgate[bot]", "Bot", None)));
    }

    /// GitHub's documented example of a listed issue comment (REST docs,
    /// "List issue comments"), trimmed to a few fields beyond those read.
    const COMMENT: &str = r#"{
      "id": 1, "node_id": "MDEyOklzc3VlQ29tbWVudDE=",
      "url": "https://api.github.com/repos/octocat/Hello-World/issues/comments/1",
      "html_url": "https://github.com/octocat/Hello-World/issues/1347#issuecomment-1",
      "body": "Me too",
      "user": {"login": "octocat", "id": 1, "type": "User", "site_admin": false},
      "created_at": "2011-04-14T16:00:49Z", "updated_at": "2011-04-14T16:00:49Z",
      "issue_url": "https://api.github.com/repos/octocat/Hello-World/issues/1347",
      "author_association": "COLLABORATOR",
      "performed_via_github_app": null
    }"#;

    /// GitHub's documented example of a listed issue, trimmed likewise.
    const ISSUE: &str = r#"{
      "id": 1, "node_id": "MDU6SXNzdWUx", "number": 1347, "state": "open",
      "title": "Found a bug", "body": "I'm having a problem with this.",
      "user": {"login": "octocat", "id": 1, "type": "User"},
      "labels": [{"id": 208045946, "name": "bug", "color": "f29513", "default": true}],
      "locked": true, "comments": 0, "pull_request": null,
      "closed_at": null, "created_at": "2011-04-22T13:33:48Z",
      "performed_via_github_app": null
    }"#;

    #[test]
    fn listed_issues_and_comments_are_read_from_githubs_examples() {
        let comment: ListedComment = serde_json::from_str(COMMENT).unwrap();
        assert_eq!((comment.id, comment.body.as_deref()), (1, Some("Me too")));
        assert_eq!(comment.made_by.user.unwrap().login, "octocat");
        let issue: ListedIssue = serde_json::from_str(ISSUE).unwrap();
        assert_eq!((issue.number, issue.state.as_str()), (1347, "open"));
        assert_eq!(issue.labels[0].name, "bug");
        let without_body = json!({"id": 2, "number": 3, "title": "T", "body": null, "state": "closed", "user": null});
        let issue: ListedIssue = serde_json::from_value(without_body).unwrap();
        assert_eq!(issue.body, None, "GitHub's body is nullable");
    }

    #[test]
    fn a_listed_item_missing_a_field_taskgate_reads_is_an_error_naming_the_call() {
        let response = crate::github::ApiResponse {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: json!([{"id": 1, "title": "T", "state": "open"}])
                .to_string()
                .into(),
        };
        let err = response
            .answer::<Vec<ListedIssue>>("GET /issues")
            .unwrap_err();
        insta::assert_snapshot!(err, @"unexpected answer from GitHub: GET /issues: missing field `number` at line 1 column 36");
    }
}
