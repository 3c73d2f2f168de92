//! The classifier's accuracy over the corpus of real failure logs, and its
//! speed over large logs. Not a test: `cargo test` does
//! not build it; the corpus test (`crates/taskgate-core/src/classify/corpus_tests.rs`) is the
//! gate, this is the measurement.
//!
//! ```text
//! cargo bench --bench classify                  # both parts
//! cargo bench --bench classify -- accuracy      # only the corpus
//! cargo bench --bench classify -- speed         # only the throughput
//! ```
//!
//! Accuracy: every `fixtures/failures/<case>.json` (written by
//! `scripts/failures.sh`) is classified from its `.log`. A case's kind is
//! right when it equals the expected `kind`; its summary is right when it
//! holds every `summary_contains` fragment (the failing test or file, the
//! message) and, when the case names one, the `finding` is among the
//! findings. Cases flagged `known_miss` count like the others; they are the
//! misses the corpus test tolerates, and they are listed.
//!
//! Speed: real logs of the corpus, concatenated and repeated into logs of
//! 64 KiB to 100 MiB, each classified under a few commands (which decides the
//! parser that reads first). The figures are input bytes per second of wall
//! time, the median of several runs, and the same over the bytes the
//! classifier reads (a log over 512 KiB is read as its first and last
//! 256 KiB, so its time stops growing there).

// A bench is a program: it reads its corpus and arguments (crates/taskgate-core/clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use serde::Deserialize;
use taskgate_core::classify::{classify, Classification, FailureKind, Outcome};

const FIXTURES: &str = "fixtures/failures";
/// Sizes of the synthetic logs of the speed part.
const SIZES: &[(usize, &str)] = &[
    (64 << 10, "64 KiB"),
    (128 << 10, "128 KiB"),
    (256 << 10, "256 KiB"),
    (512 << 10, "512 KiB"),
    (1 << 20, "1 MiB"),
    (10 << 20, "10 MiB"),
    (100 << 20, "100 MiB"),
];
/// What the classifier reads of a log: its first and last 256 KiB
/// (`HEAD_BYTES` + `TAIL_BYTES` in `crates/taskgate-core/src/classify/text.rs`).
const WINDOW: usize = 512 << 10;
/// The commands each log is classified under: one per family read first.
const COMMANDS: &[&str] = &[
    "pytest",
    "cargo test",
    "npx jest",
    "go test ./...",
    "./ci.sh",
];

/// One corpus case's expectation: the corpus test's format plus `known_miss`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    command: String,
    exit_code: Option<i32>,
    #[serde(default)]
    signal: Option<i32>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    kind: FailureKind,
    summary_contains: Vec<String>,
    #[serde(default)]
    finding: Option<String>,
    #[serde(default)]
    known_miss: bool,
}

struct Case {
    name: String,
    expected: Expected,
    log: Vec<u8>,
}

impl Case {
    fn classify(&self) -> Classification {
        classify(&Outcome {
            command: &self.expected.command,
            exit_code: self.expected.exit_code,
            signal: self.expected.signal,
            timed_out: self.expected.timed_out,
            timeout_seconds: self.expected.timeout_seconds,
            output: &self.log,
        })
    }

    /// The tool the case exercises: its name up to the first `-`.
    fn tool(&self) -> &str {
        self.name.split('-').next().unwrap_or(&self.name)
    }
}

fn main() -> anyhow::Result<()> {
    // `cargo bench` appends `--bench`.
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let want = |p: &str| parts.is_empty() || parts.iter().any(|a| a == p);
    let cases = load_corpus(&Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURES))?;
    if want("accuracy") {
        accuracy(&cases);
    }
    if want("speed") {
        speed(&cases);
    }
    Ok(())
}

fn load_corpus(dir: &Path) -> anyhow::Result<Vec<Case>> {
    let mut jsons: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    jsons.retain(|p| p.extension().is_some_and(|x| x == "json"));
    jsons.sort();
    let mut cases = Vec::new();
    for json in jsons {
        let name = json
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let expected = serde_json::from_slice(&std::fs::read(&json)?)
            .with_context(|| format!("{}", json.display()))?;
        let log =
            std::fs::read(json.with_extension("log")).with_context(|| format!("{name}.log"))?;
        cases.push(Case {
            name,
            expected,
            log,
        });
    }
    ensure!(!cases.is_empty(), "no cases in {}", dir.display());
    Ok(cases)
}

/// What is wrong with one case's classification: (kind wrong, summary wrong,
/// the problems in words).
fn judge(case: &Case, got: &Classification) -> (bool, bool, Vec<String>) {
    let want = &case.expected;
    let mut problems = Vec::new();
    let kind_wrong = got.kind != want.kind;
    if kind_wrong {
        problems.push(format!("kind {} (expected {})", got.kind, want.kind));
    }
    let mut summary_wrong = false;
    for fact in &want.summary_contains {
        if !got.summary.contains(fact.as_str()) {
            summary_wrong = true;
            problems.push(format!("summary lacks {fact:?}"));
        }
    }
    if let Some(at) = &want.finding {
        if !got
            .findings
            .iter()
            .any(|f| &format!("{}:{}", f.path, f.line) == at)
        {
            summary_wrong = true;
            problems.push(format!("no finding at {at}"));
        }
    }
    (kind_wrong, summary_wrong, problems)
}

