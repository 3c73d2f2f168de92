//! A gate's test reports, read from its workspace after its commands ran:
//! the files its `reports:` globs name, else the usual report locations
//! ([`report_candidates`]), parsed by [`taskgate_core::results`].
//!
//! Owns: the bounded walk of the workspace ([`Listing`]), the rule that a
//! report must be written by the gate itself ([`Listing::fresh_since`]),
//! opening report files safely and the caps on how much is read per gate.
//! Must not: judge the results (that is `core::report`'s [`GateTests`] and
//! `check_required_tests`), run commands or talk to GitHub.
//!
//! Two ideas a reader needs:
//! - Report files are written by the code under test, so they are hostile:
//!   the walk never follows a symbolic link nor enters `.git` or
//!   `node_modules`, stops at [`MAX_DEPTH`] and [`MAX_ENTRIES`]; a report is
//!   opened with `O_NOFOLLOW | O_NONBLOCK`, must be a regular file inside the
//!   workspace (a link to `/etc/passwd` or a FIFO is refused and said), and
//!   is read through the parsers' byte and case caps.
//! - Only files created or changed while the gate ran count (the workspace
//!   is listed before and after): a report committed to the repository, or
//!   left by an earlier gate or an earlier `taskgate run` in the same
//!   directory, never stands in for this run's results.
//!
//! [`GateTests`]: taskgate_core::report::GateTests

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use taskgate_core::report::{check_required_tests, GateTests};
use taskgate_core::results::{
    detect_format, parse_report, report_candidates, Limits, ReportGlobs, TestCase, TestId,
    Truncated,
};

/// Directory levels the walk descends below the workspace root.
pub const MAX_DEPTH: usize = 16;
/// Directory entries the walk looks at, in all.
pub const MAX_ENTRIES: usize = 50_000;
/// Report files read per gate.
pub const MAX_REPORT_FILES: usize = 32;
/// Bytes read from all of one gate's reports together.
pub const MAX_GATE_REPORT_BYTES: u64 = 64 << 20;
/// Cases read from all of one gate's reports together.
pub const MAX_GATE_CASES: usize = 200_000;
/// Directories never entered: version control and installed packages.
const SKIPPED_DIRS: &[&str] = &[".git", "node_modules"];

/// What a listed path is; links and special files are listed so that a
/// report glob that names one can be refused by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Symlink,
    Other,
}

/// A file's identity: changed when it is rewritten, replaced or touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    kind: Kind,
    inode: u64,
    len: u64,
    mtime_ns: i128,
}

/// The workspace's files (paths relative to it, `/`-separated), as far as
/// the caps let the walk go.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    files: HashMap<String, Stamp>,
    /// Set when a cap stopped the walk.
    pub incomplete: bool,
}

impl Listing {
    /// Walks `root` without following links, skipping [`SKIPPED_DIRS`].
    pub fn of(root: &Path) -> Listing {
        let mut listing = Listing::default();
        let mut seen = 0usize;
        let mut stack: Vec<(PathBuf, String, usize)> = vec![(root.to_owned(), String::new(), 0)];
        while let Some((dir, prefix, depth)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    listing.incomplete = true;
                    return listing;
                }
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                let Ok(meta) = entry.path().symlink_metadata() else {
                    continue;
                };
                let rel = format!("{prefix}{name}");
                if meta.is_dir() {
                    if SKIPPED_DIRS.contains(&name.as_str()) {
                        continue;
                    }
                    if depth + 1 >= MAX_DEPTH {
                        listing.incomplete = true;
                        continue;
                    }
                    stack.push((entry.path(), format!("{rel}/"), depth + 1));
                    continue;
                }
                let kind = if meta.file_type().is_symlink() {
                    Kind::Symlink
                } else if meta.is_file() {
                    Kind::File
                } else {
                    Kind::Other
                };
                let stamp = Stamp {
                    kind,
                    inode: meta.ino(),
                    len: meta.len(),
                    mtime_ns: i128::from(meta.mtime()) * 1_000_000_000
                        + i128::from(meta.mtime_nsec()),
                };
                listing.files.insert(rel, stamp);
            }
        }
        listing
    }

    /// The paths that are new or changed since `before`, sorted.
    pub fn fresh_since(&self, before: &Listing) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .files
            .iter()
            .filter(|(path, stamp)| before.files.get(*path) != Some(stamp))
            .map(|(path, _)| path.as_str())
            .collect();
        out.sort_unstable();
        out
    }

    fn kind(&self, path: &str) -> Option<Kind> {
        self.files.get(path).map(|s| s.kind)
    }
}

/// What one gate's reports gave: every case read (not yet capped for the
/// stored report), the files read, and what could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GateReports {
    pub cases: Vec<TestCase>,
    pub report_files: Vec<String>,
    pub problems: Vec<String>,
}

