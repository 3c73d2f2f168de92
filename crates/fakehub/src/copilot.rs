//! GitHub's Copilot coding agent working as GitHub documents it
//! (docs.github.com, copilot/how-tos/use-copilot-agents/coding-agent/
//! create-a-pr and review-copilot-prs): assigned an issue, it works on a
//! branch of its own, `copilot/<slug>`, made from the branch the assigner
//! picked in the assignment dialog ("the branch that it will branch off
//! from"; "If you don't specify a branch, Copilot will work from the
//! default branch"), opens a draft pull request into that branch whose body
//! links the issue with a closing keyword, pushes its work there, and marks
//! the pull request ready when it is done (it then requests the assigner's
//! review, which fakehub does not model: it has no review requests).
//!
//! Owns: the steps of one Copilot session, each a write GitHub would send
//! webhooks for, with Copilot's bot as the sender: `create` and `push` of
//! its branch (an "Initial plan" commit), `pull_request` opened (draft),
//! `push` + `pull_request` synchronize (its work), `pull_request` edited
//! (the `[WIP] ` prefix dropped) and `ready_for_review`.
//! Must not: start the session (`crate::agents` notices the assignment)
//! or merge anything: merging is the reviewers' (or the App's) call.

use crate::agents::{AgentCall, AgentPush, COPILOT};
use crate::RepoHandle;

/// One Copilot session for `call` (an assignment), its work `push`'s
/// files and message.
pub(crate) fn open_own_pull(repo: &RepoHandle, call: &AgentCall, push: &AgentPush) {
    let Some(number) = call.issue else { return };
    let Some(issue) = repo.issue(number) else {
        return;
    };
    let base = call.base.clone().unwrap_or_else(|| repo.default_branch());
    let Some(from) = repo.branch_sha(&base) else {
        return;
    };
    let branch = free_branch(repo, &slug(&issue.title));
    let plan = AgentPush {
        branch: branch.clone(),
        files: vec![],
        message: "Initial plan".to_owned(),
    };
    repo.agent_commit(&plan, COPILOT, Some(&from));
    let wip = format!("[WIP] {}", issue.title);
    let body = format!("Fixes #{number}.\n\nCopilot is working on this issue.");
    let pull = repo.open_pull((&branch, &base), &wip, Some(&body), COPILOT, true);
    let work = AgentPush {
        branch: branch.clone(),
        ..push.clone()
    };
    repo.agent_commit(&work, COPILOT, None);
    let done = format!("Fixes #{number}.\n\n{}", work.message);
    repo.edit_pull(pull, &issue.title, &done, COPILOT);
    repo.set_draft(pull, false, COPILOT);
}

impl RepoHandle {
    /// The repository's default branch.
    pub fn default_branch(&self) -> String {
        let key = self.key().to_owned();
        self.state().repos[&key].default_branch.clone()
    }

    /// `login` edits pull request `number`'s title and body. Sends
    /// `pull_request` edited (with `changes`).
    pub fn edit_pull(&self, number: u64, title: &str, body: &str, login: &str) {
        self.state().user(login);
        self.act(|st, at| {
            let r = st.repos.get_mut(at.key).expect("repository exists");
            let Some(p) = r.pulls.get_mut(&number) else {
                return;
            };
            let before = p.clone();
            p.title = title.to_owned();
            p.body = Some(body.to_owned());
            if let Some(issue) = r.issues.get_mut(&number) {
                issue.title = title.to_owned();
                issue.body = Some(body.to_owned());
            }
            crate::emit::pull_changed(st, at, number, login, &before);
        });
    }
}

/// `copilot/<words of the title>`, lower case, joined by `-`, at most
/// five words.
fn slug(title: &str) -> String {
    let words: Vec<String> = title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(5)
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() {
        return "copilot/fix".to_owned();
    }
    format!("copilot/{}", words.join("-"))
}

/// `name`, or `name-2`, `name-3`, … when a branch has it already.
fn free_branch(repo: &RepoHandle, name: &str) -> String {
    (1..)
        .map(|n| match n {
            1 => name.to_owned(),
            _ => format!("{name}-{n}"),
        })
        .find(|b| repo.branch_sha(b).is_none())
        .expect("some name is free")
}

#[cfg(test)]
mod tests {
    use super::slug;

    #[test]
    fn copilots_branch_is_named_after_the_issue() {
        assert_eq!(
            slug("Debug Make the check pass: test_failure"),
            "copilot/debug-make-the-check-pass"
        );
        assert_eq!(slug("!!!"), "copilot/fix");
    }
}
