//! `cargo +nightly fuzz run reports`: test reports are written by the code
//! under test, so any bytes, in any of the four formats, must parse without
//! panicking, read no more than the byte cap, and keep every case's texts
//! within the text cap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskgate_core::results::{detect_format, parse_report, Limits, Outcome, ReportFormat};

const FORMATS: [ReportFormat; 4] = [
    ReportFormat::Junit,
    ReportFormat::Tap,
    ReportFormat::LibtestJson,
    ReportFormat::GoTestJson,
];

fuzz_target!(|data: &[u8]| {
    // Small caps, so the fuzzer reaches them.
    let limits = Limits {
        max_bytes: 8 * 1024,
        max_cases: 64,
        max_text: 128,
        max_line: 512,
        max_depth: 16,
    };
    let _ = detect_format(data, "report");
    for format in FORMATS {
        let Ok(results) = parse_report(format, data, "fuzz", &limits) else {
            continue;
        };
        assert!(results.bytes_read <= limits.max_bytes);
        assert!(results.cases.len() <= limits.max_cases);
        for case in &results.cases {
            // The head, plus the "… [cut: N bytes in all]" mark.
            let cap = limits.max_text + 48;
            match &case.outcome {
                Outcome::Failed { message, details } | Outcome::Errored { message, details } => {
                    assert!(message.len() <= cap && details.len() <= cap);
                }
                Outcome::Skipped { reason } => assert!(reason.len() <= cap),
                Outcome::Passed => {}
            }
        }
    }
});
