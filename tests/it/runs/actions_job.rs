//! The `actions` runner's job, played on this machine with the real binary:
//! `taskgate init` writes the workflow, the job's `taskgate run` step runs
//! the default branch's plan against the commit under test, and the report
//! it writes reads back as the runner expects; with `--base`, it tests the
//! commit merged with the story branch's head, as CI on a pull request does.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use taskgate::runner::actions::{read_report_zip, ArtifactLimits, REPORT_FILE};
use taskgate_core::ids::CommitSha;
use taskgate_core::report::Tested;

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

fn taskgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .env_remove("GITHUB_SHA")
        // anyhow prints a backtrace when these ask for one.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .expect("the taskgate binary runs")
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

#[test]
fn init_writes_the_files_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = taskgate(dir.path(), &["init"]);
    assert!(out.status.success());
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout), @r"
    wrote .github/workflows/taskgate-run.yml
    wrote .github/workflows/taskgate-agent.yml
    wrote .github/taskgate.yml

    Next: commit these files to the default branch. Tests run on the taskgate server by default;
    set `runner: actions` in .github/taskgate.yml to run them with the workflow instead.
    A role whose agent is `{ workflow: taskgate-agent.yml }` gets the evidence of each failure there:
    replace its last step with your coding agent.
    ");
    let again = taskgate(dir.path(), &["init", "--dir", "."]);
    assert_eq!(again.status.code(), Some(1));
    insta::assert_snapshot!(String::from_utf8_lossy(&again.stderr), @"Error: .github/workflows/taskgate-run.yml, .github/workflows/taskgate-agent.yml and .github/taskgate.yml already exist; nothing was written. Pass --force to overwrite.");
    assert!(taskgate(dir.path(), &["init", "--force"]).status.success());
}

#[test]
fn the_job_runs_the_default_branchs_plan_and_its_report_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let (trusted, tested) = (dir.path().join("trusted"), dir.path().join("tested"));
    write(
        &trusted.join(".taskgate/stories/s.yml"),
        "story: s\ntasks:\n  - id: t\n    acceptance:\n      tests:\n        - { cmd: 'test -f src.txt', gate: test }\n        - { cmd: 'false', gate: lint }\n",
    );
    // The commit under test brings its own plan: it must not be run.
    write(
        &tested.join(".taskgate/stories/s.yml"),
        "story: s\ntasks:\n  - id: t\n    acceptance:\n      tests: ['touch pwned']\n",
    );
    write(&tested.join("src.txt"), "code under test\n");
    let out = taskgate(
        &tested,
        &[
            "run",
            "--plan-root",
            "../trusted",
            "--task",
            "t",
            "--sha",
            SHA,
            "--gates",
            "test",
            "--json",
            "../taskgate-report.json",
        ],
    );
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tested.join("pwned").exists());

    // What upload-artifact uploads: the report in a zip.
    let json = std::fs::read(dir.path().join("taskgate-report.json")).unwrap();
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file(REPORT_FILE, options).unwrap();
    zip.write_all(&json).unwrap();
    let zip = zip.finish().unwrap().into_inner();
    let report = read_report_zip(
        &zip,
        &taskgate_core::task::RunSubject::Task("t".into()),
        &CommitSha::parse(SHA).unwrap(),
        ArtifactLimits::default(),
    )
    .unwrap();
    let gates: Vec<&str> = report.gates.iter().map(|g| g.gate.as_str()).collect();
    assert_eq!(gates, ["test"], "only the dispatched gate ran");
    assert!(report.passed());
}

