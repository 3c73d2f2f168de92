//! Robustness without cargo-fuzz (the `fuzz/` target covers that): random
//! bytes and huge logs must never panic, must keep the summary contract and
//! must stay linear in the output size.

use super::{classify, FailureKind, Outcome, MAX_FINDINGS};

/// Robustness without cargo-fuzz: random bytes, invalid UTF-8, ANSI
/// fragments and tool-looking lines must never panic and must keep the
/// summary contract.
#[test]
fn random_buffers_never_panic_and_keep_summary_short() {
    let fragments: [&[u8]; 16] = [
        b"\x1b[",
        b"\x1b]8;;",
        b"\x1b(B",
        b"\x1b[1;31m",
        b"\xff\xfe",
        b"\xe2\x82",
        b"\n",
        b"\r",
        b"error[E0432]: ",
        b" --> ",
        b"Traceback (most recent call last):\n",
        b"--- FAIL: ",
        b"not ok 1 - ",
        b"panicked at ",
        b"  File \"",
        b":99999999999:",
    ];
    let commands = super::SAMPLE_COMMANDS;
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..2_000 {
        let len = (next() % 4096) as usize;
        let mut buf = Vec::with_capacity(len + 64);
        while buf.len() < len {
            let r = next();
            if r % 4 == 0 {
                buf.extend_from_slice(fragments[(r >> 8) as usize % fragments.len()]);
            } else {
                buf.push((r >> 16) as u8);
            }
        }
        let c = classify(&Outcome {
            command: commands[i % commands.len()],
            exit_code: match next() % 5 {
                0 => None,
                1 => Some(126),
                2 => Some(127),
                n => Some(n as i32),
            },
            signal: match next() % 4 {
                0 => Some((next() % 40) as i32),
                _ => None,
            },
            timed_out: next() % 10 == 0,
            timeout_seconds: Some(next() % 100),
            output: &buf,
        });
        let lines = c.summary.lines().count();
        assert!(
            (1..=3).contains(&lines),
            "case {i}: {lines} summary lines: {:?}",
            c.summary
        );
        assert!(c.findings.len() <= MAX_FINDINGS);
    }
}

#[test]
fn a_100_mb_log_is_read_from_head_and_tail() {
    // 100 MiB: a compiler error at the top, noise, a test recap at the bottom.
    let mut out = b"error[E0308]: mismatched types\n --> src/main.rs:6:21\n".to_vec();
    while out.len() < 100 << 20 {
        out.extend_from_slice(b"   Compiling noise v0.1.0 \x1b[1m(\xff)\x1b[0m\r\n");
    }
    out.extend_from_slice(
        b"error: could not compile `app` (bin \"app\") due to 1 previous error\n",
    );
    let c = classify(&Outcome {
        command: "cargo build",
        exit_code: Some(101),
        signal: None,
        timed_out: false,
        timeout_seconds: None,
        output: &out,
    });
    assert_eq!(c.kind, FailureKind::BuildFailure);
    assert!(c.summary.contains("src/main.rs:6:21"), "{}", c.summary);
    assert!(
        c.summary.contains("could not compile `app`"),
        "{}",
        c.summary
    );
    // Its cost is measured by the benchmark, not asserted here.
}

#[test]
fn output_in_another_locale_is_still_summarised() {
    // GNU make and gcc under LANG=de_DE: the words differ, the shapes do not.
    let out = "gcc -c main.c\nmain.c: In Funktion »main«:\nmain.c:3:5: Fehler: »x« ist nicht deklariert (erste Benutzung in dieser Funktion)\nmake: *** [Makefile:2: main.o] Fehler 1\n";
    let c = classify(&Outcome {
        command: "make",
        exit_code: Some(2),
        signal: None,
        timed_out: false,
        timeout_seconds: None,
        output: out.as_bytes(),
    });
    assert_ne!(c.kind, FailureKind::FlakyTest);
    assert!(!c.summary.trim().is_empty());
    assert!(c.summary.lines().count() <= 3, "{}", c.summary);
    assert!(
        c.summary.contains("main.c:3") || c.summary.contains("Makefile:2"),
        "{}",
        c.summary
    );
}

#[test]
fn one_enormous_line_without_newlines_is_fine() {
    let out = vec![b'a'; 3 << 20];
    let c = classify(&Outcome {
        command: "./run",
        exit_code: Some(2),
        signal: None,
        timed_out: false,
        timeout_seconds: None,
        output: &out,
    });
    assert_eq!(c.kind, FailureKind::TestFailure);
    assert_eq!(c.summary.lines().count(), 2);
}
