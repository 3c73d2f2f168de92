//! Branch rules as GitHub applies them: repository rulesets and classic
//! branch protection, the actors that may bypass them, and the violations
//! an update of a branch (a ref update, a server-side merge, a pull
//! request's merge) runs into.
//!
//! Owns: the rules' plain data, which rules apply to a branch, and the
//! violation lines GitHub writes (one sentence per broken rule).
//! Must not: answer HTTP or pick a status (`routes::rules` and the ref,
//! merge and pull routes do: a ref update is 422, a server-side merge
//! 409, a pull request's merge 405).
//!
//! Two ideas a reader needs:
//! - **Rulesets and classic protection say the same thing in two
//!   voices.** A ruleset's refusal starts "Repository rule violations
//!   found" and lists one violation a paragraph; classic protection
//!   gives the violations alone, on one line. Only rulesets are listed by
//!   `GET /rules/branches/{branch}`; both make a branch `protected`.
//! - **Who acts decides.** An installation token acts as its App; a bypass
//!   actor (the App by its id, or a named user) is let through every rule
//!   of that ruleset.

use super::Repo;

/// One rule of a ruleset (GitHub's rule `type` in brackets).
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// Changes through a pull request only (`pull_request`), with this
    /// many approving reviews and these merge methods allowed (empty:
    /// every method); `code_owners`: an approval from a code owner of
    /// each changed path (`require_code_owner_review`); `last_push`: the
    /// last pusher's own approval does not count
    /// (`require_last_push_approval`); `dismiss_stale`: a push dismisses
    /// the approvals of older heads (`dismiss_stale_reviews_on_push`).
    /// The review half is judged in `state::approvals`.
    PullRequest {
        required_approvals: u32,
        allowed_merge_methods: Vec<String>,
        code_owners: bool,
        last_push: bool,
        dismiss_stale: bool,
    },
    /// These checks, by context name, must have passed on the new head
    /// (`required_status_checks`).
    RequiredStatusChecks(Vec<String>),
    /// No merge commits (`required_linear_history`).
    RequiredLinearHistory,
    /// No forced updates (`non_fast_forward`).
    NonFastForward,
    /// The branch may not be deleted (`deletion`).
    Deletion,
    /// Only those who may bypass the ruleset may create a matching branch
    /// (`creation`, "Restrict creations").
    Creation,
    /// Changes through GitHub's merge queue only (`merge_queue`), with
    /// GitHub's default parameters: `MERGE`, `ALLGREEN`.
    MergeQueue,
    /// Changes through GitHub's merge queue only (`merge_queue`), its
    /// groups built by `merge_method` (`MERGE`, `SQUASH`, `REBASE`) and
    /// landed by `grouping_strategy` (`ALLGREEN`, `HEADGREEN`; the fake
    /// lands each group on its own checks either way).
    MergeQueueBy {
        merge_method: String,
        grouping_strategy: String,
    },
}

impl Rule {
    /// A pull request rule with no reviews required and every method.
    pub fn pull_request() -> Rule {
        Rule::approvals(0)
    }

    /// A pull request rule requiring `n` approving reviews, every method.
    pub fn approvals(n: u32) -> Rule {
        Rule::PullRequest {
            required_approvals: n,
            allowed_merge_methods: vec![],
            code_owners: false,
            last_push: false,
            dismiss_stale: false,
        }
    }

    /// This pull request rule with only `methods` allowed.
    pub fn methods(mut self, methods: &[&str]) -> Rule {
        if let Rule::PullRequest {
            allowed_merge_methods,
            ..
        } = &mut self
        {
            *allowed_merge_methods = methods.iter().map(|m| (*m).to_owned()).collect();
        }
        self
    }

    /// This pull request rule also requiring a code owner's approval.
    pub fn code_owners(mut self) -> Rule {
        if let Rule::PullRequest { code_owners, .. } = &mut self {
            *code_owners = true;
        }
        self
    }

    /// This pull request rule not counting the last pusher's approval.
    pub fn last_push(mut self) -> Rule {
        if let Rule::PullRequest { last_push, .. } = &mut self {
            *last_push = true;
        }
        self
    }

    /// This pull request rule dismissing stale approvals on a push.
    pub fn dismiss_stale(mut self) -> Rule {
        if let Rule::PullRequest { dismiss_stale, .. } = &mut self {
            *dismiss_stale = true;
        }
        self
    }

    /// Required status checks, by context name.
    pub fn required_checks(contexts: &[&str]) -> Rule {
        Rule::RequiredStatusChecks(contexts.iter().map(|c| (*c).to_owned()).collect())
    }

    /// A merge queue building its groups by `merge_method` (`MERGE`,
    /// `SQUASH`, `REBASE`), grouping `ALLGREEN`.
    pub fn merge_queue(merge_method: &str) -> Rule {
        Rule::MergeQueueBy {
            merge_method: merge_method.to_owned(),
            grouping_strategy: "ALLGREEN".to_owned(),
        }
    }

