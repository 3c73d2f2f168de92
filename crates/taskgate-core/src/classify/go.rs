//! Go: `go test` failures, compiler errors (`go build`, `go vet`), missing
//! packages and modules, and runtime panics.

use super::text::{classification, clip, finding, parse_location, show_location, Log};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) const COMMANDS: &[&str] = &["go", "gotestsum", "golangci-lint", "staticcheck"];

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    missing_package(log)
        .or_else(|| no_go_files(log))
        .or_else(|| test_failures(log))
        .or_else(|| compile_errors(ctx))
        .or_else(|| panic(log))
}

fn missing_package(log: &Log) -> Option<Classification> {
    const MARKERS: [&str; 4] = [
        "no required module provides package ",
        "cannot find module providing package ",
        "missing go.sum entry for module providing package ",
        "cannot find package ",
    ];
    for line in &log.lines {
        let Some((before, pkg)) = MARKERS.iter().find_map(|m| line.split_once(m)) else {
            continue;
        };
        let pkg = pkg
            .split([';', ' ', ':'])
            .next()
            .unwrap_or(pkg)
            .trim_matches('"');
        let loc = before
            .trim_end()
            .trim_end_matches(':')
            .rsplit_once(": ")
            .map(|(_, l)| l)
            .unwrap_or(before);
        let findings: Vec<Finding> = parse_location(loc)
            .map(|l| finding(l, format!("missing package {pkg}")))
            .into_iter()
            .collect();
        let at = findings
            .first()
            .map(|f| format!(" (imported at {})", show_location(f)))
            .unwrap_or_default();
        let lines = [
            format!("missing Go package {pkg}{at}"),
            format!("add it with `go get {pkg}` and commit go.mod/go.sum"),
        ];
        return Some(classification(
            FailureKind::MissingDependency,
            &lines,
            findings,
        ));
    }
    None
}

fn test_failures(log: &Log) -> Option<Classification> {
    let mut failed: Vec<&str> = Vec::new();
    let mut findings = Vec::new();
    let mut first_msg: Option<String> = None;
    let mut packages: Vec<&str> = Vec::new();
    let mut current: Option<&str> = None;
    let mut panic_msg = None;
    for line in &log.lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            let name = rest.split(" (").next().unwrap_or(rest);
            failed.push(name);
            current = Some(name);
        } else if let Some(rest) = t.strip_prefix("FAIL\t").or_else(|| t.strip_prefix("FAIL ")) {
            packages.push(rest.split_whitespace().next().unwrap_or(rest));
        } else if let Some(p) = t.strip_prefix("panic: ") {
            panic_msg.get_or_insert(p.to_string());
        } else if current.is_some() && line.starts_with("    ") {
            // `    calc_test.go:8: message` under the failing test.
            let Some((loc, msg)) = t.split_once(": ") else {
                continue;
            };
            if let Some(loc) = parse_location(loc).filter(|l| l.0.ends_with(".go")) {
                first_msg.get_or_insert_with(|| format!("{}:{}: {msg}", loc.0, loc.1));
                findings.push(finding(
                    loc,
                    format!("{}: {msg}", current.unwrap_or_default()),
                ));
            }
        }
    }
    let first = *failed.first()?;
    let detail = first_msg
        .or(panic_msg.map(|p| format!("panic: {p}")))
        .unwrap_or_default();
    let pkgs = if packages.is_empty() {
        String::new()
    } else {
        format!(" in {}", packages.join(", "))
    };
    let lines = [
        format!("test {first} failed"),
        detail,
        clip(
            &format!("{} failed{pkgs}: {}", failed.len(), failed.join(", ")),
            200,
        ),
    ];
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// `./main.go:5:2: message` lines, usually under a `# package` header.
fn compile_errors(ctx: &Ctx) -> Option<Classification> {
    let mut findings = Vec::new();
    let mut header = false;
    for line in &ctx.log.lines {
        if line.starts_with("# ") {
            header = true;
            continue;
        }
        let Some((loc, msg)) = line.split_once(": ") else {
            continue;
        };
        if let Some(loc) = parse_location(loc).filter(|l| l.0.ends_with(".go") && l.2.is_some()) {
            findings.push(finding(loc, msg));
        }
    }
    let first = findings.first()?;
    let vet = ctx.command_has(&["vet", "golangci-lint", "staticcheck"]);
    if !header && !vet && !ctx.command_has(&["go"]) {
        return None;
    }
    let n = findings.len();
    let (kind, tool) = if vet {
        (FailureKind::LintFailure, "go vet")
    } else {
        (FailureKind::BuildFailure, "go build")
    };
    let lines = [
        format!("{tool}: {n} error{}", if n == 1 { "" } else { "s" }),
        format!("first {}: {}", show_location(first), first.message),
    ];
    Some(classification(kind, &lines, findings))
}

