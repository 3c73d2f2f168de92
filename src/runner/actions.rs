//! The `actions` runner (SPEC §6): a task's gates run on GitHub's own
//! runners. taskgate dispatches the workflow `taskgate init` ships
//! (`.github/workflows/taskgate-run.yml`), whose job runs `taskgate run` — the
//! same gate loop as the `local` runner — and uploads the [`RunReport`] as
//! JSON in an artifact; when the run completes, taskgate reads it back here.
//!
//! Owns: the workflow's inputs ([`dispatch_inputs`]), reading the report
//! artifact back ([`fetch_report`], [`read_report_zip`]) and the report that
//! stands in when there is none ([`report_for_missing_artifact`]).
//!
//! Must not: decide task states, perform effects (the dispatch is an
//! `Effect::DispatchRun` the core emits and `github::perform::runner` performs), listen for webhooks,
//! or write anything from the artifact to disk.
//!
//! Two ideas a reader needs:
//! - The artifact is built by code of the commit under test, so it is
//!   untrusted input: its size is capped before and while downloading, the
//!   zip's entry count, paths and unpacked size are checked before anything
//!   is unpacked, and the report must be for the task and commit that were
//!   dispatched.
//! - The workflow is dispatched on the default branch and checks out the
//!   commit under test itself: the workflow file and the plan it runs come
//!   from the default branch, as with the `local` runner.

use std::collections::BTreeMap;
use std::io::{Cursor, Read};

use serde::Deserialize;

use crate::github::client::{get_capped, send, Capped};
use crate::github::GitHubError;
use taskgate_core::classify::FailureKind;
use taskgate_core::ids::{CommitSha, RepoName, StoryId};
use taskgate_core::plan::DEFAULT_GATE;
use taskgate_core::report::{cap_report, GateResult, RunReport, REPORT_VERSION};
use taskgate_core::story::markers::{decode_value, encode_value};
use taskgate_core::task::RunSubject;
use taskgate_core::AttemptRef;

/// The artifact the workflow uploads.
pub const REPORT_ARTIFACT: &str = "taskgate-report";
/// The report's file inside the artifact.
pub const REPORT_FILE: &str = "taskgate-report.json";
/// The workflow's inputs, in the order `taskgate init`'s template lists them.
/// GitHub accepts at most 10 inputs on older servers (25 on github.com since
/// 2025); values are strings. `story` is the story key (`file:checks`), so
/// that in a repository with several plans the job runs the task of the
/// dispatched story's plan (`taskgate run --story`); `base` is the story
/// branch's head the job merges into `sha` before testing (`taskgate run
/// --base`), as CI on a pull request tests its merge (empty: none).
pub const WORKFLOW_INPUTS: [&str; 6] = ["story", "task", "sha", "base", "gates", "run_id"];

/// The taskgate release whose `taskgate run` writes reports this server
/// reads: what a workflow must install (`uses: <action>@v<this>`).
pub const TASKGATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// How much of an artifact taskgate is willing to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactLimits {
    /// The zip as downloaded: checked against `size_in_bytes` before the
    /// download and against the bytes while reading.
    pub max_zip_bytes: u64,
    /// Everything in the zip, unpacked (declared sizes), and the report
    /// itself as actually inflated.
    pub max_unpacked_bytes: u64,
    pub max_entries: usize,
}

impl Default for ArtifactLimits {
    /// A report holds each command's output capped at 4 MiB; JSON of logs
    /// compresses well, so these leave room for a dozen full logs.
    fn default() -> Self {
        ArtifactLimits {
            max_zip_bytes: 16 << 20,
            max_unpacked_bytes: 64 << 20,
            max_entries: 16,
        }
    }
}

