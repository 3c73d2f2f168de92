//! Flaky tests apart from broken ones, end to end: real commands on a real
//! commit write JUnit reports; a test that fails and then passes on a
//! retry of the same commit three times is quarantined, its later failure
//! does not fail the gate (a warning instead), the "Flaky tests" issue is
//! created once and updated in place, and `/taskgate unquarantine` lifts
//! it. A test that always fails is never quarantined. A test whose result
//! changes across commits that touched none of its files (README-only
//! commits) is quarantined too; a regression across commits that changed
//! the code it reads is not.
//!
//! Determinism: the plan on the default branch says what the flaky test
//! gives (`sh check.sh A|B|C` copies a report; `sh check.sh pass|fail`
//! writes one), and `/taskgate retry` runs the same commit again with it.

use crate::support::plan::{Plan, Task};
use crate::support::story::{Story, PLAN_PATH};
use crate::support::REPO;

const FLAKY: &str = "tests/test_net.py::test_fetch";
const BROKEN: &str = "tests/test_db.py::test_schema";

fn plan(mode: &str) -> String {
    Plan::story("Checked work")
        .task(Task::new("check", "Make the check pass").runs(&format!("sh check.sh {mode}")))
        .yaml()
}

/// Room for many failed runs before the failure loop escalates, and
/// branch todos that outlive a quarantine (the clock moves 15 days).
const CONFIG: &str =
    "limits: { max_debug_attempts: 10, max_branch_depth: 5, branch_timeout_seconds: 2592000 }\n";

fn case(file: &str, name: &str, failed: bool) -> String {
    let class = file.trim_end_matches(".py").replace('/', ".");
    let body = if failed {
        r#"><failure message="assert 1 == 2">E   assert 1 == 2</failure></testcase>"#
    } else {
        "/>"
    };
    format!(
        r#"<testcase classname="{class}" name="{name}" file="{file}" line="3" time="0.010"{body}"#
    )
}

/// A pytest-style report: the flaky test and the broken one.
fn junit(flaky_fails: bool, broken_fails: bool) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites><testsuite name=\"pytest\">\n{}\n{}\n</testsuite></testsuites>\n",
        case("tests/test_net.py", "test_fetch", flaky_fails),
        case("tests/test_db.py", "test_schema", broken_fails),
    )
}

const CHECK: &str = "cp report-$1.xml junit.xml\ngrep -q '<failure' junit.xml && exit 1\nexit 0\n";

async fn set_mode(s: &Story, mode: &str) {
    s.app
        .push_to_main(&[(PLAN_PATH, plan(mode).as_str())])
        .await;
}

/// `/taskgate retry` on the task issue; waits for the `n`th check run.
async fn retry(s: &Story, sha: &str, n: usize) -> fakehub::CheckRun {
    s.app
        .comment(s.task_issue, "octocat", "/taskgate retry")
        .await;
    let runs = s.completed(sha, n).await;
    runs.into_iter().max_by_key(|c| c.id).unwrap()
}

fn tracking_issues(s: &Story) -> Vec<fakehub::Issue> {
    s.app
        .fake
        .repo(REPO)
        .issues()
        .into_iter()
        .filter(|i| i.title == "Flaky tests")
        .collect()
}

async fn quarantined(s: &Story) -> Vec<String> {
    let repo = taskgate_core::ids::RepoName::parse(REPO).unwrap();
    let now = s.app.store().clock().now_s();
    let ids = s.app.store().quarantined_tests(&repo, now).await.unwrap();
    ids.into_iter().map(|t| t.to_string()).collect()
}

