//! The gate loop: a task's acceptance tests, run in a directory, become a
//! [`RunReport`]. Used by the `local` runner (in a
//! [`Workspace`](super::workspace::Workspace)) and by `taskgate run` (in the
//! current directory).
//!
//! Owns: [`RunOptions`], the gates of a task ([`plan_gates`]), the loop over
//! them ([`run_gate_specs`]) and the assembly of each [`GateResult`]; its
//! children own one command with its re-run (`command`), the metrics
//! (`metrics`) and the bound on concurrent runs with the whole run of one
//! commit (`queue`: [`LocalRunner`]). Must not: talk to GitHub, decide task
//! states, or judge a gate other than through [`decide_verdict`].
//!
//! Commands come only from the [`Task`] passed in — the plan as read from
//! the default branch — never from files of the commit under test; the
//! [`RepoFiles`] is only consulted for test-command discovery and should be
//! the default branch's view too.
//!
//! Per gate (tests grouped by `gate`, in plan order): each command runs once
//! and, if it failed (not timed out, not cancelled), once more at once. A
//! fail-then-pass is `flaky`: the gate passes with a warning. Failures are
//! classified by [`classify`](taskgate_core::classify::classify); the gate's
//! verdict, flaky-test quarantine included, is [`decide_verdict`]'s (the Actions runner's reports are
//! judged again by the same code). The task's `expected_artifacts` and `metrics`
//! are checked after every command has run, on the `test` gate if the task
//! has one, else on its last gate; a missing artifact or metric, or a metric
//! out of bounds, fails that gate as `spec_mismatch`.
//!
//! Every command runs as [`RunOptions::isolation`] says: the bot's runs in
//! the [`sandbox`](super::sandbox), checked once at the start of the run. A
//! host that cannot sandbox runs nothing: every gate fails as
//! `tooling_error` saying why and how to fix it.

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::process::{DEFAULT_GRACE, DEFAULT_MAX_OUTPUT};
use super::reports::{gate_reports, gate_tests, list_workspace, GateReports};
use super::sandbox::{
    borrowed_objects, processes_limited, Isolation, RunDisk, SandboxError, SandboxRun,
    PROCESSES_WARNING, UNSANDBOXED_WARNING, WORKSPACE,
};
use super::CancelToken;
use taskgate_core::classify::FailureKind;
use taskgate_core::network::Network;
use taskgate_core::plan::{
    effective_tests, EffectiveTests, Metric, RepoFiles, Task, TestSpec, DEFAULT_GATE,
};
use taskgate_core::report::{
    cap_report, decide_verdict, relative_path, CommandResult, GateResult, GateTests, RunReport,
    REPORT_VERSION,
};
use taskgate_core::results::{TestCase, TestId};
use taskgate_core::task::{RunDep, RunSubject};

mod command;
mod metrics;
mod queue;

use command::run_test;
use metrics::{check_metrics, read_metrics};
pub use metrics::{MAX_METRICS_FILE_BYTES, MAX_METRIC_WARNINGS, METRICS_FILE};
pub use queue::{Checkout, LocalRunner, RunSlot};

/// A command's timeout when the plan gives none.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 600;

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
    /// The network the repository asked for, as the operator decided
    /// (`core::network`); only meaningful in the sandbox.
    pub network: Network,
    /// The repository's tests quarantined as flaky now (`core::flaky`),
    /// from the store: their failures do not fail a gate.
    pub quarantined: Arc<BTreeSet<TestId>>,
    /// The disk the workspace is on ([`super::Workspace::disk`]): a
    /// command that fails on a full capped disk fails as `tooling_error`
    /// saying so; an uncapped one is said on every gate.
    pub disk: RunDisk,
    /// Dependencies from other repositories checked out at `deps/<id>`
    /// ([`super::deps`]): each command gets `TASKGATE_DEP_<ID>_SHA`, and
    /// the sandbox mounts their folders read-only.
    pub deps: Vec<RunDep>,
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
            network: Network::Offline,
            quarantined: Arc::default(),
            disk: RunDisk::Host,
            deps: Vec::new(),
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
    let (workdir, task) = (workdir.to_owned(), RunSubject::Task(task.id.value.clone()));
    async move { run_gate_specs(&workdir, task, gates, options).await }
}

/// Runs resolved gates in `workdir`.
pub async fn run_gate_specs(
    workdir: &Path,
    task: RunSubject,
    gates: Vec<GateSpec>,
    options: RunOptions,
) -> RunReport {
    let start = Instant::now();
    let (sandbox, mut run_warnings) = match isolate(workdir, &options).await {
        Ok(isolated) => isolated,
        Err(why) => return refused(task, gates, &why.to_string(), &options, start),
    };
    run_warnings.extend(options.disk.warning());
    let mut ran: Vec<Vec<CommandResult>> = Vec::new();
    let mut reports: Vec<Option<GateReports>> = Vec::new();
    let mut cancelled = false;
    let mut runner_fault = None;
    let roots = workspace_roots(workdir, sandbox.is_some());
    let mut listing = list_workspace(workdir).await;
    for gate in &gates {
        let mut results = Vec::new();
        for test in &gate.tests {
            if options.cancel.is_cancelled() {
                cancelled = true;
                break;
            }
            if runner_fault.is_some() {
                break;
            }
            let ran = run_test(workdir, test, &options, sandbox.as_ref()).await;
            results.push(ran.result);
            // The runner failed: the next commands would fail the same way,
            // and none of it would say anything about the code.
            runner_fault = runner_fault.or(ran.fault);
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
        runner_fault,
        tested: None,
    })
}

/// The sandbox every command of this run gets, and what each gate must say
/// about it; `Err` when no command may run.
async fn isolate(
    workdir: &Path,
    options: &RunOptions,
) -> Result<(Option<SandboxRun>, Vec<String>), SandboxError> {
    match &options.isolation {
        Isolation::Host => Ok((None, Vec::new())),
        Isolation::Unsandboxed => Ok((None, vec![UNSANDBOXED_WARNING.to_string()])),
        Isolation::Refused(why) => Err(SandboxError::Settings(why.clone())),
        Isolation::Sandbox(sandbox) => {
            sandbox.probe().await?;
            let mut warnings: Vec<String> = options
                .network
                .render_warning()
                .into_iter()
                .map(String::from)
                .collect();
            if !processes_limited() {
                warnings.push(PROCESSES_WARNING.to_string());
            }
            let run = SandboxRun::new(
                sandbox.clone(),
                options.network.allowed(),
                borrowed_objects(workdir),
            )
            .map_err(SandboxError::Files)?
            .with_read_only(super::deps::dep_dirs(&options.deps));
            Ok((Some(run), warnings))
        }
    }
}

/// Every gate failed as `tooling_error` before anything ran.
pub(super) fn refused(
    task: RunSubject,
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
        runner_fault: Some(why.to_string()),
        tested: None,
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

#[cfg(test)]
mod tests;
