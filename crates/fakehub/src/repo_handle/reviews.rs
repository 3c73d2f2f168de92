//! `RepoHandle`'s pull request reviews: a person presses "Approve",
//! "Request changes" or "Comment", or dismisses a review, as on GitHub's
//! web page. Each goes through the same rules as the API
//! (`routes::reviews`) and sends the same `pull_request_review` webhook.

use crate::state::Review;
use crate::RepoHandle;

impl RepoHandle {
    /// `login` submits a review of pull request `pull`: `event` is
    /// `APPROVE`, `REQUEST_CHANGES` or `COMMENT`. Returns the review's id,
    /// or GitHub's refusal (`(status, message)`: an author's approval of
    /// their own pull request is 422).
    pub fn submit_review(
        &self,
        pull: u64,
        login: &str,
        event: &str,
        body: &str,
    ) -> Result<u64, (u16, String)> {
        self.state().user(login);
        self.act(|st, at| {
            crate::routes::reviews::submit(st, at, pull, (login, event, body)).map_err(refusal)
        })
    }

    /// `login` dismisses review `id` of pull request `pull`.
    pub fn dismiss_review(
        &self,
        pull: u64,
        id: u64,
        login: &str,
        message: &str,
    ) -> Result<(), (u16, String)> {
        self.state().user(login);
        self.act(|st, at| {
            crate::routes::reviews::dismiss(st, at, (pull, id), (login, message)).map_err(refusal)
        })
    }

    /// Pull request `pull`'s reviews, in the order submitted.
    pub fn reviews(&self, pull: u64) -> Vec<Review> {
        let st = self.state();
        st.repos[self.key()]
            .reviews
            .iter()
            .filter(|r| r.pull == pull)
            .cloned()
            .collect()
    }
}

fn refusal(reply: crate::routes::Reply) -> (u16, String) {
    let message = reply
        .body
        .as_ref()
        .and_then(|b| b.get("message"))
        .and_then(|m| m.as_str())
        .unwrap_or_default()
        .to_owned();
    (reply.status, message)
}
