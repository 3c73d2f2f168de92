//! The default branch's rules as the ship queue lands by them: what
//! GitHub's rulesets and classic branch protection require
//! ([`BranchRules`], read by `RepoClient::branch_rules`), the way a proven
//! story lands under them ([`landing_plan`]), and GitHub's refusals read
//! back into typed violations ([`violations`]) with the setting that lets
//! taskgate through.
//!
//! Owns: the choice between moving the branch itself (a fast-forward to
//! the tested commit) and merging the story PR, and whether the proof is
//! a linear commit. Must not: read GitHub (the shell passes the rules in)
//! or word the comments (`render_rules`).
//!
//! Ideas a reader needs:
//! - **Honoured even where taskgate may bypass them.** Linear history
//!   makes the proof a linear commit and the landing a squash; a merge
//!   queue is never jumped; checks required besides `taskgate/ship-gate`
//!   are left to GitHub, which judges them on the story PR's head when
//!   taskgate merges it.
//! - **The fast-forward stays the first choice**: it lands exactly the
//!   tested commit, and GitHub refuses it when the base moved. It is taken
//!   only when nothing above asks for the pull request.

use serde::{Deserialize, Serialize};

use super::SHIP_GATE;
use crate::config::MergeMethod;

/// Whether taskgate may bypass a ruleset (GitHub's
/// `current_user_can_bypass`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bypass {
    #[default]
    Never,
    /// Only when merging a pull request.
    PullRequestsOnly,
    /// Always (`always` or `exempt`).
    Always,
}

/// One rule of the branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RuleKind {
    /// Changes through a pull request, with approving reviews and the
    /// merge methods allowed (empty: any), and what else the reviews must
    /// be (code owners, the last push's, fresh).
    PullRequest {
        approvals: u32,
        methods: Vec<MergeMethod>,
        #[serde(default)]
        review: ReviewFlags,
    },
    /// These checks must pass, by context name.
    RequiredChecks {
        contexts: Vec<String>,
    },
    LinearHistory,
    NonFastForward,
    Deletion,
    MergeQueue,
    /// A rule taskgate does not act on (signed commits, deployments, …).
    Other {
        name: String,
    },
}

/// What a `pull_request` rule asks of reviews besides their number
/// (GitHub's `require_code_owner_review`, `require_last_push_approval`,
/// `dismiss_stale_reviews_on_push`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewFlags {
    /// A code owner of each changed path must approve.
    pub code_owners: bool,
    /// The last pusher's own approval does not count.
    pub last_push: bool,
    /// A push dismisses the approvals of older heads.
    pub dismiss_stale: bool,
}

/// A rule and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchRule {
    pub rule: RuleKind,
    /// Its ruleset; `None` for classic branch protection.
    pub ruleset: Option<u64>,
    pub bypass: Bypass,
}

/// What the rules of a branch ask of whoever moves it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchRules {
    pub branch: String,
    /// Classic branch protection is on: the App sees only its required
    /// checks (the rest needs administration access), so taskgate lands
    /// through the pull request, as any contributor would.
    pub classic: bool,
    pub rules: Vec<BranchRule>,
    /// taskgate's installation does not receive `merge_group` webhooks
    /// (its subscribed events lack it): read where the branch has a merge
    /// queue, which taskgate then cannot prove the groups of.
    #[serde(default)]
    pub merge_group_unsubscribed: bool,
    /// The parameters of the branch's `merge_queue` rule (GitHub allows
    /// one merge queue per branch); GitHub's defaults where it has none.
    #[serde(default)]
    pub queue: QueueSettings,
}

/// How GitHub's merge queue builds a group's commit (the `merge_queue`
/// rule's `merge_method`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueMethod {
    /// A merge commit of the base and the pull request's head.
    #[default]
    Merge,
    /// One commit on the base alone, the pull request squashed.
    Squash,
    /// The pull request's commits replayed on the base.
    Rebase,
    /// A method taskgate does not know (GitHub's word for it).
    Other(String),
}