/// Reads the reports the gate wrote: those matching `globs` (when the plan
/// names any), else the usual locations. `None` when the gate names no
/// globs and wrote no report in a usual place: the log classifier alone
/// judges it then. `roots` are the absolute forms of the workspace (host
/// and sandbox) stripped from the cases' file paths.
pub fn read_gate_reports(
    workdir: &Path,
    globs: &[&str],
    before: &Listing,
    after: &Listing,
    roots: &[String],
) -> Option<GateReports> {
    let fresh = after.fresh_since(before);
    let mut out = GateReports::default();
    let chosen: Vec<(String, Option<taskgate_core::results::ReportFormat>)> = if globs.is_empty() {
        let found = report_candidates(&fresh);
        if found.is_empty() {
            return None;
        }
        found.into_iter().map(|c| (c.path, c.format)).collect()
    } else {
        match ReportGlobs::new(globs) {
            Ok(set) => set
                .matches(&fresh)
                .into_iter()
                .map(|p| (p.to_string(), None))
                .collect(),
            Err(e) => {
                out.problems.push(e.to_string());
                Vec::new()
            }
        }
    };
    if chosen.is_empty() && out.problems.is_empty() {
        let globs: Vec<String> = globs.iter().map(|g| format!("`{g}`")).collect();
        out.problems.push(format!(
            "no report file matching {} was written by this gate's commands",
            globs.join(", ")
        ));
    }
    if after.incomplete {
        out.problems.push(format!(
            "the workspace has more than {MAX_ENTRIES} entries or deeper than {MAX_DEPTH} \
             levels; reports beyond were not looked for"
        ));
    }
    let mut budget = (MAX_GATE_REPORT_BYTES, MAX_GATE_CASES);
    for (i, (path, hint)) in chosen.into_iter().enumerate() {
        if i == MAX_REPORT_FILES {
            out.problems.push(format!(
                "more than {MAX_REPORT_FILES} report files; the rest were not read"
            ));
            break;
        }
        if budget.0 == 0 || budget.1 == 0 {
            out.problems.push(format!(
                "`{path}` not read: this gate's reports reached {MAX_GATE_REPORT_BYTES} bytes \
                 or {MAX_GATE_CASES} tests"
            ));
            continue;
        }
        match read_one(workdir, &path, hint, after.kind(&path), &mut budget) {
            Ok((mut cases, note)) => {
                relative_files(&mut cases, roots);
                add_once(&mut out.cases, cases);
                out.report_files.push(path);
                out.problems.extend(note);
            }
            Err(why) => out.problems.push(why.to_string()),
        }
    }
    Some(out)
}

/// Adds a report's cases, each test id once: one run written to two of
/// the usual places (`junit.xml` and Surefire's
/// `target/surefire-reports/TEST-*.xml`) is one run of each test, not two.
/// Where the copies disagree, a failure counts over a pass.
fn add_once(cases: &mut Vec<TestCase>, more: Vec<TestCase>) {
    let mut at: std::collections::HashMap<TestId, usize> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i))
        .collect();
    for case in more {
        match at.get(&case.id) {
            Some(&i) => {
                if case.outcome.is_failure() && !cases[i].outcome.is_failure() {
                    cases[i] = case;
                }
            }
            None => {
                at.insert(case.id.clone(), cases.len());
                cases.push(case);
            }
        }
    }
}

/// Why one report file was not read; its Display is the problem the gate
/// reports.
#[derive(Debug, thiserror::Error)]
pub enum ReportFileError {
    #[error("the workspace could not be resolved: {0}")]
    WorkspaceUnresolved(#[source] std::io::Error),
    #[error("`{path}` could not be read: its directory is gone")]
    DirectoryGone { path: String },
    #[error("`{path}` lies outside the workspace (a directory on its way is a link); not read")]
    OutsideWorkspace { path: String },
    #[error("`{path}` is a symbolic link; taskgate does not follow it (write the report itself)")]
    Symlink { path: String },
    #[error("`{path}` is not a regular file; taskgate reads only plain report files")]
    NotAFile { path: String },
    #[error("`{path}` could not be read: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "`{path}` is not a report format taskgate reads (JUnit XML, TAP, libtest JSON, go test -json)"
    )]
    UnknownFormat { path: String },
    /// The parser refused it (a malformed or hostile report).
    #[error("{0} (report ignored)")]
    Unparsed(#[source] taskgate_core::results::ReportError),
}

impl ReportFileError {
    fn unreadable(path: &str, source: std::io::Error) -> ReportFileError {
        ReportFileError::Unreadable {
            path: path.to_owned(),
            source,
        }
    }
}

