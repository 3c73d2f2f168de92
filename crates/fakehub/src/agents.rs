//! The coding agents people run on GitHub, played as bot users that react
//! to their documented trigger (docs/decisions/agents.md): GitHub's Copilot
//! coding agent (`copilot-swe-agent[bot]`) when an issue is assigned to it,
//! Claude Code's action or the OpenHands resolver when a comment mentions
//! their handle or an issue gets their label, anything else when its
//! workflow is dispatched.
//!
//! Owns: the agents a test registered ([`FakeGitHub::add_agent`]), noticing
//! a trigger when the write that fires it is applied (`emit` calls
//! [`heard`] under the state lock), recording what reached the agent
//! ([`AgentCall`]: the issue's body, the comment or the dispatch's inputs),
//! and, once the write's lock is released ([`react`]), pushing the agent's
//! commit as the bot, so it arrives as the `push` webhook GitHub sends.
//! Must not: decide anything for the bot under test, or fire on a write
//! GitHub would not start the agent for.
//!
//! Copilot and installation tokens: GitHub assigns an issue to Copilot only
//! for a user token ("Make sure you're authenticating with the API using a
//! user token", docs.github.com, copilot/how-tos/use-copilot-agents/
//! coding-agent/create-a-pr; "Server-to-server tokens, such as GitHub App
//! installation access tokens, are not supported", .../cloud-agent/
//! use-cloud-agent-via-the-api). The fake's API callers are installations,
//! so it does what the assignees field documents for an assignee the caller
//! cannot set: "Assignees are silently ignored otherwise" (GitHub's OpenAPI
//! description of `POST /repos/{owner}/{repo}/issues/{issue_number}/assignees`):
//! the write succeeds, Copilot is not among the assignees, and no agent
//! starts ([`drop_copilot`]).

use std::sync::Arc;

use crate::emit::At;
use crate::state::{Authorship, GitActor, State};
use crate::{FakeGitHub, RepoHandle, Shared};

/// Copilot coding agent's bot account, the login an issue is assigned to.
pub const COPILOT: &str = "copilot-swe-agent[bot]";

/// What starts an agent, as GitHub fires it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentTrigger {
    /// The issue is assigned to the agent's bot user.
    Assigned,
    /// A comment mentions this handle (`@claude`), as a whole word, not
    /// written by the agent itself.
    Mention(String),
    /// The issue gets this label (`fix-me`).
    Label(String),
    /// This workflow file is dispatched (`workflow_dispatch`).
    Dispatch(String),
}

/// What reached an agent when it was started.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentCall {
    /// The agent's bot login.
    pub agent: String,
    pub repo: String,
    /// The issue it was started on (none for a dispatch).
    pub issue: Option<u64>,
    /// That issue's body when it started.
    pub issue_body: Option<String>,
    /// The comment that mentioned it, or the dispatch's inputs (JSON).
    pub instructions: Option<String>,
    /// The dispatch's branch (none for an issue trigger).
    pub branch: Option<String>,
    /// The base branch the assigner chose for Copilot (GitHub's
    /// assignment dialog, or `agent_assignment.base_branch`); `None`: the
    /// repository's default branch, as GitHub documents.
    pub base: Option<String>,
}

/// A commit an agent pushes: `files` (path, content) on `branch`.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentPush {
    pub branch: String,
    pub files: Vec<(String, String)>,
    pub message: String,
}

impl AgentPush {
    pub fn to(branch: &str, files: &[(&str, &str)]) -> AgentPush {
        AgentPush {
            branch: branch.to_owned(),
            files: files
                .iter()
                .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
                .collect(),
            message: "Fix the failure".to_owned(),
        }
    }
}

/// How an agent answers a call: the commit it pushes, if any.
pub type AgentReaction = Arc<dyn Fn(&AgentCall) -> Option<AgentPush> + Send + Sync>;

struct Agent {
    login: String,
    repo: String,
    trigger: AgentTrigger,
    reaction: AgentReaction,
    works: Works,
}

/// Where an agent's work lands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Works {
    /// On the branch its [`AgentPush`] names (the actions that push to the
    /// branch they are told of).
    Pushes,
    /// On a branch of its own with its own pull request, as Copilot's
    /// coding agent does (`crate::copilot`).
    OwnPull,
}

/// The registered agents, every call, and the calls still to answer.
#[derive(Default)]
pub struct Agents {
    agents: Vec<Agent>,
    calls: Vec<AgentCall>,
    /// (call, agent) by index, oldest first.
    due: Vec<(usize, usize)>,
    /// The base branch a person chose in the assignment they are making
    /// (`RepoHandle::assign_copilot`), taken by the assignment's start.
    pub(crate) chosen_base: Option<String>,
}

