//! `go test -json`: test2json events, one per line (`run`, `output`,
//! `pass`, `fail`, `skip`, and since Go 1.24 `build-output`/`build-fail`).
//! A test's output is gathered from its `output` events until it ends.
//!
//! Owns: that reader. Must not: keep more than a capped text per test still
//! running. A package that fails with no failing test (it did not build, its
//! `TestMain` exited, it timed out) is a case of its own, named for the
//! package. Lines that are not JSON are the toolchain's own: Go before 1.24
//! prints `# pkg` and the compiler's errors on stderr and `FAIL pkg [build
//! failed]` on stdout, and they are read for the package's message.

use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Read};

use serde::Deserialize;

use super::text::{capped, Capped, CappedText, LineReader};
use super::{
    millis, Limits, Outcome, ReportError, ReportFormat, TestCase, TestId, TestResults, Truncated,
};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Package")]
    package: Option<String>,
    #[serde(rename = "ImportPath")]
    import_path: Option<String>,
    #[serde(rename = "Test")]
    test: Option<String>,
    #[serde(rename = "Output")]
    output: Option<String>,
    #[serde(rename = "Elapsed")]
    elapsed: Option<f64>,
}

#[derive(Default)]
struct Package {
    output: Option<CappedText>,
    failed_tests: bool,
}

struct State<'a> {
    limits: &'a Limits,
    results: TestResults,
    /// Output of tests still running, by (package, test).
    running: HashMap<(String, String), CappedText>,
    packages: HashMap<String, Package>,
    /// Tests that had subtests, and those with a failing subtest.
    parents: HashSet<(String, String)>,
    failed_parents: HashSet<(String, String)>,
    /// Packages already made a case of their own.
    failed_packages: HashSet<String>,
    /// The package the toolchain's plain lines are about (`# pkg`).
    plain_package: Option<String>,
}

/// The id rule: `import/path.TestName`, subtests with their `/` path
/// (`example.com/m/calc.TestTable/one`); a package-level failure is the
/// import path alone.
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
        results: TestResults::new(ReportFormat::GoTestJson),
        running: HashMap::new(),
        packages: HashMap::new(),
        parents: HashSet::new(),
        failed_parents: HashSet::new(),
        failed_packages: HashSet::new(),
        plain_package: None,
    };
    let mut offset = 0;
    while let Some(line) = lines.next_line().map_err(|source| ReportError::Read {
        file: file.to_owned(),
        source,
    })? {
        let start = offset;
        offset = lines.get_ref().get_ref().bytes_read();
        let text = String::from_utf8_lossy(&line.bytes);
        if !text.trim_start().starts_with('{') {
            state.on_plain_line(&text);
            continue;
        }
        if line.cut {
            continue;
        }
        match serde_json::from_str::<Event>(&text) {
            Ok(event) => state.on_event(event),
            Err(_) if line.unterminated => {
                state.results.truncated = Some(Truncated::EndedEarly { offset: start });
            }
            Err(e) => {
                return Err(ReportError::BadLine {
                    file: file.to_owned(),
                    line: lines.number,
                    format: ReportFormat::GoTestJson,
                    reason: capped(&e.to_string(), 256),
                })
            }
        }
    }
    let capped_input = lines.get_ref().get_ref();
    state.results.bytes_read = capped_input.bytes_read();
    if capped_input.hit_cap() {
        state.results.truncated = Some(Truncated::ByteCap {
            max_bytes: limits.max_bytes,
        });
    } else if !state.running.is_empty() && state.results.truncated.is_none() {
        state.results.truncated = Some(Truncated::EndedEarly { offset });
    }
    Ok(state.results)
}

