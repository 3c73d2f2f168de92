//! The check-run output of one gate: title, summary table and logs, within
//! GitHub's byte limit.
//!
//! Owns: [`render_check_output`] and [`render_gate_title`], and how the
//! limit is shared between the logs of several commands (small logs whole,
//! the rest cut in the middle). Must not: do IO, or put tool output on the
//! page other than through [`super::text`], which makes it safe.

use std::fmt::Write;

use super::annotations::gate_annotations;
use super::text::{clean_log, clip_middle, code_span, fenced, one_line, plural, render_duration};
use super::{
    evidence, CheckOutput, CommandResult, GateResult, CHECK_TEXT_LIMIT, MAX_ANNOTATIONS_PER_GATE,
};
use crate::classify::neutralize_mentions;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::failing_gate;
    use crate::report::AnnotationLevel;

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
    fn share_gives_small_logs_all_they_need() {
        assert_eq!(share(&[10, 1_000, 50], 300), vec![10, 240, 50]);
        assert_eq!(share(&[], 300), Vec::<usize>::new());
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
}