/// Why no report could be read from a run.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error(
        "the workflow run has no `{REPORT_ARTIFACT}` artifact (did the job reach its upload step?): {run_url}"
    )]
    NoReport { run_url: String },
    #[error("the `{REPORT_ARTIFACT}` artifact is too large: {what} is {bytes} bytes, over the limit of {limit}")]
    TooLarge {
        /// `the zip` or `the unpacked content`.
        what: &'static str,
        bytes: u64,
        limit: u64,
    },
    #[error("the `{REPORT_ARTIFACT}` artifact holds {entries} files, over the limit of {limit}; upload only {REPORT_FILE}")]
    TooManyEntries { entries: usize, limit: usize },
    #[error("the `{REPORT_ARTIFACT}` artifact is not a readable zip archive: {0}")]
    NotAZip(String),
    #[error("the `{REPORT_ARTIFACT}` artifact holds an unsafe path `{0}` (absolute, with `..` or a backslash); refusing it")]
    UnsafePath(String),
    #[error("the `{REPORT_ARTIFACT}` artifact holds no usable report: {0}")]
    BadReport(String),
    #[error("the report is for task `{found_task}` at {found_sha}, but task `{task}` at {sha} was dispatched")]
    WrongRun {
        task: String,
        sha: String,
        found_task: String,
        found_sha: String,
    },
    #[error("reading the report artifact: {0}")]
    GitHub(#[from] GitHubError),
}

