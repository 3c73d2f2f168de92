//! The result of an acceptance run (SPEC §6) and the texts made from it: the
//! check-run output of one gate and the report `taskgate run` prints.
//!
//! Owns: [`RunReport`] and its parts, which are also the JSON artifact the
//! `actions` runner uploads (versioned by [`REPORT_VERSION`]), and their
//! rendering. Must not: do IO, await or read the clock; the runners fill the
//! report, this module only shows it.
//!
//! Two ideas a reader needs:
//! - Everything from tool output is untrusted text: it is stripped of
//!   terminal escapes, its `@user`/`#123` are neutralised, and runs of
//!   backticks are broken so it can never close the code fence it sits in.
//! - GitHub counts the check-run `text` limit in bytes: logs are cut in the
//!   middle (head and tail kept, on char boundaries) and the cut is said.

use std::collections::HashSet;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::classify::{neutralize_mentions, strip_ansi, Classification, FailureKind};

mod caps;
mod evidence;
mod verdict;

pub use caps::{
    cap_report, MAX_ANNOTATIONS_PER_GATE, MAX_COMMANDS_PER_GATE, MAX_FINDINGS_PER_COMMAND,
    MAX_GATES, MAX_LINE_BYTES, MAX_LIST_ITEMS, MAX_OUTPUT_BYTES, MAX_PATH_BYTES,
};
pub use evidence::{
    case_line, case_verdict, check_required_tests, CaseVerdict, GateTests, Unmet, UnmetRequired,
    MAX_CASES_KEPT, MAX_FAILING_LISTED,
};
pub use verdict::{apply_quarantine, decide_verdict, excused_by_quarantine};

/// Bumped when a field changes meaning or disappears; additions keep it.
pub const REPORT_VERSION: u32 = 1;
/// GitHub's limit on a check run's `output.text` and `output.summary`, in bytes.
pub const CHECK_TEXT_LIMIT: usize = 65_535;
/// GitHub accepts at most this many annotations per check-run request.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;

/// One command of a gate, as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    pub cmd: String,
    pub gate: String,
    /// `None` when the command was killed by a signal or never started.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub timeout_seconds: u64,
    pub duration_ms: u64,
    /// Stdout and stderr merged, decoded lossily, capped by the runner.
    pub output: String,
    /// Bytes the command printed in total, including what the cap dropped.
    pub output_bytes: u64,
    pub truncated: bool,
    /// Failed, then passed on the immediate re-run. `output` and
    /// `classification` are those of the failed run.
    pub flaky: bool,
    /// Set for failures (and for flaky commands, from their failed run).
    pub classification: Option<Classification>,
}

impl CommandResult {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// `passed`, `flaky`, `timed out`, `killed (signal 9)`, `failed`.
    pub fn result_word(&self) -> String {
        match (self.passed(), self.flaky, self.timed_out, self.signal) {
            (true, true, ..) => "flaky".into(),
            (true, false, ..) => "passed".into(),
            (false, _, true, _) => "timed out".into(),
            (false, _, false, Some(sig)) => format!("killed (signal {sig})"),
            _ => "failed".into(),
        }
    }
}

/// One gate: the commands tagged with it, plus the task's artifact and
/// metric checks when they were attributed to this gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    pub gate: String,
    pub passed: bool,
    /// Why it failed: the first failing command's kind, or `spec_mismatch`.
    pub kind: Option<FailureKind>,
    /// The classifier's summary (1–3 lines), or what is missing.
    pub summary: Option<String>,
    pub commands: Vec<CommandResult>,
    pub missing_artifacts: Vec<String>,
    pub metric_failures: Vec<String>,
    pub warnings: Vec<String>,
    /// Stopped by a newer push; not a verdict on the code.
    #[serde(default)]
    pub cancelled: bool,
    /// Per-test results from the gate's report files; `None` when it wrote
    /// none (the log classifier's verdict stands alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<GateTests>,
}

/// Every gate of one task at one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub version: u32,
    pub task: String,
    pub sha: Option<String>,
    pub gates: Vec<GateResult>,
    pub duration_ms: u64,
    #[serde(default)]
    pub cancelled: bool,
}

