//! `taskgate run`: a task's acceptance tests in the current directory, with
//! the runner the bot uses, printing the same classified report. No git is
//! needed. In the `actions` runner this is the job's step, and `--json` is
//! the artifact taskgate reads back; there `--plan-root` points at a checkout
//! of the default branch, so the commands come from the plan as merged, not
//! from the commit under test, and `--gates` runs only the dispatched gates.
//!
//! With `--base`, the checkout is first merged with the story branch's head
//! (SPEC §3: a task's head is tested as CI on a pull request tests it),
//! and the report says what was tested.
//!
//! Commands run as the person running it, on the host, unless `--sandbox`
//! asks for the bot's sandbox (with its network rule from the config and the
//! operator's `TASKGATE_SANDBOX_*` settings).
//!
//! The report is written by this process, after every command's processes
//! are gone, and never through a link: a new file renamed over `--json`.
//! With `--sandbox` (as the `actions` runner's job runs it), `--json` must
//! lie outside the directory the commands run in, so task code can neither
//! see the report nor plant a link where it will be written
//! (docs/decisions/actions-sandbox.md).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use taskgate::runner::actions::report_for_setup_error;
use taskgate::runner::local::run_gate_specs;
use taskgate::runner::test_merge::merge_into_checkout;
use taskgate::runner::{cancel_pair, Isolation, RunOptions};
use taskgate_core::ids::{CommitSha, StoryId, StoryKeyError};
use taskgate_core::report::{render_terminal_report, RunReport, Tested};
use taskgate_core::task::RunSubject;

/// Where plans live in a repository.
const STORIES_DIR: &str = ".taskgate/stories";

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The plan file; defaults to the only file in .taskgate/stories/.
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// The story whose plan to run, by taskgate's key for it: `file:NAME` is
    /// .taskgate/stories/NAME.yml (or .yaml) under the plan root. The
    /// `actions` runner passes it, so a repository with several plans runs
    /// the dispatched one. Empty: as if absent.
    #[arg(long, value_name = "KEY", conflicts_with = "plan", value_parser = story_arg)]
    pub story: Option<StoryId>,
    /// The task to run; may be omitted when exactly one task requires testing.
    /// The `actions` runner passes what the run tests as taskgate stores it
    /// (a task id, `@integration/<id>`, `@ship`, `@rollback`).
    #[arg(long, value_parser = RunSubject::parse)]
    pub task: Option<RunSubject>,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The commit being tested, recorded in the report.
    #[arg(long, env = "GITHUB_SHA")]
    pub sha: Option<String>,
    /// Only these gates, comma-separated (empty: every gate of the task).
    #[arg(long, value_name = "GATE,...")]
    pub gates: Option<String>,
    /// Read the plan and .github/taskgate.yml from this directory (a checkout
    /// of the default branch) instead of the current one; commands still run
    /// in the current directory.
    #[arg(long, value_name = "DIR")]
    pub plan_root: Option<PathBuf>,
    /// The story branch's head (a full sha) to test the current checkout
    /// merged with, as CI on a pull request tests its merge; the `actions`
    /// runner passes it. The checkout moves to the merge (nothing pushed);
    /// when the two conflict no gate runs, and the report says so. Needs a
    /// git checkout holding both commits. Empty: as if absent.
    #[arg(long, value_name = "SHA")]
    pub base: Option<String>,
    /// Run every command in the sandbox the bot uses (bubblewrap): only the
    /// current directory writable, no network unless `runner_network: true`.
    #[arg(long, env = "TASKGATE_SANDBOX")]
    pub sandbox: bool,
}

/// `--story`: a story key, or empty (as if absent).
fn story_arg(text: &str) -> Result<StoryId, StoryKeyError> {
    match text {
        "" => Ok(StoryId::new("")),
        key => StoryId::parse(key),
    }
}