impl QueueMethod {
    /// GitHub's word (`MERGE`, `SQUASH`, `REBASE`) read.
    pub fn parse(word: &str) -> QueueMethod {
        match word {
            "MERGE" => QueueMethod::Merge,
            "SQUASH" => QueueMethod::Squash,
            "REBASE" => QueueMethod::Rebase,
            other => QueueMethod::Other(other.to_owned()),
        }
    }

    /// GitHub's word for it.
    pub fn word(&self) -> &str {
        match self {
            QueueMethod::Merge => "MERGE",
            QueueMethod::Squash => "SQUASH",
            QueueMethod::Rebase => "REBASE",
            QueueMethod::Other(word) => word,
        }
    }
}

/// Which commits of a batch must pass the required checks (the
/// `merge_queue` rule's `grouping_strategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueGrouping {
    /// Every group's commit (`ALLGREEN`).
    #[default]
    AllGreen,
    /// Only the batch's last commit: the groups ahead of it merge on its
    /// strength (`HEADGREEN`).
    HeadGreen,
}

/// The `merge_queue` rule's parameters taskgate acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSettings {
    pub method: QueueMethod,
    pub grouping: QueueGrouping,
}

/// How a proven story lands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "via", rename_all = "snake_case")]
pub enum LandVia {
    /// taskgate fast-forwards the branch to the tested commit.
    #[default]
    FastForward,
    /// taskgate merges the story PR (its head pinned, the base checked
    /// to be the proven base first), then checks the landed tree.
    PullRequest { method: MergeMethod },
    /// GitHub's merge queue: taskgate enqueues the story PR (its head
    /// pinned) and acts as the CI of its merge group, whose commit lands
    /// once taskgate's proof of it passed.
    MergeQueue,
}

/// The landing the rules allow, decided when the proof starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandingPlan {
    pub via: LandVia,
    /// The proof is the story squashed onto the base (one parent).
    pub linear: bool,
}

/// Rules taskgate cannot land under without landing an untested tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unlandable {
    /// The branch takes changes through GitHub's merge queue, which does
    /// not require `taskgate/ship-gate`: it would land merge groups
    /// without waiting for taskgate's proof of them.
    MergeQueue { ruleset: Option<u64> },
    /// The branch takes changes through GitHub's merge queue, but the
    /// installation does not receive `merge_group` webhooks: taskgate
    /// would enqueue the story PR and never prove its group.
    MergeGroupEvent,
    /// The merge queue builds groups by a method taskgate cannot judge
    /// (GitHub's word for it): it could not tell what a group holds.
    QueueMethod {
        method: String,
        ruleset: Option<u64>,
    },
}

impl BranchRules {
    /// A branch without rules.
    pub fn none(branch: &str) -> BranchRules {
        BranchRules {
            branch: branch.to_owned(),
            ..BranchRules::default()
        }
    }

    fn has(&self, want: impl Fn(&RuleKind) -> bool) -> bool {
        self.rules.iter().any(|r| want(&r.rule))
    }

    /// Whether some rule requires the check `context`.
    pub fn requires(&self, context: &str) -> bool {
        self.has(|r| matches!(r, RuleKind::RequiredChecks { contexts } if contexts.iter().any(|c| c == context)))
    }

    /// Required checks besides taskgate's own ship gate.
    pub fn other_checks(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.rules {
            if let RuleKind::RequiredChecks { contexts } = &r.rule {
                for c in contexts.iter().filter(|c| *c != SHIP_GATE) {
                    if !out.contains(&c.as_str()) {
                        out.push(c);
                    }
                }
            }
        }
        out
    }

    /// Whether some rule stops taskgate from moving the branch itself.
    /// Its own ship gate does not: taskgate writes it green on the tested
    /// commit before it moves the branch.
    fn stops_direct_push(&self) -> bool {
        self.rules.iter().any(|r| {
            r.bypass != Bypass::Always
                && match &r.rule {
                    RuleKind::PullRequest { .. } => true,
                    RuleKind::RequiredChecks { contexts } => {
                        contexts.iter().any(|c| c != SHIP_GATE)
                    }
                    _ => false,
                }
        })
    }

