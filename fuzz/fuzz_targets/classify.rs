//! `cargo +nightly fuzz run classify`: any bytes, any exit status, any
//! command must classify without panicking and keep the summary contract.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskgate_core::classify::{classify, Outcome, SAMPLE_COMMANDS};

fuzz_target!(|data: &[u8]| {
    // First byte picks the exit status and the timeout flag, the second the
    // command family, the rest is the output.
    let (head, output) = data.split_at(data.len().min(2));
    let status = head.first().copied().unwrap_or(0);
    let commands = SAMPLE_COMMANDS;
    let command = commands[head.get(1).copied().unwrap_or(0) as usize % commands.len()];
    let c = classify(&Outcome {
        command,
        exit_code: if status == 255 {
            None
        } else {
            Some(i32::from(status % 128))
        },
        signal: (status == 255 && output.len() % 2 == 0).then_some(11),
        timed_out: status == 254,
        timeout_seconds: Some(30),
        output,
    });
    let lines = c.summary.lines().count();
    assert!((1..=3).contains(&lines), "summary has {lines} lines");
});
