//! Pull request reviews, as GitHub's REST API and review buttons make
//! them: "Approve", "Request changes", "Comment", and a maintainer's
//! dismissal.
//!
//! Owns: [`submit`] and [`dismiss`] (shared with `RepoHandle`, where a
//! person presses the buttons) and their routes: `GET/POST
//! /pulls/{n}/reviews`, `PUT /pulls/{n}/reviews/{id}/dismissals`.
//! Must not: decide what a review means to a merge (`state::rules`).
//!
//! GitHub's rules modelled here (REST docs, "Pull request reviews"):
//! - a review is of the pull request's head when submitted (`commit_id`);
//! - the author may not approve or request changes on their own pull
//!   request (422 "Can not approve your own pull request");
//! - "Request changes" and "Comment" need a body (422);
//! - only an approval or a change request can be dismissed (422
//!   otherwise); it becomes `DISMISSED`;
//! - a push dismisses the approvals of older heads where the base's
//!   `pull_request` rule has `dismiss_stale_reviews_on_push`
//!   ([`dismiss_stale`]; which ones: `state::approvals`).
//!
//! Writes echo `pull_request_review` `submitted` and `dismissed`.

use serde_json::{json, Value};

use super::issues::{repo, repo_mut};
use super::{inst, paginate, HResult, Reply, Req, Route};
use crate::emit::{self, At};
use crate::render;
use crate::state::{Review, State};

pub const ROUTES: &[Route] = &[
    inst(
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        list_reviews,
    ),
    inst(
        "POST",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        create_review,
    ),
    inst(
        "PUT",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals",
        dismiss_review,
    ),
];

/// GitHub's refusal of an author's approval of their own pull request.
pub const OWN_APPROVAL: &str = "Unprocessable Entity: Can not approve your own pull request";
/// GitHub's refusal of an author's change request on their own.
pub const OWN_CHANGES: &str =
    "Unprocessable Entity: Can not request changes on your own pull request";

/// The state a review `event` (`APPROVE`, `REQUEST_CHANGES`, `COMMENT`)
/// gives.
fn state_of(event: &str) -> Option<&'static str> {
    match event {
        "APPROVE" => Some("APPROVED"),
        "REQUEST_CHANGES" => Some("CHANGES_REQUESTED"),
        "COMMENT" => Some("COMMENTED"),
        _ => None,
    }
}

/// `login` submits a review of pull request `pull` (`event` as the API
/// spells it): refused as GitHub refuses it, else recorded at the head and
/// echoed. Returns the review's id.
pub(crate) fn submit(
    st: &mut State,
    at: At,
    pull: u64,
    (login, event, body): (&str, &str, &str),
) -> Result<u64, Reply> {
    let state = state_of(event).ok_or_else(|| {
        Reply::invalid(
            json!({"resource": "PullRequestReview", "field": "event", "code": "invalid"}),
        )
    })?;
    let r = &st.repos[at.key];
    let p = r.pulls.get(&pull).ok_or_else(Reply::not_found)?;
    if p.state != "open" {
        return Err(Reply::unprocessable(
            "Unprocessable Entity: Can not review a closed pull request",
        ));
    }
    match state {
        "APPROVED" if p.author == login => return Err(Reply::unprocessable(OWN_APPROVAL)),
        "CHANGES_REQUESTED" if p.author == login => return Err(Reply::unprocessable(OWN_CHANGES)),
        "CHANGES_REQUESTED" | "COMMENTED" if body.trim().is_empty() => {
            return Err(Reply::invalid(
                json!({"resource": "PullRequestReview", "field": "body", "code": "missing_field"}),
            ))
        }
        _ => {}
    }
    let commit_id = r
        .branches
        .get(&p.head)
        .cloned()
        .ok_or_else(Reply::not_found)?;
    let id = st.ids.next();
    let review = Review {
        id,
        pull,
        user: login.to_owned(),
        body: body.to_owned(),
        state: state.to_owned(),
        commit_id,
        submitted_at: st.clock.now(),
    };
    let repo = st.repos.get_mut(at.key).expect("repository exists");
    repo.reviews.push(review);
    emit::review(st, at, ("submitted", pull, id), login);
    Ok(id)
}

/// `login` dismisses review `id` of pull request `pull` with `message`.
pub(crate) fn dismiss(
    st: &mut State,
    at: At,
    (pull, id): (u64, u64),
    (login, message): (&str, &str),
) -> Result<(), Reply> {
    let repo = st.repos.get_mut(at.key).expect("repository exists");
    let review = repo
        .reviews
        .iter_mut()
        .find(|r| r.id == id && r.pull == pull)
        .ok_or_else(Reply::not_found)?;
    if !matches!(review.state.as_str(), "APPROVED" | "CHANGES_REQUESTED") {
        return Err(Reply::unprocessable(&format!(
            "Unprocessable Entity: Can not dismiss a {} pull request review",
            review.state.to_lowercase()
        )));
    }
    review.state = "DISMISSED".into();
    emit::review(st, at, ("dismissed", pull, id), login);
    let _ = message;
    Ok(())
}

/// `branch` moved to `after` by `sender`'s push: where the base's rules
/// dismiss stale approvals, the open pull requests' approvals of older
/// heads become `DISMISSED`, each with a `dismissed` webhook.
pub(crate) fn dismiss_stale(st: &mut State, at: At, (branch, after): (&str, &str), sender: &str) {
    let stale = st.repos[at.key].stale_approvals(branch, after);
    for (pull, id) in stale {
        let repo = st.repos.get_mut(at.key).expect("repository exists");
        if let Some(r) = repo.reviews.iter_mut().find(|r| r.id == id) {
            r.state = "DISMISSED".into();
        }
        emit::review(st, at, ("dismissed", pull, id), sender);
    }
}

fn review_json(st: &State, req: &Req, id: u64) -> Result<Value, Reply> {
    let repo = repo(st, req)?;
    let review = repo
        .reviews
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(Reply::not_found)?;
    Ok(render::review(st, &req.base, repo, review))
}

fn list_reviews(st: &mut State, req: &Req) -> HResult {
    let pull = req.num("pull_number")?;
    let repo = repo(st, req)?;
    if !repo.pulls.contains_key(&pull) {
        return Err(Reply::not_found());
    }
    let items = repo
        .reviews
        .iter()
        .filter(|r| r.pull == pull)
        .map(|r| render::review(st, &req.base, repo, r))
        .collect();
    Ok(paginate(req, items))
}

fn create_review(st: &mut State, req: &Req) -> HResult {
    let pull = req.num("pull_number")?;
    let login = req.actor(st);
    let (_, _) = repo_mut(st, req)?;
    let key = req.repo_key();
    // Without `event` a review is left pending; taskgate never does that.
    let event = req.str_field("event").unwrap_or("COMMENT");
    let body = req.str_field("body").unwrap_or_default();
    let id = submit(st, req.at(&key), pull, (&login, event, body))?;
    Ok(Reply::ok(review_json(st, req, id)?))
}

fn dismiss_review(st: &mut State, req: &Req) -> HResult {
    let pull = req.num("pull_number")?;
    let id = req.num("review_id")?;
    let login = req.actor(st);
    let (_, _) = repo_mut(st, req)?;
    let key = req.repo_key();
    let message = req.str_field("message").unwrap_or_default();
    dismiss(st, req.at(&key), (pull, id), (&login, message))?;
    Ok(Reply::ok(review_json(st, req, id)?))
}