fn accuracy(cases: &[Case]) {
    let (mut kinds_right, mut summaries_right) = (0, 0);
    let mut misses = Vec::new();
    // tool -> (cases, all right)
    let mut tools: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for case in cases {
        let got = case.classify();
        let (kind_wrong, summary_wrong, problems) = judge(case, &got);
        kinds_right += usize::from(!kind_wrong);
        summaries_right += usize::from(!summary_wrong);
        let tool = tools.entry(case.tool()).or_default();
        tool.0 += 1;
        if problems.is_empty() {
            tool.1 += 1;
        } else {
            let flag = if case.expected.known_miss {
                " [known_miss]"
            } else {
                ""
            };
            misses.push(format!(
                "  {}{flag}: {}\n      summary: {:?}",
                case.name,
                problems.join("; "),
                got.summary
            ));
        }
    }
    let n = cases.len();
    let pct = |k: usize| 100.0 * k as f64 / n as f64;
    println!(
        "== accuracy over {n} real logs from {} tools ({FIXTURES})",
        tools.len()
    );
    println!(
        "kind right:      {kinds_right}/{n} = {:.1} % (target 95 %)",
        pct(kinds_right)
    );
    println!(
        "summary right:   {summaries_right}/{n} = {:.1} % (target 90 %; names the failing test or file)",
        pct(summaries_right)
    );
    let known = cases.iter().filter(|c| c.expected.known_miss).count();
    println!("flagged known_miss: {known}");
    let per_tool: Vec<String> = tools
        .iter()
        .map(|(t, (all, right))| format!("{t} {right}/{all}"))
        .collect();
    println!("per tool (all right / cases): {}", per_tool.join(", "));
    if misses.is_empty() {
        println!("misses: none");
    } else {
        println!("misses ({}):\n{}", misses.len(), misses.join("\n"));
    }
}

fn speed(cases: &[Case]) {
    // Real logs end to end, failures of every family, repeated to size.
    let mut corpus: Vec<u8> = Vec::new();
    for case in cases {
        corpus.extend_from_slice(&case.log);
    }
    println!(
        "\n== speed: the corpus's logs ({} KiB together) repeated to size; median of runs",
        corpus.len() >> 10
    );
    println!(
        "{:<9} {:<14} {:>10} {:>10} {:>14}",
        "size", "command", "time", "MB/s", "MB/s of read"
    );
    for &(size, label) in SIZES {
        let log: Vec<u8> = corpus.iter().copied().cycle().take(size).collect();
        for command in COMMANDS {
            let secs = median_time(&log, command).as_secs_f64();
            let mbps = size as f64 / 1e6 / secs;
            let read = size.min(WINDOW) as f64 / 1e6 / secs;
            println!(
                "{label:<9} {command:<14} {:>8.3}ms {mbps:>10.0} {read:>14.0}",
                secs * 1e3
            );
        }
    }
    per_case_speed(cases);
}

/// Median wall time of classifying `log` under `command`: runs until 0.5 s
/// have passed (at least 5, at most 200 runs).
fn median_time(log: &[u8], command: &str) -> Duration {
    let outcome = Outcome {
        command,
        exit_code: Some(1),
        signal: None,
        timed_out: false,
        timeout_seconds: None,
        output: log,
    };
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < Duration::from_millis(500) && times.len() < 200) {
        let t = Instant::now();
        std::hint::black_box(classify(std::hint::black_box(&outcome)));
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

/// The corpus case by case, as it is: the whole corpus's bytes over the time
/// to classify every case once (median of runs), and the slowest cases.
fn per_case_speed(cases: &[Case]) {
    let mut per_case: Vec<(Duration, &Case)> = cases
        .iter()
        .map(|c| {
            let mut times: Vec<Duration> = (0..21)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(c.classify());
                    t.elapsed()
                })
                .collect();
            times.sort();
            (times[times.len() / 2], c)
        })
        .collect();
    let total: Duration = per_case.iter().map(|(t, _)| *t).sum();
    let bytes: usize = cases.iter().map(|c| c.log.len()).sum();
    println!(
        "\ncorpus case by case: {} cases, {} KiB in {:.3} ms = {:.0} MB/s ({:.1} µs per case)",
        cases.len(),
        bytes >> 10,
        total.as_secs_f64() * 1e3,
        bytes as f64 / 1e6 / total.as_secs_f64(),
        total.as_secs_f64() * 1e6 / cases.len() as f64
    );
    per_case.sort_by_key(|(t, _)| std::cmp::Reverse(*t));
    let slowest: Vec<String> = per_case
        .iter()
        .take(5)
        .map(|(t, c)| {
            let mbps = c.log.len() as f64 / 1e6 / t.as_secs_f64();
            format!(
                "{} ({} B, {:.1} µs, {mbps:.0} MB/s)",
                c.name,
                c.log.len(),
                t.as_secs_f64() * 1e6
            )
        })
        .collect();
    println!("slowest: {}", slowest.join(", "));
}
