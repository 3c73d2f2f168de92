//! The gate loop: a task's acceptance tests, run in a directory, become a
//! [`RunReport`]. Used by the `local` runner (in a [`Workspace`]) and by
//! `taskgate run` (in the current directory).
//!
//! Commands come only from the [`Task`] passed in — the plan as read from
//! the default branch — never from files of the commit under test; the
//! [`RepoFiles`] is only consulted for test-command discovery and should be
//! the default branch's view too.
//!
//! Per gate (tests grouped by `gate`, in plan order): each command runs once
//! and, if it failed (not timed out, not cancelled), once more at once. A
//! fail-then-pass is `flaky`: the gate passes with a warning. Failures are
//! classified by [`classify`]; the gate's verdict, flaky-test quarantine
//! included, is [`decide_verdict`]'s (the Actions runner's reports are
//! judged again by the same code). The task's `expected_artifacts` and `metrics`
//! are checked after every command has run, on the `test` gate if the task
//! has one, else on its last gate; a missing artifact or metric, or a metric
//! out of bounds, fails that gate as `spec_mismatch`.
//!
//! Every command runs as [`RunOptions::isolation`] says: the bot's runs in
//! the [`sandbox`](super::sandbox), checked once at the start of the run. A
//! host that cannot sandbox runs nothing: every gate fails as
//! `tooling_error` saying why and how to fix it.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::mirror::{GitError, Mirror};
use super::process::{run_command, CommandSpec, ProcessOutput, DEFAULT_GRACE, DEFAULT_MAX_OUTPUT};
use super::reports::{gate_reports, gate_tests, list_workspace, GateReports};
use super::sandbox::{
    borrowed_objects, processes_limited, Isolation, SandboxRun, NETWORK_WARNING, PROCESSES_WARNING,
    UNSANDBOXED_WARNING, WORKSPACE,
};
use super::workspace::Workspace;
use super::CancelToken;
use crate::classify::{classify, Classification, FailureKind, Outcome};
use crate::core::plan::{
    effective_tests, EffectiveTests, Metric, RepoFiles, Task, TestSpec, DEFAULT_GATE,
};
use crate::core::report::{
    cap_report, decide_verdict, relative_path, CommandResult, GateResult, GateTests, RunReport,
    REPORT_VERSION,
};
use crate::results::{TestCase, TestId};

/// A command's timeout when the plan gives none.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 600;
/// The file a test may write its metrics to, at the workspace root.
pub const METRICS_FILE: &str = "taskgate-metrics.json";
const METRIC_PREFIX: &str = "::taskgate-metric ";
/// Largest `taskgate-metrics.json` read; a larger one is refused with a warning.
pub const MAX_METRICS_FILE_BYTES: u64 = 1 << 20;
/// Unreadable-metric warnings said per run; the rest are counted.
pub const MAX_METRIC_WARNINGS: usize = 20;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub default_timeout: Duration,
    pub grace: Duration,
    pub max_output_bytes: usize,
    /// Re-run a failed command once to tell flaky from failing.
    pub rerun_failures: bool,
    pub cancel: CancelToken,
    /// Recorded in the report.
    pub sha: Option<String>,
    /// Sandbox or not; the default is the bot's, from taskgate's
    /// environment ([`Isolation::from_env`]).
    pub isolation: Isolation,
    /// The repository allows the network (`runner_network: true`); only
    /// meaningful in the sandbox.
    pub network: bool,
    /// The repository's tests quarantined as flaky now (`core::flaky`),
    /// from the store: their failures do not fail a gate.
    pub quarantined: Arc<BTreeSet<TestId>>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            default_timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECONDS),
            grace: DEFAULT_GRACE,
            max_output_bytes: DEFAULT_MAX_OUTPUT,
            rerun_failures: true,
            cancel: CancelToken::never(),
            sha: None,
            isolation: Isolation::from_env(),
            network: false,
            quarantined: Arc::default(),
        }
    }
}

