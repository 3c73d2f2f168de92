//! The Test Anything Protocol, versions 12 to 14: `ok`/`not ok` test points
//! with `# SKIP`/`# TODO` directives, plans, `Bail out!`, YAML diagnostic
//! blocks, comments (Test::More's diagnostics), and subtests as indented TAP
//! (with or without a `# Subtest: name` line).
//!
//! Owns: the TAP reader and its id rule. Must not: hold more than one capped
//! line and the cases of the subtests still open. No maintained TAP parser
//! crate reads streams with subtests and YAML (docs/decisions/test-reports.md),
//! so this one is hand-written; YAML blocks are read for a few top-level keys
//! line by line, never loaded as YAML.
//!
//! A subtest's points come before its parent's point, so the cases of an
//! open subtest wait in its [`Level`] until the parent's point names them.
//! A parent point becomes a case only when it failed and none of its
//! subtests did (a failed plan, say); otherwise its subtests are the cases.

use std::io::{BufReader, Read};

use super::text::{capped, Capped, CappedText, LineReader};
use super::{
    millis, Limits, Outcome, ReportError, ReportFormat, TestCase, TestId, TestResults, Truncated,
};

/// One test point being read (its YAML block and comments may follow).
struct Point {
    indent: usize,
    ok: bool,
    number: Option<u64>,
    description: String,
    directive: Option<(Directive, String)>,
    in_yaml: bool,
    yaml_indent: usize,
    yaml: CappedText,
    message: Option<String>,
    /// A YAML block scalar being read into the message (`error: |-`).
    message_block: Option<Block>,
    diagnostics: CappedText,
    file: Option<String>,
    line: Option<u32>,
    duration_ms: Option<u64>,
}

/// A YAML block scalar (`error: |-`) read into the message.
struct Block {
    key_indent: usize,
    /// The indentation of its first line, stripped from every line.
    indent: Option<usize>,
    text: CappedText,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    Skip,
    Todo,
}

/// An open subtest: the cases read at its indentation so far.
struct Level {
    indent: usize,
    cases: Vec<TestCase>,
    failed: bool,
}

struct State<'a> {
    limits: &'a Limits,
    results: TestResults,
    levels: Vec<Level>,
    point: Option<Point>,
    /// Cases held in open levels, counted against the case cap.
    held: usize,
}

/// The id rule: the descriptions of the enclosing subtests and the point's
/// own, joined with ` > ` (`strings > splits`); a point without a
/// description is `#N` by its number.
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
    let mut state = State {
        limits,
        results: TestResults::new(ReportFormat::Tap),
        levels: Vec::new(),
        point: None,
        held: 0,
    };
    let mut ended_early = None;
    while let Some(line) = lines.next_line().map_err(|source| ReportError::Read {
        file: file.to_owned(),
        source,
    })? {
        let text = String::from_utf8_lossy(&line.bytes);
        if line.unterminated && state.point.as_ref().is_some_and(|p| p.in_yaml) {
            ended_early = Some(lines.get_ref().get_ref().bytes_read());
        }
        state.on_line(&text);
    }
    state.close_point();
    let capped_input = lines.get_ref().get_ref();
    if capped_input.hit_cap() {
        state.results.truncated = Some(Truncated::ByteCap {
            max_bytes: limits.max_bytes,
        });
    } else if let Some(offset) = ended_early {
        state.results.truncated = Some(Truncated::EndedEarly { offset });
    } else if state.levels.iter().any(|l| l.indent > 0) {
        state.results.truncated = Some(Truncated::EndedEarly {
            offset: capped_input.bytes_read(),
        });
    }
    state.results.bytes_read = capped_input.bytes_read();
    state.finish();
    Ok(state.results)
}

