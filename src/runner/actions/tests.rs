//! Artifacts built with a real zip writer, served by the fake GitHub and
//! read back through the real client.

use std::io::Write;

use fakehub::FakeGitHub;
use zip::write::SimpleFileOptions;

use super::*;
use crate::github::{AppCredentials, GitHubApp};
use taskgate_core::ids::InstallationId;
use taskgate_core::report::{render_check_output, CommandResult};
use taskgate_core::Effect;

const TASK: &str = "data";

/// [`TASK`] as what the run tests.
fn subject() -> taskgate_core::task::RunSubject {
    taskgate_core::task::RunSubject::Task(TASK.into())
}
const REPO: &str = "acme/widgets";

fn sha() -> CommitSha {
    crate::testing::sha("0123456789abcdef0123456789abcdef01234567")
}

fn report(task: &str, sha: &str) -> RunReport {
    RunReport {
        version: REPORT_VERSION,
        task: taskgate_core::task::RunSubject::Task(task.into()),
        sha: Some(sha.into()),
        gates: vec![GateResult {
            gate: "test".into(),
            passed: true,
            kind: None,
            summary: None,
            commands: vec![CommandResult {
                cmd: "pytest -q".into(),
                gate: "test".into(),
                exit_code: Some(0),
                signal: None,
                timed_out: false,
                timeout_seconds: 600,
                duration_ms: 1_200,
                output: "3 passed\n".into(),
                output_bytes: 9,
                truncated: false,
                flaky: false,
                classification: None,
            }],
            missing_artifacts: vec![],
            metric_failures: vec![],
            warnings: vec![],
            cancelled: false,
            tests: None,
        }],
        duration_ms: 1_300,
        cancelled: false,
        runner_fault: None,
        tested: None,
    }
}

/// A zip holding `files` (name, content), deflated like upload-artifact's.
fn zip_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in files {
        w.start_file(*name, options).unwrap();
        w.write_all(content).unwrap();
    }
    w.finish().unwrap().into_inner()
}

fn report_zip(report: &RunReport) -> Vec<u8> {
    zip_of(&[(REPORT_FILE, &serde_json::to_vec(report).unwrap())])
}

fn read(zip: &[u8]) -> Result<RunReport, ArtifactError> {
    read_report_zip(zip, &subject(), &sha(), ArtifactLimits::default())
}

struct Fake {
    gh: FakeGitHub,
    repo: fakehub::RepoHandle,
    client: octocrab::Octocrab,
}

impl Fake {
    async fn start() -> Fake {
        let gh = FakeGitHub::start().await;
        let repo = gh.install(7, REPO);
        let creds = AppCredentials::from_pem(gh.app_id(), FakeGitHub::private_key_pem()).unwrap();
        let client = GitHubApp::new(&gh.url(), creds)
            .installation_client(InstallationId::new(7))
            .await
            .unwrap();
        Fake { gh, repo, client }
    }

    /// A completed run of the runner workflow with these artifacts.
    fn run_with(&self, artifacts: &[(&str, &[u8])]) -> (u64, Vec<u64>) {
        let run = self.repo.add_workflow_run("taskgate-run.yml", "main", None);
        (run, self.repo.complete_run(run, "success", artifacts))
    }

    async fn fetch(&self, run: u64, limits: ArtifactLimits) -> Result<RunReport, ArtifactError> {
        let repo = RepoName::parse(REPO).unwrap();
        fetch_report(&self.client, &repo, run, &subject(), &sha(), limits).await
    }

    fn downloads(&self) -> usize {
        self.gh
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/zip") || r.path.contains("/_fakehub/blobs/"))
            .count()
    }
}

#[tokio::test]
async fn a_valid_artifact_round_trips_the_report() {
    let fake = Fake::start().await;
    let expected = report(TASK, sha().as_str());
    let zip = report_zip(&expected);
    let (run, _) = fake.run_with(&[("other-logs", b"not ours"), (REPORT_ARTIFACT, &zip)]);
    let got = fake.fetch(run, ArtifactLimits::default()).await.unwrap();
    assert_eq!(got, expected);
    // Followed the redirect to storage, which refuses GitHub's token: none
    // was sent there.
    assert_eq!(fake.downloads(), 2, "{:#?}", fake.gh.requests());
    fake.gh.assert_contract_kept();
}