#[test]
fn with_several_plans_the_job_runs_the_dispatched_storys_plan() {
    let dir = tempfile::tempdir().unwrap();
    let (trusted, tested) = (dir.path().join("trusted"), dir.path().join("tested"));
    // Two stories, both with a task `t`: the story picks the commands.
    write(
        &trusted.join(".taskgate/stories/a.yml"),
        "story: a\ntasks:\n  - id: t\n    acceptance:\n      tests: ['touch ran-a']\n",
    );
    write(
        &trusted.join(".taskgate/stories/b.yml"),
        "story: b\ntasks:\n  - id: t\n    acceptance:\n      tests: ['touch ran-b']\n",
    );
    std::fs::create_dir_all(&tested).unwrap();
    let job = |story: &str| {
        taskgate(
            &tested,
            &[
                "run",
                "--plan-root",
                "../trusted",
                "--story",
                story,
                "--task",
                "t",
                "--sha",
                SHA,
                "--gates",
                "",
                "--json",
                "../taskgate-report.json",
            ],
        )
    };
    let report = || {
        let json = std::fs::read(dir.path().join("taskgate-report.json")).unwrap();
        serde_json::from_slice::<taskgate_core::report::RunReport>(&json).unwrap()
    };
    assert!(job("file:b").status.success());
    assert!(tested.join("ran-b").exists() && !tested.join("ran-a").exists());
    assert!(report().passed());

    // Without the story, several plans cannot be told apart.
    let out = taskgate(
        &tested,
        &["run", "--plan-root", "../trusted", "--task", "t"],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 plans in .taskgate/stories/"));

    // A plan from a `/taskgate plan` comment is not on the default branch:
    // the job says so in the report, which taskgate shows on the check run.
    let out = job("issue:7");
    assert_eq!(out.status.code(), Some(1));
    let refused = report();
    assert!(!refused.passed());
    let summary = refused.gates[0].summary.as_deref().unwrap();
    insta::assert_snapshot!(summary, @"taskgate run could not run the task: story `issue:7` was planned in a `/taskgate plan` comment on issue #7, and the actions runner runs only plans committed to the default branch (.taskgate/stories/): commit the plan there, or set `runner: local`");
    assert_eq!(
        refused.gates[0].kind,
        Some(taskgate_core::classify::FailureKind::ToolingError)
    );
}

/// `git` in `dir`, with an identity; its stdout trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=agent",
            "-c",
            "user.email=agent@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Commits `files` in the checkout at `dir`; gives the sha.
fn commit(dir: &Path, files: &[(&str, &str)], message: &str) -> String {
    for (path, content) in files {
        write(&dir.join(path), content);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

#[test]
fn the_job_tests_the_head_merged_with_the_story_branch_or_says_they_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let (trusted, tested) = (dir.path().join("trusted"), dir.path().join("tested"));
    write(
        &trusted.join(".taskgate/stories/s.yml"),
        "story: s\ntasks:\n  - id: t\n    acceptance:\n      tests: ['test -f core.sh && test -f cli.sh']\n",
    );
    // The story branch got core.sh after the task branch was started.
    std::fs::create_dir_all(&tested).unwrap();
    git(&tested, &["init", "-q", "-b", "start"]);
    commit(&tested, &[("README", "r\n")], "start");
    git(&tested, &["checkout", "-q", "-b", "story"]);
    let story = commit(&tested, &[("core.sh", "core\n")], "core merged");
    git(&tested, &["checkout", "-q", "-b", "task", "start"]);
    let head = commit(&tested, &[("cli.sh", "cli\n")], "cli");
    let job = |head: &str| {
        taskgate(
            &tested,
            &[
                "run",
                "--plan-root",
                "../trusted",
                "--task",
                "t",
                "--sha",
                head,
                "--base",
                &story,
                "--json",
                "../taskgate-report.json",
            ],
        )
    };
    let report = || {
        let json = std::fs::read(dir.path().join("taskgate-report.json")).unwrap();
        serde_json::from_slice::<taskgate_core::report::RunReport>(&json).unwrap()
    };
    let out = job(&head);
    assert!(out.status.success(), "{out:?}");
    let merged = report();
    assert!(merged.passed(), "the head alone lacks core.sh");
    assert_eq!(merged.sha.as_deref(), Some(head.as_str()));
    let Some(Tested::Merged { base, merge }) = merged.tested else {
        panic!("{:?}", merged.tested)
    };
    assert_eq!(base, story);
    assert_eq!(git(&tested, &["rev-parse", "HEAD"]), merge);
    assert_eq!(git(&tested, &["rev-parse", "HEAD^1"]), head);

    // A head that holds the story head is tested as it is.
    git(&tested, &["checkout", "-q", "-f", "story"]);
    let holds = commit(&tested, &[("cli.sh", "cli\n")], "cli on top");
    assert!(job(&holds).status.success());
    assert_eq!(
        report().tested,
        Some(Tested::Holds {
            base: story.clone()
        })
    );

    // Both wrote core.sh: they conflict, and nothing runs.
    git(&tested, &["checkout", "-q", "-b", "clash", "start"]);
    let clash = commit(
        &tested,
        &[("core.sh", "mine\n"), ("cli.sh", "cli\n")],
        "clash",
    );
    let out = job(&clash);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&story, "<story>");
    insta::assert_snapshot!(stderr.trim(), @"taskgate run: not run: the head conflicts with the story branch's head <story>; merge the story branch into the task branch and push");
    let refused = report();
    assert_eq!(refused.tested, Some(Tested::Conflict { base: story }));
    assert!(
        refused.gates.iter().all(|g| g.commands.is_empty()),
        "no gate ran"
    );
    assert_eq!(git(&tested, &["rev-parse", "HEAD"]), clash, "nothing moved");
}