/// Runs the task; the exit code is 0 only when every gate passed. When the
/// task cannot be run at all and `--json`, `--task` and `--sha` are given
/// (as in the `actions` runner's job), the JSON report still gets written,
/// every gate failed as `tooling_error` saying why, so taskgate's check
/// runs show the reason.
pub async fn run(args: RunArgs) -> anyhow::Result<i32> {
    let root = std::env::current_dir().context("reading the current directory")?;
    if let (true, Some(json)) = (args.sandbox, &args.json) {
        report_outside_workspace(&root, json)?;
    }
    let loaded = match load(&args, &root) {
        Ok(loaded) => loaded,
        Err(e) => {
            write_setup_error(&args, &e)?;
            return Err(e);
        }
    };
    let Loaded {
        task,
        gates,
        config,
    } = loaded;
    let tested = match args.base.as_deref().filter(|b| !b.is_empty()) {
        None => None,
        Some(base) => match merge_into_checkout(&root, base) {
            Ok(tested) => Some(tested),
            Err(e) => {
                let e = anyhow::Error::new(e).context(format!(
                    "merging the story branch's head {base} into the checkout"
                ));
                write_setup_error(&args, &e)?;
                return Err(e);
            }
        },
    };
    if let Some(Tested::Conflict { base }) = &tested {
        return not_run_for_conflict(&args, &task, base);
    }
    let (cancel, token) = cancel_pair();
    // Commands run in their own process groups, so a terminal's Ctrl-C does
    // not reach them: pass it on.
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("taskgate run: interrupted, stopping the running command");
            cancel.cancel();
        }
    });
    let isolation = if args.sandbox {
        match Isolation::from_env() {
            // `--sandbox` asks for it whatever TASKGATE_UNSANDBOXED says.
            Isolation::Unsandboxed => Isolation::from_vars(|k| {
                (k != "TASKGATE_UNSANDBOXED")
                    .then(|| std::env::var(k).ok())
                    .flatten()
            }),
            isolation => isolation,
        }
    } else {
        Isolation::Host
    };
    let options = RunOptions {
        cancel: token,
        sha: args.sha.filter(|s| !s.is_empty()),
        isolation,
        // Who runs `taskgate run` is the operator: the config's request stands.
        network: taskgate_core::network::Network::granted_if(config.runner_network),
        ..RunOptions::default()
    };
    let mut report = run_gate_specs(&root, task, gates, options).await;
    report.tested = tested;
    print!("{}", render_terminal_report(&report));
    if let Some(path) = &args.json {
        write_report(path, &report)?;
    }
    Ok(if report.passed() { 0 } else { 1 })
}

/// Refuses a `--json` path inside `root`, the directory sandboxed commands
/// see (read-write) as their workspace.
fn report_outside_workspace(root: &Path, json: &Path) -> anyhow::Result<()> {
    let path = root.join(json);
    let parent = path.parent().unwrap_or(&path);
    let parent = parent
        .canonicalize()
        .with_context(|| format!("--json {}: reading its folder", json.display()))?;
    let root = root
        .canonicalize()
        .context("reading the current directory")?;
    if parent.starts_with(&root) {
        bail!(
            "--json {}: with --sandbox the report must be written outside the current \
             directory, where task code cannot reach it (e.g. under $RUNNER_TEMP)",
            json.display()
        );
    }
    Ok(())
}

/// Writes `report` as JSON to `path`: a new file beside it, renamed over it,
/// so a link at `path` is replaced, never followed.
fn write_report(path: &Path, report: &RunReport) -> anyhow::Result<()> {
    use std::io::Write;
    let json = serde_json::to_string_pretty(report)? + "\n";
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut f| f.write_all(json.as_bytes()))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

/// The head conflicts with the story branch's head `base`: no gate runs,
/// the report (when asked for) says so, and the exit code is 1.
fn not_run_for_conflict(args: &RunArgs, task: &RunSubject, base: &str) -> anyhow::Result<i32> {
    let why = format!(
        "not run: the head conflicts with the story branch's head {base}; merge the story \
         branch into the task branch and push"
    );
    eprintln!("taskgate run: {why}");
    if let (Some(path), Some(sha)) = (&args.json, args.sha.as_deref().filter(|s| !s.is_empty())) {
        let gates = requested_gates(args);
        let mut report = report_for_setup_error(task, &CommitSha::parse(sha)?, &gates, &why);
        report.tested = Some(Tested::Conflict {
            base: base.to_owned(),
        });
        write_report(path, &report)?;
    }
    Ok(1)
}