/// One gate, resolved from the plan before anything runs.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSpec {
    pub gate: String,
    pub tests: Vec<TestSpec>,
    pub expected_artifacts: Vec<String>,
    pub metrics: Vec<Metric>,
    /// Test ids that must be in the results and have passed (the task's
    /// `required_tests:`, on the same gate as its artifacts and metrics).
    pub required_tests: Vec<TestId>,
    /// Said in the report whatever happens (a discovered command).
    pub notes: Vec<String>,
    /// Fails the gate as `spec_mismatch` (nothing to run).
    pub problem: Option<String>,
}

impl GateSpec {
    /// A gate of that name with nothing in it yet.
    pub fn named(gate: &str) -> GateSpec {
        GateSpec::new(gate)
    }

    fn new(gate: &str) -> GateSpec {
        GateSpec {
            gate: gate.to_string(),
            tests: Vec::new(),
            expected_artifacts: Vec::new(),
            metrics: Vec::new(),
            required_tests: Vec::new(),
            notes: Vec::new(),
            problem: None,
        }
    }

    /// The `reports:` globs of the gate's commands, each once.
    pub fn reports(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in self.tests.iter().flat_map(|t| &t.reports) {
            if !out.contains(&r.as_str()) {
                out.push(r);
            }
        }
        out
    }
}

/// The gates of a task, in plan order; empty when it needs no testing.
pub fn plan_gates(task: &Task, repo: &dyn RepoFiles) -> Vec<GateSpec> {
    let mut gates: Vec<GateSpec> = Vec::new();
    match effective_tests(task, repo) {
        EffectiveTests::NotRequired => return gates,
        EffectiveTests::Declared(tests) => {
            for t in tests {
                match gates.iter_mut().find(|g| g.gate == t.gate) {
                    Some(g) => g.tests.push(t.clone()),
                    None => gates.push(GateSpec {
                        tests: vec![t.clone()],
                        ..GateSpec::new(&t.gate)
                    }),
                }
            }
        }
        EffectiveTests::Discovered(d) => gates.push(GateSpec {
            tests: vec![d.as_test()],
            notes: vec![format!(
                "the plan lists no tests; ran `{}` because {}",
                d.cmd, d.reason
            )],
            ..GateSpec::new(DEFAULT_GATE)
        }),
        EffectiveTests::Missing => gates.push(GateSpec {
            problem: Some(format!(
                "task `{}` has no tests in the plan and no test command could be discovered",
                task.id.value
            )),
            ..GateSpec::new(DEFAULT_GATE)
        }),
    }
    let checks = gates
        .iter()
        .position(|g| g.gate == DEFAULT_GATE)
        .unwrap_or(gates.len() - 1);
    gates[checks].expected_artifacts = task.acceptance.expected_artifacts.clone();
    gates[checks].metrics = task.acceptance.metrics.clone();
    gates[checks].required_tests = task.acceptance.required_tests.clone();
    gates
}

/// Runs every gate of `task` in `workdir`. The plan is read before the
/// returned future starts, so the future is `Send` and holds no borrow.
pub fn run_gates(
    workdir: &Path,
    task: &Task,
    repo: &dyn RepoFiles,
    options: RunOptions,
) -> impl Future<Output = RunReport> + Send + 'static {
    let gates = plan_gates(task, repo);
    let (workdir, task) = (workdir.to_owned(), task.id.value.to_string());
    async move { run_gate_specs(&workdir, task, gates, options).await }
}