impl RunReport {
    /// Seconds spent in the plan's commands themselves, all gates together.
    pub fn commands_seconds(&self) -> f64 {
        let ms: u64 = self
            .gates
            .iter()
            .flat_map(|g| &g.commands)
            .map(|c| c.duration_ms)
            .sum();
        ms as f64 / 1000.0
    }

    /// True when the run finished and every gate passed.
    pub fn passed(&self) -> bool {
        !self.cancelled && self.gates.iter().all(|g| g.passed)
    }
}

/// The `output` object of a check run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckOutput {
    pub title: String,
    pub summary: String,
    pub text: String,
    pub annotations: Vec<Annotation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// A check-run annotation, in GitHub's field names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub annotation_level: AnnotationLevel,
    pub message: String,
    pub title: Option<String>,
}

/// Annotations in the chunks GitHub accepts per request.
pub fn annotation_batches(annotations: &[Annotation]) -> Vec<&[Annotation]> {
    annotations.chunks(ANNOTATIONS_PER_REQUEST).collect()
}

/// `path` relative to the repository root, or `None` when it lies outside:
/// the `workspace` prefix and a leading `./` are stripped; absolute paths
/// and paths with `..` are refused.
pub fn relative_path(path: &str, workspace: &str) -> Option<String> {
    let ws = workspace.trim_end_matches('/');
    let mut rel = match path.strip_prefix(ws) {
        Some(rest) if !ws.is_empty() && rest.starts_with('/') => &rest[1..],
        _ => path,
    };
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest;
    }
    let inside = !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.contains('\\')
        && rel.split('/').all(|c| c != ".." && !c.is_empty());
    inside.then(|| rel.to_string())
}

/// The check-run output of one gate. `workspace` is the directory the
/// commands ran in (stripped from finding paths); `""` if already relative.
/// At most [`MAX_ANNOTATIONS_PER_GATE`] annotations; the summary counts
/// the ones left out.
pub fn render_check_output(gate: &GateResult, workspace: &str) -> CheckOutput {
    let (annotations, left_out) = gate_annotations(gate, workspace);
    let mut summary = render_gate_summary(gate);
    if left_out > 0 {
        let _ = write!(
            summary,
            "\n\n{left_out} more finding{} not shown as annotations (at most {MAX_ANNOTATIONS_PER_GATE} a gate).",
            plural(left_out)
        );
        summary = clip_middle(&summary, CHECK_TEXT_LIMIT);
    }
    CheckOutput {
        title: render_gate_title(gate),
        summary,
        text: render_gate_logs(gate, CHECK_TEXT_LIMIT),
        annotations,
    }
}

/// "2 passed, 1 failed — test_failure".
pub fn render_gate_title(gate: &GateResult) -> String {
    if gate.cancelled {
        return "cancelled: superseded by a newer run".into();
    }
    let mut parts = match gate.tests.as_ref().filter(|t| t.has_cases()) {
        Some(tests) => vec![tests.counts_line()],
        None => command_counts(gate),
    };
    let required = gate.tests.as_ref().map_or(0, |t| t.required.len());
    let missing = gate.missing_artifacts.len() + gate.metric_failures.len() + required;
    if missing > 0 {
        parts.push(format!(
            "{missing} acceptance check{} failed",
            plural(missing)
        ));
    }
    let mut title = parts.join(", ");
    if let (false, Some(kind)) = (gate.passed, gate.kind) {
        title.push_str(&format!(" — {kind}"));
    }
    title
}

/// "2 passed (1 flaky)", "1 failed": the gate's commands.
fn command_counts(gate: &GateResult) -> Vec<String> {
    let passed = gate.commands.iter().filter(|c| c.passed()).count();
    let flaky = gate
        .commands
        .iter()
        .filter(|c| c.passed() && c.flaky)
        .count();
    let failed = gate.commands.len() - passed;
    let mut parts = vec![format!("{passed} passed")];
    if flaky > 0 {
        parts[0].push_str(&format!(" ({flaky} flaky)"));
    }
    if failed > 0 {
        parts.push(format!("{failed} failed"));
    }
    parts
}