impl State<'_> {
    fn on_event(&mut self, event: Event) {
        let package = event
            .package
            .or_else(|| event.import_path.as_deref().map(package_of_import_path))
            .unwrap_or_default();
        let package = capped(&package, self.limits.max_text);
        let Some(test) = event.test else {
            self.on_package_event(&package, &event.action, event.output.as_deref());
            return;
        };
        let key = (package, capped(&test, self.limits.max_text));
        match event.action.as_str() {
            "run" if self.running.len() < self.limits.max_cases => {
                self.running
                    .insert(key, CappedText::new(self.limits.max_text));
            }
            "output" => {
                if let (Some(out), Some(text)) = (self.running.get_mut(&key), event.output) {
                    out.push(&text);
                }
            }
            "pass" | "fail" | "skip" => {
                let output = self.running.remove(&key).map(CappedText::finish);
                self.on_test_end(
                    key,
                    &event.action,
                    output.unwrap_or_default(),
                    event.elapsed,
                );
            }
            _ => {}
        }
    }

    fn on_package_event(&mut self, package: &str, action: &str, output: Option<&str>) {
        let max = self.limits.max_text;
        let entry = self.packages.entry(package.to_owned()).or_default();
        match action {
            "output" | "build-output" => {
                if let Some(text) = output {
                    entry
                        .output
                        .get_or_insert_with(|| CappedText::new(max))
                        .push(text);
                }
            }
            "fail" | "build-fail" if !entry.failed_tests => {
                let output = entry
                    .output
                    .take()
                    .map(CappedText::finish)
                    .unwrap_or_default();
                self.package_failed(package, output);
            }
            "pass" | "skip" | "fail" => {
                self.packages.remove(package);
            }
            _ => {}
        }
    }

    /// `# pkg`, the compiler's errors, then `FAIL\tpkg [build failed]`.
    fn on_plain_line(&mut self, line: &str) {
        let max = self.limits.max_text;
        if let Some(header) = line.strip_prefix("# ") {
            self.plain_package = Some(package_of_import_path(header.trim()));
            return;
        }
        if let Some(rest) = line.strip_prefix("FAIL\t") {
            if let Some((package, _)) = rest.split_once(" [") {
                self.plain_package = Some(package.trim().to_owned());
                self.on_package_event(package.trim(), "output", Some(&format!("{line}\n")));
                self.on_package_event(package.trim(), "fail", None);
            }
            return;
        }
        if let Some(package) = &self.plain_package {
            let entry = self.packages.entry(package.clone()).or_default();
            let out = entry.output.get_or_insert_with(|| CappedText::new(max));
            out.push(line);
            out.push("\n");
        }
    }

    fn package_failed(&mut self, package: &str, output: String) {
        self.packages.remove(package);
        if !self.failed_packages.insert(package.to_owned()) {
            return;
        }
        let said: Vec<&str> = output
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("FAIL") && !l.starts_with("# "))
            .collect();
        let message = said.first().copied().map_or_else(
            || {
                output
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("failed")
                    .to_owned()
            },
            str::to_owned,
        );
        let (file, line, message) = match go_location(&message) {
            Some((f, l, m)) => (Some(f), Some(l), m),
            None => (None, None, message),
        };
        let case = TestCase {
            id: TestId::new(package),
            name: package.to_owned(),
            suite: Some(package.to_owned()),
            file,
            line,
            outcome: Outcome::Errored {
                message: capped(message.trim(), self.limits.max_text),
                details: output,
            },
            duration_ms: None,
        };
        self.results.push(case, self.limits);
    }

    fn on_test_end(
        &mut self,
        key: (String, String),
        action: &str,
        output: String,
        elapsed: Option<f64>,
    ) {
        let (package, test) = &key;
        let failed = action == "fail";
        if failed {
            self.packages
                .entry(package.clone())
                .or_default()
                .failed_tests = true;
        }
        // Mark the ancestors: `A/b/c` has parents `A/b` and `A`.
        let mut prefix = test.as_str();
        while let Some((parent, _)) = prefix.rsplit_once('/') {
            let parent_key = (package.clone(), parent.to_owned());
            if failed {
                self.failed_parents.insert(parent_key.clone());
            }
            self.parents.insert(parent_key);
            prefix = parent;
        }
        if self.parents.contains(&key) && (!failed || self.failed_parents.contains(&key)) {
            return;
        }
        let said: Vec<&str> = output.lines().filter(|l| !is_framing(l)).collect();
        let first = said
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        let (file, line, message) = match go_location(first) {
            Some((f, l, m)) => (Some(f), Some(l), m),
            None => (None, None, first.to_owned()),
        };
        let max = self.limits.max_text;
        let outcome = match action {
            "pass" => Outcome::Passed,
            "skip" => Outcome::Skipped {
                reason: capped(
                    if message.is_empty() {
                        "skipped"
                    } else {
                        &message
                    },
                    max,
                ),
            },
            _ => Outcome::Failed {
                message: capped(
                    if message.is_empty() {
                        "failed"
                    } else {
                        &message
                    },
                    max,
                ),
                details: capped(said.join("\n").trim_end(), max),
            },
        };
        let case = TestCase {
            id: TestId::new(format!("{package}.{test}")),
            name: test.clone(),
            suite: Some(package.clone()),
            file,
            line,
            outcome,
            duration_ms: elapsed.and_then(|s| millis(s * 1000.0)),
        };
        self.results.push(case, self.limits);
    }
}