/// The `workflow_dispatch` inputs of one run: `story` the story key whose
/// plan holds `task`, `base` the story branch's head to merge into `sha`
/// (none: `sha` is tested as it is), `gates` comma-joined (empty: every
/// gate of the task), `run_id` taskgate's own id for the attempt.
pub fn dispatch_inputs(
    story: &StoryId,
    task: &RunSubject,
    (sha, base): (&CommitSha, Option<&CommitSha>),
    gates: &[String],
    run_id: &str,
) -> BTreeMap<String, String> {
    [
        ("story", story.to_string()),
        ("task", task.key()),
        ("sha", sha.as_str().to_string()),
        (
            "base",
            base.map(|b| b.as_str().to_string()).unwrap_or_default(),
        ),
        ("gates", gates.join(",")),
        ("run_id", run_id.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// taskgate's id for an attempt, the `run_id` input:
/// `story=file:x task=data attempt=3`, values escaped like markers.
pub fn attempt_run_id(attempt: &AttemptRef) -> String {
    format!(
        "story={} task={} attempt={}",
        encode_value(attempt.story.as_str()),
        encode_value(&attempt.task.key()),
        attempt.attempt
    )
}

/// The attempt named in a run's `display_title`, which the template's
/// `run-name` ends with `(run <run_id>)`: how a run is found on hosts that
/// do not answer a dispatch with its run id.
pub fn attempt_of_display_title(title: &str) -> Option<AttemptRef> {
    let (_, rest) = title.rsplit_once("(run ")?;
    let mut fields = rest.strip_suffix(')')?.split(' ');
    let mut next = |name: &str| {
        fields
            .next()
            .and_then(|f| f.strip_prefix(name))
            .and_then(|f| f.strip_prefix('='))
    };
    let story = decode_value(next("story")?)?;
    let task = RunSubject::parse(&decode_value(next("task")?)?).ok()?;
    let attempt = next("attempt")?.parse().ok()?;
    if fields.next().is_some() {
        return None;
    }
    Some(AttemptRef {
        story: StoryId::new(story),
        task,
        attempt,
    })
}

#[derive(Deserialize)]
struct ArtifactList {
    artifacts: Vec<ArtifactInfo>,
}

#[derive(Deserialize)]
struct ArtifactInfo {
    id: u64,
    name: String,
    size_in_bytes: u64,
    #[serde(default)]
    expired: bool,
}

/// Reads the report of workflow run `run_id`: lists its artifacts, refuses
/// one announced over the cap, downloads the zip (capped while reading) and
/// checks it with [`read_report_zip`]. `task` and `sha` are what was
/// dispatched.
pub async fn fetch_report(
    client: &octocrab::Octocrab,
    repo: &RepoName,
    run_id: u64,
    task: &RunSubject,
    sha: &CommitSha,
    limits: ArtifactLimits,
) -> Result<RunReport, ArtifactError> {
    let path = format!(
        "/repos/{repo}/actions/runs/{run_id}/artifacts?name={REPORT_ARTIFACT}&per_page=100"
    );
    let list: ArtifactList = send(client, http::Method::GET, &path, None).await?.json()?;
    let Some(artifact) = list
        .artifacts
        .into_iter()
        .find(|a| a.name == REPORT_ARTIFACT && !a.expired)
    else {
        return Err(ArtifactError::NoReport {
            run_url: run_url(client, repo, run_id).await,
        });
    };
    if artifact.size_in_bytes > limits.max_zip_bytes {
        return Err(ArtifactError::TooLarge {
            what: "the zip",
            bytes: artifact.size_in_bytes,
            limit: limits.max_zip_bytes,
        });
    }
    let zip = format!("/repos/{repo}/actions/artifacts/{}/zip", artifact.id);
    match get_capped(client, &zip, limits.max_zip_bytes).await? {
        Capped::Complete(bytes) => read_report_zip(&bytes, task, sha, limits),
        Capped::TooLong { bytes } => Err(ArtifactError::TooLarge {
            what: "the zip",
            bytes,
            limit: limits.max_zip_bytes,
        }),
    }
}

/// The run's page for people; its API path if GitHub cannot say.
async fn run_url(client: &octocrab::Octocrab, repo: &RepoName, run_id: u64) -> String {
    #[derive(Deserialize)]
    struct Run {
        html_url: String,
    }
    let path = format!("/repos/{repo}/actions/runs/{run_id}");
    match send(client, http::Method::GET, &path, None).await {
        Ok(r) => r.json::<Run>().map(|r| r.html_url).unwrap_or(path),
        Err(_) => path,
    }
}

/// The report inside an artifact's zip, checked: at most `max_entries`
/// entries, every path safe, the declared unpacked total and the report's
/// actual inflated size within `max_unpacked_bytes`, the JSON a
/// [`RunReport`] of this [`REPORT_VERSION`] for `task` at `sha`.
pub fn read_report_zip(
    zip: &[u8],
    task: &RunSubject,
    sha: &CommitSha,
    limits: ArtifactLimits,
) -> Result<RunReport, ArtifactError> {
    let not_a_zip = |e: zip::result::ZipError| ArtifactError::NotAZip(e.to_string());
    let mut archive = zip::ZipArchive::new(Cursor::new(zip)).map_err(not_a_zip)?;
    if archive.len() > limits.max_entries {
        return Err(ArtifactError::TooManyEntries {
            entries: archive.len(),
            limit: limits.max_entries,
        });
    }
    let mut declared: u64 = 0;
    let mut report_index = None;
    let mut names = Vec::new();
    for i in 0..archive.len() {
        let entry = archive.by_index_raw(i).map_err(not_a_zip)?;
        let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        if !is_safe_path(&name) {
            return Err(ArtifactError::UnsafePath(name));
        }
        declared = declared.saturating_add(entry.size());
        if name == REPORT_FILE {
            report_index = Some(i);
        }
        names.push(name);
    }
    if declared > limits.max_unpacked_bytes {
        return Err(ArtifactError::TooLarge {
            what: "the unpacked content",
            bytes: declared,
            limit: limits.max_unpacked_bytes,
        });
    }
    let Some(index) = report_index else {
        return Err(ArtifactError::BadReport(format!(
            "no {REPORT_FILE} in it; it holds: {}",
            if names.is_empty() {
                "nothing".to_string()
            } else {
                names.join(", ")
            }
        )));
    };
    // Declared sizes can lie: the inflated bytes are capped too.
    let mut json = Vec::new();
    archive
        .by_index(index)
        .map_err(not_a_zip)?
        .take(limits.max_unpacked_bytes + 1)
        .read_to_end(&mut json)
        .map_err(|e| ArtifactError::NotAZip(format!("unpacking {REPORT_FILE}: {e}")))?;
    if json.len() as u64 > limits.max_unpacked_bytes {
        return Err(ArtifactError::TooLarge {
            what: "the unpacked content",
            bytes: json.len() as u64,
            limit: limits.max_unpacked_bytes,
        });
    }
    // The version first: a report of another format may not parse at all,
    // and the person reading the refusal needs to know what to install.
    #[derive(Deserialize)]
    struct Versioned {
        version: u32,
    }
    let version = serde_json::from_slice::<Versioned>(&json)
        .map_err(|e| ArtifactError::BadReport(format!("{REPORT_FILE}: {e}")))?
        .version;
    if version != REPORT_VERSION {
        return Err(ArtifactError::BadReport(format!(
            "{REPORT_FILE} has format version {version}, this taskgate server \
             ({TASKGATE_VERSION}) reads format {REPORT_VERSION}; install taskgate \
             {TASKGATE_VERSION} in the workflow (`uses: <owner>/taskgate@v{TASKGATE_VERSION}`, \
             as `taskgate init` writes it)"
        )));
    }
    let report: RunReport = serde_json::from_slice(&json)
        .map_err(|e| ArtifactError::BadReport(format!("{REPORT_FILE}: {e}")))?;
    if report.task != *task || report.sha.as_deref() != Some(sha.as_str()) {
        return Err(ArtifactError::WrongRun {
            task: task.key(),
            sha: sha.as_str().to_string(),
            found_task: report.task.key(),
            found_sha: report.sha.unwrap_or_else(|| "no commit".into()),
        });
    }
    // Within 64 MiB, task code still chooses how many gates, commands,
    // findings and warnings: they are capped before anything reads them.
    // A runner fault excuses a run from the failure loop: the job's own
    // claim of one is not believed, as task code could have written it.
    // What it says it tested is checked against the dispatch by the caller
    // (`core::story::start::check_tested`).
    Ok(cap_report(RunReport {
        runner_fault: None,
        ..report
    }))
}

/// A relative path without `..`, backslashes or a drive letter.
fn is_safe_path(name: &str) -> bool {
    let drive = name.as_bytes().get(1) == Some(&b':');
    !name.is_empty()
        && !name.starts_with('/')
        && !name.contains('\\')
        && !drive
        && name.split('/').all(|c| c != "..")
}

/// The report that stands in when a run produced none: every dispatched
/// gate (or the default gate, so it can never pass vacuously) failed as
/// `tooling_error`, saying why and linking the run, so the caller completes
/// the check runs exactly as after a local run.
pub fn report_for_missing_artifact(
    task: &RunSubject,
    sha: &CommitSha,
    gates: &[String],
    why: &str,
    run_url: Option<&str>,
) -> RunReport {
    let summary = match run_url {
        Some(url) => format!("the workflow run ended without a report: {why}\n{url}"),
        None => format!("the workflow run ended without a report: {why}"),
    };
    let warnings = run_url
        .map(|url| vec![format!("workflow run: {url}")])
        .unwrap_or_default();
    tooling_error_report(task, sha, gates, summary, warnings)
}

/// The report `taskgate run --json` writes when it cannot run the task at
/// all (no plan for the story, an invalid plan, an unknown task): every
/// requested gate (or the default gate) failed as `tooling_error`, `why` as
/// the summary, so the check runs say why instead of "no report".
pub fn report_for_setup_error(
    task: &RunSubject,
    sha: &CommitSha,
    gates: &[String],
    why: &str,
) -> RunReport {
    tooling_error_report(task, sha, gates, why.to_string(), Vec::new())
}

fn tooling_error_report(
    task: &RunSubject,
    sha: &CommitSha,
    gates: &[String],
    summary: String,
    warnings: Vec<String>,
) -> RunReport {
    let gates: Vec<String> = if gates.is_empty() {
        vec![DEFAULT_GATE.to_string()]
    } else {
        gates.to_vec()
    };
    RunReport {
        version: REPORT_VERSION,
        task: task.clone(),
        sha: Some(sha.as_str().to_string()),
        gates: gates
            .into_iter()
            .map(|gate| GateResult {
                gate,
                passed: false,
                kind: Some(FailureKind::ToolingError),
                summary: Some(summary.clone()),
                commands: Vec::new(),
                missing_artifacts: Vec::new(),
                metric_failures: Vec::new(),
                // Shown as a Markdown list item, where GitHub links the URL.
                warnings: warnings.clone(),
                cancelled: false,
                tests: None,
            })
            .collect(),
        duration_ms: 0,
        cancelled: false,
        runner_fault: None,
        tested: None,
    }
}

#[cfg(test)]
mod tests;
