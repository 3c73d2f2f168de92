//! `taskgate demo` end to end: the real binary, its whole narration
//! snapshotted (ports, shas and timings normalised).

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn the_demo_walks_through_help_plan_sync_a_bad_plan_a_task_loop_and_shipping() {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .arg("demo")
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        // Narration only: logs at warn, so any warning shows up in the diff.
        .env("RUST_LOG", "warn")
        .env_remove("GITHUB_SHA")
        .output()
        .expect("the taskgate binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "taskgate demo failed ({:?})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the demo took {:?}",
        started.elapsed()
    );
    assert!(
        stdout.contains("0 write calls — nothing changed"),
        "{stdout}"
    );
    insta::assert_snapshot!("demo_stdout", normalise(&stdout));
}

/// Replaces what changes between runs: `127.0.0.1:PORT`, the short sha
/// after `commit `, a workflow run's id after `run `, the number of
/// webhooks taskgate's own writes sent, and durations (`12 ms`, `1.3 s`).
fn normalise(text: &str) -> String {
    let text = replace_after(text, "127.0.0.1:", |c| c.is_ascii_digit(), "PORT");
    let text = replace_after(&text, "commit ", |c| c.is_ascii_hexdigit(), "SHA");
    let text = replace_after(&text, " run ", |c| c.is_ascii_digit(), "ID");
    // How many webhooks taskgate's own writes sent depends on how runs
    // interleave (a check run updated while it waits or not); that they
    // caused no write does not.
    let text: String = text
        .split_inclusive('\n')
        .map(
            |line| match line.split_once(" webhooks from taskgate's own writes") {
                Some((n, rest)) if n.chars().all(|c| c.is_ascii_digit()) => {
                    format!("N webhooks from taskgate's own writes{rest}")
                }
                _ => line.to_owned(),
            },
        )
        .collect();
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let words: Vec<&str> = line.split(' ').collect();
        let mut kept = Vec::with_capacity(words.len());
        let mut unit_next = false;
        for (i, w) in words.iter().enumerate() {
            if std::mem::take(&mut unit_next) {
                // "ms" or "s": how long depends on the machine.
                let tail: String = w.chars().skip_while(|c| c.is_ascii_alphabetic()).collect();
                kept.push(format!("UNIT{tail}"));
                continue;
            }
            let next = words.get(i + 1).copied().unwrap_or("");
            let number = !w.is_empty()
                && w.trim_start_matches(['(', '['])
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '.')
                && w.trim_start_matches(['(', '['])
                    .chars()
                    .any(|c| c.is_ascii_digit());
            let unit = ["ms", "s"]
                .iter()
                .any(|u| next.trim_end_matches([')', ']', ',', '.', '\n']) == *u);
            if number && unit {
                let open: String = w.chars().take_while(|c| *c == '(' || *c == '[').collect();
                kept.push(format!("{open}N"));
                unit_next = true;
            } else {
                kept.push((*w).to_owned());
            }
        }
        out.push_str(&kept.join(" "));
    }
    out
}

fn replace_after(text: &str, prefix: &str, keep: impl Fn(char) -> bool, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at + prefix.len()]);
        rest = &rest[at + prefix.len()..];
        let end = rest.find(|c: char| !keep(c)).unwrap_or(rest.len());
        if end > 0 {
            out.push_str(with);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn normalising_hides_ports_shas_and_timings_only() {
    assert_eq!(
        normalise("at http://127.0.0.1:4312/x, commit 0a1b2c3 (12 ms) [1.5 s, exit 0] in 3 tries\n`deploy.yml` run 1041 concluded\nDone in 2.1 s.\n"),
        "at http://127.0.0.1:PORT/x, commit SHA (N UNIT) [N UNIT, exit 0] in 3 tries\n`deploy.yml` run ID concluded\nDone in N UNIT.\n"
    );
}
