//! Shipping under the default branch's rules (issue 33 item 3): the
//! rules read as the App sees them, and a ship taken end to end under
//! rulesets in each combination — taskgate a bypass actor, not one,
//! linear history required, a merge queue — lands a proven tree or is
//! refused with the rule named, once, on the story PR.

use fakehub::{BypassActor, Rule, Ruleset};
use taskgate::core::config::MergeMethod;
use taskgate::core::ship::{BranchRule, Bypass, RuleKind};
use taskgate::github::RepoClient;
use taskgate::ids::RepoName;

use crate::support::CheckedFake;

/// The real client, as the App's installation `installation`.
fn installation(fake: &fakehub::FakeGitHub, installation: u64) -> octocrab::Octocrab {
    let key =
        jsonwebtoken::EncodingKey::from_rsa_pem(fakehub::FakeGitHub::private_key_pem().as_bytes())
            .unwrap();
    octocrab::Octocrab::builder()
        .base_uri(fake.url())
        .unwrap()
        .app(fake.app_id().into(), key)
        .build()
        .unwrap()
        .installation(installation.into())
        .unwrap()
}

#[tokio::test]
async fn the_rules_of_a_branch_are_read_with_whether_taskgate_may_bypass_each() {
    let fake = CheckedFake::start().await;
    let repo = fake.install(7, "acme/widgets");
    let closed = repo.with_ruleset(
        Ruleset::new("main")
            .rule(Rule::PullRequest {
                required_approvals: 1,
                allowed_merge_methods: vec!["squash".into()],
            })
            .rule(Rule::required_checks(&["taskgate/ship-gate", "ci"])),
    );
    let open = repo.with_ruleset(
        Ruleset::new("history")
            .rule(Rule::RequiredLinearHistory)
            .bypass(BypassActor::App(fake.app_id())),
    );
    repo.with_ruleset(Ruleset::classic("main").rule(Rule::required_checks(&["legacy"])));
    let client = installation(&fake, 7);
    let name = RepoName::parse("acme/widgets").unwrap();
    let rules = RepoClient::new(&client, &name)
        .branch_rules("main")
        .await
        .unwrap();
    assert!(rules.classic);
    assert_eq!(
        rules.rules,
        [
            BranchRule {
                rule: RuleKind::PullRequest {
                    approvals: 1,
                    methods: vec![MergeMethod::Squash]
                },
                ruleset: Some(closed),
                bypass: Bypass::Never,
            },
            BranchRule {
                rule: RuleKind::RequiredChecks {
                    contexts: vec!["taskgate/ship-gate".into(), "ci".into()]
                },
                ruleset: Some(closed),
                bypass: Bypass::Never,
            },
            BranchRule {
                rule: RuleKind::LinearHistory,
                ruleset: Some(open),
                bypass: Bypass::Always,
            },
            BranchRule {
                rule: RuleKind::RequiredChecks {
                    contexts: vec!["legacy".into()]
                },
                ruleset: None,
                bypass: Bypass::Never,
            },
        ]
    );
    let other = RepoClient::new(&client, &name)
        .branch_rules("feature")
        .await
        .unwrap();
    assert!(other.rules.is_empty() && !other.classic);
}
