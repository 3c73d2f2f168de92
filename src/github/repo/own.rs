//! Which issues and comments are taskgate's own: made by its App.
//!
//! Owns: the one test every read-back uses before taking a marker at its
//! word (the executor's marker recovery, `resync`, the first sync's read
//! back). A marker is text: anyone who can comment can paste one, and any
//! other App's bot can write one, so a marker says which object an item
//! claims to be, and this says whether taskgate made it.
//! Must not: call GitHub (the App's slug is learnt once, at start, by
//! `GitHubApp::app_info`).

use serde_json::Value;

/// taskgate's App, as GitHub names it on what it made: its id (in
/// `performed_via_github_app.id`) and, once known, its bot account
/// (`<app-slug>[bot]`, the item's `user.login`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnApp {
    pub app_id: u64,
    pub bot_login: Option<String>,
}

impl OwnApp {
    /// Whether GitHub says the App made `item` (an issue or a comment as
    /// the REST API lists it): performed via the App, or written by its bot.
    pub fn made(&self, item: &Value) -> bool {
        let via_app = item["performed_via_github_app"]["id"].as_u64() == Some(self.app_id);
        let by_bot = match (&self.bot_login, item["user"]["login"].as_str()) {
            (Some(bot), Some(login)) => {
                item["user"]["type"].as_str() == Some("Bot") && login.eq_ignore_ascii_case(bot)
            }
            _ => false,
        };
        via_app || by_bot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(login: &str, kind: &str, via: Option<u64>) -> Value {
        let via = via.map_or(Value::Null, |id| json!({ "id": id }));
        json!({ "user": { "login": login, "type": kind }, "performed_via_github_app": via })
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
        let unnamed = OwnApp {
            app_id: 7,
            bot_login: None,
        };
        assert!(unnamed.made(&item("taskgate[bot]", "Bot", Some(7))));
        assert!(!unnamed.made(&item("taskgate[bot]", "Bot", None)));
    }
}
