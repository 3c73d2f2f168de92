use super::*;

pub(crate) fn passed(id: &str) -> TestCase {
    TestCase {
        id: TestId::new(id),
        name: id.rsplit("::").next().unwrap_or(id).to_string(),
        suite: None,
        file: None,
        line: None,
        outcome: Outcome::Passed,
        duration_ms: Some(3),
    }
}

pub(crate) fn failed(id: &str, file: &str, line: u32, message: &str) -> TestCase {
    TestCase {
        file: Some(file.into()),
        line: Some(line),
        outcome: Outcome::Failed {
            message: message.into(),
            details: format!("Traceback\n{message}"),
        },
        duration_ms: Some(1_250),
        ..passed(id)
    }
}

pub(crate) fn skipped(id: &str, reason: &str) -> TestCase {
    TestCase {
        outcome: Outcome::Skipped {
            reason: reason.into(),
        },
        ..passed(id)
    }
}

fn ids(ids: &[&str]) -> Vec<TestId> {
    ids.iter().map(|i| TestId::new(*i)).collect()
}

fn never(_: &TestId) -> bool {
    false
}

fn unmet(required: &[&str], cases: &[TestCase]) -> Vec<String> {
    check_required_tests(&ids(required), cases, &never)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn verdicts_follow_outcomes_and_quarantine() {
    let fail = Outcome::Failed {
        message: "m".into(),
        details: String::new(),
    };
    let error = Outcome::Errored {
        message: "m".into(),
        details: String::new(),
    };
    let skip = Outcome::Skipped { reason: "r".into() };
    assert_eq!(case_verdict(&Outcome::Passed, false), CaseVerdict::Pass);
    assert_eq!(case_verdict(&Outcome::Passed, true), CaseVerdict::Pass);
    assert_eq!(case_verdict(&skip, true), CaseVerdict::Skip);
    assert_eq!(case_verdict(&fail, false), CaseVerdict::Fail);
    assert_eq!(case_verdict(&error, false), CaseVerdict::Fail);
    assert_eq!(case_verdict(&fail, true), CaseVerdict::Quarantined);
    assert_eq!(case_verdict(&error, true), CaseVerdict::Quarantined);
}

#[test]
fn a_required_test_that_passed_is_met() {
    assert!(unmet(&["a::t"], &[passed("a::t")]).is_empty());
    assert!(unmet(&[], &[failed("a::t", "a.py", 1, "no")]).is_empty());
}

#[test]
fn missing_skipped_failed_and_quarantined_required_tests_each_say_why() {
    let cases = [
        skipped("tests/test_x.py::test_skip", "needs a GPU\nmore"),
        skipped("tests/test_x.py::test_bare", ""),
        failed(
            "tests/test_x.py::test_fail",
            "tests/test_x.py",
            3,
            "assert 1 == 2",
        ),
        passed("tests/test_x.py::test_ok"),
    ];
    let required = [
        "tests/test_x.py::test_y",
        "tests/test_x.py::test_skip",
        "tests/test_x.py::test_bare",
        "tests/test_x.py::test_fail",
        "tests/test_x.py::test_ok",
    ];
    insta::assert_snapshot!(unmet(&required, &cases).join("\n"), @r"
    required test `tests/test_x.py::test_y` did not run
    required test `tests/test_x.py::test_skip` was skipped: needs a GPU
    required test `tests/test_x.py::test_bare` was skipped
    required test `tests/test_x.py::test_fail` failed
    ");
    let quarantined = |id: &TestId| id.as_str().ends_with("test_fail");
    let out = check_required_tests(&ids(&["tests/test_x.py::test_fail"]), &cases, &quarantined);
    insta::assert_snapshot!(out[0].to_string(), @"required test `tests/test_x.py::test_fail` is quarantined as flaky, so it proves nothing");
    assert!(!out[0].is_spec_mismatch());
}

#[test]
fn only_missing_and_skipped_are_spec_mismatches() {
    let cases = [skipped("s", ""), failed("f", "f.py", 1, "no")];
    let out = check_required_tests(&ids(&["m", "s", "f"]), &cases, &never);
    let mismatch: Vec<bool> = out.iter().map(UnmetRequired::is_spec_mismatch).collect();
    assert_eq!(mismatch, [true, true, false]);
}

#[test]
fn a_test_reported_twice_fails_if_any_run_failed_else_passes_if_any_passed() {
    let t = "pkg.T.t";
    let fail = failed(t, "T.java", 1, "no");
    assert!(unmet(&[t], &[skipped(t, ""), passed(t)]).is_empty());
    assert!(unmet(&[t], &[passed(t), skipped(t, "")]).is_empty());
    assert_eq!(
        unmet(&[t], &[passed(t), fail.clone()]),
        ["required test `pkg.T.t` failed"]
    );
    assert_eq!(
        unmet(&[t], &[fail, passed(t)]),
        ["required test `pkg.T.t` failed"]
    );
}

#[test]
fn ids_match_exactly() {
    assert_eq!(
        unmet(
            &["tests/test_x.py::test_y"],
            &[passed("tests/test_x.py::test_y2")]
        ),
        ["required test `tests/test_x.py::test_y` did not run"]
    );
}

#[test]
fn counts_cover_every_case_and_failing_cases_are_kept_first() {
    let mut cases: Vec<TestCase> = (0..MAX_CASES_KEPT + 10)
        .map(|i| passed(&format!("t{i}")))
        .collect();
    cases.push(failed("late", "late.py", 9, "assert late"));
    cases.push(skipped("s", "why"));
    let tests = GateTests::new(cases, &never, vec!["junit.xml".into()], vec![]);
    assert_eq!(
        (tests.passed, tests.failed, tests.skipped),
        (MAX_CASES_KEPT + 10, 1, 1)
    );
    assert_eq!(tests.cases.len(), MAX_CASES_KEPT);
    assert_eq!(tests.cases[0].id.as_str(), "late");
    insta::assert_snapshot!(tests.counts_line(), @"1 failed, 1010 passed, 1 skipped");
}

#[test]
fn quarantined_failures_are_counted_apart_and_not_named_as_failing() {
    let cases = vec![
        failed("flaky", "a.py", 1, "sometimes"),
        failed("broken", "a.py", 2, "always"),
        passed("ok"),
    ];
    let tests = GateTests::new(cases, &|id: &TestId| id.as_str() == "flaky", vec![], vec![]);
    insta::assert_snapshot!(tests.counts_line(), @"1 failed, 1 passed, 1 quarantined");
    insta::assert_snapshot!(tests.failure_summary().unwrap(), @"broken (a.py:2): always");
}

#[test]
fn summary_names_the_first_three_failing_tests_then_counts_the_rest() {
    let mut cases = vec![
        failed(
            "tests/test_adapter.py::test_fetch",
            "tests/test_adapter.py",
            12,
            "assert 3 == 4\nwhere 3 = len(rows)",
        ),
        TestCase {
            file: None,
            line: None,
            outcome: Outcome::Errored {
                message: String::new(),
                details: "\nsetup blew up".into(),
            },
            ..passed("pkg.T.errors")
        },
    ];
    assert_eq!(
        GateTests::new(cases.clone(), &never, vec![], vec![])
            .failure_summary()
            .unwrap(),
        "test_fetch (tests/test_adapter.py:12): assert 3 == 4\npkg.T.errors: setup blew up"
    );
    cases.extend((0..3).map(|i| failed(&format!("t{i}"), "t.py", i, "")));
    insta::assert_snapshot!(GateTests::new(cases, &never, vec![], vec![]).failure_summary().unwrap(), @r"
    test_fetch (tests/test_adapter.py:12): assert 3 == 4
    pkg.T.errors: setup blew up
    t0 (t.py:0): Traceback (and 2 more failing)
    ");
    let all_pass = GateTests::new(vec![passed("a")], &never, vec![], vec![]);
    assert_eq!(all_pass.failure_summary(), None);
}

#[test]
fn caps_bound_every_field_of_hostile_evidence() {
    let huge = "é".repeat(100_000);
    let mut tests = GateTests {
        cases: (0..MAX_CASES_KEPT * 2)
            .map(|_| failed(&huge, &huge, 1, &huge))
            .collect(),
        report_files: vec![huge.clone(); 500],
        problems: vec![huge.clone(); 500],
        required: vec![
            UnmetRequired {
                id: TestId::new(huge.clone()),
                why: Unmet::Skipped {
                    reason: huge.clone()
                },
            };
            500
        ],
        ..GateTests::default()
    };
    tests = capped(tests);
    assert_eq!(tests.cases.len(), MAX_CASES_KEPT);
    assert_eq!(tests.report_files.len(), MAX_REPORT_ITEMS);
    assert_eq!(tests.required.len(), MAX_REPORT_ITEMS);
    let json = serde_json::to_string(&tests).unwrap();
    assert!(json.len() < 12 * 1024 * 1024, "{}", json.len());
    let c = &tests.cases[0];
    assert!(c.id.as_str().len() <= MAX_CASE_FIELD_BYTES);
    assert!(c.file.as_ref().unwrap().len() <= MAX_CASE_FIELD_BYTES);
    assert!(message(&c.outcome).len() <= MAX_CASE_TEXT_BYTES);
}

#[test]
fn old_reports_without_required_still_load() {
    let json = r#"{"cases":[],"passed":1,"failed":0,"skipped":0,"quarantined":0,"report_files":[],"problems":[]}"#;
    let tests: GateTests = serde_json::from_str(json).unwrap();
    assert_eq!(tests.passed, 1);
}

mod rendering {
    use super::*;
    use crate::classify::FailureKind;
    use crate::report::{render_check_output, render_terminal_report, GateResult, RunReport};

    fn gate() -> GateResult {
        let mut cases = vec![
            failed(
                "tests/test_adapter.py::test_fetch",
                "/ws/abc/tests/test_adapter.py",
                12,
                "assert 3 == 4 (cc @octocat) | pipe",
            ),
            TestCase {
                duration_ms: None,
                ..failed("pkg.Calc.divides", "../outside.java", 3, "")
            },
            failed(
                "tests/test_x.py::test_flaky",
                "tests/test_x.py",
                5,
                "sometimes",
            ),
        ];
        cases.extend((0..40).map(|i| passed(&format!("t{i}"))));
        cases.extend((0..3).map(|i| skipped(&format!("s{i}"), "later")));
        let quarantined = |id: &TestId| id.as_str().ends_with("test_flaky");
        let mut tests = GateTests::new(
            cases,
            &quarantined,
            vec!["junit.xml".into()],
            vec!["`report.xml` is a symbolic link; taskgate does not follow it".into()],
        );
        tests.required = vec![UnmetRequired {
            id: TestId::new("tests/test_x.py::test_y"),
            why: Unmet::Missing,
        }];
        GateResult {
            gate: "test".into(),
            passed: false,
            kind: Some(FailureKind::TestFailure),
            summary: tests.failure_summary(),
            commands: vec![],
            missing_artifacts: vec![],
            metric_failures: vec![],
            warnings: vec![],
            cancelled: false,
            tests: Some(tests),
        }
    }

    #[test]
    fn check_run_title_counts_tests_and_summary_names_the_failing_ones() {
        let out = render_check_output(&gate(), "/ws/abc");
        insta::assert_snapshot!(out.title, @"2 failed, 40 passed, 3 skipped, 1 quarantined, 1 acceptance check failed — test_failure");
        insta::assert_snapshot!(out.summary.replace('\u{200D}', "<zwj>"), @r"
        **test_failure**

        ```text
        test_fetch (/ws/abc/tests/test_adapter.py:12): assert 3 == 4 (cc @<zwj>octocat) | pipe
        pkg.Calc.divides (../outside.java:3): Traceback
        ```

        **Tests:** 2 failed, 40 passed, 3 skipped, 1 quarantined (from `junit.xml`)

        **Failing tests**

        - `tests/test_adapter.py::test_fetch` (1.2 s, `/ws/abc/tests/test_adapter.py:12`): assert 3 == 4 (cc @<zwj>octocat) | pipe
        - `pkg.Calc.divides` (`../outside.java:3`): Traceback

        **Quarantined tests**

        - `tests/test_x.py::test_flaky` failed, but it is quarantined as flaky: this failure does not fail the gate

        **Required tests**

        - required test `tests/test_x.py::test_y` did not run

        **Test reports**

        - `report.xml` is a symbolic link; taskgate does not follow it
        ");
        let annotations: Vec<String> = out
            .annotations
            .iter()
            .map(|a| {
                format!(
                    "{}:{} {:?} {}",
                    a.path,
                    a.start_line,
                    a.title,
                    a.message.replace('\n', " / ")
                )
            })
            .collect();
        insta::assert_snapshot!(annotations.join("\n").replace('\u{200D}', "<zwj>"), @r#"
        tests/test_adapter.py:12 Some("test failed: tests/test_adapter.py::test_fetch") assert 3 == 4 (cc @<zwj>octocat) | pipe /  / Traceback / assert 3 == 4 (cc @<zwj>octocat) | pipe
        tests/test_x.py:5 Some("quarantined test failed (flaky, not failing): tests/test_x.py::test_flaky") sometimes /  / Traceback / sometimes
        "#);
    }

    #[test]
    fn terminal_report_lists_failing_tests_and_unmet_required_ones() {
        let report = RunReport {
            version: crate::report::REPORT_VERSION,
            task: crate::task::RunSubject::Task("data".into()),
            sha: None,
            gates: vec![gate()],
            duration_ms: 1_000,
            cancelled: false,
            runner_fault: None,
            tested: None,
        };
        insta::assert_snapshot!(render_terminal_report(&report), @r"
        taskgate run: task `data`: 1 of 1 gate failed (1.0 s)

        gate test: FAILED (test_failure)
          tests: 2 failed, 40 passed, 3 skipped, 1 quarantined
            FAILED test_fetch (/ws/abc/tests/test_adapter.py:12): assert 3 == 4 (cc @octocat) | pipe
            FAILED pkg.Calc.divides (../outside.java:3): Traceback
          required test `tests/test_x.py::test_y` did not run
        ");
    }

    #[test]
    fn many_failing_tests_are_listed_up_to_the_cap_and_annotated_in_batches() {
        let cases: Vec<TestCase> = (0..400)
            .map(|i| failed(&format!("t{i}"), &format!("src/t{i}.py"), 1, "no"))
            .collect();
        let mut g = gate();
        g.tests = Some(GateTests::new(cases, &never, vec![], vec![]));
        let out = render_check_output(&g, "");
        assert_eq!(
            out.annotations.len(),
            crate::report::MAX_ANNOTATIONS_PER_GATE
        );
        assert_eq!(crate::report::annotation_batches(&out.annotations).len(), 3);
        assert_eq!(out.summary.matches("\n- `t").count(), MAX_FAILING_LISTED);
        assert!(
            out.summary.contains("- … and 350 more failing tests"),
            "{}",
            out.summary
        );
        assert!(out
            .summary
            .contains("250 more findings not shown as annotations"));
    }

    #[test]
    fn a_report_without_tests_keeps_the_command_counts_in_the_title() {
        let mut g = gate();
        g.tests = Some(GateTests::default());
        insta::assert_snapshot!(render_check_output(&g, "").title, @"0 passed — test_failure");
    }
}

#[test]
fn a_quarantined_failure_is_counted_apart_and_shown_as_a_warning() {
    let flaky = |id: &TestId| id.as_str() == "t::flaky";
    let case = failed(
        "t::flaky",
        "tests/net.py",
        3,
        "timed out talking to the mock",
    );
    let tests = GateTests::new(vec![case, passed("t::ok")], &flaky, vec![], vec![]);
    assert_eq!((tests.failed, tests.quarantined, tests.passed), (0, 1, 1));
    assert_eq!(tests.failing().count(), 0, "not failing");
    assert_eq!(tests.failure_summary(), None);
    assert_eq!(tests.counts_line(), "1 passed, 1 quarantined");
    let annotations: Vec<Annotation> = test_annotations(&tests, "").collect();
    assert_eq!(annotations.len(), 1);
    assert_eq!(annotations[0].annotation_level, AnnotationLevel::Warning);
    insta::assert_snapshot!(annotations[0].title.clone().unwrap(), @"quarantined test failed (flaky, not failing): t::flaky");
    insta::assert_snapshot!(render_tests_section(&tests), @r"

        **Tests:** 1 passed, 1 quarantined

        **Quarantined tests**

        - `t::flaky` failed, but it is quarantined as flaky: this failure does not fail the gate
    ");
}
