//! The first behaviour through the whole spine: `/taskgate help`.

use crate::support::{TestApp, REPO};

#[tokio::test]
async fn help_gets_exactly_one_reply_listing_every_command() {
    let app = TestApp::start().await;
    let issue = app
        .fake
        .repo(REPO)
        .create_issue("Plan the strategy", "", "octocat");
    app.comment(issue, "octocat", "Could someone explain?\n\n/taskgate help")
        .await;
    app.settle().await;

    let replies = app.bot_comments(issue);
    assert_eq!(replies.len(), 1, "{replies:?}");
    for command in taskgate_core::commands::command_names() {
        assert!(
            replies[0].contains(&format!("/taskgate {command}")),
            "{command} missing"
        );
    }
    insta::assert_snapshot!("help_reply", replies[0]);
    app.assert_contract_kept();
}

#[tokio::test]
async fn the_short_form_works_and_nonsense_gets_the_closest_command() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Story", "", "octocat");
    app.comment(issue, "octocat", "/help").await;
    let typo = app.comment(issue, "octocat", "/taskgate stauts").await;
    app.settle().await;

    // Each comment gets its reply; in which order they are posted is the
    // order GitHub delivered the comments in, which it does not promise.
    let replies = app.bot_comments(issue);
    assert_eq!(replies.len(), 2, "{replies:?}");
    let (typo_replies, help_replies): (Vec<_>, Vec<_>) =
        replies.iter().partition(|r| r.contains("stauts"));
    assert!(help_replies[0].contains("/taskgate status"));
    let reply = typo_replies[0].replace(&typo.id.to_string(), "<typo>");
    insta::assert_snapshot!(reply, @r"
    @octocat `/taskgate stauts` is not a taskgate command. Did you mean `/taskgate status`? `/taskgate help` lists them all.

    <!-- taskgate:reply-to=<typo> -->
    ");
}

#[tokio::test]
async fn the_bot_ignores_its_own_comments_and_commands_in_code_or_quotes() {
    let app = TestApp::start().await;
    let repo = app.fake.repo(REPO);
    let issue = repo.create_issue("Story", "", "octocat");
    app.comment(
        issue,
        "octocat",
        "```\n/taskgate help\n```\n\n> /taskgate help\n\n`/taskgate help`",
    )
    .await;
    app.settle().await;
    assert!(app.bot_comments(issue).is_empty());

    // The bot's own reply comes back to it (GitHub echoes every write)
    // and is ignored, though it lists every command.
    app.comment(issue, "octocat", "/taskgate help").await;
    app.settle().await;
    let echoed = app
        .fake
        .echo_log()
        .into_iter()
        .filter(|e| e.event == "issue_comment" && e.sender.ends_with("[bot]") && !e.redelivery)
        .count();
    assert_eq!(echoed, 1, "the reply was echoed");
    assert_eq!(app.bot_comments(issue).len(), 1);
}