/// Runs resolved gates in `workdir`.
pub async fn run_gate_specs(
    workdir: &Path,
    task: String,
    gates: Vec<GateSpec>,
    options: RunOptions,
) -> RunReport {
    let start = Instant::now();
    let (sandbox, run_warnings) = match isolate(workdir, &options).await {
        Ok(isolated) => isolated,
        Err(why) => return refused(task, gates, &why, &options, start),
    };
    let mut ran: Vec<Vec<CommandResult>> = Vec::new();
    let mut reports: Vec<Option<GateReports>> = Vec::new();
    let mut cancelled = false;
    let roots = workspace_roots(workdir, sandbox.is_some());
    let mut listing = list_workspace(workdir).await;
    for gate in &gates {
        let mut results = Vec::new();
        for test in &gate.tests {
            if options.cancel.is_cancelled() {
                cancelled = true;
                break;
            }
            let result = run_test(workdir, test, &options, sandbox.as_ref()).await;
            results.push(result);
        }
        ran.push(results);
        let after = list_workspace(workdir).await;
        reports.push(gate_reports(workdir, gate.reports(), &listing, &after, &roots).await);
        listing = after;
    }
    cancelled |= options.cancel.is_cancelled();
    let outputs: Vec<&str> = ran.iter().flatten().map(|c| c.output.as_str()).collect();
    let (metrics, metric_warnings) = read_metrics(workdir, &outputs);
    let all_cases: Vec<&TestCase> = reports.iter().flatten().flat_map(|r| &r.cases).collect();
    let quarantined = |id: &TestId| options.quarantined.contains(id);
    let tests: Vec<Option<GateTests>> = gates
        .iter()
        .zip(&reports)
        .map(|(spec, found)| {
            gate_tests(
                &spec.required_tests,
                found.as_ref(),
                &all_cases,
                &quarantined,
            )
        })
        .collect();
    let gates = gates
        .into_iter()
        .zip(&ran)
        .zip(tests)
        .map(|((spec, commands), tests)| {
            let mut warnings = run_warnings.clone();
            warnings.extend(spec.notes.iter().cloned());
            let mut missing_artifacts = Vec::new();
            let mut metric_failures = Vec::new();
            if !spec.metrics.is_empty() {
                warnings.extend(metric_warnings.iter().cloned());
                metric_failures = check_metrics(&spec.metrics, &metrics);
            }
            for a in &spec.expected_artifacts {
                match relative_path(a, "") {
                    Some(p) if workdir.join(&p).exists() => {}
                    Some(_) => missing_artifacts.push(a.clone()),
                    None => missing_artifacts.push(format!("{a} (outside the repository)")),
                }
            }
            gate_result(
                spec,
                commands.clone(),
                Checks {
                    missing_artifacts,
                    metric_failures,
                    tests,
                },
                warnings,
                cancelled,
            )
        })
        .collect();
    cap_report(RunReport {
        version: REPORT_VERSION,
        task,
        sha: options.sha.clone(),
        gates,
        duration_ms: start.elapsed().as_millis() as u64,
        cancelled,
    })
}

/// The sandbox every command of this run gets, and what each gate must say
/// about it; `Err` when no command may run.
async fn isolate(
    workdir: &Path,
    options: &RunOptions,
) -> Result<(Option<SandboxRun>, Vec<String>), String> {
    match &options.isolation {
        Isolation::Host => Ok((None, Vec::new())),
        Isolation::Unsandboxed => Ok((None, vec![UNSANDBOXED_WARNING.to_string()])),
        Isolation::Refused(why) => Err(format!("taskgate refused to run task code: {why}")),
        Isolation::Sandbox(sandbox) => {
            sandbox.probe().await?;
            let mut warnings = Vec::new();
            if options.network {
                warnings.push(NETWORK_WARNING.to_string());
            }
            if !processes_limited() {
                warnings.push(PROCESSES_WARNING.to_string());
            }
            let run = SandboxRun {
                sandbox: sandbox.clone(),
                network: options.network,
                objects: borrowed_objects(workdir),
            };
            Ok((Some(run), warnings))
        }
    }
}

/// Every gate failed as `tooling_error` before anything ran.
fn refused(
    task: String,
    gates: Vec<GateSpec>,
    why: &str,
    options: &RunOptions,
    start: Instant,
) -> RunReport {
    let gates = gates
        .into_iter()
        .map(|spec| GateResult {
            gate: spec.gate,
            passed: false,
            kind: Some(FailureKind::ToolingError),
            summary: Some(why.to_string()),
            commands: Vec::new(),
            missing_artifacts: Vec::new(),
            metric_failures: Vec::new(),
            warnings: Vec::new(),
            cancelled: false,
            tests: None,
        })
        .collect();
    RunReport {
        version: REPORT_VERSION,
        task,
        sha: options.sha.clone(),
        gates,
        duration_ms: start.elapsed().as_millis() as u64,
        cancelled: false,
    }
}

