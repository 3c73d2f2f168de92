//! `cargo +nightly fuzz run webhook`: any body under any subscribed event
//! (or an unknown one) must parse or be refused without panicking; `Ok`
//! only for a body that is JSON, and an unknown event is always refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskgate::intake::event::{parse, PayloadError, HANDLED_EVENTS};

fuzz_target!(|data: &[u8]| {
    // First byte picks the event (the last choice is one taskgate does not
    // subscribe to), the rest is the body.
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let event = HANDLED_EVENTS
        .get(pick as usize % (HANDLED_EVENTS.len() + 1))
        .copied()
        .unwrap_or("deployment_status");
    match parse(event, body) {
        Ok(_) => assert!(
            serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok(),
            "`{event}` accepted a body that is not JSON"
        ),
        Err(e) => {
            let unknown = !HANDLED_EVENTS.contains(&event);
            assert_eq!(unknown, matches!(e, PayloadError::Unhandled(_)), "{e}");
        }
    }
});