    /// The merge method of a merge queue rule; `None` for other rules.
    pub fn queue_method(&self) -> Option<&str> {
        match self {
            Rule::MergeQueue => Some("MERGE"),
            Rule::MergeQueueBy { merge_method, .. } => Some(merge_method),
            _ => None,
        }
    }

    /// GitHub's name of the rule's type.
    pub fn kind(&self) -> &'static str {
        match self {
            Rule::PullRequest { .. } => "pull_request",
            Rule::RequiredStatusChecks(_) => "required_status_checks",
            Rule::RequiredLinearHistory => "required_linear_history",
            Rule::NonFastForward => "non_fast_forward",
            Rule::Deletion => "deletion",
            Rule::Creation => "creation",
            Rule::MergeQueue | Rule::MergeQueueBy { .. } => "merge_queue",
        }
    }
}

/// Who may bypass a ruleset (always: GitHub's `bypass_mode: always`).
#[derive(Clone, Debug, PartialEq)]
pub enum BypassActor {
    /// A GitHub App, by its id (`actor_type: Integration`).
    App(u64),
    /// A user, by login (`actor_type: User`).
    User(String),
}

/// A repository ruleset, or a classic branch protection rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Ruleset {
    pub id: u64,
    pub name: String,
    /// The branches it targets: `~DEFAULT_BRANCH`, `~ALL`, a name, or a
    /// name ending in `*`.
    pub branches: Vec<String>,
    pub rules: Vec<Rule>,
    pub bypass: Vec<BypassActor>,
    /// Classic branch protection rather than a ruleset: not listed by
    /// the rules API, and refusals in its own words.
    pub classic: bool,
}

impl Ruleset {
    /// A ruleset named `name` on the default branch, with no rules yet.
    pub fn new(name: &str) -> Ruleset {
        Ruleset {
            id: 0,
            name: name.to_owned(),
            branches: vec!["~DEFAULT_BRANCH".to_owned()],
            rules: vec![],
            bypass: vec![],
            classic: false,
        }
    }

    /// Classic branch protection of `branch`.
    pub fn classic(branch: &str) -> Ruleset {
        Ruleset {
            classic: true,
            branches: vec![branch.to_owned()],
            ..Ruleset::new(branch)
        }
    }

    /// Targets `branches` instead.
    pub fn on(mut self, branches: &[&str]) -> Ruleset {
        self.branches = branches.iter().map(|b| (*b).to_owned()).collect();
        self
    }

    pub fn rule(mut self, rule: Rule) -> Ruleset {
        self.rules.push(rule);
        self
    }

    pub fn bypass(mut self, actor: BypassActor) -> Ruleset {
        self.bypass.push(actor);
        self
    }

    fn targets(&self, repo: &Repo, branch: &str) -> bool {
        self.branches.iter().any(|b| {
            let b = b.strip_prefix("refs/heads/").unwrap_or(b);
            match b {
                "~ALL" => true,
                "~DEFAULT_BRANCH" => branch == repo.default_branch,
                pattern => match pattern.strip_suffix('*') {
                    Some(prefix) => branch.starts_with(prefix),
                    None => branch == pattern,
                },
            }
        })
    }

    /// Whether `actor` may bypass this ruleset.
    pub fn bypassed_by(&self, actor: &Actor) -> bool {
        self.bypass.iter().any(|b| match (b, actor) {
            (BypassActor::App(id), Actor::App(app)) => id == app,
            (BypassActor::User(login), Actor::User(user)) => login.eq_ignore_ascii_case(user),
            _ => false,
        })
    }
}

/// Who makes a change.
#[derive(Clone, Debug, PartialEq)]
pub enum Actor {
    /// An installation token: its App, by id.
    App(u64),
    /// A person, by login.
    User(String),
}

/// A change to a branch, as the rules judge it.
#[derive(Clone, Debug, PartialEq)]
pub enum Change<'a> {
    /// The branch moves from `old` to `new` (a ref update, a push, or a
    /// server-side merge), `forced` when `old` is not behind `new`.
    Update {
        old: &'a str,
        new: &'a str,
        forced: bool,
    },
    /// The branch is created at a commit.
    Create,
    /// The branch is deleted.
    Delete,
    /// Pull request `pull`, whose head is `head`, is merged into it by
    /// `method` (`merge`, `squash`, `rebase`).
    MergePull {
        pull: u64,
        head: &'a str,
        method: &'a str,
    },
}

/// Why the rules refuse a change: the violation lines, and whether a
/// ruleset (rather than classic protection) said so.
#[derive(Clone, Debug, PartialEq)]
pub struct Violations {
    pub lines: Vec<String>,
    pub ruleset: bool,
}