    /// The merge methods every pull request rule allows (empty: any).
    fn methods(&self) -> Vec<MergeMethod> {
        let all = [MergeMethod::Merge, MergeMethod::Squash, MergeMethod::Rebase];
        all.into_iter()
            .filter(|m| {
                self.rules.iter().all(|r| match &r.rule {
                    RuleKind::PullRequest { methods, .. } => {
                        methods.is_empty() || methods.contains(m)
                    }
                    _ => true,
                })
            })
            .collect()
    }
}

/// How a story lands on a branch with `rules`, or why it cannot.
pub fn landing_plan(rules: &BranchRules) -> Result<LandingPlan, Unlandable> {
    if let Some(r) = rules.rules.iter().find(|r| r.rule == RuleKind::MergeQueue) {
        // Never jumped, bypass or not: the queue is how the branch moves.
        // It lands a group only once the required checks pass on it, so
        // taskgate's gate must be one of them.
        if !rules.requires(SHIP_GATE) {
            return Err(Unlandable::MergeQueue { ruleset: r.ruleset });
        }
        if let QueueMethod::Other(method) = &rules.queue.method {
            return Err(Unlandable::QueueMethod {
                method: method.clone(),
                ruleset: r.ruleset,
            });
        }
        if rules.merge_group_unsubscribed {
            return Err(Unlandable::MergeGroupEvent);
        }
        return Ok(LandingPlan {
            via: LandVia::MergeQueue,
            linear: false,
        });
    }
    let linear = rules.has(|r| *r == RuleKind::LinearHistory);
    let through_pr =
        linear || rules.classic || rules.stops_direct_push() || !rules.other_checks().is_empty();
    if !through_pr {
        return Ok(LandingPlan {
            via: LandVia::FastForward,
            linear,
        });
    }
    let allowed = rules.methods();
    let preference = if linear {
        [MergeMethod::Squash, MergeMethod::Rebase, MergeMethod::Merge]
    } else {
        [MergeMethod::Merge, MergeMethod::Squash, MergeMethod::Rebase]
    };
    let method = preference
        .into_iter()
        .find(|m| allowed.contains(m))
        .unwrap_or(preference[0]);
    Ok(LandingPlan {
        via: LandVia::PullRequest { method },
        linear,
    })
}

/// One broken rule, as GitHub named it in a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    PullRequestRequired,
    /// Approving reviews are missing (GitHub's sentence).
    Reviews(String),
    /// A required check is expected, pending or failing (GitHub's
    /// sentence names which).
    RequiredCheck {
        context: String,
        said: String,
    },
    LinearHistory,
    ForcePush,
    /// GitHub said the branch takes changes through its merge queue (a
    /// rule added since taskgate read them).
    MergeQueue,
    /// The branch's merge queue does not require `taskgate/ship-gate`.
    QueueWithoutGate,
    /// The branch takes changes through GitHub's merge queue, and the
    /// installation does not receive `merge_group` webhooks.
    MergeGroupEvent,
    /// The branch's merge queue builds groups by a method taskgate cannot
    /// judge (GitHub's word for it).
    QueueMethod(String),
    /// The change touches a workflow file (`file`), which GitHub lets an
    /// App write only with the `workflows` permission.
    WorkflowsPermission {
        file: String,
    },
    /// Something else GitHub said.
    Other(String),
}

/// The violations in GitHub's refusal `message` (a ruleset's
/// "Repository rule violations found" and a paragraph each, or classic
/// protection's sentences on one line).
pub fn violations(message: &str) -> Vec<Violation> {
    if let Some(file) = workflow_refused(message) {
        return vec![Violation::WorkflowsPermission { file }];
    }
    let body = message
        .trim()
        .strip_prefix("Repository rule violations found")
        .unwrap_or(message);
    let mut out = Vec::new();
    for sentence in sentences(body) {
        let v = classify(&sentence);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// `text` cut into sentences: at paragraph breaks and after each full
/// stop that ends a sentence (a quoted check name keeps its dots).
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '\n' if !quoted => {
                push_sentence(&mut out, &mut current);
                continue;
            }
            _ => {}
        }
        current.push(c);
        if c == '.' && !quoted {
            push_sentence(&mut out, &mut current);
        }
    }
    push_sentence(&mut out, &mut current);
    out
}

