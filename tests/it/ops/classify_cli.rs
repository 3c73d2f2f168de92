//! `taskgate classify`: a log on stdin, its kind and summary out, as a
//! person or a script reads them.

use std::io::Write;
use std::process::{Command, Stdio};

fn classify(args: &[&str], log: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .arg("classify")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("taskgate classify runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(log.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_passing_run_is_a_pass_not_an_unknown_failure() {
    let json = classify(
        &["--json", "--exit", "0", "--cmd", "pytest -q"],
        "1 passed in 0.01s\n",
    );
    insta::assert_snapshot!(json, @r#"
    {
      "kind": "pass",
      "summary": "`pytest -q` exited with status 0, which is a pass: nothing to classify",
      "findings": []
    }
    "#);
    let text = classify(&["--exit", "0", "--cmd", "pytest -q"], "1 passed\n");
    assert!(text.starts_with("kind: pass\n"), "{text}");
}

#[test]
fn a_failing_run_keeps_its_failure_kind() {
    let json = classify(
        &["--json", "--exit", "127", "--cmd", "pytest"],
        "sh: 1: pytest: not found\n",
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["kind"], "tooling_error", "{json}");
}