fn render_gate_summary(gate: &GateResult) -> String {
    let mut out = String::new();
    if gate.cancelled {
        out.push_str("This run was cancelled because a newer commit superseded it.\n\n");
    }
    if !gate.commands.is_empty() {
        out.push_str("| command | duration | exit code | result | kind |\n|---|---|---|---|---|\n");
        for c in &gate.commands {
            let exit = match (c.exit_code, c.signal) {
                (Some(code), _) => code.to_string(),
                (None, Some(sig)) => format!("signal {sig}"),
                (None, None) => "–".into(),
            };
            let kind = c.classification.as_ref().map_or("", |k| k.kind.as_str());
            let _ = writeln!(
                out,
                "| {} | {} | {exit} | {} | {kind} |",
                code_span(&c.cmd).replace('|', "\\|"),
                render_duration(c.duration_ms),
                c.result_word(),
            );
        }
    }
    if let Some(summary) = gate.summary.as_deref().filter(|_| !gate.passed) {
        let _ = write!(
            out,
            "\n**{}**\n\n{}",
            gate.kind.map_or("failed", |k| k.as_str()),
            fenced(summary)
        );
    }
    if let Some(tests) = &gate.tests {
        out.push_str(&evidence::render_tests_section(tests));
    }
    let lists = [
        ("Missing artifacts", &gate.missing_artifacts),
        ("Metrics out of bounds", &gate.metric_failures),
        ("Warnings", &gate.warnings),
    ];
    for (heading, items) in lists.into_iter().filter(|(_, items)| !items.is_empty()) {
        let _ = writeln!(out, "\n**{heading}**\n");
        for item in items {
            let _ = writeln!(out, "- {}", neutralize_mentions(&one_line(item)));
        }
    }
    clip_middle(&out, CHECK_TEXT_LIMIT)
}

/// The logs of every command, failures first, within `limit` bytes.
fn render_gate_logs(gate: &GateResult, limit: usize) -> String {
    let mut commands: Vec<&CommandResult> = gate.commands.iter().collect();
    commands.sort_by_key(|c| c.passed() && !c.flaky);
    let headers: Vec<String> = commands
        .iter()
        .map(|c| {
            let exit = c
                .exit_code
                .map_or_else(|| c.result_word(), |e| format!("exit {e}"));
            let total = if c.truncated {
                format!(
                    ", {} bytes printed, middle cut by the runner",
                    c.output_bytes
                )
            } else {
                String::new()
            };
            format!(
                "### {} ({exit}, {}{total})\n\n```text\n",
                code_span(&c.cmd),
                render_duration(c.duration_ms)
            )
        })
        .collect();
    let bodies: Vec<String> = commands
        .iter()
        .map(|c| match clean_log(&c.output).trim_end() {
            "" => "(no output)".to_string(),
            body => body.to_string(),
        })
        .collect();
    const FOOTER: &str = "\n```\n\n";
    let overhead: usize = headers.iter().map(|h| h.len() + FOOTER.len()).sum();
    let budgets = share(
        &bodies.iter().map(String::len).collect::<Vec<_>>(),
        limit.saturating_sub(overhead),
    );
    let mut out = String::new();
    for ((header, body), budget) in headers.iter().zip(&bodies).zip(budgets) {
        out.push_str(header);
        out.push_str(&clip_middle(body, budget));
        out.push_str(FOOTER);
    }
    // Only reachable with absurdly many commands: never exceed the limit.
    clip_middle(&out, limit)
}

/// Splits `total` bytes over items of the given sizes: small items get all
/// they need, the rest share what is left equally.
fn share(sizes: &[usize], total: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut out = vec![0; sizes.len()];
    let mut left = total;
    for (n, &i) in order.iter().enumerate() {
        let fair = left / (sizes.len() - n);
        out[i] = sizes[i].min(fair);
        left -= out[i];
    }
    out
}