/// The absolute forms of the workspace a tool may print: as given,
/// resolved, and where the sandbox mounts it.
fn workspace_roots(workdir: &Path, sandboxed: bool) -> Vec<String> {
    let inside = sandboxed.then(|| PathBuf::from(WORKSPACE));
    [
        Some(workdir.to_owned()),
        workdir.canonicalize().ok(),
        inside,
    ]
    .into_iter()
    .flatten()
    .map(|p| p.display().to_string())
    .collect()
}

/// What the gate checks beyond its commands' exit codes.
struct Checks {
    missing_artifacts: Vec<String>,
    metric_failures: Vec<String>,
    tests: Option<GateTests>,
}

fn gate_result(
    spec: GateSpec,
    commands: Vec<CommandResult>,
    checked: Checks,
    mut warnings: Vec<String>,
    run_cancelled: bool,
) -> GateResult {
    let Checks {
        missing_artifacts,
        metric_failures,
        tests,
    } = checked;
    for c in commands.iter().filter(|c| c.flaky) {
        let first = c
            .classification
            .as_ref()
            .and_then(|k| k.summary.lines().next())
            .unwrap_or("");
        warnings.push(format!(
            "`{}` failed, then passed on an immediate re-run (flaky): {first}",
            c.cmd
        ));
    }
    let cancelled = run_cancelled
        && (commands.len() < spec.tests.len() || commands.iter().any(|c| !c.passed()));
    let mut gate = GateResult {
        gate: spec.gate,
        passed: false,
        kind: None,
        summary: None,
        commands,
        missing_artifacts,
        metric_failures,
        warnings,
        cancelled,
        tests,
    };
    decide_verdict(&mut gate, spec.problem.as_deref());
    gate
}

/// One command, re-run once at once if it failed.
async fn run_test(
    workdir: &Path,
    test: &TestSpec,
    options: &RunOptions,
    sandbox: Option<&SandboxRun>,
) -> CommandResult {
    let timeout = test
        .timeout_seconds
        .map_or(options.default_timeout, Duration::from_secs);
    let spec = CommandSpec {
        cmd: test.cmd.clone(),
        workdir: workdir.to_owned(),
        timeout,
        grace: options.grace,
        max_output_bytes: options.max_output_bytes,
        sandbox: sandbox.cloned(),
    };
    let first = run_once(&spec, test, options, workdir).await;
    let rerun = options.rerun_failures
        && !first.passed()
        && !first.timed_out
        && !options.cancel.is_cancelled();
    if !rerun {
        return first;
    }
    let second = run_once(&spec, test, options, workdir).await;
    if !second.passed() {
        return second;
    }
    let classification = first.classification.map(|mut k| {
        if k.kind == FailureKind::TestFailure {
            k.kind = FailureKind::FlakyTest;
        }
        k
    });
    CommandResult {
        exit_code: second.exit_code,
        signal: second.signal,
        duration_ms: first.duration_ms + second.duration_ms,
        flaky: true,
        classification,
        ..first
    }
}

async fn run_once(
    spec: &CommandSpec,
    test: &TestSpec,
    options: &RunOptions,
    workdir: &Path,
) -> CommandResult {
    let timeout_seconds = spec.timeout.as_secs();
    let out = match run_command(spec, &options.cancel).await {
        Ok(out) => out,
        Err(e) => {
            let message = format!(
                "taskgate could not start `{}` in {}: {e}",
                test.cmd,
                workdir.display()
            );
            return CommandResult {
                cmd: test.cmd.clone(),
                gate: test.gate.clone(),
                exit_code: None,
                signal: None,
                timed_out: false,
                timeout_seconds,
                duration_ms: 0,
                output_bytes: message.len() as u64,
                output: message.clone(),
                truncated: false,
                flaky: false,
                classification: Some(Classification {
                    kind: FailureKind::ToolingError,
                    summary: message,
                    findings: Vec::new(),
                }),
            };
        }
    };
    let classification = (!out.success() && !out.cancelled)
        .then(|| classified(&out, test, timeout_seconds, workdir, spec.sandbox.is_some()));
    let ProcessOutput {
        exit_code,
        signal,
        timed_out,
        duration,
        output,
        output_bytes,
        truncated,
        ..
    } = out;
    CommandResult {
        cmd: test.cmd.clone(),
        gate: test.gate.clone(),
        exit_code,
        signal,
        timed_out,
        timeout_seconds,
        duration_ms: duration.as_millis() as u64,
        output: String::from_utf8_lossy(&output).into_owned(),
        output_bytes,
        truncated,
        flaky: false,
        classification,
    }
}

