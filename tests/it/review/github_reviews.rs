//! The human half of the gate (issue 45), end to end: GitHub's own
//! reviews count as review commands ("Approve" approves the commit the
//! reviewer saw, "Request changes" revises, a dismissal takes the approval
//! back), an approval binds to what the person saw, and a task under
//! `review: human` merged on GitHub without an approval is not complete.

use std::time::Duration;

use crate::support::plan::{Plan, Task};
use crate::support::story::Story;
use crate::support::REPO;

fn plan() -> String {
    Plan::story("Reviewed work").task(Task::check()).yaml()
}

/// A story under human review whose task is proven at a green head, its
/// pull request ready for review; `mia` maintains the repository, `bob`
/// reads it.
async fn proven() -> (Story, u64) {
    let s = Story::of(&plan()).config("review: human\n").start().await;
    s.app.fake.add_user("mia", 78, "maintain");
    s.app.fake.add_user("bob", 77, "read");
    green(&s, "green").await;
    let repo = s.app.fake.repo(REPO);
    let pr = s.pull().number;
    repo.set_draft(pr, false, "agent");
    s.app.settle().await;
    assert_eq!(s.state(), "state:review");
    (s, pr)
}

/// A text with its review ids (database ids, which depend on what was
/// created before) as `<id>`.
fn redact_review_id(text: &str) -> String {
    let Some(at) = text.find("review=") else {
        return text.to_owned();
    };
    let digits = text[at + 7..]
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    format!("{}review=<id>{}", &text[..at], &text[at + 7 + digits..])
}

/// The task branch's head on GitHub.
fn head(s: &Story) -> String {
    s.app
        .fake
        .repo(REPO)
        .branch_sha(&s.branch)
        .expect("the task branch")
}

/// Pushes a passing `check.sh` and waits for its verdict.
async fn green(s: &Story, message: &str) -> String {
    let script = format!("echo '{message}'; exit 0\n");
    let sha = s.push(&[("check.sh", script.as_str())], message).await;
    s.completed(&sha, 1).await;
    sha
}

#[tokio::test]
async fn an_approve_review_completes_a_task_under_human_review() {
    let (s, pr) = proven().await;
    let repo = s.app.fake.repo(REPO);
    repo.submit_review(pr, "mia", "APPROVE", "").unwrap();
    s.app.settle().await;
    assert!(s.pull().merged, "approved on GitHub: merged");
    assert_eq!(s.state(), "state:completed");
    let audit = crate::review::audit::audit(&s.app, "").await;
    assert!(
        audit[0].starts_with("approve by mia on task") && audit[0].contains("via review"),
        "{audit:#?}"
    );
    s.app.assert_contract_kept();
}

