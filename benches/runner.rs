//! The local runner's own cost (issue 4), driven by `bench/runner.sh`, which
//! builds the repository and the plan this reads:
//!
//! ```text
//! cargo bench --bench runner -- --origin DIR --old-origin DIR --plan FILE \
//!     --task ID --work DIR [--runs N]
//! ```
//!
//! `--origin` is a bare repository whose `main` is the commit under test;
//! `--old-origin` has the same history minus a few commits, so a mirror
//! fetched from it and then from `--origin` measures an incremental fetch
//! (a push). Every figure is the median of `--runs` runs, against the git
//! CLI doing the same job and against the task's commands run with plain
//! `sh -c`. Not a test: `cargo test` does not build it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use taskgate::runner::local::Checkout;
use taskgate::runner::{
    plan_gates, run_gate_specs, GateSpec, LocalRunner, Mirror, MirrorStore, RunOptions, Workspace,
};
use taskgate_core::config::RepoConfig;
use taskgate_core::plan::{check_plan, NoFiles, TaskId};
use taskgate_core::task::RunSubject;

const REPO: &str = "bench/repo";

struct Args {
    origin: PathBuf,
    old_origin: PathBuf,
    plan: PathBuf,
    task: String,
    work: PathBuf,
    runs: usize,
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(bench(args))
}

fn parse_args() -> anyhow::Result<Args> {
    let mut it = std::env::args().skip(1);
    let (mut origin, mut old_origin, mut plan, mut task, mut work) = (None, None, None, None, None);
    let mut runs = 5;
    while let Some(flag) = it.next() {
        // `cargo bench` appends `--bench`.
        if flag == "--bench" {
            continue;
        }
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--origin" => origin = Some(PathBuf::from(value)),
            "--old-origin" => old_origin = Some(PathBuf::from(value)),
            "--plan" => plan = Some(PathBuf::from(value)),
            "--task" => task = Some(value),
            "--work" => work = Some(PathBuf::from(value)),
            "--runs" => runs = value.parse().context("--runs")?,
            _ => bail!("unknown argument {flag}"),
        }
    }
    let usage = "usage: runner --origin DIR --old-origin DIR --plan FILE --task ID --work DIR [--runs N] (see bench/runner.sh)";
    Ok(Args {
        origin: origin.context(usage)?,
        old_origin: old_origin.context(usage)?,
        plan: plan.context(usage)?,
        task: task.context(usage)?,
        work: work.context(usage)?,
        runs: runs.max(1),
    })
}

/// Durations of one measurement, reported by their median.
#[derive(Default)]
struct Sample(Vec<Duration>);

impl Sample {
    fn push(&mut self, d: Duration) {
        self.0.push(d);
    }
    fn median_ms(&self) -> f64 {
        let mut v = self.0.clone();
        v.sort();
        let n = v.len();
        let mid = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2
        };
        mid.as_secs_f64() * 1e3
    }
    fn line(&self, name: &str) -> String {
        let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1e3);
        format!(
            "{name:<46} median {:>9.1} ms  (min {:.1}, max {:.1}, {} runs)",
            self.median_ms(),
            ms(self.0.iter().min()),
            ms(self.0.iter().max()),
            self.0.len()
        )
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed())
}

fn url(dir: &Path) -> anyhow::Result<String> {
    Ok(format!("file://{}", dir.canonicalize()?.display()))
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd.stdout(Stdio::null()).status()?;
    ensure!(status.success(), "{cmd:?}: {status}");
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    remove(to)?;
    run(Command::new("cp").arg("-a").arg(from).arg(to))
}

fn remove(dir: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

fn mirror_in(root: &Path) -> anyhow::Result<Mirror> {
    Ok(MirrorStore::new(root).mirror(REPO)?)
}

fn git_sha(repo: &Path) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(repo)
        .args(["rev-parse", "main"])
        .output()?;
    ensure!(out.status.success(), "git rev-parse main in {repo:?}");
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}

fn gates_of(args: &Args) -> anyhow::Result<Vec<GateSpec>> {
    let src = std::fs::read_to_string(&args.plan)?;
    let report = check_plan(
        &args.plan.display().to_string(),
        &src,
        &RepoConfig::default(),
        &NoFiles,
    );
    let plan = report.plan.context("the plan is not valid")?;
    let task = plan
        .task(&TaskId::new(&args.task))
        .with_context(|| format!("no task {} in the plan", args.task))?;
    Ok(plan_gates(task, &NoFiles))
}

/// The task's commands one after another with plain `sh -c`, output
/// discarded: the commands' own time.
fn raw_commands(gates: &[GateSpec], dir: &Path) -> anyhow::Result<Duration> {
    let start = Instant::now();
    for test in gates.iter().flat_map(|g| &g.tests) {
        run(Command::new("sh")
            .arg("-c")
            .arg(&test.cmd)
            .current_dir(dir)
            .stderr(Stdio::null()))?;
    }
    Ok(start.elapsed())
}