impl Violations {
    /// GitHub's message: a ruleset's "Repository rule violations found"
    /// and a paragraph per violation, or classic protection's one line.
    pub fn message(&self) -> String {
        if self.ruleset {
            format!(
                "Repository rule violations found\n\n{}\n\n",
                self.lines.join("\n\n")
            )
        } else {
            self.lines.join(" ")
        }
    }
}

impl Repo {
    /// The rulesets and classic protection rules that apply to `branch`.
    pub fn rules_for<'a>(&'a self, branch: &'a str) -> impl Iterator<Item = &'a Ruleset> {
        self.rulesets
            .iter()
            .filter(move |r| r.targets(self, branch))
    }

    /// Whether any rule protects `branch`.
    pub fn is_protected(&self, branch: &str) -> bool {
        self.rules_for(branch).next().is_some()
    }

    /// What the rules of `branch` say to `change` by `actor`; `None`: it
    /// may be made.
    pub fn violations(&self, branch: &str, actor: &Actor, change: &Change) -> Option<Violations> {
        let mut lines = Vec::new();
        let mut ruleset = false;
        for set in self.rules_for(branch).filter(|s| !s.bypassed_by(actor)) {
            let before = lines.len();
            for rule in &set.rules {
                for line in self.broken(rule, change) {
                    if !lines.contains(&line) {
                        lines.push(line);
                    }
                }
            }
            ruleset |= !set.classic && lines.len() > before;
        }
        (!lines.is_empty()).then_some(Violations { lines, ruleset })
    }

    /// The sentences `rule` says about `change`, none when it keeps it.
    fn broken(&self, rule: &Rule, change: &Change) -> Vec<String> {
        match (rule, change) {
            (Rule::PullRequest { .. }, Change::Update { .. }) => {
                vec!["Changes must be made through a pull request.".into()]
            }
            (
                Rule::PullRequest {
                    required_approvals,
                    code_owners,
                    last_push,
                    ..
                },
                Change::MergePull { pull, .. },
            ) => {
                let ask = super::approvals::ReviewAsk {
                    required_approvals: *required_approvals,
                    code_owners: *code_owners,
                    last_push: *last_push,
                };
                self.reviews_missing(*pull, ask)
            }
            (
                Rule::MergeQueue | Rule::MergeQueueBy { .. },
                Change::Update { .. } | Change::MergePull { .. },
            ) => {
                vec!["Changes must be made through the merge queue".into()]
            }
            (Rule::RequiredStatusChecks(contexts), Change::Update { new: sha, .. })
            | (Rule::RequiredStatusChecks(contexts), Change::MergePull { head: sha, .. }) => {
                contexts
                    .iter()
                    .filter_map(|c| self.check_problem(sha, c))
                    .collect()
            }
            (Rule::RequiredLinearHistory, Change::Update { old, new, .. }) => {
                let merges = self.merge_commits_between(old, new);
                if merges.is_empty() {
                    vec![]
                } else {
                    vec!["This branch must not contain merge commits.".into()]
                }
            }
            (Rule::RequiredLinearHistory, Change::MergePull { method, .. })
                if *method == "merge" =>
            {
                vec!["Merge commits are not allowed on this repository.".into()]
            }
            (Rule::NonFastForward, Change::Update { forced: true, .. }) => {
                vec!["Cannot force-push to this branch".into()]
            }
            (Rule::Deletion, Change::Delete) => vec!["Cannot delete this branch".into()],
            (Rule::Creation, Change::Create) => {
                vec!["Cannot create ref due to creations being restricted.".into()]
            }
            _ => vec![],
        }
    }

    /// Why required check `context` does not let `sha` through: absent
    /// ("expected"), not finished ("pending"), or not a success.
    fn check_problem(&self, sha: &str, context: &str) -> Option<String> {
        let run = self
            .check_runs
            .iter()
            .rev()
            .find(|r| r.head_sha == sha && r.name == context);
        let how = match run {
            None => "is expected",
            Some(r) if r.status != "completed" => "is pending",
            Some(r) => match r.conclusion.as_deref() {
                Some("success" | "neutral" | "skipped") => return None,
                _ => "is failing",
            },
        };
        Some(format!("Required status check \"{context}\" {how}."))
    }

    /// The merge commits reachable from `new` and not from `old`.
    fn merge_commits_between(&self, old: &str, new: &str) -> Vec<String> {
        let mut stack = vec![new.to_owned()];
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        while let Some(sha) = stack.pop() {
            if !seen.insert(sha.clone()) || self.is_ancestor(&sha, old) {
                continue;
            }
            if let Some(c) = self.commits.get(&sha) {
                if c.parents.len() > 1 {
                    out.push(sha.clone());
                }
                stack.extend(c.parents.iter().cloned());
            }
        }
        out
    }
}