#[tokio::test]
async fn an_artifact_announced_over_the_cap_is_not_downloaded() {
    let fake = Fake::start().await;
    let zip = report_zip(&report(TASK, sha().as_str()));
    let (run, _) = fake.run_with(&[(REPORT_ARTIFACT, &zip)]);
    let limits = ArtifactLimits {
        max_zip_bytes: zip.len() as u64 - 1,
        ..ArtifactLimits::default()
    };
    let err = fake.fetch(run, limits).await.unwrap_err();
    assert!(
        matches!(err, ArtifactError::TooLarge { what: "the zip", bytes, .. } if bytes == zip.len() as u64),
        "{err}"
    );
    assert_eq!(fake.downloads(), 0);
}

#[tokio::test]
async fn an_artifact_longer_than_announced_is_cut_off_while_reading() {
    let fake = Fake::start().await;
    let zip = report_zip(&report(TASK, sha().as_str()));
    let (run, ids) = fake.run_with(&[(REPORT_ARTIFACT, &zip)]);
    fake.repo.set_artifact_reported_size(ids[0], 10);
    let limits = ArtifactLimits {
        max_zip_bytes: 100,
        ..ArtifactLimits::default()
    };
    let err = fake.fetch(run, limits).await.unwrap_err();
    assert!(
        matches!(err, ArtifactError::TooLarge { what: "the zip", bytes, limit: 100 } if bytes > 100),
        "{err}"
    );
}

#[tokio::test]
async fn a_run_without_the_artifact_names_the_run() {
    let fake = Fake::start().await;
    let (run, _) = fake.run_with(&[("coverage", b"PK")]);
    let err = fake
        .fetch(run, ArtifactLimits::default())
        .await
        .unwrap_err();
    let ArtifactError::NoReport { run_url } = &err else {
        panic!("{err}");
    };
    assert_eq!(
        run_url,
        &format!("https://github.com/acme/widgets/actions/runs/{run}")
    );
    insta::assert_snapshot!(err.to_string().replace(&run.to_string(), "RUN"), @"the workflow run has no `taskgate-report` artifact (did the job reach its upload step?): https://github.com/acme/widgets/actions/runs/RUN");
}

#[tokio::test]
async fn a_report_for_another_commit_is_refused_after_download() {
    let fake = Fake::start().await;
    let zip = report_zip(&report(TASK, "ffffffffffffffffffffffffffffffffffffffff"));
    let (run, _) = fake.run_with(&[(REPORT_ARTIFACT, &zip)]);
    let err = fake
        .fetch(run, ArtifactLimits::default())
        .await
        .unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"the report is for task `data` at ffffffffffffffffffffffffffffffffffffffff, but task `data` at 0123456789abcdef0123456789abcdef01234567 was dispatched");
}

#[test]
fn a_report_for_another_task_or_without_a_commit_is_refused() {
    let other = read(&report_zip(&report("entry", sha().as_str()))).unwrap_err();
    assert!(
        matches!(other, ArtifactError::WrongRun { ref found_task, .. } if found_task == "entry")
    );
    let mut no_sha = report(TASK, "");
    no_sha.sha = None;
    let err = read(&report_zip(&no_sha)).unwrap_err();
    assert!(
        matches!(err, ArtifactError::WrongRun { ref found_sha, .. } if found_sha == "no commit")
    );
}

#[test]
fn bytes_that_are_not_a_zip_are_refused() {
    let err = read(b"<html>503 Service Unavailable</html>").unwrap_err();
    assert!(matches!(err, ArtifactError::NotAZip(_)), "{err}");
}

#[test]
fn path_traversal_in_the_zip_is_refused() {
    for bad in ["../x", "a/../../x", "/etc/x", "a\\..\\x", "C:/x"] {
        let zip = zip_of(&[(REPORT_FILE, b"{}"), (bad, b"x")]);
        let err = read(&zip).unwrap_err();
        assert!(
            matches!(&err, ArtifactError::UnsafePath(p) if p == bad),
            "{bad}: {err}"
        );
    }
    let fine = zip_of(&[("logs/a..b.txt", b"x"), ("./logs/c", b"y")]);
    assert!(matches!(read(&fine), Err(ArtifactError::BadReport(_))));
}

#[test]
fn a_zip_bomb_is_refused_before_unpacking() {
    let zeros = vec![0u8; 4 << 20];
    let zip = zip_of(&[(REPORT_FILE, &zeros)]);
    assert!(zip.len() < 64 << 10, "compresses: {}", zip.len());
    let limits = ArtifactLimits {
        max_unpacked_bytes: 1 << 20,
        ..ArtifactLimits::default()
    };
    let err = read_report_zip(&zip, &subject(), &sha(), limits).unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"the `taskgate-report` artifact is too large: the unpacked content is 4194304 bytes, over the limit of 1048576");
}