fn classified(
    out: &ProcessOutput,
    test: &TestSpec,
    timeout_seconds: u64,
    workdir: &Path,
    sandboxed: bool,
) -> Classification {
    let mut c = classify(&Outcome {
        command: &test.cmd,
        exit_code: out.exit_code,
        signal: out.signal,
        timed_out: out.timed_out,
        timeout_seconds: Some(timeout_seconds),
        output: &out.output,
    });
    // Findings name files relative to the repository, whatever the tool printed.
    let roots = workspace_roots(workdir, sandboxed);
    for f in &mut c.findings {
        if let Some(rel) = roots
            .iter()
            .find_map(|r| relative_path(&f.path, r).filter(|_| f.path.starts_with(r.as_str())))
        {
            f.path = rel;
        }
    }
    c
}

/// Metrics from `::taskgate-metric name=value` lines, then from
/// `taskgate-metrics.json` (which wins), with warnings for what is unreadable.
/// Linear in the output: names are kept in a map (bounded by the output
/// cap), and at most [`MAX_METRIC_WARNINGS`] warnings are said.
fn read_metrics(workdir: &Path, outputs: &[&str]) -> (HashMap<String, f64>, Vec<String>) {
    let mut found: HashMap<String, f64> = HashMap::new();
    let mut warnings = Vec::new();
    let mut unreadable = 0usize;
    let set = |found: &mut HashMap<String, f64>, name: &str, value: f64| {
        if let Some(slot) = found.get_mut(name) {
            *slot = value;
        } else {
            found.insert(name.to_string(), value);
        }
    };
    for line in outputs.iter().flat_map(|o| o.lines()) {
        let Some(rest) = line.trim().strip_prefix(METRIC_PREFIX) else {
            continue;
        };
        for pair in rest.split_whitespace() {
            match pair.split_once('=').map(|(n, v)| (n, v.parse::<f64>())) {
                Some((name, Ok(value))) if !name.is_empty() && value.is_finite() => {
                    set(&mut found, name, value)
                }
                _ => {
                    unreadable += 1;
                    if unreadable <= MAX_METRIC_WARNINGS {
                        let pair = crate::core::report::clip_middle(pair, 200);
                        warnings.push(format!("unreadable metric `{pair}` (expected name=number)"));
                    }
                }
            }
        }
    }
    if unreadable > MAX_METRIC_WARNINGS {
        warnings.push(format!(
            "… and {} more unreadable metrics",
            unreadable - MAX_METRIC_WARNINGS
        ));
    }
    match read_metrics_file(&workdir.join(METRICS_FILE)) {
        Ok(None) => {}
        Ok(Some(text)) => {
            match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text) {
                Ok(map) => {
                    let mut bad = 0usize;
                    for (name, value) in map {
                        match value.as_f64() {
                            Some(v) => set(&mut found, &name, v),
                            None => {
                                bad += 1;
                                if bad <= MAX_METRIC_WARNINGS {
                                    let name = crate::core::report::clip_middle(&name, 200);
                                    warnings
                                        .push(format!("{METRICS_FILE}: `{name}` is not a number"));
                                }
                            }
                        }
                    }
                    if bad > MAX_METRIC_WARNINGS {
                        warnings.push(format!(
                            "{METRICS_FILE}: … and {} more values that are not numbers",
                            bad - MAX_METRIC_WARNINGS
                        ));
                    }
                }
                Err(e) => warnings.push(format!(
                    "{METRICS_FILE} is not a JSON object of numbers: {e}"
                )),
            }
        }
        Err(why) => warnings.push(why),
    }
    (found, warnings)
}