/// One report's cases and, if it was read only in part, a note saying so.
fn read_one(
    workdir: &Path,
    path: &str,
    hint: Option<taskgate_core::results::ReportFormat>,
    kind: Option<Kind>,
    budget: &mut (u64, usize),
) -> Result<(Vec<TestCase>, Option<String>), ReportFileError> {
    let path_of = || path.to_owned();
    match kind {
        Some(Kind::Symlink) => return Err(ReportFileError::Symlink { path: path_of() }),
        Some(Kind::Other) => return Err(ReportFileError::NotAFile { path: path_of() }),
        _ => {}
    }
    let mut file = open_inside(workdir, path)?;
    let mut head = Vec::with_capacity(512);
    (&mut file)
        .take(512)
        .read_to_end(&mut head)
        .map_err(|e| ReportFileError::unreadable(path, e))?;
    let format = detect_format(&head, path)
        .or(hint)
        .ok_or_else(|| ReportFileError::UnknownFormat { path: path_of() })?;
    file.rewind()
        .map_err(|e| ReportFileError::unreadable(path, e))?;
    let limits = Limits {
        max_bytes: Limits::default().max_bytes.min(budget.0),
        max_cases: Limits::default().max_cases.min(budget.1),
        ..Limits::default()
    };
    let results = parse_report(format, file, path, &limits).map_err(ReportFileError::Unparsed)?;
    budget.0 = budget.0.saturating_sub(results.bytes_read);
    budget.1 = budget.1.saturating_sub(results.cases.len());
    let note = results.truncated.map(|t| {
        let why = match t {
            Truncated::ByteCap { max_bytes } => format!("it is over {max_bytes} bytes"),
            Truncated::CaseCap { max_cases } => format!("it lists over {max_cases} tests"),
            Truncated::EndedEarly { offset } => {
                format!("it ends early, at byte {offset} (the run may have been killed)")
            }
        };
        format!("`{path}` was read only in part: {why}")
    });
    Ok((results.cases, note))
}

/// Opens `path` (relative to `workdir`) for reading, refusing a symbolic
/// link as its last part, anything but a regular file, and a file whose
/// directory resolves outside the workspace.
fn open_inside(workdir: &Path, path: &str) -> Result<File, ReportFileError> {
    let path_of = || path.to_owned();
    let full = workdir.join(path);
    let root = workdir
        .canonicalize()
        .map_err(ReportFileError::WorkspaceUnresolved)?;
    let parent = full
        .parent()
        .and_then(|p| p.canonicalize().ok())
        .ok_or_else(|| ReportFileError::DirectoryGone { path: path_of() })?;
    if !parent.starts_with(&root) {
        return Err(ReportFileError::OutsideWorkspace { path: path_of() });
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&full)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => ReportFileError::Symlink { path: path_of() },
            _ => ReportFileError::unreadable(path, e),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| ReportFileError::unreadable(path, e))?;
    if !meta.is_file() {
        return Err(ReportFileError::NotAFile { path: path_of() });
    }
    Ok(file)
}

/// Absolute file paths under the workspace (as node and some JUnit
/// writers give them) made relative to it.
fn relative_files(cases: &mut [TestCase], roots: &[String]) {
    for case in cases {
        let Some(file) = &case.file else { continue };
        if !file.starts_with('/') {
            continue;
        }
        if let Some(rel) = roots.iter().find_map(|r| {
            taskgate_core::report::relative_path(file, r).filter(|_| file.starts_with(r.as_str()))
        }) {
            case.file = Some(rel);
        }
    }
}

/// The workspace listed on the blocking pool (it may hold many files).
pub async fn list_workspace(workdir: &Path) -> Listing {
    let dir = workdir.to_owned();
    tokio::task::spawn_blocking(move || Listing::of(&dir))
        .await
        .unwrap_or_default()
}

/// The reports `gate` wrote, read on the blocking pool.
pub async fn gate_reports(
    workdir: &Path,
    globs: Vec<&str>,
    before: &Listing,
    after: &Listing,
    roots: &[String],
) -> Option<GateReports> {
    let (dir, roots) = (workdir.to_owned(), roots.to_vec());
    let globs: Vec<String> = globs.into_iter().map(str::to_string).collect();
    let (before, after) = (before.clone(), after.clone());
    tokio::task::spawn_blocking(move || {
        let globs: Vec<&str> = globs.iter().map(String::as_str).collect();
        read_gate_reports(&dir, &globs, &before, &after, &roots)
    })
    .await
    .unwrap_or_else(|e| {
        Some(GateReports {
            problems: vec![format!("the reports could not be read: {e}")],
            ..GateReports::default()
        })
    })
}

/// The gate's per-test evidence: its reports' cases, and the task's
/// `required_tests:` checked against every gate's cases. `None` when the
/// gate wrote no report and requires no test. `quarantined` answers from
/// the repository's recorded quarantines (`core::flaky`), never from
/// anything the reports say.
pub fn gate_tests(
    required: &[TestId],
    found: Option<&GateReports>,
    all_cases: &[&TestCase],
    quarantined: &dyn Fn(&TestId) -> bool,
) -> Option<GateTests> {
    if found.is_none() && required.is_empty() {
        return None;
    }
    let found = found.cloned().unwrap_or_else(|| GateReports {
        problems: vec![
            "no test report was found, so the required tests cannot be checked: write one \
             (e.g. `pytest --junitxml=junit.xml`) or name it with `reports:`"
                .into(),
        ],
        ..GateReports::default()
    });
    let mut tests = GateTests::new(found.cases, quarantined, found.report_files, found.problems);
    tests.required = check_required_tests(required, all_cases.iter().copied(), quarantined);
    Some(tests)
}

#[cfg(test)]
mod tests;