/// The gate's findings as annotations, each once, at most
/// [`MAX_ANNOTATIONS_PER_GATE`], and how many distinct ones were left out.
/// One pass; duplicates are found by hash, not by search.
fn gate_annotations(gate: &GateResult, workspace: &str) -> (Vec<Annotation>, usize) {
    let mut out: Vec<Annotation> = Vec::new();
    let mut seen: HashSet<Annotation> = HashSet::new();
    let mut left_out = 0;
    let mut add = |a: Annotation| {
        if seen.contains(&a) {
            return;
        }
        if out.len() < MAX_ANNOTATIONS_PER_GATE {
            out.push(a.clone());
        } else {
            left_out += 1;
        }
        seen.insert(a);
    };
    if let Some(tests) = &gate.tests {
        evidence::test_annotations(tests, workspace).for_each(&mut add);
    }
    for c in &gate.commands {
        let Some(class) = &c.classification else {
            continue;
        };
        // A command the quarantine excused did not fail its gate.
        let level = if c.passed() || excused_by_quarantine(c, gate.tests.as_ref()) {
            AnnotationLevel::Warning
        } else {
            AnnotationLevel::Failure
        };
        let title = clip_middle(&format!("{}: {}", class.kind, one_line(&c.cmd)), 255);
        for f in &class.findings {
            let Some(path) = relative_path(&f.path, workspace) else {
                continue;
            };
            let line = f.line.max(1);
            let a = Annotation {
                path,
                start_line: line,
                end_line: line,
                annotation_level: level,
                message: neutralize_mentions(&f.message),
                title: Some(title.clone()),
            };
            add(a);
        }
    }
    (out, left_out)
}

/// What `taskgate run` prints: every gate, every command, and the tail of
/// each failing command's output. Plain text, no colours.
pub fn render_terminal_report(report: &RunReport) -> String {
    let failed = report.gates.iter().filter(|g| !g.passed).count();
    let verdict = if report.cancelled {
        "cancelled".to_string()
    } else if report.gates.is_empty() {
        "nothing to run".to_string()
    } else if failed == 0 {
        format!(
            "all {} gate{} passed",
            report.gates.len(),
            plural(report.gates.len())
        )
    } else {
        format!(
            "{failed} of {} gate{} failed",
            report.gates.len(),
            plural(report.gates.len())
        )
    };
    let at = report
        .sha
        .as_deref()
        .map(|s| format!(" at {}", &s[..s.len().min(12)]))
        .unwrap_or_default();
    let mut out = format!(
        "taskgate run: task `{}`{at}: {verdict} ({})\n",
        report.task,
        render_duration(report.duration_ms)
    );
    for g in &report.gates {
        let status = match (g.cancelled, g.passed, g.kind) {
            (true, ..) => "CANCELLED".to_string(),
            (false, true, _) => "PASSED".to_string(),
            (false, false, Some(kind)) => format!("FAILED ({kind})"),
            (false, false, None) => "FAILED".to_string(),
        };
        let _ = writeln!(out, "\ngate {}: {status}", g.gate);
        for c in &g.commands {
            let exit = c
                .exit_code
                .map_or_else(|| "-".to_string(), |e| e.to_string());
            let _ = writeln!(
                out,
                "  {:<9} {}  [{}, exit {exit}]",
                c.result_word(),
                one_line(&c.cmd),
                render_duration(c.duration_ms)
            );
            if c.passed() && !c.flaky {
                continue;
            }
            if let Some(class) = &c.classification {
                for (i, line) in class.summary.lines().enumerate() {
                    let label = if i == 0 {
                        format!("{}:", class.kind)
                    } else {
                        String::new()
                    };
                    let _ = writeln!(out, "      {label:<14} {line}");
                }
            }
            if !c.passed() {
                for line in tail_lines(&plain_text(&c.output), 15) {
                    let _ = writeln!(out, "      | {line}");
                }
            }
        }
        if let Some(tests) = g.tests.as_ref().filter(|t| t.has_cases()) {
            let _ = writeln!(out, "  tests: {}", tests.counts_line());
            for case in tests.failing().take(MAX_FAILING_LISTED) {
                let _ = writeln!(out, "    FAILED {}", one_line(&case_line(case)));
            }
        }
        for r in g.tests.iter().flat_map(|t| &t.required) {
            let _ = writeln!(out, "  {r}");
        }
        for a in &g.missing_artifacts {
            let _ = writeln!(out, "  missing artifact: {a}");
        }
        for m in &g.metric_failures {
            let _ = writeln!(out, "  metric: {m}");
        }
        for w in &g.warnings {
            let _ = writeln!(out, "  warning: {w}");
        }
    }
    out
}