/// `no Go files in /path/docs`: the package the gate names has no code or
/// tests, as pytest's exit 5 (a `spec_mismatch`).
fn no_go_files(log: &Log) -> Option<Classification> {
    let line = log
        .lines
        .iter()
        .find(|l| l.starts_with("no Go files in "))?;
    let lines = [
        format!("go: {line}"),
        "the package the gate names has no Go files: wrong path, or the code is missing"
            .to_string(),
    ];
    Some(classification(
        FailureKind::SpecMismatch,
        &lines,
        Vec::new(),
    ))
}

/// `go test -timeout`'s alarm, `panic: test timed out after 2s`: a
/// `timeout`, naming the test that was running (`running tests:` since Go
/// 1.20, else the first `pkg.TestX(` frame of the goroutine dump).
fn test_timed_out(log: &Log, i: usize) -> Option<Classification> {
    let msg = log.at(i).strip_prefix("panic: test timed out after ")?;
    let running = log.at(i + 1) == "running tests:";
    let test = if running {
        log.at(i + 2).split_whitespace().next().map(str::to_string)
    } else {
        log.lines[i..].iter().find_map(|l| {
            let call = l.split('(').next()?;
            let name = call.rsplit('.').next()?;
            (name.starts_with("Test") && call.contains('.')).then(|| name.to_string())
        })
    };
    let lines = [
        format!("go test timed out after {msg}"),
        test.map(|t| format!("still running: {t}"))
            .unwrap_or_default(),
    ];
    Some(classification(FailureKind::Timeout, &lines, Vec::new()))
}

fn panic(log: &Log) -> Option<Classification> {
    let i = log.lines.iter().position(|l| l.starts_with("panic: "))?;
    if let Some(c) = test_timed_out(log, i) {
        return Some(c);
    }
    let msg = log.at(i).trim_start_matches("panic: ").to_string();
    let has_goroutine =
        (i + 1..(i + 6).min(log.lines.len())).any(|j| log.at(j).starts_with("goroutine "));
    if !has_goroutine {
        return None;
    }
    // The first frame file that is not the Go runtime is where it blew up.
    let loc = (i + 1..(i + 60).min(log.lines.len())).find_map(|j| {
        let l = log.at(j);
        let path = l.strip_prefix('\t')?.split(" +").next()?;
        parse_location(path).filter(|p| !p.0.contains("/src/runtime/"))
    });
    let findings: Vec<Finding> = loc
        .map(|l| finding(l, format!("panic: {msg}")))
        .into_iter()
        .collect();
    let at = findings
        .first()
        .map(|f| format!("at {}", show_location(f)))
        .unwrap_or_default();
    let lines = [format!("panic: {msg}"), at];
    Some(classification(FailureKind::RuntimeError, &lines, findings))
}

#[cfg(test)]
mod tests {
    use super::super::corpus_tests::classification_of;
    use super::super::FailureKind;

    #[test]
    fn go_tests_alarm_is_a_timeout_naming_the_test_still_running() {
        let c = classification_of("go-test-timeout");
        assert_eq!(c.kind, FailureKind::Timeout);
        insta::assert_snapshot!(c.summary, @r"
        go test timed out after 2s
        still running: TestDrain
        ");
    }

    #[test]
    fn a_package_without_go_files_is_a_spec_mismatch() {
        let c = classification_of("go-no-go-files");
        assert_eq!(c.kind, FailureKind::SpecMismatch);
        insta::assert_snapshot!(c.summary, @r"
        go: no Go files in /tmp/taskgate-failures/cases/go-no-go-files/docs
        the package the gate names has no Go files: wrong path, or the code is missing
        ");
    }
}