impl State<'_> {
    fn on_line(&mut self, raw: &str) {
        let indent = raw.len() - raw.trim_start_matches([' ', '\t']).len();
        let line = raw.trim();
        if let Some(point) = self.point.as_mut() {
            if point.in_yaml {
                if indent >= point.yaml_indent && line == "..." {
                    point.in_yaml = false;
                    return;
                }
                if indent >= point.yaml_indent || line.is_empty() {
                    point.on_yaml(raw, self.limits);
                    return;
                }
                // A block never closed: the line is TAP again.
                point.in_yaml = false;
            }
            if line == "---" && indent > point.indent {
                point.in_yaml = true;
                point.yaml_indent = indent;
                return;
            }
        }
        if let Some(rest) = line
            .strip_prefix("ok")
            .or_else(|| line.strip_prefix("not ok"))
        {
            if rest.is_empty() || rest.starts_with([' ', '#']) {
                let ok = line.starts_with("ok");
                self.on_point(indent, ok, rest);
                return;
            }
        }
        if let Some(reason) = line.strip_prefix("Bail out!") {
            self.on_bail_out(indent, reason.trim());
        } else if line.starts_with('#') {
            if let Some(point) = self.point.as_mut() {
                point.on_comment(line);
            }
        } else if is_plan(line) {
            self.close_point();
        }
    }

    fn on_point(&mut self, indent: usize, ok: bool, rest: &str) {
        self.close_point();
        let (number, description, directive) = split_point(rest);
        self.point = Some(Point {
            indent,
            ok,
            number,
            description: capped(&description, self.limits.max_text),
            directive: directive.map(|(d, r)| (d, capped(&r, self.limits.max_text))),
            in_yaml: false,
            yaml_indent: 0,
            yaml: CappedText::new(self.limits.max_text),
            message: None,
            message_block: None,
            diagnostics: CappedText::new(self.limits.max_text),
            file: None,
            line: None,
            duration_ms: None,
        });
    }

    fn on_bail_out(&mut self, indent: usize, reason: &str) {
        self.close_point();
        let case = TestCase {
            id: TestId::new("Bail out!"),
            name: "Bail out!".to_owned(),
            suite: None,
            file: None,
            line: None,
            outcome: Outcome::Errored {
                message: capped(
                    if reason.is_empty() {
                        "Bail out!"
                    } else {
                        reason
                    },
                    self.limits.max_text,
                ),
                details: String::new(),
            },
            duration_ms: None,
        };
        self.add(indent, case, true);
    }

    /// Ends the point being read: it becomes a case (or, for a parent, its
    /// subtests' cases are named after it and move out).
    fn close_point(&mut self) {
        let Some(p) = self.point.take() else { return };
        let name = if p.description.is_empty() {
            format!("#{}", p.number.unwrap_or(0))
        } else {
            p.description.clone()
        };
        // Levels deeper than the point are its subtests (the deepest last).
        let mut popped = Vec::new();
        while self.levels.last().is_some_and(|l| l.indent > p.indent) {
            popped.push(self.levels.pop().expect("checked"));
        }
        popped.reverse();
        let mut children = Vec::new();
        let mut child_failed = false;
        for level in popped {
            child_failed |= level.failed;
            self.held -= level.cases.len();
            for mut case in level.cases {
                let id = format!("{name} > {}", case.id);
                case.id = TestId::new(capped(&id, self.limits.max_text));
                case.suite.get_or_insert_with(|| name.clone());
                children.push(case);
            }
        }
        let failed = !p.ok && p.directive.is_none();
        let has_children = !children.is_empty();
        for case in children {
            let failed = case.outcome.is_failure();
            self.add(p.indent, case, failed);
        }
        if has_children && (!failed || child_failed) {
            return;
        }
        let indent = p.indent;
        let case = p.into_case(name, self.limits);
        let failed = case.outcome.is_failure();
        self.add(indent, case, failed);
    }

    /// Adds a case at an indentation: held in its level while that level is
    /// a subtest (indented), kept in the results at the top.
    fn add(&mut self, indent: usize, case: TestCase, failed: bool) {
        if indent == 0 {
            self.results.push(case, self.limits);
            return;
        }
        if self.results.cases.len() + self.held >= self.limits.max_cases {
            self.results.truncated.get_or_insert(Truncated::CaseCap {
                max_cases: self.limits.max_cases,
            });
            return;
        }
        // Past the depth bound, deeper subtests join the deepest level.
        let room = self.levels.is_empty() || self.levels.len() < self.limits.max_depth;
        if room && self.levels.last().is_none_or(|l| l.indent < indent) {
            self.levels.push(Level {
                indent,
                cases: Vec::new(),
                failed: false,
            });
        }
        let level = self.levels.last_mut().expect("pushed");
        level.failed |= failed;
        level.cases.push(case);
        self.held += 1;
    }

    /// The end of input: the last point, then subtests whose parent never
    /// came (a file cut off) keep their own ids.
    fn finish(&mut self) {
        self.close_point();
        let levels = std::mem::take(&mut self.levels);
        for level in levels {
            for case in level.cases {
                self.results.push(case, self.limits);
            }
        }
    }
}

impl Point {
    fn on_yaml(&mut self, raw: &str, limits: &Limits) {
        self.yaml.push(raw);
        self.yaml.push("\n");
        let indent = raw.len() - raw.trim_start().len();
        if let Some(block) = self.message_block.as_mut() {
            if indent > block.key_indent || raw.trim().is_empty() {
                // The block's lines keep their indentation past its first.
                let base = *block.indent.get_or_insert(indent);
                let strip = raw.len() - raw.trim_start().len();
                block.text.push(raw[strip.min(base)..].trim_end());
                block.text.push("\n");
                return;
            }
            let block = self.message_block.take().expect("checked");
            self.message = Some(block.text.finish().trim().to_owned());
        }
        if indent != self.yaml_indent {
            return;
        }
        let Some((key, value)) = raw.trim().split_once(':') else {
            return;
        };
        let value = unquote(value.trim());
        match key {
            "message" | "error" if self.message.is_none() => {
                if value.starts_with('|') || value.starts_with('>') {
                    self.message_block = Some(Block {
                        key_indent: indent,
                        indent: None,
                        text: CappedText::new(limits.max_text),
                    });
                } else {
                    self.message = Some(capped(value, limits.max_text));
                }
            }
            "duration_ms" => self.duration_ms = value.parse().ok().and_then(millis),
            "location" | "at" => {
                if let Some((file, line)) = file_line(value) {
                    (self.file, self.line) = (Some(file), Some(line));
                }
            }
            _ => {}
        }
    }