#[tokio::test]
async fn a_test_flaky_on_retries_is_quarantined_warned_about_tracked_and_lifted() {
    let s = Story::of(&plan("A"))
        .config(CONFIG)
        .runners(1)
        .start()
        .await;
    let sha = s
        .push(
            &[
                ("report-A.xml", &junit(true, true)),
                ("report-B.xml", &junit(false, true)),
                ("report-C.xml", &junit(true, false)),
                ("check.sh", CHECK),
            ],
            "tests",
        )
        .await;
    s.completed(&sha, 1).await;
    // Three flips on the same commit: fail (A), then pass (B).
    let mut n = 1;
    for flip in 1..=3 {
        if flip > 1 {
            set_mode(&s, "A").await;
            n += 1;
            retry(&s, &sha, n).await;
        }
        set_mode(&s, "B").await;
        n += 1;
        let run = retry(&s, &sha, n).await;
        assert_eq!(
            run.conclusion.as_deref(),
            Some("failure"),
            "the broken test"
        );
        if flip < 3 {
            assert!(quarantined(&s).await.is_empty(), "after {flip} flips");
            assert!(tracking_issues(&s).is_empty());
        }
    }
    // The third event quarantines the flaky test, never the broken one.
    assert_eq!(quarantined(&s).await, [FLAKY]);
    let issues = tracking_issues(&s);
    assert_eq!(issues.len(), 1, "one tracking issue");
    let first_body = issues[0].body.clone().unwrap_or_default();
    assert!(first_body.contains(FLAKY), "{first_body}");
    assert!(!first_body.contains(BROKEN), "{first_body}");
    assert!(
        first_body.contains("unquarantine <test id>"),
        "{first_body}"
    );

    // Its later failure does not fail the gate: a warning instead.
    set_mode(&s, "C").await;
    n += 1;
    let run = retry(&s, &sha, n).await;
    assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
    insta::assert_snapshot!(run.title.clone().unwrap(), @"1 passed, 1 quarantined");
    let levels: Vec<(&str, &str)> = run
        .annotations
        .iter()
        .filter(|a| a["path"] == "tests/test_net.py")
        .map(|a| {
            (
                a["annotation_level"].as_str().unwrap(),
                a["title"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        levels,
        [(
            "warning",
            "quarantined test failed (flaky, not failing): tests/test_net.py::test_fetch"
        )]
    );

    // A wrong id is refused, naming the quarantined one; nothing changes.
    s.app
        .comment(
            s.task_issue,
            "octocat",
            "/taskgate unquarantine tests/test_net.py::test_fech",
        )
        .await;
    s.app.settle().await;
    let replies = s.app.bot_comments(s.task_issue);
    let refusal = replies
        .iter()
        .find(|c| c.contains("unquarantine` did nothing"))
        .expect("a refusal reply");
    assert!(refusal.contains(&format!("`{FLAKY}`")), "{refusal}");
    assert_eq!(quarantined(&s).await, [FLAKY]);

    // `/taskgate unquarantine` lifts it: a +1, the issue updated in place.
    let comment = s
        .app
        .comment(
            s.task_issue,
            "octocat",
            &format!("/taskgate unquarantine {FLAKY}"),
        )
        .await;
    s.app.settle().await;
    let reacted = s
        .app
        .fake
        .repo(REPO)
        .comments(s.task_issue)
        .into_iter()
        .find(|c| c.id == comment.id)
        .is_some_and(|c| c.reactions.iter().any(|r| r.content == "+1"));
    assert!(reacted, "answered with a +1");
    assert!(quarantined(&s).await.is_empty());
    let issues = tracking_issues(&s);
    assert_eq!(issues.len(), 1, "still one tracking issue");
    let body = issues[0].body.clone().unwrap_or_default();
    assert_ne!(body, first_body, "updated in place");
    assert!(body.contains("No test is quarantined now."), "{body}");

    // Lifted: the same failure fails the gate again.
    n += 1;
    let run = retry(&s, &sha, n).await;
    assert_eq!(run.conclusion.as_deref(), Some("failure"));
    s.app.assert_contract_kept();
}

/// Writes `junit.xml` with two tests: `test_fetch`, whose result the plan
/// on the default branch gives (`$1`: pass|fail), and `test_total`, which
/// fails while `src/app.py` holds a bug (code the test reads).
const CHECK_ACROSS: &str = r#"flaky=$1
total=pass
grep -q bug src/app.py && total=fail
case_of() {
  if [ "$2" = fail ]; then
    printf '<testcase classname="tests.%s" name="%s" file="tests/%s.py" line="3" time="0.010"><failure message="assert 1 == 2">E   assert 1 == 2</failure></testcase>\n' "$1" "$3" "$1"
  else
    printf '<testcase classname="tests.%s" name="%s" file="tests/%s.py" line="3" time="0.010"/>\n' "$1" "$3" "$1"
  fi
}
{
  printf '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="pytest">\n'
  case_of test_net "$flaky" test_fetch
  case_of test_app "$total" test_total
  printf '</testsuite></testsuites>\n'
} > junit.xml
grep -q '<failure' junit.xml && exit 1
exit 0
"#;

const REGRESSED: &str = "tests/test_app.py::test_total";

/// Pushes `files` to the task branch with the flaky test's result `mode`
/// set on the default branch first; returns the commit's one check run.
async fn push_with(s: &Story, mode: &str, files: &[(&str, &str)]) -> fakehub::CheckRun {
    set_mode(s, mode).await;
    let sha = s.push(files, "next").await;
    let runs = s.completed(&sha, 1).await;
    runs.into_iter().max_by_key(|c| c.id).unwrap()
}

#[tokio::test]
async fn a_test_that_flips_across_commits_touching_none_of_its_files_is_quarantined_a_regression_is_not(
) {
    let s = Story::of(&plan("pass"))
        .config(CONFIG)
        .runners(1)
        .start()
        .await;
    let readme = |n: &str| ("README.md", n.to_string());
    let first = [
        ("check.sh", CHECK_ACROSS.to_string()),
        ("src/app.py", "total = 1\n".to_string()),
        readme("1"),
    ];
    let first: Vec<(&str, &str)> = first.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let run = push_with(&s, "pass", &first).await;
    assert_eq!(run.conclusion.as_deref(), Some("success"));
    // `test_fetch` flips on commits that changed only the README: flaky
    // events. `test_total` flips on commits that changed the code it
    // reads: a regression and its fix, never an event.
    let steps: [(&str, (&str, &str), &str); 6] = [
        ("fail", ("README.md", "2"), "failure"),
        ("pass", ("README.md", "3"), "success"),
        ("pass", ("src/app.py", "total = bug\n"), "failure"),
        ("pass", ("src/app.py", "total = 1\n"), "success"),
        ("pass", ("src/app.py", "total = bug\n"), "failure"),
        ("fail", ("README.md", "4"), "failure"),
    ];
    for (i, (mode, file, expected)) in steps.into_iter().enumerate() {
        let run = push_with(&s, mode, &[file]).await;
        assert_eq!(
            run.conclusion.as_deref(),
            Some(expected),
            "step {i}: {run:#?}"
        );
        if i < 5 {
            assert!(quarantined(&s).await.is_empty(), "after step {i}");
        }
    }
    // The third flip across untouched commits quarantines `test_fetch`;
    // the regression is never quarantined.
    assert_eq!(quarantined(&s).await, [FLAKY]);
    let repo = taskgate_core::ids::RepoName::parse(REPO).unwrap();
    let kept = s.app.store().quarantines(&repo).await.unwrap();
    let kinds: Vec<taskgate_core::flaky::EventKind> =
        kept[0].events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [taskgate_core::flaky::EventKind::Untouched; 3]);
    assert_eq!(tracking_issues(&s).len(), 1);

    // Its next failure is a warning; the regressed test still counts.
    let run = push_with(&s, "fail", &[("src/app.py", "total = 1\n")]).await;
    assert_eq!(run.conclusion.as_deref(), Some("success"), "{run:#?}");
    insta::assert_snapshot!(run.title.clone().unwrap(), @"1 passed, 1 quarantined");
    let run = push_with(&s, "fail", &[("src/app.py", "total = bug\n")]).await;
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
    assert!(!quarantined(&s).await.contains(&REGRESSED.to_string()));

    // After `flaky.quarantine_days` (14) the quarantine has run out: the
    // periodic pass rewrites the tracking issue, and the flaky test's
    // failure fails the gate again.
    s.app
        .clock
        .advance(std::time::Duration::from_secs(15 * 86_400));
    crate::support::eventually("the tracking issue drops the ended quarantine", || async {
        let body = tracking_issues(&s)[0].body.clone().unwrap_or_default();
        body.contains("No test is quarantined now.")
    })
    .await;
    assert!(quarantined(&s).await.is_empty());
    let run = push_with(&s, "fail", &[("src/app.py", "total = 1\n")]).await;
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:#?}");
    insta::assert_snapshot!(run.title.clone().unwrap(), @"1 failed, 1 passed — test_failure");
    assert_eq!(tracking_issues(&s).len(), 1, "updated in place");
    s.app.assert_contract_kept();
}