/// go's own lines around a test's output.
fn is_framing(line: &str) -> bool {
    let line = line.trim_start();
    [
        "=== RUN",
        "=== PAUSE",
        "=== CONT",
        "=== NAME",
        "--- PASS",
        "--- FAIL",
        "--- SKIP",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// `calc_test.go:12: message` (a test's) or `dir/x.go:3:28: message` (the
/// compiler's) → file, line and message.
fn go_location(line: &str) -> Option<(String, u32, String)> {
    let line = line.trim();
    let (file, rest) = line.split_once(".go:")?;
    if file.contains(' ') || file.is_empty() {
        return None;
    }
    let (number, rest) = rest.split_once(':')?;
    let number = number.parse().ok()?;
    // The compiler adds a column.
    let rest = match rest.split_once(':') {
        Some((col, msg)) if col.parse::<u32>().is_ok() => msg,
        _ => rest,
    };
    Some((format!("{file}.go"), number, rest.trim().to_owned()))
}

/// `example.com/m/broken [example.com/m/broken.test]` → `example.com/m/broken`.
fn package_of_import_path(path: &str) -> String {
    path.split_once(" [")
        .map_or(path, |(p, _)| p)
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testing::{fixture, summary};

    #[test]
    fn go_json_names_tests_by_package_and_keeps_only_the_leaf_subtests() {
        let results = fixture(ReportFormat::GoTestJson, "go/calc.json");
        insta::assert_snapshot!(summary(&results), @r"
        go test -json: 2 passed, 2 failed, 1 skipped
        passed  example.com/reports/calc.TestAdd 0ms
        FAILED  example.com/reports/calc.TestSub 0ms at calc_test.go:12
          Add(2, -1) = 1, want 3
        skipped example.com/reports/calc.TestSkipped: needs a database
        passed  example.com/reports/calc.TestTable/zero 0ms
        FAILED  example.com/reports/calc.TestTable/one 0ms at calc_test.go:27
          got 1, want 2
        ");
    }

    #[test]
    fn a_package_that_did_not_build_is_a_case_of_its_own() {
        let results = fixture(ReportFormat::GoTestJson, "go/build-failure.json");
        let broken = results
            .cases
            .iter()
            .find(|c| c.id.as_str() == "example.com/reports/broken")
            .expect("the package is a case");
        insta::assert_debug_snapshot!(broken.outcome, @r#"
        Errored {
            message: "FAIL\texample.com/reports/broken [build failed]",
            details: "FAIL\texample.com/reports/broken [build failed]\n",
        }
        "#);
        assert_eq!(results.counts().failed, 3);
    }

    #[test]
    fn with_stderr_mixed_in_the_compiler_error_is_the_package_message() {
        let results = fixture(
            ReportFormat::GoTestJson,
            "go/build-failure-with-stderr.json",
        );
        let broken = results
            .cases
            .iter()
            .find(|c| c.id.as_str() == "example.com/reports/broken")
            .expect("the package is a case");
        assert_eq!(broken.file.as_deref(), Some("broken/broken.go"));
        assert_eq!(broken.line, Some(3));
        insta::assert_snapshot!(
            match &broken.outcome { Outcome::Errored { message, .. } => message.as_str(), _ => "" },
            @r#"cannot use "42" (untyped string constant) as int value in return statement"#
        );
    }

    #[test]
    fn build_events_of_go_1_24_make_a_package_case() {
        let input = br##"{"ImportPath":"m/broken [m/broken.test]","Action":"build-output","Output":"# m/broken\n"}
{"ImportPath":"m/broken [m/broken.test]","Action":"build-output","Output":"broken/b.go:3:28: undefined: x\n"}
{"ImportPath":"m/broken [m/broken.test]","Action":"build-fail"}
{"Action":"start","Package":"m/broken"}
{"Action":"output","Package":"m/broken","Output":"FAIL\tm/broken [build failed]\n"}
{"Action":"fail","Package":"m/broken","Elapsed":0,"FailedBuild":"m/broken [m/broken.test]"}
"##;
        let results = parse(&input[..], "go.json", &Limits::default()).unwrap();
        insta::assert_snapshot!(summary(&results), @r"
        go test -json: 0 passed, 1 failed, 0 skipped
        ERRORED m/broken at broken/b.go:3
          undefined: x
        ");
    }

    #[test]
    fn a_test_still_running_when_the_file_ends_marks_it_truncated() {
        let input = br#"{"Action":"run","Package":"m","Test":"TestA"}
{"Action":"output","Package":"m","Test":"TestA","Output":"=== RUN   TestA\n"}
"#;
        let results = parse(&input[..], "go.json", &Limits::default()).unwrap();
        assert!(results.cases.is_empty());
        assert!(matches!(
            results.truncated,
            Some(Truncated::EndedEarly { .. })
        ));
    }
}