fn tail_lines(s: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

/// `850 ms`, `1.2 s`, `3 min 05 s`.
pub fn render_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {:02} s", ms / 60_000, (ms / 1000) % 60),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A Markdown code span that holds `s` whatever backticks it contains, on
/// one line, mentions neutralised: for commands and other untrusted text.
pub fn code_span(s: &str) -> String {
    let s = neutralize_mentions(&one_line(s));
    let longest = longest_backtick_run(&s);
    let ticks = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

fn fenced(s: &str) -> String {
    format!("```text\n{}\n```\n", clean_log(s).trim_end())
}

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// Tool output made safe inside a ```` ``` ```` fence on GitHub: see
/// [`plain_text`], then mentions neutralised and a zero-width space put
/// between consecutive backticks so no line can close the fence.
pub fn clean_log(s: &str) -> String {
    let plain = plain_text(s);
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        if c == '`' && out.ends_with('`') {
            out.push('\u{200B}');
        }
        out.push(c);
    }
    neutralize_mentions(&out)
}

/// Tool output without terminal escapes and control characters (newlines
/// and tabs kept, carriage returns dropped): what a terminal or a code block
/// can show as is. The escapes go through [`strip_ansi`], the classifier's,
/// so the two readings of tool output cannot drift apart.
pub fn plain_text(s: &str) -> String {
    let mut out = strip_ansi(s);
    out.retain(|c| c != '\r');
    out
}

/// `s` within `max` bytes: the head and the tail kept, cut on char
/// boundaries, with a line saying how many bytes were cut.
pub fn clip_middle(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let marker = |cut: usize| format!("\n… {cut} bytes cut …\n");
    let room = max.saturating_sub(marker(s.len()).len());
    if room == 0 {
        return String::new();
    }
    let mut head = room / 2;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - (room - head);
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}{}{}", &s[..head], marker(tail - head), &s[tail..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Finding;

    fn cmd(cmd: &str, exit: i32, output: &str) -> CommandResult {
        CommandResult {
            cmd: cmd.into(),
            gate: "test".into(),
            exit_code: Some(exit),
            signal: None,
            timed_out: false,
            timeout_seconds: 30,
            duration_ms: 1_234,
            output: output.into(),
            output_bytes: output.len() as u64,
            truncated: false,
            flaky: false,
            classification: None,
        }
    }

    fn failing_gate() -> GateResult {
        let mut pytest = cmd(
            "pytest -q | tee log",
            1,
            "F.\n\x1b[31mFAILED\x1b[0m tests/test_a.py::test_x - assert 1 == 2 (cc @octocat, #12)\n```\nbreakout\n",
        );
        pytest.classification = Some(Classification {
            kind: FailureKind::TestFailure,
            summary: "1 failed: tests/test_a.py::test_x - assert 1 == 2".into(),
            findings: vec![
                Finding {
                    path: "/ws/abc/tests/test_a.py".into(),
                    line: 7,
                    column: None,
                    message: "assert 1 == 2 @octocat".into(),
                },
                Finding {
                    path: "/usr/lib/python3/site.py".into(),
                    line: 3,
                    column: None,
                    message: "outside".into(),
                },
                Finding {
                    path: "../escape.py".into(),
                    line: 1,
                    column: None,
                    message: "outside".into(),
                },
            ],
        });
        GateResult {
            gate: "test".into(),
            passed: false,
            kind: Some(FailureKind::TestFailure),
            summary: pytest.classification.as_ref().map(|c| c.summary.clone()),
            commands: vec![
                cmd("ruff check .", 0, "All checks passed!\n"),
                cmd("true", 0, ""),
                pytest,
            ],
            missing_artifacts: vec!["Backtest/adapter.py".into()],
            metric_failures: vec!["rows_min = 3, expected >= 10".into()],
            warnings: vec![],
            cancelled: false,
            tests: None,
        }
    }

    #[test]
    fn check_output_of_a_failing_gate() {
        let out = render_check_output(&failing_gate(), "/ws/abc");
        insta::assert_snapshot!(out.title, @"2 passed, 1 failed, 2 acceptance checks failed — test_failure");
        insta::assert_snapshot!(out.summary, @r"
            | command | duration | exit code | result | kind |
            |---|---|---|---|---|
            | `ruff check .` | 1.2 s | 0 | passed |  |
            | `true` | 1.2 s | 0 | passed |  |
            | `pytest -q \| tee log` | 1.2 s | 1 | failed | test_failure |

            **test_failure**

            ```text
            1 failed: tests/test_a.py::test_x - assert 1 == 2
            ```

            **Missing artifacts**

            - Backtest/adapter.py

            **Metrics out of bounds**

            - rows_min = 3, expected >= 10
            ");
        // Zero-width characters made visible for the reader.
        let text = out
            .text
            .replace('\u{200D}', "<zwj>")
            .replace('\u{200B}', "<zwsp>");
        insta::assert_snapshot!(text, @r"
            ### `pytest -q | tee log` (exit 1, 1.2 s)

            ```text
            F.
            FAILED tests/test_a.py::test_x - assert 1 == 2 (cc @<zwj>octocat, #<zwj>12)
            `<zwsp>`<zwsp>`
            breakout
            ```

            ### `ruff check .` (exit 0, 1.2 s)

            ```text
            All checks passed!
            ```

            ### `true` (exit 0, 1.2 s)

            ```text
            (no output)
            ```
            ");
        assert_eq!(out.annotations.len(), 1, "{:?}", out.annotations);
        let a = &out.annotations[0];
        assert_eq!(
            (a.path.as_str(), a.start_line, a.annotation_level),
            ("tests/test_a.py", 7, AnnotationLevel::Failure)
        );
        assert!(!a.message.contains("@octocat"));
        let json = serde_json::to_value(a).unwrap();
        assert_eq!(json["annotation_level"], "failure");
    }

    #[test]
    fn tool_output_cannot_ping_link_or_close_the_fence() {
        let text = render_check_output(&failing_gate(), "").text;
        assert!(!text.contains("@octocat") && !text.contains("#12"));
        assert!(!text.contains('\u{1b}'));
        // The only fence lines are the ones we opened and closed.
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert_eq!(fences, 6);
    }

    #[test]
    fn logs_fit_githubs_byte_limit_keeping_head_and_tail() {
        let mut gate = failing_gate();
        let huge = format!("first line\n{}last line\n", "é🎉x".repeat(40_000));
        gate.commands[2].output = huge.clone();
        gate.commands[0].output = huge;
        let text = render_check_output(&gate, "").text;
        assert!(text.len() <= CHECK_TEXT_LIMIT, "{}", text.len());
        assert!(
            text.len() > CHECK_TEXT_LIMIT - 1_000,
            "uses the room: {}",
            text.len()
        );
        assert_eq!(text.matches("first line").count(), 2);
        assert_eq!(text.matches("last line").count(), 2);
        assert!(text.contains("bytes cut …"));
    }

    #[test]
    fn clip_middle_cuts_on_char_boundaries() {
        for max in 0..40 {
            let s = clip_middle(&"aé🎉".repeat(10), max);
            assert!(s.len() <= max, "{max}: {s}");
        }
        insta::assert_snapshot!(clip_middle(&"0123456789".repeat(6), 40), @r"
            012345678
            … 42 bytes cut …
            123456789
            ");
    }

    #[test]
    fn share_gives_small_logs_all_they_need() {
        assert_eq!(share(&[10, 1_000, 50], 300), vec![10, 240, 50]);
        assert_eq!(share(&[], 300), Vec::<usize>::new());
    }

    #[test]
    fn relative_paths_stay_inside_the_repository() {
        assert_eq!(
            relative_path("/ws/a/src/x.rs", "/ws/a/").as_deref(),
            Some("src/x.rs")
        );
        assert_eq!(
            relative_path("./src/x.rs", "/ws/a").as_deref(),
            Some("src/x.rs")
        );
        assert_eq!(relative_path("/ws/ab/x.rs", "/ws/a"), None);
        assert_eq!(relative_path("src/../../x.rs", ""), None);
        assert_eq!(relative_path("/etc/passwd", "/ws/a"), None);
    }

    #[test]
    fn a_gate_with_200000_findings_gets_at_most_150_distinct_annotations() {
        let mut gate = failing_gate();
        let class = gate.commands[2].classification.as_mut().unwrap();
        // Every finding twice: duplicates are dropped before the cap counts.
        class.findings = (0..200_000)
            .map(|i| Finding {
                path: format!("src/m{}.py", i / 2),
                line: 1,
                column: None,
                message: "E501".into(),
            })
            .collect();
        let out = render_check_output(&gate, "");
        assert_eq!(out.annotations.len(), MAX_ANNOTATIONS_PER_GATE);
        let paths: Vec<&str> = out.annotations.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(paths[..3], ["src/m0.py", "src/m1.py", "src/m2.py"]);
        assert_eq!(paths[149], "src/m149.py");
        assert!(
            out.summary
                .ends_with("99850 more findings not shown as annotations (at most 150 a gate)."),
            "{}",
            out.summary
        );
    }

    #[test]
    fn annotations_go_in_batches_of_fifty() {
        let a = Annotation {
            path: "a".into(),
            start_line: 1,
            end_line: 1,
            annotation_level: AnnotationLevel::Notice,
            message: "m".into(),
            title: None,
        };
        let all = vec![a; 120];
        let sizes: Vec<usize> = annotation_batches(&all).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, vec![50, 50, 20]);
    }

    #[test]
    fn passing_and_flaky_titles() {
        let mut gate = failing_gate();
        gate.commands.truncate(2);
        gate.commands[1].flaky = true;
        gate.passed = true;
        gate.missing_artifacts.clear();
        gate.metric_failures.clear();
        insta::assert_snapshot!(render_gate_title(&gate), @"2 passed (1 flaky)");
    }

    #[test]
    fn terminal_report_reads_well() {
        let mut lint = failing_gate();
        lint.gate = "lint".into();
        lint.commands.truncate(1);
        lint.passed = true;
        lint.kind = None;
        lint.missing_artifacts.clear();
        lint.metric_failures.clear();
        lint.warnings = vec!["`flaky.sh` failed then passed on an immediate re-run".into()];
        let report = RunReport {
            version: REPORT_VERSION,
            task: "data".into(),
            sha: Some("0123456789abcdef0123".into()),
            gates: vec![failing_gate(), lint],
            duration_ms: 75_500,
            cancelled: false,
        };
        insta::assert_snapshot!(render_terminal_report(&report), @r"
            taskgate run: task `data` at 0123456789ab: 1 of 2 gates failed (1 min 15 s)

            gate test: FAILED (test_failure)
              passed    ruff check .  [1.2 s, exit 0]
              passed    true  [1.2 s, exit 0]
              failed    pytest -q | tee log  [1.2 s, exit 1]
                  test_failure:  1 failed: tests/test_a.py::test_x - assert 1 == 2
                  | F.
                  | FAILED tests/test_a.py::test_x - assert 1 == 2 (cc @octocat, #12)
                  | ```
                  | breakout
              missing artifact: Backtest/adapter.py
              metric: rows_min = 3, expected >= 10

            gate lint: PASSED
              passed    ruff check .  [1.2 s, exit 0]
              warning: `flaky.sh` failed then passed on an immediate re-run
            ");
        let json = serde_json::to_string(&report).unwrap();
        let back: RunReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        assert!(!back.passed());
    }
}