fn push_sentence(out: &mut Vec<String>, current: &mut String) {
    let s = current.trim();
    if !s.is_empty() {
        out.push(s.to_owned());
    }
    current.clear();
}

fn classify(sentence: &str) -> Violation {
    let lower = sentence.to_ascii_lowercase();
    if lower.contains("through a pull request") {
        Violation::PullRequestRequired
    } else if lower.contains("merge queue") {
        Violation::MergeQueue
    } else if lower.contains("approving review")
        || lower.contains("review is required")
        || lower.contains("code owner review")
    {
        Violation::Reviews(sentence.to_owned())
    } else if lower.contains("merge commits") {
        Violation::LinearHistory
    } else if lower.contains("force-push") || lower.contains("force push") {
        Violation::ForcePush
    } else if let Some(context) = quoted_check(sentence) {
        Violation::RequiredCheck {
            context,
            said: sentence.to_owned(),
        }
    } else {
        Violation::Other(sentence.to_owned())
    }
}

/// GitHub's "refusing to allow a GitHub App to create or update workflow
/// `.github/workflows/x.yml` without `workflows` permission" → the file.
fn workflow_refused(message: &str) -> Option<String> {
    let rest = message.split_once("create or update workflow")?.1;
    if !rest.contains("`workflows` permission") && !rest.contains("workflows permission") {
        return None;
    }
    let file = rest.trim_start().trim_start_matches('`');
    let end = file.find(['`', ' ']).unwrap_or(file.len());
    Some(file[..end].to_owned())
}

