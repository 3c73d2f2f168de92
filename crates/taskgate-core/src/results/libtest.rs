//! libtest's JSON lines (`cargo test -- -Z unstable-options --format json`,
//! with `RUSTC_BOOTSTRAP=1` on stable): one event per line, `type` `suite`
//! or `test`, a test's end being `ok`, `failed` or `ignored`.
//!
//! Owns: that reader, and finding `file:line` and the message in a Rust
//! panic (shared with nextest's JUnit). Must not: hold more than one capped
//! line at a time. Lines that are not JSON objects (cargo's own output mixed
//! in) are passed over; a line that starts like one and does not parse is an
//! error, except a last line cut off mid-way (the file is then truncated).

use std::io::{BufReader, Read};

use serde::Deserialize;

use super::text::{capped, Capped, Line, LineReader};
use super::{Limits, Outcome, ReportError, ReportFormat, TestCase, TestId, TestResults, Truncated};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    name: Option<String>,
    exec_time: Option<serde_json::Value>,
    stdout: Option<String>,
    message: Option<String>,
}

/// The id rule: the test's path inside its crate, as libtest names it
/// (`tests::parses_hex`); the crate is not in the stream.
pub(super) fn parse(
    input: impl Read,
    file: &str,
    limits: &Limits,
) -> Result<TestResults, ReportError> {
    let capped_input = Capped::new(input, limits.max_bytes);
    let mut lines = LineReader::new(
        BufReader::with_capacity(64 * 1024, capped_input),
        limits.max_line,
    );
    let mut results = TestResults::new(ReportFormat::LibtestJson);
    let mut offset = 0u64;
    while let Some(line) = lines.next_line().map_err(|source| ReportError::Read {
        file: file.to_owned(),
        source,
    })? {
        let start = offset;
        offset = lines.get_ref().get_ref().bytes_read();
        let text = String::from_utf8_lossy(&line.bytes);
        if !text.trim_start().starts_with('{') {
            continue;
        }
        let event = match event_of(&text, &line) {
            Ok(Some(event)) => event,
            Ok(None) => continue,
            Err(_) if line.unterminated => {
                results.truncated = Some(Truncated::EndedEarly { offset: start });
                break;
            }
            Err(e) => {
                return Err(ReportError::BadLine {
                    file: file.to_owned(),
                    line: lines.number,
                    format: ReportFormat::LibtestJson,
                    reason: capped(&e.to_string(), 256),
                })
            }
        };
        if let Some(case) = case_of(event, limits) {
            results.push(case, limits);
        }
    }
    let capped_input = lines.get_ref().get_ref();
    results.bytes_read = capped_input.bytes_read();
    if capped_input.hit_cap() {
        results.truncated = Some(Truncated::ByteCap {
            max_bytes: limits.max_bytes,
        });
    }
    Ok(results)
}

/// The event on one line. A line cut at `max_line` (a test that printed
/// megabytes) keeps what its head says: libtest writes `type`, `name` and
/// `event` before `stdout`.
fn event_of(text: &str, line: &Line) -> Result<Option<Event>, serde_json::Error> {
    if line.cut {
        let field = |key: &str| head_field(text, key);
        return Ok(match (field("type"), field("event")) {
            (Some(kind), Some(event)) => Some(Event {
                kind,
                event,
                name: field("name"),
                exec_time: None,
                stdout: Some(format!("{text}… [line cut]")),
                message: None,
            }),
            _ => None,
        });
    }
    serde_json::from_str::<Event>(text).map(Some)
}

/// `"key": "value"` from the head of a JSON line, for a line too long to
/// parse whole. Only plain values (no escapes) are taken.
fn head_field(text: &str, key: &str) -> Option<String> {
    let pattern = format!("\"{key}\": \"");
    let compact = format!("\"{key}\":\"");
    let at = text
        .find(&pattern)
        .map(|i| i + pattern.len())
        .or_else(|| text.find(&compact).map(|i| i + compact.len()))?;
    let rest = &text[at..];
    let end = rest.find('"')?;
    let value = &rest[..end];
    (!value.contains('\\')).then(|| value.to_owned())
}

fn case_of(event: Event, limits: &Limits) -> Option<TestCase> {
    if event.kind != "test" {
        return None;
    }
    let name = capped(event.name.as_deref()?, limits.max_text);
    let stdout = event.stdout.unwrap_or_default();
    let (mut file, mut line) = (None, None);
    let outcome = match event.event.as_str() {
        "ok" => Outcome::Passed,
        "ignored" => Outcome::Skipped {
            reason: capped(
                event.message.as_deref().unwrap_or("ignored"),
                limits.max_text,
            ),
        },
        "failed" => {
            if let Some((f, l)) = panic_location(&stdout) {
                (file, line) = (Some(f), Some(l));
            }
            let message = panic_message(&stdout)
                .or(event.message)
                .unwrap_or_else(|| "failed".to_owned());
            Outcome::Failed {
                message: capped(&message, limits.max_text),
                details: capped(stdout.trim(), limits.max_text),
            }
        }
        _ => return None,
    };
    Some(TestCase {
        id: TestId::new(name.clone()),
        name,
        suite: None,
        file,
        line,
        outcome,
        duration_ms: event.exec_time.as_ref().and_then(exec_time_ms),
    })
}

