//! Real processes in temporary directories; no mocks.

use super::*;
use crate::runner::cancel_pair;
use crate::runner::mirror::tests::Origin;
use crate::runner::MirrorStore;
use taskgate_core::plan::{parse_plan, NoFiles, TaskId};

fn task(yaml_tests: &str, extra: &str) -> Task {
    let src =
        format!("story: s\ntasks:\n  - id: t\n    acceptance:\n      tests: {yaml_tests}\n{extra}");
    let (plan, problems) = parse_plan(&src);
    let plan = plan.unwrap_or_else(|| panic!("{problems:?}"));
    plan.task(&TaskId::new("t")).unwrap().clone()
}

fn options() -> RunOptions {
    RunOptions {
        default_timeout: Duration::from_secs(5),
        grace: Duration::from_millis(300),
        ..RunOptions::default()
    }
}

async fn run(dir: &Path, task: &Task) -> RunReport {
    run_gates(dir, task, &NoFiles, options()).await
}

#[tokio::test]
async fn gates_group_commands_and_classify_failures() {
    let dir = tempfile::tempdir().unwrap();
    let t = task(
        r#"[{ cmd: "echo lint ok", gate: lint }, { cmd: "echo one" }, { cmd: "exit 4" }, { cmd: "no-such-tool-taskgate" }]"#,
        "",
    );
    let report = run(dir.path(), &t).await;
    let names: Vec<&str> = report.gates.iter().map(|g| g.gate.as_str()).collect();
    assert_eq!(names, ["lint", "test"]);
    assert!(report.gates[0].passed);
    let test = &report.gates[1];
    assert!(!test.passed && !report.passed());
    assert_eq!(test.commands.len(), 3, "a failure does not stop the gate");
    assert_eq!(test.commands[1].exit_code, Some(4));
    assert_eq!(test.commands[2].exit_code, Some(127));
    assert_eq!(
        test.kind,
        test.commands[1].classification.as_ref().map(|c| c.kind)
    );
    assert!(test.commands.iter().all(|c| !c.flaky));
}

#[tokio::test]
async fn a_fail_then_pass_is_flaky_and_the_gate_passes_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let t = task(
        r#"[{ cmd: "test -f .ran || { touch .ran; echo 'assertion failed'; exit 1; }" }]"#,
        "",
    );
    let report = run(dir.path(), &t).await;
    let gate = &report.gates[0];
    assert!(gate.passed, "{gate:?}");
    let c = &gate.commands[0];
    assert!(c.flaky && c.passed());
    assert!(
        c.output.contains("assertion failed"),
        "the failed run's output is kept"
    );
    assert_eq!(gate.warnings.len(), 1);
    assert!(gate.warnings[0].contains("flaky"), "{:?}", gate.warnings);
}

#[tokio::test]
async fn a_timeout_is_classified_and_not_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let t = task(
        r#"[{ cmd: "echo waiting; sleep 100", timeout_seconds: 1 }]"#,
        "",
    );
    let start = Instant::now();
    let report = run(dir.path(), &t).await;
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    let gate = &report.gates[0];
    assert_eq!(gate.kind, Some(FailureKind::Timeout));
    assert!(gate.commands[0].timed_out);
    assert!(gate
        .summary
        .as_deref()
        .unwrap()
        .contains("timed out after 1 s"));
}

#[tokio::test]
async fn artifacts_and_metrics_are_checked_on_the_test_gate() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "      expected_artifacts: [out/model.bin, missing.txt]\n      metrics: [{ name: rows, operator: \">=\", value: 10 }, { name: acc, operator: \">\", value: 0.9 }, { name: gone, operator: \"==\", value: 1 }]\n";
    let t = task(
        r#"[{ cmd: "mkdir -p out && touch out/model.bin && echo '::taskgate-metric rows=3 acc=0.5'", gate: unit }, { cmd: "echo '{\"acc\": 0.95}' > taskgate-metrics.json" }]"#,
        extra,
    );
    let report = run(dir.path(), &t).await;
    let (unit, test) = (&report.gates[0], &report.gates[1]);
    assert!(unit.passed && unit.metric_failures.is_empty());
    assert!(!test.passed);
    assert_eq!(test.kind, Some(FailureKind::SpecMismatch));
    assert_eq!(test.missing_artifacts, ["missing.txt"]);
    assert_eq!(
        test.metric_failures,
        [
            "`rows` = 3, expected >= 10",
            "`gone` was not reported (print `::taskgate-metric gone=<value>` or write it to taskgate-metrics.json)"
        ]
    );
    insta::assert_snapshot!(test.summary.as_deref().unwrap(), @r"
        missing artifact: missing.txt
        metric `rows` = 3, expected >= 10
        metric `gone` was not reported (print `::taskgate-metric gone=<value>` or write it to taskgate-metrics.json)
        ");
}

/// A task whose gate runs `cmd` and expects metric `acc` > 0.9.
fn acc_task(cmd: &str) -> Task {
    let extra = "      metrics: [{ name: acc, operator: \">\", value: 0.9 }]\n";
    task(&format!("[{{ cmd: {cmd:?} }}]"), extra)
}

#[tokio::test]
async fn the_metrics_file_is_not_read_through_a_symbolic_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.json");
    std::fs::write(&secret, r#"{"acc": 0.95}"#).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join(METRICS_FILE)).unwrap();
    let report = run(dir.path(), &acc_task("true")).await;
    let gate = &report.gates[0];
    assert!(!gate.passed, "a metric read through the link: {gate:?}");
    assert!(gate.metric_failures[0].starts_with("`acc` was not reported"));
    assert!(
        gate.warnings
            .iter()
            .any(|w| w == "taskgate-metrics.json is a symbolic link; taskgate does not follow it (write the file itself)"),
        "{:?}",
        gate.warnings
    );
}

