//! Perl: `prove` and Test::More failures, a module missing from `@INC`, and
//! a script that died.
//!
//! Owns: reading Test::More's `#   Failed test 'name'` diagnostics, prove's
//! `Dubious, test returned N` for a test file that died, `Can't locate X.pm
//! in @INC`, and perl's own exit status 255 for `die`. Must not: claim a log
//! that only mentions Perl.

use super::text::{classification, finding, Log};
use super::{Classification, Ctx, FailureKind, Finding};

pub(super) const COMMANDS: &[&str] = &["perl", "prove"];

pub(super) fn detect(ctx: &Ctx) -> Option<Classification> {
    let log = ctx.log;
    missing_module(log)
        .or_else(|| failed_test(log))
        .or_else(|| died_under_prove(log))
        .or_else(|| died(ctx))
}

/// `Can't locate JSON/XS.pm in @INC (you may need to install the JSON::XS
/// module) (@INC contains: …) at dump.pl line 2.`
fn missing_module(log: &Log) -> Option<Classification> {
    let line = log
        .lines
        .iter()
        .find(|l| l.starts_with("Can't locate ") && l.contains(" in @INC"))?;
    let file = line["Can't locate ".len()..].split(' ').next()?;
    let module = file.trim_end_matches(".pm").replace('/', "::");
    let lines = [
        format!("missing Perl module `{module}` ({file} is not in the include path)"),
        format!("install it (cpanm {module}, or the distribution's package) or add it to the project's dependencies"),
    ];
    Some(classification(
        FailureKind::MissingDependency,
        &lines,
        at_line(line).into_iter().collect(),
    ))
}

/// `… at t/temp.t line 6.` → a finding there.
fn at_line(line: &str) -> Option<Finding> {
    let rest = line
        .rsplit_once(" at ")
        .map(|(_, r)| r)
        .or_else(|| line.strip_prefix("at "))?;
    let (path, num) = rest.split_once(" line ")?;
    let num = num.trim_end_matches('.').parse().ok()?;
    Some(finding((path.to_string(), num, None), line.trim()))
}

/// Test::More: `#   Failed test 'freezing point'` / `#   at t/temp.t line 6.`
/// then `#          got: '23'` and `#     expected: '32'`.
fn failed_test(log: &Log) -> Option<Classification> {
    let i = log
        .lines
        .iter()
        .position(|l| l.starts_with("#   Failed test "))?;
    let name = log.at(i)["#   Failed test ".len()..].trim_matches('\'');
    let found = at_line(log.at(i + 1).trim_start_matches('#').trim());
    let detail: Vec<&str> = (i + 2..(i + 5).min(log.lines.len()))
        .map(|j| log.at(j).trim_start_matches('#').trim())
        .take_while(|l| l.starts_with("got:") || l.starts_with("expected:"))
        .collect();
    let failed = log
        .lines
        .iter()
        .find(|l| l.starts_with("# Looks like you failed "))
        .map(|l| l.trim_start_matches("# ").to_string());
    let at = found
        .as_ref()
        .map(|f| format!(" at {}:{}", f.path, f.line))
        .unwrap_or_default();
    let lines = [
        format!("test `{name}` failed{at}"),
        detail.join(", "),
        failed.map(|f| format!("{f} (prove)")).unwrap_or_default(),
    ];
    Some(classification(
        FailureKind::TestFailure,
        &lines,
        found.into_iter().collect(),
    ))
}

/// prove: `t/load.t .. ` then `Dubious, test returned 2`: the test file
/// died; perl's message is the line before `# Tests were run but …` or
/// `# Looks like your test exited`.
fn died_under_prove(log: &Log) -> Option<Classification> {
    let d = log
        .lines
        .iter()
        .position(|l| l.starts_with("Dubious, test returned "))?;
    let file = log
        .at(d.checked_sub(1)?)
        .trim()
        .trim_end_matches('.')
        .trim();
    let message = log.lines[..d]
        .iter()
        .find(|l| !l.starts_with('#') && !l.trim().is_empty() && l.contains(" line "))
        .map(|l| l.trim());
    let lines = [
        format!("test file {file} died ({})", log.at(d).trim()),
        message.unwrap_or_default().to_string(),
    ];
    let findings = message.and_then(at_line).into_iter().collect();
    Some(classification(FailureKind::TestFailure, &lines, findings))
}

/// `perl script.pl` exiting 255: the status perl gives an uncaught `die`.
fn died(ctx: &Ctx) -> Option<Classification> {
    if ctx.exit_code != Some(255) || !ctx.command_has(&["perl"]) {
        return None;
    }
    let last = ctx.log.last_meaningful().unwrap_or("(no message)");
    let lines = [
        format!("`{}` died (exit 255)", ctx.command.trim()),
        format!("message: {last}"),
    ];
    let findings = at_line(last).into_iter().collect();
    Some(classification(FailureKind::RuntimeError, &lines, findings))
}

#[cfg(test)]
mod tests {
    use super::super::corpus_tests::classification_of;
    use super::super::FailureKind;

    #[test]
    fn prove_names_the_failed_test_and_where_with_got_and_expected() {
        let c = classification_of("prove-fail");
        assert_eq!(c.kind, FailureKind::TestFailure);
        insta::assert_snapshot!(c.summary, @r"
        test `freezing point` failed at t/temp.t:6
        got: '23', expected: '32'
        Looks like you failed 2 tests of 2. (prove)
        ");
    }

    #[test]
    fn a_test_file_that_died_under_prove_names_the_file_and_the_message() {
        insta::assert_snapshot!(classification_of("prove-died").summary, @r"
        test file t/load.t died (Dubious, test returned 2 (wstat 512, 0x200))
        cannot open config.ini: No such file or directory at t/load.t line 6.
        ");
    }

    #[test]
    fn a_module_missing_from_inc_is_a_missing_dependency_and_die_a_runtime_error() {
        let c = classification_of("perl-missing-module");
        assert_eq!(c.kind, FailureKind::MissingDependency);
        insta::assert_snapshot!(c.summary, @r"
        missing Perl module `JSON::XS` (JSON/XS.pm is not in the include path)
        install it (cpanm JSON::XS, or the distribution's package) or add it to the project's dependencies
        ");
        let c = classification_of("perl-die");
        assert_eq!(c.kind, FailureKind::RuntimeError);
        insta::assert_snapshot!(c.summary, @r"
        `perl ports.pl` died (exit 255)
        message: no port for https
        ");
    }
}