    /// Test::More's diagnostics: `#   Failed test 'x'`, `#   at t/a.t line 6.`
    fn on_comment(&mut self, line: &str) {
        let text = line.trim_start_matches('#').trim();
        if text.starts_with("Subtest:") {
            return;
        }
        if let Some(at) = text.strip_prefix("at ") {
            if let Some((file, rest)) = at.split_once(" line ") {
                if let Ok(n) = rest.trim_end_matches('.').parse() {
                    (self.file, self.line) = (Some(file.to_owned()), Some(n));
                }
            }
        }
        if !self.ok {
            self.diagnostics.push(text);
            self.diagnostics.push("\n");
        }
    }

    fn into_case(self, name: String, limits: &Limits) -> TestCase {
        let message_block = self
            .message_block
            .map(|b| b.text.finish().trim().to_owned());
        let diagnostics = self.diagnostics.finish();
        let outcome = match (&self.directive, self.ok) {
            (Some((Directive::Skip, reason)), _) => Outcome::Skipped {
                reason: reason.clone(),
            },
            (Some((Directive::Todo, reason)), false) => Outcome::Skipped {
                reason: capped(&format!("todo: {reason}"), limits.max_text),
            },
            (_, true) => Outcome::Passed,
            (None, false) => {
                let message = self
                    .message
                    .or(message_block)
                    .or_else(|| failed_test_line(&diagnostics))
                    .unwrap_or_else(|| format!("not ok {}", self.number.unwrap_or(0)));
                let mut details = self.yaml.finish();
                details.push_str(&diagnostics);
                Outcome::Failed {
                    message,
                    details: capped(details.trim_end(), limits.max_text),
                }
            }
        };
        TestCase {
            id: TestId::new(name.clone()),
            name,
            suite: None,
            file: self.file,
            line: self.line,
            outcome,
            duration_ms: self.duration_ms,
        }
    }
}

/// Number, description and directive of a point, from what follows
/// `ok`/`not ok`: ` 2 - divides # TODO later`. The directive starts at the
/// first `#` (not escaped as `\#`) followed by SKIP or TODO; any other `#`
/// belongs to the description.
fn split_point(rest: &str) -> (Option<u64>, String, Option<(Directive, String)>) {
    let rest = rest.trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let number = rest[..digits].parse().ok();
    let rest = rest[digits..].trim_start();
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let rest = if rest == "-" { "" } else { rest };
    let bytes = rest.as_bytes();
    let found = (0..bytes.len())
        .filter(|&i| bytes[i] == b'#' && (i == 0 || bytes[i - 1] != b'\\'))
        .find_map(|i| directive(&rest[i + 1..]).map(|d| (i, d)));
    match found {
        Some((i, d)) => (number, rest[..i].trim().replace("\\#", "#"), Some(d)),
        None => (number, rest.trim().replace("\\#", "#"), None),
    }
}

fn directive(text: &str) -> Option<(Directive, String)> {
    let text = text.trim_start();
    let word_end = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let word = text[..word_end].to_ascii_lowercase();
    let reason = text[word_end..]
        .trim_start_matches([':', ' ', '\t'])
        .trim()
        .to_owned();
    if word.starts_with("skip") {
        Some((Directive::Skip, reason))
    } else if word == "todo" {
        Some((Directive::Todo, reason))
    } else {
        None
    }
}

fn is_plan(line: &str) -> bool {
    line.strip_prefix("1..")
        .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit()))
}

fn unquote(value: &str) -> &str {
    for q in ['\'', '"'] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

/// `/path/math.test.mjs:8:1` (node's `location`) → the file and line.
fn file_line(value: &str) -> Option<(String, u32)> {
    let value = value.strip_prefix("file://").unwrap_or(value);
    let mut parts = value.rsplitn(3, ':');
    let last = parts.next()?;
    let (file, line) = match (parts.next(), parts.next()) {
        (Some(line), Some(file)) if line.parse::<u32>().is_ok() => (file, line),
        (Some(file), _) => (file, last),
        _ => return None,
    };
    Some((file.to_owned(), line.parse().ok()?))
}

/// The message of Test::More's diagnostics when the point has no YAML: its
/// `got:`/`expected:` lines, else its `Failed test 'x'` line.
fn failed_test_line(diagnostics: &str) -> Option<String> {
    let lines: Vec<&str> = diagnostics
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let said: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !(l.starts_with("Failed test") || l.starts_with("at ") && l.contains(" line ")))
        .filter(|l| !l.starts_with("Looks like you failed"))
        .collect();
    if said.is_empty() {
        lines.first().map(|l| (*l).to_owned())
    } else {
        Some(said.join("\n"))
    }
}

#[cfg(test)]
mod tests;
