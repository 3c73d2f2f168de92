//! Required approvals on the default branch (issue 45 item 4): a story
//! whose landing GitHub refuses for the story PR's reviews waits for them
//! — said once, with how many are missing and from whom (code owners by
//! path), the ship gate red meanwhile — and lands as soon as an approving
//! review arrives, with no second ship, the gate green again. taskgate
//! never approves its own pull request, and tries the merge once per
//! approval, never on a timer. Rulesets and classic protection alike.

use fakehub::{Rule, Ruleset};

use crate::support::eventually;
use crate::support::shipped::Shipped;

const CONFIG: &str = "ship_label: ship\n";
const WAITING: &str = "Waiting for approvals";

impl Shipped {
    /// taskgate's notes on the story PR that contain `needle`.
    fn notes_with(&self, needle: &str) -> Vec<String> {
        let pr = self.story_pr().unwrap().number;
        self.s
            .app
            .bot_comments(pr)
            .into_iter()
            .filter(|n| n.contains(needle))
            .collect()
    }

    /// Waits until `n` merges of the story PR were tried and the story is
    /// back to shippable (the last one refused).
    async fn waits_after(&self, n: usize) {
        eventually("the merge refused, the story waiting", || async {
            self.merge_tries().len() == n && self.state().await == "shippable"
        })
        .await;
        self.s.app.settle().await;
    }

    /// The statuses GitHub answered taskgate's merges of the story PR with.
    fn merge_tries(&self) -> Vec<u16> {
        let path = format!("/pulls/{}/merge", self.story_pr().unwrap().number);
        self.s
            .app
            .fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "PUT" && r.path.ends_with(&path))
            .map(|r| r.status)
            .collect()
    }

    /// A person approves the story PR on GitHub.
    fn approve(&self, login: &str) {
        let pr = self.story_pr().unwrap().number;
        self.s
            .app
            .fake
            .add_user(login, 700_000 + login.len() as u64, "write");
        self.repo()
            .submit_review(pr, login, "APPROVE", "")
            .expect("GitHub takes the approval");
    }

    /// taskgate submitted no review of its own anywhere.
    fn never_reviewed(&self) {
        let own = self
            .s
            .app
            .fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/reviews"))
            .count();
        assert_eq!(own, 0, "taskgate never approves its own pull request");
    }
}