/// A write that may start an agent.
pub(crate) enum Heard<'a> {
    Assigned(&'a str),
    Labeled(&'a str),
    Comment {
        body: &'a str,
        author: &'a str,
    },
    Dispatch {
        file: &'a str,
        branch: &'a str,
        inputs: String,
    },
}

impl FakeGitHub {
    /// Registers `login` (a bot user, `<name>[bot]`, or [`COPILOT`]) as an
    /// agent on repository `repo` that starts on `trigger` and answers
    /// with `reaction` (called once per start, outside the state lock).
    pub fn add_agent(
        &self,
        repo: &str,
        login: &str,
        trigger: AgentTrigger,
        reaction: impl Fn(&AgentCall) -> Option<AgentPush> + Send + Sync + 'static,
    ) {
        self.register_agent(repo, login, trigger, Arc::new(reaction), Works::Pushes);
    }

    /// Registers GitHub's Copilot coding agent on `repo` as GitHub runs it:
    /// assigned an issue, it works on a branch of its own, `copilot/<slug>`
    /// from the base branch the assigner chose, and opens its own pull
    /// request linking the issue (`crate::copilot`). `reaction` gives the
    /// files of its commit; the branch its [`AgentPush`] names is ignored.
    pub fn add_copilot(
        &self,
        repo: &str,
        reaction: impl Fn(&AgentCall) -> Option<AgentPush> + Send + Sync + 'static,
    ) {
        let trigger = AgentTrigger::Assigned;
        self.register_agent(repo, COPILOT, trigger, Arc::new(reaction), Works::OwnPull);
    }

    fn register_agent(
        &self,
        repo: &str,
        login: &str,
        trigger: AgentTrigger,
        reaction: AgentReaction,
        works: Works,
    ) {
        let mut st = self.inner.lock();
        st.user(login);
        st.agents.agents.push(Agent {
            login: login.to_owned(),
            repo: repo.to_lowercase(),
            trigger,
            reaction,
            works,
        });
    }

    /// Every start of every agent, oldest first.
    pub fn agent_calls(&self) -> Vec<AgentCall> {
        self.inner.lock().agents.calls.clone()
    }
}

impl RepoHandle {
    /// A person with write access assigns issue `number` to `login` (as in
    /// the web page, so Copilot can be assigned): sends `issues` assigned.
    pub fn assign(&self, number: u64, login: &str, by: &str) {
        self.assign_with_base(number, login, by, None);
    }

    /// A person assigns issue `number` to Copilot in the web page's dialog,
    /// picking `base` as the branch Copilot branches off from (GitHub's
    /// "branch that it will branch off from"; `None`: left at the
    /// repository's default branch).
    pub fn assign_copilot(&self, number: u64, by: &str, base: Option<&str>) {
        self.assign_with_base(number, COPILOT, by, base);
    }

    fn assign_with_base(&self, number: u64, login: &str, by: &str, base: Option<&str>) {
        self.act(|st, at| {
            st.user(by);
            st.agents.chosen_base = base.map(str::to_owned);
            let issue = st
                .repos
                .get_mut(at.key)
                .and_then(|r| r.issues.get_mut(&number))
                .expect("issue exists");
            let before = issue.clone();
            if !issue.assignees.iter().any(|a| a == login) {
                issue.assignees.push(login.to_owned());
            }
            crate::emit::issue_changed(st, at, number, by, &before);
            st.agents.chosen_base = None;
        });
    }
}

/// Drops Copilot from the assignees an installation token asks for: GitHub
/// does not assign Copilot for a server-to-server token, silently.
pub(crate) fn drop_copilot(assignees: &mut Vec<String>) {
    assignees.retain(|a| !a.eq_ignore_ascii_case(COPILOT));
}

/// Notes the agents `what` starts, on issue `issue` of the repository at
/// `at` (none for a dispatch).
pub(crate) fn heard(st: &mut State, at: At, issue: Option<u64>, what: &Heard) {
    let issue_body = issue.and_then(|n| st.repos[at.key].issues.get(&n)?.body.clone());
    let base = match what {
        Heard::Assigned(_) => st.agents.chosen_base.clone(),
        _ => None,
    };
    let mut started = Vec::new();
    for (i, a) in st.agents.agents.iter().enumerate() {
        if a.repo != at.key || !fires(a, what) {
            continue;
        }
        let (instructions, branch) = match what {
            Heard::Comment { body, .. } => (Some((*body).to_owned()), None),
            Heard::Dispatch { inputs, branch, .. } => {
                (Some(inputs.clone()), Some((*branch).to_owned()))
            }
            _ => (None, None),
        };
        started.push((
            i,
            AgentCall {
                agent: a.login.clone(),
                repo: a.repo.clone(),
                issue,
                issue_body: issue_body.clone(),
                instructions,
                branch,
                base: base.clone(),
            },
        ));
    }
    for (agent, call) in started {
        st.agents.due.push((st.agents.calls.len(), agent));
        st.agents.calls.push(call);
    }
}

fn fires(a: &Agent, what: &Heard) -> bool {
    match (&a.trigger, what) {
        (AgentTrigger::Assigned, Heard::Assigned(login)) => login.eq_ignore_ascii_case(&a.login),
        (AgentTrigger::Label(want), Heard::Labeled(name)) => want.eq_ignore_ascii_case(name),
        (AgentTrigger::Mention(handle), Heard::Comment { body, author }) => {
            !author.eq_ignore_ascii_case(&a.login) && mentions(body, handle)
        }
        (AgentTrigger::Dispatch(want), Heard::Dispatch { file, .. }) => want == file,
        _ => false,
    }
}

/// Whether `body` holds `handle` as a whole word (`@claude`, not
/// `@claudette` nor `x@claude`).
fn mentions(body: &str, handle: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    body.match_indices(handle).any(|(i, _)| {
        let before = body[..i].chars().next_back();
        let after = body[i + handle.len()..].chars().next();
        !before.is_some_and(|c| word(c) || c == '@') && !after.is_some_and(word)
    })
}

/// Answers the calls the last write started: each agent's reaction runs
/// outside the lock and its commit is pushed as the agent.
pub(crate) fn react(shared: &Arc<Shared>) {
    loop {
        let next = {
            let mut st = shared.lock();
            if st.agents.due.is_empty() {
                return;
            }
            let (call, agent) = st.agents.due.remove(0);
            let agent = &st.agents.agents[agent];
            let (reaction, works) = (agent.reaction.clone(), agent.works);
            (st.agents.calls[call].clone(), reaction, works)
        };
        let (call, reaction, works) = next;
        let Some(push) = reaction(&call) else {
            continue;
        };
        let repo = RepoHandle::new(shared.clone(), call.repo.clone());
        match works {
            Works::Pushes => repo.agent_push(&push, &call.agent),
            Works::OwnPull => crate::copilot::open_own_pull(&repo, &call, &push),
        }
    }
}

impl RepoHandle {
    /// `push` as one commit written and pushed by the agent `login`: its
    /// author and committer are the bot (`<id>+<login>@users.noreply.github.com`,
    /// as GitHub writes a bot's commits), and it sends `push` as any push.
    fn agent_push(&self, push: &AgentPush, login: &str) {
        self.agent_commit(push, login, None);
    }

    /// [`RepoHandle::agent_push`] onto `push.branch`, which starts at the
    /// commit `from` when it does not exist yet (the default branch's head
    /// when `from` is `None`).
    pub(crate) fn agent_commit(&self, push: &AgentPush, login: &str, from: Option<&str>) {
        let id = self.shared().lock().user(login).id;
        let before = self.branch_sha(&push.branch);
        let changes: Vec<(&str, Option<&str>)> = push
            .files
            .iter()
            .map(|(p, c)| (p.as_str(), Some(c.as_str())))
            .collect();
        self.write(|r, _| {
            if let (None, Some(from)) = (&before, from) {
                r.branches.insert(push.branch.clone(), from.to_owned());
            }
            let sha = r.commit_changes(&push.branch, &changes, &push.message);
            if let Some(c) = r.commits.get_mut(&sha) {
                let who = GitActor {
                    name: login.to_owned(),
                    email: format!("{id}+{login}@users.noreply.github.com"),
                    date: c.date,
                };
                let committer = who.clone();
                c.authorship = Some(Authorship {
                    author: who,
                    committer,
                });
            }
        });
        self.act(|st, at| crate::emit::branch_moved(st, at, &push.branch, before, login));
    }
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn a_mention_is_the_handle_as_a_whole_word() {
        assert!(mentions("@claude please fix", "@claude"));
        assert!(mentions("Please, @claude.", "@claude"));
        assert!(!mentions("@claudette", "@claude"));
        assert!(!mentions("mail x@claude", "@claude"));
        assert!(!mentions("@@claude", "@claude"));
    }
}