/// The gates `--gates` names (empty: every gate of the task).
fn requested_gates(args: &RunArgs) -> Vec<String> {
    args.gates
        .as_deref()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Writes the stand-in report of [`report_for_setup_error`] for a task that
/// could not be run, if the arguments say where and for what.
fn write_setup_error(args: &RunArgs, error: &anyhow::Error) -> anyhow::Result<()> {
    let (Some(path), Some(task), Some(sha)) = (&args.json, &args.task, &args.sha) else {
        return Ok(());
    };
    if sha.is_empty() {
        return Ok(());
    }
    let gates = requested_gates(args);
    let why = format!("taskgate run could not run the task: {error:#}");
    let report = report_for_setup_error(task, &CommitSha::parse(sha)?, &gates, &why);
    write_report(path, &report)
}

mod pick;

use pick::{load, Loaded};

#[cfg(test)]
mod tests {
    use super::*;

    /// `taskgate run`'s flags alone, as clap reads them.
    #[derive(clap::Parser, Debug)]
    struct Run {
        #[command(flatten)]
        args: RunArgs,
    }

    fn refusal(argv: &[&str]) -> String {
        let argv = std::iter::once("run").chain(argv.iter().copied());
        clap::Parser::try_parse_from(argv)
            .map(|r: Run| format!("accepted: {:?} {:?}", r.args.story, r.args.task))
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn a_story_key_or_a_run_subject_that_names_nothing_is_refused_by_clap() {
        insta::assert_snapshot!(refusal(&["--task", "@deploy"]), @r"
        error: invalid value '@deploy' for '--task <TASK>': `@deploy` names no run subject (a task id, `@integration/<id>`, `@ship` or `@rollback`)

        For more information, try '--help'.
        ");
        insta::assert_snapshot!(refusal(&["--story", "momentum"]), @r"
        error: invalid value 'momentum' for '--story <KEY>': `momentum` is not a story key (`file:NAME` or `issue:N`)

        For more information, try '--help'.
        ");
        insta::assert_snapshot!(
            refusal(&["--story", "", "--task", "@integration/backtest"]),
            @r#"accepted: Some(StoryId("")) Some(Milestone(TaskId("backtest")))"#
        );
    }

    #[test]
    fn with_the_sandbox_the_report_is_written_only_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let (workspace, temp) = (dir.path().join("tested"), dir.path().join("temp"));
        std::fs::create_dir_all(workspace.join("out")).unwrap();
        std::fs::create_dir_all(&temp).unwrap();
        let refused = |json: &Path| {
            report_outside_workspace(&workspace, json)
                .map_err(|e| e.to_string())
                .err()
        };
        assert_eq!(refused(&temp.join("r.json")), None);
        assert_eq!(refused(Path::new("../temp/r.json")), None);
        insta::assert_snapshot!(refused(Path::new("r.json")).unwrap(), @"--json r.json: with --sandbox the report must be written outside the current directory, where task code cannot reach it (e.g. under $RUNNER_TEMP)");
        assert!(refused(Path::new("out/r.json")).is_some());
        assert!(refused(&workspace.join("out/../r.json")).is_some());
        // A link out of the workspace is judged by where it leads.
        std::os::unix::fs::symlink(&temp, workspace.join("link")).unwrap();
        assert_eq!(refused(Path::new("link/r.json")), None);
    }

    #[test]
    fn the_report_replaces_a_link_at_its_path_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "kept\n").unwrap();
        let path = dir.path().join("report.json");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let report = report_for_setup_error(
            &RunSubject::Task("t".into()),
            &CommitSha::parse(&"a".repeat(40)).unwrap(),
            &[],
            "why",
        );
        write_report(&path, &report).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
        assert!(!path.symlink_metadata().unwrap().is_symlink());
        let back: RunReport =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back.task, "t");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temp file left"
        );
    }
}