#[tokio::test]
async fn an_oversized_metrics_file_is_refused_and_a_normal_one_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let padded = format!(
        r#"{{"acc": 0.95}}{}"#,
        " ".repeat(MAX_METRICS_FILE_BYTES as usize)
    );
    std::fs::write(dir.path().join(METRICS_FILE), padded).unwrap();
    let report = run(dir.path(), &acc_task("true")).await;
    let gate = &report.gates[0];
    assert!(!gate.passed, "an oversized file was read: {gate:?}");
    assert!(
        gate.warnings
            .iter()
            .any(|w| w == "taskgate-metrics.json is over 1048576 bytes; taskgate did not read it"),
        "{:?}",
        gate.warnings
    );

    std::fs::write(dir.path().join(METRICS_FILE), r#"{"acc": 0.95}"#).unwrap();
    let report = run(dir.path(), &acc_task("true")).await;
    assert!(report.gates[0].passed, "{:?}", report.gates[0]);
}

#[tokio::test]
async fn many_metric_lines_are_read_in_one_pass_with_bounded_warnings() {
    let dir = tempfile::tempdir().unwrap();
    // 100,000 distinct metrics and 100,000 unreadable ones, then `acc`.
    let cmd =
        "seq 1 100000 | sed 's/.*/::taskgate-metric m&=1 bad&/'; echo '::taskgate-metric acc=0.95'";
    let report = run(dir.path(), &acc_task(cmd)).await;
    let gate = &report.gates[0];
    assert!(gate.passed, "{:?}", gate.metric_failures);
    assert_eq!(
        gate.warnings.len(),
        MAX_METRIC_WARNINGS + 1,
        "{:?}",
        gate.warnings
    );
    assert_eq!(
        gate.warnings[0],
        "unreadable metric `bad1` (expected name=number)"
    );
    assert_eq!(
        gate.warnings[MAX_METRIC_WARNINGS],
        "… and 99980 more unreadable metrics"
    );
}

#[tokio::test]
async fn nothing_to_run_is_a_spec_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, _) = parse_plan("story: s\ntasks:\n  - { id: t, title: T }\n");
    let t = plan.unwrap().task(&TaskId::new("t")).unwrap().clone();
    let report = run(dir.path(), &t).await;
    assert_eq!(report.gates[0].kind, Some(FailureKind::SpecMismatch));
    assert!(report.gates[0]
        .summary
        .as_deref()
        .unwrap()
        .contains("no test command could be discovered"));
}

#[tokio::test]
async fn cancelling_stops_the_run_and_marks_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = task(r#"[{ cmd: "sleep 100" }, { cmd: "echo never" }]"#, "");
    let (handle, token) = cancel_pair();
    let run = tokio::spawn(run_gates(
        dir.path(),
        &t,
        &NoFiles,
        RunOptions {
            cancel: token,
            ..options()
        },
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    handle.cancel();
    let report = run.await.unwrap();
    assert!(report.cancelled && !report.passed());
    let gate = &report.gates[0];
    assert!(gate.cancelled && !gate.passed);
    assert_eq!(gate.commands.len(), 1);
    assert_eq!(gate.kind, None, "a cancelled run is no verdict");
}

#[tokio::test]
async fn runs_beyond_the_bound_wait_and_are_told_their_place() {
    let runner = LocalRunner::new(1);
    let first = runner.slot(|_| panic!("the first run does not wait")).await;
    let (tx, rx) = std::sync::mpsc::channel();
    let r2 = runner.clone();
    let second = tokio::spawn(async move {
        let _slot = r2.slot(move |n| tx.send(n).unwrap()).await;
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(rx.try_recv(), Ok(1), "queued behind 1 run");
    assert!(!second.is_finished());
    drop(first);
    second.await.unwrap();
}

#[tokio::test]
async fn run_commit_tests_the_exact_commit_in_a_fresh_checkout() {
    let origin = Origin::new();
    let sha = origin.commit(
        &[("check.sh", "test \"$(cat v)\" = good"), ("v", "good")],
        "good",
    );
    origin.commit(&[("v", "bad")], "bad");
    let tmp = tempfile::tempdir().unwrap();
    let mirror = MirrorStore::new(tmp.path().join("m"))
        .mirror("o/r")
        .unwrap();
    let t = task(r#"[{ cmd: "sh check.sh && pwd" }]"#, "");
    let gates = plan_gates(&t, &NoFiles);
    let runner = LocalRunner::new(2);
    let options = RunOptions {
        sha: Some(sha.clone()),
        ..options()
    };
    let report = runner
        .run_commit(
            Checkout {
                mirror: &mirror,
                url: origin.url(),
                token: None,
                workspaces: tmp.path().join("ws"),
                deps: Vec::new(),
            },
            taskgate_core::task::RunSubject::Task("t".into()),
            gates,
            options,
            |_| {},
        )
        .await
        .unwrap();
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.sha.as_deref(), Some(sha.as_str()));
    // Inside the sandbox `pwd` names the mount point, so the host side is
    // checked: nothing is left where the workspaces are made.
    let left: Vec<_> = std::fs::read_dir(tmp.path().join("ws"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "the workspace is removed: {left:?}");
}
