//! What taskgate takes for its own on GitHub (issue 28, items 7 and 9): a
//! marker is text anyone can write, so only issues and comments its App
//! made are adopted, by the executor's marker recovery and by `resync`.

use fakehub::Fault;
use taskgate_core::plan::TaskId;
use taskgate_core::story::{labels, Marker};

use crate::support::{TestApp, REPO};

const CREATE_ISSUE: &str = "POST /repos/{owner}/{repo}/issues";
const OTHER_APP: &str = "other-app[bot]";

fn plan(story: &str) -> String {
    format!("story: {story}\ntasks:\n  - {{ id: t, title: Do it, requires_testing: false }}\n")
}

/// Opens an issue as `author`, labelled `label`, carrying `marker`.
fn plant(app: &TestApp, author: &str, label: &str, marker: &Marker) -> u64 {
    let repo = app.fake.repo(REPO);
    let body = format!("Not taskgate's.\n\n{}", marker.render());
    let number = repo.create_issue("Planted", &body, author);
    repo.add_labels(number, &[label], author);
    number
}

#[tokio::test]
async fn another_apps_issue_carrying_a_storys_marker_is_not_adopted_on_retry() {
    let app = TestApp::start().await;
    app.push_to_main(&[(".taskgate/stories/a.yml", &plan("A"))])
        .await;
    let story_b = Marker::Story {
        story: "file:b".into(),
    };
    let planted = plant(&app, OTHER_APP, labels::STORY, &story_b);
    // The story issue's create fails once: the retry looks for its marker.
    app.fake.inject(
        CREATE_ISSUE,
        Fault::Status {
            status: 502,
            times: 1,
        },
    );
    app.push_to_main(&[(".taskgate/stories/b.yml", &plan("B"))])
        .await;

    let record = app
        .store()
        .issue_record(
            &taskgate_core::ids::RepoName::parse(REPO).unwrap(),
            &story_b.key(),
        )
        .await
        .unwrap()
        .expect("story B is recorded");
    assert_ne!(
        record.number.get(),
        planted,
        "the planted issue was adopted"
    );
    let made = app.fake.repo(REPO).issue(record.number.get()).unwrap();
    assert_eq!(made.author, "taskgate-test[bot]");
    let planted = app.fake.repo(REPO).issue(planted).unwrap();
    assert_eq!(planted.title, "Planted", "taskgate left it alone");
}

#[tokio::test]
async fn resync_rebuilds_only_from_issues_the_app_made() {
    let app = TestApp::start().await;
    app.push_to_main(&[(".taskgate/stories/a.yml", &plan("A"))])
        .await;
    let app = app.lose_database().await;
    // A person's and another App's issues, labelled and marked as taskgate's.
    let forged_task = Marker::Task {
        story: "file:a".into(),
        task: TaskId::new("t2"),
    };
    let forged_story = Marker::Story {
        story: "file:c".into(),
    };
    plant(&app, "octocat", labels::TASK, &forged_task);
    plant(&app, OTHER_APP, labels::STORY, &forged_story);

    let creds = taskgate::github::AppCredentials::from_pem(
        app.fake.app_id(),
        fakehub::FakeGitHub::private_key_pem(),
    )
    .unwrap();
    let github = taskgate::github::GitHubApp::new(&app.fake.url(), creds);
    let repo = taskgate_core::ids::RepoName::parse(REPO).unwrap();
    let found = taskgate::app::resync::resync(&github, app.store(), &repo)
        .await
        .unwrap();
    assert_eq!(found.issues, 2, "story A and its task, nothing planted");
    for forged in [&forged_task, &forged_story] {
        let record = app
            .store()
            .issue_record(&repo, &forged.key())
            .await
            .unwrap();
        assert!(record.is_none(), "{forged:?} was taken for taskgate's");
    }
}