#[tokio::test]
async fn an_approval_of_an_older_head_approves_nothing_and_says_so_on_the_pr() {
    let (s, pr) = proven().await;
    let repo = s.app.fake.repo(REPO);
    // Mia approves what she saw; before GitHub's webhook reaches taskgate
    // the writer pushes a new head, which passes.
    let review = s
        .app
        .fake
        .without_echoes(|| repo.submit_review(pr, "mia", "APPROVE", "").unwrap());
    let submitted = fakehub::payloads::pull_request_review_submitted(&repo, pr, review);
    green(&s, "after the review").await;
    s.app.deliver("pull_request_review", &submitted).await;
    s.app.settle().await;
    assert!(!s.pull().merged, "the new head was not reviewed");
    assert_eq!(s.state(), "state:review");
    let answers = s.app.bot_comments(pr);
    let answer = answers
        .iter()
        .find(|c| c.contains("your review"))
        .expect("said on the pull request");
    let answer = answer
        .replace(&head(&s)[..7], "<new head>")
        .replace(&repo.reviews(pr)[0].commit_id[..7], "<reviewed>");
    let answer = redact_review_id(&answer);
    insta::assert_snapshot!(answer, @r"
        @mia your review (Approve) changed nothing on this task: it reviewed `<reviewed>`, and the task's head is `<new head>` now: a review approves the commit it saw; review `<new head>` to approve it.

        <!-- taskgate:review-answered review=<id> -->
        ");
}

#[tokio::test]
async fn a_request_changes_review_revises_the_task_with_its_text() {
    let (s, pr) = proven().await;
    let repo = s.app.fake.repo(REPO);
    repo.submit_review(pr, "mia", "REQUEST_CHANGES", "Handle empty files, please.")
        .unwrap();
    s.app.settle().await;
    assert_eq!(s.state(), "state:in-progress");
    let revision = s
        .app
        .bot_comments(pr)
        .into_iter()
        .find(|c| c.contains("Revision requested"))
        .expect("the feedback goes to the task PR");
    assert!(
        revision.contains("Handle empty files, please."),
        "{revision}"
    );
}

#[tokio::test]
async fn a_dismissed_review_takes_its_approval_back() {
    let (s, pr) = proven().await;
    let repo = s.app.fake.repo(REPO);
    // GitHub refuses taskgate's merge for now (a conflict): the approval
    // stands and waits.
    repo.set_mergeable(pr, false);
    let review = repo.submit_review(pr, "mia", "APPROVE", "").unwrap();
    s.app.settle().await;
    assert!(!s.pull().merged);
    repo.dismiss_review(pr, review, "octocat", "Approved too early")
        .unwrap();
    s.app.settle().await;
    // A person merges it anyway: no approval stands at its head.
    repo.set_mergeable(pr, true);
    repo.merge_pull(pr, "octocat");
    s.app.settle().await;
    assert_ne!(s.state(), "state:completed", "the approval was taken back");
    assert!(s
        .app
        .bot_comments(pr)
        .iter()
        .any(|c| c.contains("Merged without an approval")));
}

#[tokio::test]
async fn a_merge_on_github_without_an_approval_does_not_complete_the_task_until_approved() {
    let (s, pr) = proven().await;
    let repo = s.app.fake.repo(REPO);
    s.app.fake.set_permission("agent", "write");
    repo.merge_pull(pr, "agent");
    s.app.settle().await;
    assert_eq!(s.state(), "state:review", "a merge is not a review");
    let said = s
        .app
        .bot_comments(pr)
        .into_iter()
        .find(|c| c.contains("Merged without an approval"))
        .expect("the merged PR says what is missing");
    let said = said.replace(
        &repo.pulls()[0].merge_commit_sha.clone().unwrap_or_default(),
        "",
    );
    insta::assert_snapshot!(said.replace(&head(&s)[..7], "<head>"), @r"
        **Merged without an approval.** @agent merged this pull request into `taskgate/story-1` at `<head>`. Its gates passed there, but task #2 is under human review (`review: human`) and no one other than its pusher approved `<head>`.

        A merge is not a review: task #2 is not complete, and the story does not ship until it is. **To complete it**, someone with write permission who did not push its commits comments `/taskgate approve` on task #2: that approves `<head>`, the head that was merged.

        **To make GitHub refuse such merges**, add a ruleset on `taskgate/story-*` that requires a pull request with at least one approving review (Settings → Rules → Rulesets). taskgate cannot add it: that needs the `administration` permission, which it does not ask for.

        <!-- taskgate:merged-past-review task=check pr=3 -->
        ");
    let audit = crate::review::audit::audit(&s.app, "").await;
    assert!(
        audit[0].starts_with("merged_past_review by agent"),
        "{audit:#?}"
    );

    // The fix the comment names: someone else approves the merged head.
    s.app
        .comment(s.task_issue, "mia", "/taskgate approve")
        .await;
    s.app.settle().await;
    assert_eq!(s.state(), "state:completed");
}

#[tokio::test]
async fn an_approve_comment_written_before_the_head_was_pushed_approves_nothing() {
    let (s, pr) = proven().await;
    let repo = s.app.fake.repo(REPO);
    // Mia writes `/taskgate approve` at the proven head; GitHub's webhook
    // is late, and a new head is pushed (and passes) a minute after.
    let comment = s
        .app
        .fake
        .without_echoes(|| repo.add_comment(pr, "/taskgate approve", "mia"));
    let written = fakehub::payloads::issue_comment_created(&repo, pr, &comment);
    s.app.advance(Duration::from_secs(60));
    green(&s, "pushed after the approval").await;
    s.app.deliver("issue_comment", &written).await;
    s.app.settle().await;
    assert!(!s.pull().merged, "the new head was never approved");
    let replies = s.app.replies_to(pr, "mia");
    assert_eq!(replies.len(), 1, "{replies:#?}");
    insta::assert_snapshot!(replies[0].replace(&head(&s)[..7], "<new head>"), @"@mia `/taskgate approve` did nothing: commit `<new head>` was pushed to the task after your comment was written, and an approval is for the commit you saw: look at `<new head>`, then approve again.");
}

#[tokio::test]
async fn reviews_that_cannot_count_are_answered_once_or_ignored_and_change_nothing() {
    let (s, pr) = proven().await;
    let repo = s.app.fake.repo(REPO);
    // Someone who may not approve: answered once, on the pull request.
    let review = repo.submit_review(pr, "bob", "APPROVE", "").unwrap();
    s.app.settle().await;
    assert!(!s.pull().merged);
    let answers: Vec<String> = s
        .app
        .bot_comments(pr)
        .into_iter()
        .filter(|c| c.contains("your review"))
        .collect();
    insta::assert_snapshot!(redact_review_id(&answers.join("\n")), @r"
        @bob your review (Approve) changed nothing on this task: a review counts as `approve` or `revise` only from someone with write permission on the repository; @bob has read.

        <!-- taskgate:review-answered review=<id> -->
        ");
    // Its redelivery is not answered again.
    let again = fakehub::payloads::pull_request_review_submitted(&repo, pr, review);
    s.app.deliver("pull_request_review", &again).await;
    s.app.settle().await;
    let count = |s: &Story| {
        s.app
            .bot_comments(pr)
            .iter()
            .filter(|c| c.contains("your review"))
            .count()
    };
    assert_eq!(count(&s), 1);

    // The writer's own approval (GitHub lets a pusher who did not open the
    // PR approve it): refused, said once.
    s.app.fake.set_permission("agent", "write");
    repo.submit_review(pr, "agent", "APPROVE", "").unwrap();
    s.app.settle().await;
    assert!(!s.pull().merged, "a pusher does not approve their own work");
    assert_eq!(count(&s), 2);

    // A 65 KB change request: one revision, its text cut.
    let long = "Please handle this case. ".repeat(2_800);
    repo.submit_review(pr, "mia", "REQUEST_CHANGES", &long)
        .unwrap();
    s.app.settle().await;
    let revisions: Vec<String> = s
        .app
        .bot_comments(pr)
        .into_iter()
        .filter(|c| c.contains("Revision requested"))
        .collect();
    assert_eq!(revisions.len(), 1);
    assert!(revisions[0].len() < 10_000, "{}", revisions[0].len());

    // A comment review, a dismissed review that never approved, a review
    // of a pull request taskgate does not know: nothing said.
    let comments_before = s.app.bot_comments(pr).len();
    repo.submit_review(pr, "mia", "COMMENT", "Looks fine")
        .unwrap();
    let bob_review = repo.reviews(pr)[0].id;
    repo.dismiss_review(pr, bob_review, "mia", "not a maintainer")
        .unwrap();
    repo.push_files("feature", &[("x.txt", "x\n")], "Feature", "octocat");
    let other = repo.create_pull("feature", "main", "Not a task", "octocat");
    repo.submit_review(other, "mia", "APPROVE", "").unwrap();
    s.app.settle().await;
    assert_eq!(s.app.bot_comments(pr).len(), comments_before);
    assert!(s.app.bot_comments(other).is_empty());
    assert!(!s.pull().merged);

    // An approval of the task PR that arrives once it is closed: ignored.
    let late = s
        .app
        .fake
        .without_echoes(|| repo.submit_review(pr, "mia", "APPROVE", "").unwrap());
    repo.close_issue(pr, "octocat");
    s.app.settle().await;
    let approve = fakehub::payloads::pull_request_review_submitted(&repo, pr, late);
    s.app.deliver("pull_request_review", &approve).await;
    s.app.settle().await;
    assert_eq!(s.app.bot_comments(pr).len(), comments_before);
    assert!(!s.pull().merged);
    s.app.assert_contract_kept();
}