#[test]
fn too_many_entries_are_refused() {
    let names: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
    let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b""[..])).collect();
    let err = read(&zip_of(&files)).unwrap_err();
    assert!(
        matches!(
            err,
            ArtifactError::TooManyEntries {
                entries: 20,
                limit: 16
            }
        ),
        "{err}"
    );
}

#[test]
fn a_bad_or_missing_report_file_says_what_is_there() {
    let err = read(&zip_of(&[("report.json", b"{}")])).unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"the `taskgate-report` artifact holds no usable report: no taskgate-report.json in it; it holds: report.json");
    let err = read(&zip_of(&[(REPORT_FILE, b"{\"version\": 1}")])).unwrap_err();
    assert!(matches!(err, ArtifactError::BadReport(_)), "{err}");
}

#[test]
fn a_report_of_another_format_is_refused_naming_the_version_to_install() {
    let mut future = report(TASK, sha().as_str());
    future.version = REPORT_VERSION + 1;
    let err = read(&report_zip(&future)).unwrap_err().to_string();
    let v = env!("CARGO_PKG_VERSION");
    assert_eq!(
        err.replace(v, "X.Y.Z"),
        "the `taskgate-report` artifact holds no usable report: taskgate-report.json has \
         format version 2, this taskgate server (X.Y.Z) reads format 1; install taskgate \
         X.Y.Z in the workflow (`uses: <owner>/taskgate@vX.Y.Z`, as `taskgate init` writes it)"
    );
    // A format that no longer parses as a report still says what to install.
    let other = br#"{"version": 2, "results": {"unit": "passed"}}"#;
    let err = read(&zip_of(&[(REPORT_FILE, other)]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("install taskgate {v} in the workflow")),
        "{err}"
    );
}

#[test]
fn dispatch_inputs_are_six_strings_naming_the_story() {
    let inputs = dispatch_inputs(
        &StoryId::new("file:checks"),
        &subject(),
        (&sha(), None),
        &["lint".into(), "test".into()],
        "42",
    );
    let keys: Vec<&str> = inputs.keys().map(String::as_str).collect();
    let mut expected = WORKFLOW_INPUTS.to_vec();
    expected.sort();
    assert_eq!(keys, expected);
    assert_eq!(inputs["gates"], "lint,test");
    assert_eq!(inputs["sha"], sha().as_str());
    assert_eq!(inputs["story"], "file:checks");
    assert_eq!(inputs["base"], "", "no story branch to merge");
    assert_eq!(
        dispatch_inputs(
            &StoryId::new("file:s"),
            &subject(),
            (&sha(), None),
            &[],
            "1"
        )["gates"],
        ""
    );
}

#[tokio::test]
async fn the_fake_dispatch_returns_the_run_it_created() {
    let fake = Fake::start().await;
    fake.repo.add_workflow("taskgate-run.yml");
    let inputs = dispatch_inputs(
        &StoryId::new("file:s"),
        &subject(),
        (&sha(), None),
        &[],
        "1",
    );
    let body = serde_json::json!({ "ref": "main", "inputs": inputs, "return_run_details": true });
    let r = send(
        &fake.client,
        http::Method::POST,
        "/repos/acme/widgets/actions/workflows/taskgate-run.yml/dispatches",
        Some(&body),
    )
    .await
    .unwrap();
    let v: serde_json::Value = r.json().unwrap();
    let run = fake.repo.dispatches()[0].run_id;
    assert_eq!(v["workflow_run_id"], run);
    fake.gh.assert_contract_kept();
}