/// `exec_time` is seconds, a number (or a string like `"0.001s"` in older
/// toolchains).
fn exec_time_ms(value: &serde_json::Value) -> Option<u64> {
    let seconds = match value {
        serde_json::Value::Number(n) => n.as_f64()?,
        serde_json::Value::String(s) => s.trim_end_matches('s').parse().ok()?,
        _ => return None,
    };
    super::millis(seconds * 1000.0)
}

/// `src/lib.rs`, 16 from `thread 'x' (9429) panicked at src/lib.rs:16:9:`
/// (and from the older `panicked at 'msg', src/lib.rs:16:9`).
pub(super) fn panic_location(text: &str) -> Option<(String, u32)> {
    let line = text.lines().find(|l| l.contains("panicked at "))?;
    let at = &line[line.find("panicked at ")? + "panicked at ".len()..];
    let at = at.trim_end().trim_end_matches(':');
    let at = at.rsplit_once(", ").map_or(at, |(_, location)| location);
    let mut parts = at.rsplitn(3, ':');
    let _column = parts.next()?;
    let line_no = parts.next()?.parse().ok()?;
    let file = parts.next()?.trim();
    (!file.is_empty() && !file.contains(' ')).then(|| (file.to_owned(), line_no))
}

/// The panic's message: the lines after `panicked at …:` up to the note or
/// the backtrace.
fn panic_message(text: &str) -> Option<String> {
    let mut lines = text.lines().skip_while(|l| !l.contains("panicked at "));
    lines.next()?;
    let message: Vec<&str> = lines
        .take_while(|l| !l.starts_with("note: ") && !l.starts_with("stack backtrace:"))
        .collect();
    let message = message.join("\n");
    let message = message.trim();
    (!message.is_empty()).then(|| message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{fixture, summary};

    #[test]
    fn libtest_json_names_each_test_with_its_outcome_panic_location_and_time() {
        let results = fixture(ReportFormat::LibtestJson, "libtest/libtest.json");
        insta::assert_snapshot!(summary(&results), @r"
        libtest JSON: 1 passed, 1 failed, 1 skipped
        skipped tests::parses_everything: slow
        passed  tests::parses_a_number 0ms
        FAILED  tests::parses_hex 71ms at src/lib.rs:16
          assertion `left == right` failed: hex is not read
            left: None
           right: Some(42)
        ");
    }

    #[test]
    fn a_file_cut_mid_line_keeps_the_tests_before_the_cut() {
        let whole = std::fs::read(crate::results::testing::path("libtest/libtest.json")).unwrap();
        let cut = &whole[..whole.len() - 200];
        let results = parse(cut, "cut.json", &Limits::default()).unwrap();
        assert_eq!(results.cases.len(), 2);
        assert!(matches!(
            results.truncated,
            Some(Truncated::EndedEarly { .. })
        ));
    }

    #[test]
    fn a_broken_line_in_the_middle_is_an_error_naming_the_line() {
        let input = b"{ \"type\": \"suite\", \"event\": \"started\" }\n{ \"type\": nope }\n{}\n";
        let err = parse(&input[..], "out.json", &Limits::default()).unwrap_err();
        insta::assert_snapshot!(err, @"out.json:2: not a libtest JSON event: expected ident at line 1 column 12");
    }

    #[test]
    fn a_line_too_long_to_keep_still_gives_its_test_and_outcome() {
        let mut input =
            br#"{ "type": "test", "name": "big::output", "event": "failed", "stdout": ""#.to_vec();
        input.extend(std::iter::repeat_n(b'x', 5000));
        input.extend_from_slice(b"\" }\n");
        let limits = Limits {
            max_line: 1000,
            ..Limits::default()
        };
        let results = parse(&input[..], "big.json", &limits).unwrap();
        assert_eq!(results.cases[0].id.as_str(), "big::output");
        assert!(results.cases[0].outcome.is_failure());
    }

    #[test]
    fn panic_locations_are_read_in_the_new_and_the_old_format() {
        assert_eq!(
            panic_location("thread 't' (9) panicked at src/lib.rs:16:9:\nboom"),
            Some(("src/lib.rs".to_owned(), 16))
        );
        assert_eq!(
            panic_location("thread 't' panicked at 'boom', tests/it.rs:3:5"),
            Some(("tests/it.rs".to_owned(), 3))
        );
        assert_eq!(panic_location("no panic here"), None);
    }
}