async fn bench(args: Args) -> anyhow::Result<()> {
    let sha = git_sha(&args.origin)?;
    let (origin, old_origin) = (url(&args.origin)?, url(&args.old_origin)?);
    let gates = gates_of(&args)?;
    let work = args.work.join("runner-bench");
    remove(&work)?;
    std::fs::create_dir_all(&work)?;
    let options = || RunOptions {
        sha: Some(sha.clone()),
        ..RunOptions::default()
    };
    let n = args.runs;
    println!("commit {sha}, {n} runs each\n");

    // The mirror as it was before the push: the old origin's history.
    let base = work.join("base");
    mirror_in(&base)?.fetch_heads(&old_origin, None)?;
    let base_sha = git_sha(&base.join(format!("{REPO}.git")))?;
    ensure!(
        base_sha != sha,
        "the old origin should lag behind the origin"
    );

    let mut cold = Sample::default();
    let mut incremental = Sample::default();
    let mut git_incremental = Sample::default();
    for i in 0..n {
        let root = work.join(format!("cold-{i}"));
        let mirror = mirror_in(&root)?;
        let (r, d) = timed(|| mirror.fetch_commit(&origin, None, &sha));
        r?;
        cold.push(d);
        remove(&root)?;

        let root = work.join("incremental");
        copy_dir(&base, &root)?;
        let mirror = mirror_in(&root)?;
        let (r, d) = timed(|| mirror.fetch_commit(&origin, None, &sha));
        r?;
        incremental.push(d);

        copy_dir(&base, &root)?;
        let git_dir = root.join(format!("{REPO}.git"));
        let (r, d) = timed(|| {
            run(Command::new("git").arg("--git-dir").arg(&git_dir).args([
                "fetch",
                "-q",
                "--no-tags",
                &origin,
                "+refs/heads/*:refs/heads/*",
            ]))
        });
        r?;
        git_incremental.push(d);
    }

    // A warm mirror: the commit is already there.
    let warm_root = work.join("warm");
    let warm = mirror_in(&warm_root)?;
    warm.fetch_commit(&origin, None, &sha)?;
    let mut present = Sample::default();
    let mut checkout = Sample::default();
    let mut cleanup = Sample::default();
    let mut shallow = Sample::default();
    let mut full = Sample::default();
    let workspaces = work.join("ws");
    for _ in 0..n {
        let (r, d) = timed(|| warm.fetch_commit(&origin, None, &sha));
        r?;
        present.push(d);
        let (ws, d) = timed(|| Workspace::checkout(&warm, &sha, &workspaces));
        let ws = ws?;
        checkout.push(d);
        let ((), d) = timed(|| drop(ws));
        cleanup.push(d);

        for (depth, sample) in [(true, &mut shallow), (false, &mut full)] {
            let dir = work.join("clone");
            let mut cmd = Command::new("git");
            cmd.args(["clone", "-q", "--no-tags"]);
            if depth {
                cmd.args(["--depth", "1"]);
            }
            cmd.arg(&origin).arg(&dir);
            let (r, d) = timed(|| run(&mut cmd));
            r?;
            sample.push(d);
            remove(&dir)?;
        }
    }

    // The gates in a checkout, against the same commands with `sh -c`.
    let ws = Workspace::checkout(&warm, &sha, &workspaces)?;
    let mut raw = Sample::default();
    let mut gated = Sample::default();
    for _ in 0..n {
        raw.push(raw_commands(&gates, ws.path())?);
        let (report, d) = timed_async(run_gate_specs(
            ws.path(),
            RunSubject::Task(TaskId::new(&args.task)),
            gates.clone(),
            options(),
        ))
        .await;
        ensure!(report.passed(), "the gates failed: {report:?}");
        gated.push(d);
    }
    drop(ws);

    // The whole local run after a push: incremental fetch, checkout, gates,
    // cleanup.
    let runner = LocalRunner::new(1);
    let mut total = Sample::default();
    for _ in 0..n {
        let root = work.join("incremental");
        copy_dir(&base, &root)?;
        let mirror = mirror_in(&root)?;
        let checkout = Checkout {
            mirror: &mirror,
            url: origin.clone(),
            token: None,
            workspaces: workspaces.clone(),
            deps: Vec::new(),
        };
        let (report, d) = timed_async(runner.run_commit(
            checkout,
            RunSubject::Task(TaskId::new(&args.task)),
            gates.clone(),
            options(),
            |_| {},
        ))
        .await;
        ensure!(report?.passed(), "the local run failed");
        total.push(d);
    }
    remove(&work)?;

    println!("{}", cold.line("mirror fetch, cold (whole history)"));
    println!(
        "{}",
        incremental.line("mirror fetch, incremental (after a push)")
    );
    println!(
        "{}",
        git_incremental.line("  git fetch (CLI), same incremental fetch")
    );
    println!(
        "{}",
        present.line("mirror fetch, warm (commit already there)")
    );
    println!("{}", checkout.line("workspace checkout of the commit"));
    println!("{}", cleanup.line("workspace removal"));
    println!("{}", shallow.line("  git clone --depth 1 file://"));
    println!("{}", full.line("  git clone file:// (whole history)"));
    println!("{}", raw.line("task commands, plain sh -c"));
    println!("{}", gated.line("task commands, run_gate_specs"));
    println!("{}", total.line("local run after a push (fetch..cleanup)"));
    println!();
    let raw_ms = raw.median_ms();
    let allowed = 0.05 * raw_ms + 300.0;
    for (name, sample) in [("run_gate_specs", &gated), ("whole local run", &total)] {
        let over = sample.median_ms() - raw_ms;
        println!(
            "overhead of {name}: {over:.1} ms ({:.1}% of the commands' {raw_ms:.0} ms); \
             target <= {allowed:.0} ms: {}",
            100.0 * over / raw_ms,
            if over <= allowed { "met" } else { "NOT met" }
        );
    }
    Ok(())
}

async fn timed_async<T>(f: impl std::future::Future<Output = T>) -> (T, Duration) {
    let t = Instant::now();
    let out = f.await;
    (out, t.elapsed())
}