/// `Required status check "ci" is expected.` → `ci`.
fn quoted_check(sentence: &str) -> Option<String> {
    let rest = sentence.strip_prefix("Required status check \"")?;
    let (name, _) = rest.split_once('"')?;
    Some(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(rule: RuleKind, bypass: Bypass) -> BranchRule {
        BranchRule {
            rule,
            ruleset: Some(1),
            bypass,
        }
    }

    fn rules(list: Vec<BranchRule>) -> BranchRules {
        BranchRules {
            branch: "main".into(),
            classic: false,
            rules: list,
            merge_group_unsubscribed: false,
            queue: Default::default(),
        }
    }

    fn pr() -> RuleKind {
        RuleKind::PullRequest {
            approvals: 0,
            methods: vec![],
            review: ReviewFlags::default(),
        }
    }

    fn gate() -> RuleKind {
        RuleKind::RequiredChecks {
            contexts: vec![SHIP_GATE.into()],
        }
    }

    #[test]
    fn a_branch_taskgate_may_bypass_is_fast_forwarded() {
        let free = landing_plan(&BranchRules::none("main")).unwrap();
        assert_eq!(free.via, LandVia::FastForward);
        let bypassed = rules(vec![
            rule(pr(), Bypass::Always),
            rule(gate(), Bypass::Always),
        ]);
        assert_eq!(landing_plan(&bypassed).unwrap().via, LandVia::FastForward);
    }

    #[test]
    fn without_bypass_the_story_pr_is_merged() {
        let closed = rules(vec![rule(pr(), Bypass::Never), rule(gate(), Bypass::Never)]);
        let plan = landing_plan(&closed).unwrap();
        assert_eq!(
            plan.via,
            LandVia::PullRequest {
                method: MergeMethod::Merge
            }
        );
        assert!(!plan.linear);
    }

    #[test]
    fn linear_history_is_honoured_even_with_bypass_and_squashes() {
        let linear = rules(vec![
            rule(pr(), Bypass::Always),
            rule(RuleKind::LinearHistory, Bypass::Always),
        ]);
        let plan = landing_plan(&linear).unwrap();
        assert!(plan.linear);
        assert_eq!(
            plan.via,
            LandVia::PullRequest {
                method: MergeMethod::Squash
            }
        );
        let rebase_only = rules(vec![
            rule(
                RuleKind::PullRequest {
                    approvals: 0,
                    methods: vec![MergeMethod::Rebase],
                    review: ReviewFlags::default(),
                },
                Bypass::Never,
            ),
            rule(RuleKind::LinearHistory, Bypass::Never),
        ]);
        assert_eq!(
            landing_plan(&rebase_only).unwrap().via,
            LandVia::PullRequest {
                method: MergeMethod::Rebase
            }
        );
    }

    #[test]
    fn other_required_checks_are_left_to_github_on_the_story_pr() {
        let ci = rules(vec![rule(
            RuleKind::RequiredChecks {
                contexts: vec![SHIP_GATE.into(), "ci".into()],
            },
            Bypass::Always,
        )]);
        assert!(matches!(
            landing_plan(&ci).unwrap().via,
            LandVia::PullRequest { .. }
        ));
        assert_eq!(ci.other_checks(), ["ci"]);
    }

    #[test]
    fn taskgates_own_required_gate_needs_no_pull_request() {
        let gate_only = rules(vec![rule(gate(), Bypass::Never)]);
        assert_eq!(landing_plan(&gate_only).unwrap().via, LandVia::FastForward);
    }

    #[test]
    fn a_merge_queue_is_never_jumped_and_must_wait_for_taskgates_gate() {
        let queue = rules(vec![
            rule(RuleKind::MergeQueue, Bypass::Always),
            rule(gate(), Bypass::Always),
        ]);
        assert_eq!(landing_plan(&queue).unwrap().via, LandVia::MergeQueue);
        let ungated = rules(vec![rule(RuleKind::MergeQueue, Bypass::Always)]);
        assert_eq!(
            landing_plan(&ungated),
            Err(Unlandable::MergeQueue { ruleset: Some(1) })
        );
    }

    #[test]
    fn a_merge_queue_of_every_githubs_method_is_landed_through_and_an_unknown_one_refused() {
        let mut queue = rules(vec![
            rule(RuleKind::MergeQueue, Bypass::Never),
            rule(gate(), Bypass::Never),
        ]);
        for word in ["MERGE", "SQUASH", "REBASE"] {
            queue.queue.method = QueueMethod::parse(word);
            assert_eq!(queue.queue.method.word(), word);
            assert_eq!(landing_plan(&queue).unwrap().via, LandVia::MergeQueue);
        }
        queue.queue.method = QueueMethod::parse("FAST_FORWARD");
        assert_eq!(
            landing_plan(&queue),
            Err(Unlandable::QueueMethod {
                method: "FAST_FORWARD".into(),
                ruleset: Some(1)
            })
        );
    }

    #[test]
    fn a_merge_queue_whose_merge_group_events_never_arrive_cannot_be_shipped_through() {
        let mut unheard = rules(vec![
            rule(RuleKind::MergeQueue, Bypass::Always),
            rule(gate(), Bypass::Always),
        ]);
        unheard.merge_group_unsubscribed = true;
        assert_eq!(landing_plan(&unheard), Err(Unlandable::MergeGroupEvent));
    }

    #[test]
    fn githubs_refusals_read_back_into_violations() {
        let ruleset = "Repository rule violations found\n\nChanges must be made through a pull request.\n\nRequired status check \"ci / build.v2\" is expected.\n\n";
        assert_eq!(
            violations(ruleset),
            [
                Violation::PullRequestRequired,
                Violation::RequiredCheck {
                    context: "ci / build.v2".into(),
                    said: "Required status check \"ci / build.v2\" is expected.".into()
                }
            ]
        );
        let classic =
            "Changes must be made through a pull request. Cannot force-push to this branch";
        assert_eq!(
            violations(classic),
            [Violation::PullRequestRequired, Violation::ForcePush]
        );
        assert_eq!(
            violations("Repository rule violations found\n\nChanges must be made through the merge queue\n\n"),
            [Violation::MergeQueue]
        );
        assert_eq!(
            violations("Merge commits are not allowed on this repository."),
            [Violation::LinearHistory]
        );
        assert_eq!(
            violations("refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission"),
            [Violation::WorkflowsPermission { file: ".github/workflows/ci.yml".into() }]
        );
    }
}