#[tokio::test]
async fn a_story_refused_for_a_required_approval_waits_said_once_and_lands_once_approved() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.repo().with_ruleset(
        Ruleset::new("main")
            .rule(Rule::approvals(1))
            .rule(Rule::required_checks(&["taskgate/ship-gate"])),
    );
    sh.add_ship_label().await;
    sh.waits_after(1).await;
    assert_eq!(sh.merge_tries(), [405]);
    let notes = sh.notes_with(WAITING);
    assert_eq!(notes.len(), 1, "said once: {notes:#?}");
    insta::assert_snapshot!(notes[0]
        .lines()
        .filter(|l| !l.starts_with("<!--"))
        .collect::<Vec<_>>()
        .join("\n"));
    assert!(sh.notes_with("Not shipped").is_empty());
    let gate = sh.gate();
    assert_eq!(gate.conclusion.as_deref(), Some("failure"));
    let summary = gate.summary.unwrap_or_default();
    assert!(summary.contains("1 more missing"), "{summary}");

    sh.approve("maintainer");
    sh.landed().await;
    assert_eq!(
        sh.merge_tries(),
        [405, 200],
        "one try per approval, no timer"
    );
    assert_eq!(sh.notes_with(WAITING).len(), 1, "said once");
    assert_eq!(
        sh.gate().conclusion.as_deref(),
        Some("success"),
        "green again"
    );
    sh.never_reviewed();
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_code_owner_rule_names_the_owners_of_the_changed_paths_and_waits_for_one() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.s.app
        .push_to_main(&[(
            ".github/CODEOWNERS",
            "*.md @docs-owner\n/check.sh @alice-owner @bob-owner\n/docs/ @docs-owner\n",
        )])
        .await;
    sh.repo()
        .with_ruleset(Ruleset::new("owners").rule(Rule::approvals(1).code_owners()));
    sh.add_ship_label().await;
    sh.waits_after(1).await;
    let notes = sh.notes_with(WAITING);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(
        notes[0].contains("@alice-owner or @bob-owner for `check.sh`"),
        "{}",
        notes[0]
    );
    assert!(!notes[0].contains("docs-owner"), "{}", notes[0]);

    // Someone else's approval meets the count, not the owners: one more
    // try, refused, and nothing said again.
    sh.approve("carol");
    sh.waits_after(2).await;
    assert_eq!(sh.notes_with(WAITING).len(), 1, "said once");
    let summary = sh.gate().summary.unwrap_or_default();
    assert!(summary.contains("@alice-owner or @bob-owner"), "{summary}");
    assert!(!summary.contains("more missing"), "{summary}");

    sh.approve("bob-owner");
    sh.landed().await;
    assert_eq!(sh.merge_tries(), [405, 405, 200]);
    sh.never_reviewed();
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn classic_protection_requiring_an_approval_is_waited_for_the_same_way() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.repo()
        .with_ruleset(Ruleset::classic("main").rule(Rule::approvals(1)));
    sh.add_ship_label().await;
    sh.waits_after(1).await;
    let notes = sh.notes_with(WAITING);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].contains("1 more missing"), "{}", notes[0]);
    sh.approve("maintainer");
    sh.landed().await;
    assert_eq!(sh.merge_tries(), [405, 200]);
    assert_eq!(sh.gate().conclusion.as_deref(), Some("success"));
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn an_approval_a_push_made_stale_does_not_count_and_a_fresh_one_lands_the_story() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.repo()
        .with_ruleset(Ruleset::new("fresh approvals").rule(Rule::approvals(1).dismiss_stale()));
    let pr = sh.story_pr().unwrap().number;
    sh.approve("maintainer");
    // A fix pushed straight onto the story branch: GitHub dismisses the
    // approval of the older head (and says so with a webhook).
    let fix = sh.repo().push_files(
        &sh.branch,
        &[("fix.txt", "a late fix\n")],
        "Late fix",
        "octocat",
    );
    assert_eq!(sh.repo().reviews(pr)[0].state, "DISMISSED");
    sh.s.app
        .comment(pr, "octocat", &format!("/taskgate accept-commits {fix}"))
        .await;
    eventually("shippable again", || async {
        sh.state().await == "shippable"
    })
    .await;
    sh.s.app.settle().await;

    sh.add_ship_label().await;
    sh.waits_after(1).await;
    let notes = sh.notes_with(WAITING);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(
        notes[0].contains("1 more missing (approved by none yet)"),
        "the dismissed approval does not count: {}",
        notes[0]
    );
    sh.approve("maintainer");
    sh.landed().await;
    assert_eq!(sh.merge_tries(), [405, 200]);
    sh.never_reviewed();
    sh.s.app.assert_contract_kept();
}

#[tokio::test]
async fn a_code_owning_team_is_approved_by_an_active_member_and_not_by_anyone_else() {
    let sh = Shipped::story().config(CONFIG).shippable().await;
    sh.s.app
        .fake
        .add_team_member("octo-org", "core", "mona", "active");
    sh.s.app
        .push_to_main(&[(".github/CODEOWNERS", "/check.sh @octo-org/core\n")])
        .await;
    sh.repo()
        .with_ruleset(Ruleset::new("owners").rule(Rule::approvals(3).code_owners()));
    sh.add_ship_label().await;
    sh.waits_after(1).await;
    let notes = sh.notes_with(WAITING);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(
        notes[0].contains("@octo-org/core for `check.sh`"),
        "{}",
        notes[0]
    );

    // Someone outside the team: one approval of three, the team still waits.
    sh.approve("carol");
    sh.waits_after(2).await;
    let summary = sh.gate().summary.unwrap_or_default();
    assert!(
        summary.contains("@octo-org/core for `check.sh`"),
        "{summary}"
    );
    assert!(summary.contains("2 more missing"), "{summary}");

    // An active member of the team: its approval is the team's (GitHub
    // expands teams), so only the count is left.
    sh.approve("mona");
    sh.waits_after(3).await;
    let summary = sh.gate().summary.unwrap_or_default();
    assert!(!summary.contains("@octo-org/core"), "{summary}");
    assert!(summary.contains("1 more missing"), "{summary}");
    let asked =
        sh.s.app
            .statuses("GET /orgs/{org}/teams/{team_slug}/memberships/{username}");
    assert!(asked.contains(&200) && asked.contains(&404), "{asked:?}");

    sh.approve("dave");
    sh.landed().await;
    assert_eq!(sh.merge_tries(), [405, 405, 405, 200]);
    sh.never_reviewed();
    sh.s.app.assert_contract_kept();
}