/// The metrics file's text; `Ok(None)` when there is none. Written by the
/// code under test, so it is opened without following a symbolic link
/// (`O_NOFOLLOW`: a link to a file outside the workspace is refused, not
/// read), must be a regular file, and is read to at most
/// [`MAX_METRICS_FILE_BYTES`]. `Err` is the warning to show.
fn read_metrics_file(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(format!(
                "{METRICS_FILE} is a symbolic link; taskgate does not follow it (write the file itself)"
            ))
        }
        Err(e) => return Err(format!("{METRICS_FILE} could not be read: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("{METRICS_FILE} could not be read: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{METRICS_FILE} is not a regular file; taskgate reads only a plain file"
        ));
    }
    let too_large = || {
        format!("{METRICS_FILE} is over {MAX_METRICS_FILE_BYTES} bytes; taskgate did not read it")
    };
    if meta.len() > MAX_METRICS_FILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_METRICS_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{METRICS_FILE} could not be read: {e}"))?;
    if bytes.len() as u64 > MAX_METRICS_FILE_BYTES {
        return Err(too_large());
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

fn check_metrics(expected: &[Metric], found: &HashMap<String, f64>) -> Vec<String> {
    expected
        .iter()
        .filter_map(|m| match found.get(m.name.as_str()) {
            None => Some(format!(
                "`{}` was not reported (print `{METRIC_PREFIX}{}=<value>` or write it to {METRICS_FILE})",
                m.name, m.name
            )),
            Some(v) if !m.operator.holds(*v, m.value) => {
                Some(format!("`{}` = {v}, expected {} {}", m.name, m.operator.symbol(), m.value))
            }
            Some(_) => None,
        })
        .collect()
}

/// Where [`LocalRunner::run_commit`] gets the commit and checks it out.
pub struct Checkout<'a> {
    /// The repository's mirror, fetched into.
    pub mirror: &'a Mirror,
    /// The repository's clone URL, and a token to fetch with.
    pub url: String,
    pub token: Option<String>,
    /// Where the run's workspace is made (and removed after it).
    pub workspaces: PathBuf,
}

/// Bounds how many runs go at once; later ones wait in FIFO order.
#[derive(Debug, Clone)]
pub struct LocalRunner {
    permits: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
}

/// A place among the running; the next waiter goes when it is dropped.
#[derive(Debug)]
pub struct RunSlot {
    _permit: OwnedSemaphorePermit,
    running: Arc<AtomicUsize>,
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl LocalRunner {
    pub fn new(max_concurrent_runs: usize) -> Self {
        LocalRunner {
            permits: Arc::new(Semaphore::new(max_concurrent_runs.max(1))),
            waiting: Arc::default(),
            running: Arc::default(),
        }
    }

    /// Waits for a slot. If it must wait, `on_queued(n)` is called first
    /// with the number of runs ahead (running and waiting): "queued behind n runs".
    pub async fn slot(&self, on_queued: impl FnOnce(usize)) -> RunSlot {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let ahead = self.running.load(Ordering::SeqCst)
                    + self.waiting.fetch_add(1, Ordering::SeqCst);
                on_queued(ahead);
                let permit = self
                    .permits
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                permit
            }
        };
        self.running.fetch_add(1, Ordering::SeqCst);
        RunSlot {
            _permit: permit,
            running: self.running.clone(),
        }
    }

    /// The whole local run of one task at one commit: wait for a slot, fetch
    /// the commit into the mirror, check it out, run the gates, clean up.
    pub async fn run_commit(
        &self,
        checkout: Checkout<'_>,
        task: String,
        gates: Vec<GateSpec>,
        options: RunOptions,
        on_queued: impl FnOnce(usize),
    ) -> Result<RunReport, GitError> {
        let Checkout {
            mirror,
            url,
            token,
            workspaces,
        } = checkout;
        let _slot = self.slot(on_queued).await;
        let sha = options
            .sha
            .clone()
            .ok_or_else(|| GitError::InvalidSha("(none given)".into()))?;
        mirror.fetch_commit_async(url, token, sha.clone()).await?;
        let ws = Workspace::checkout_async(mirror.clone(), sha, workspaces).await?;
        let report = run_gate_specs(ws.path(), task, gates, options).await;
        let _ = tokio::task::spawn_blocking(move || drop(ws)).await;
        Ok(report)
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;