#[test]
fn a_missing_report_fails_every_gate_as_tooling_error() {
    let r = report_for_missing_artifact(
        &subject(),
        &sha(),
        &["lint".into(), "test".into()],
        "the job was cancelled",
        Some("https://github.com/acme/widgets/actions/runs/9"),
    );
    assert!(!r.passed());
    assert_eq!(r.gates.len(), 2);
    assert!(r
        .gates
        .iter()
        .all(|g| g.kind == Some(FailureKind::ToolingError) && !g.passed));
    let out = render_check_output(&r.gates[1], "");
    insta::assert_snapshot!(out.title, @"0 passed — tooling_error");
    insta::assert_snapshot!(out.summary, @r"
    **tooling_error**

    ```text
    the workflow run ended without a report: the job was cancelled
    https://github.com/acme/widgets/actions/runs/9
    ```

    **Warnings**

    - workflow run: https://github.com/acme/widgets/actions/runs/9
    ");
    let none = report_for_missing_artifact(&subject(), &sha(), &[], "no run", None);
    assert_eq!(none.gates.len(), 1);
    assert!(!none.passed());
}

#[test]
fn the_run_id_in_a_display_title_names_the_attempt() {
    let attempt = AttemptRef {
        story: "file:checks".into(),
        task: taskgate_core::task::RunSubject::Task("data load".into()),
        attempt: 3,
    };
    let id = attempt_run_id(&attempt);
    assert_eq!(id, "story=file:checks task=data%20load attempt=3");
    let title = format!("taskgate: data load at {} (run {id})", sha().as_str());
    assert_eq!(attempt_of_display_title(&title), Some(attempt));
    for other in [
        "taskgate run",
        "taskgate: x (run story=a task=b)",
        "taskgate: x (run story=a task=b attempt=c)",
        "taskgate: x (run story=a task=b attempt=1 gate=g)",
    ] {
        assert_eq!(attempt_of_display_title(other), None, "{other}");
    }
}

#[test]
fn a_dispatch_stored_before_attempts_were_recorded_still_reads() {
    let old = r#"{"kind":"dispatch_workflow","repo":"o/r","workflow":"agent-coder.yml",
        "git_ref":"main","inputs":{"task":"t"},"report_to":null}"#;
    let effect: Effect = serde_json::from_str(old).unwrap();
    let Effect::DispatchWorkflow { attempt, .. } = effect else {
        panic!("{effect:?}")
    };
    assert_eq!(attempt, None);
}

/// What task code controls in the report it uploads: 200,000 findings on
/// one command, 200,000 warnings, 2,000 commands. Read back, the report is
/// within every cap and what it keeps is what was reported, in order.
#[test]
fn a_report_with_200000_findings_is_capped_when_read_back() {
    use taskgate_core::classify::{Classification, Finding};
    use taskgate_core::report::{
        MAX_ANNOTATIONS_PER_GATE, MAX_COMMANDS_PER_GATE, MAX_FINDINGS_PER_COMMAND, MAX_LIST_ITEMS,
    };
    let mut big = report(TASK, sha().as_str());
    let gate = &mut big.gates[0];
    gate.passed = false;
    let mut failing = gate.commands[0].clone();
    failing.exit_code = Some(1);
    failing.classification = Some(Classification {
        kind: taskgate_core::classify::FailureKind::LintFailure,
        summary: "ruff: 200000 errors".into(),
        findings: (0..200_000)
            .map(|i| Finding {
                path: format!("src/m{i}.py"),
                line: 1,
                column: None,
                message: format!("E501 line too long ({i})"),
            })
            .collect(),
    });
    gate.commands = std::iter::once(failing)
        .chain(std::iter::repeat_n(gate.commands[0].clone(), 1_999))
        .collect();
    gate.warnings = (0..200_000).map(|i| format!("warning {i}")).collect();

    let back = read(&report_zip(&big)).unwrap();
    let gate = &back.gates[0];
    assert_eq!(gate.commands.len(), MAX_COMMANDS_PER_GATE);
    let findings = &gate.commands[0].classification.as_ref().unwrap().findings;
    assert_eq!(findings.len(), MAX_FINDINGS_PER_COMMAND);
    assert_eq!(findings[49].path, "src/m49.py");
    assert_eq!(gate.warnings.len(), MAX_LIST_ITEMS + 1);
    assert_eq!(gate.warnings[0], "warning 0");
    assert_eq!(gate.warnings[MAX_LIST_ITEMS - 2], "warning 98");
    assert_eq!(gate.warnings[MAX_LIST_ITEMS - 1], "… and 199901 more");
    assert_eq!(
        gate.warnings[MAX_LIST_ITEMS],
        "1744 more command(s) not shown: a gate keeps at most 256"
    );

    let output = render_check_output(gate, "");
    assert_eq!(output.annotations.len(), MAX_FINDINGS_PER_COMMAND);
    assert!(output.annotations.len() <= MAX_ANNOTATIONS_PER_GATE);
    assert!(output.summary.len() <= taskgate_core::report::CHECK_TEXT_LIMIT);
}
