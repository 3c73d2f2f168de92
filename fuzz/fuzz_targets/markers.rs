//! `cargo +nightly fuzz run markers`: the readers of hidden markers and
//! check-run ids (issue bodies and `external_id`s come back from GitHub,
//! where anyone can edit them) must not panic on any text, and whatever they
//! accept reads back the same after being written again; a check key built
//! from any story, task, attempt and gate reads back exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskgate_core::ids::StoryId;
use taskgate_core::story::markers::{decode_value, encode_value, Marker};
use taskgate_core::task::{check_key, parse_check_key, CheckKey, RunSubject};

fuzz_target!(|input: (&str, &str, u32, &str, &str)| {
    let (story, task, attempt, gate, text) = input;

    // Writing then reading gives back what was written.
    if let Ok(subject) = RunSubject::parse(task) {
        let key = check_key(&StoryId::new(story), &subject, attempt, gate);
        let expected = CheckKey {
            story: story.into(),
            task: subject,
            attempt,
            gate: gate.into(),
        };
        assert_eq!(parse_check_key(&key), Some(expected), "{key:?}");
    }
    for value in [story, task, gate] {
        let encoded = encode_value(value);
        assert!(!encoded.contains("--") && !encoded.contains(['>', ' ', '\n']));
        assert_eq!(decode_value(&encoded).as_deref(), Some(value));
    }

    // Reading any text: what is accepted is stable under writing it again.
    decode_value(text);
    if let Some(k) = parse_check_key(text) {
        let again = check_key(&k.story, &k.task, k.attempt, &k.gate);
        assert_eq!(parse_check_key(&again), Some(k));
    }
    for found in [Marker::from_key(text), Marker::find_in(text)]
        .into_iter()
        .flatten()
    {
        assert_eq!(Marker::from_key(&found.key()).as_ref(), Some(&found));
        assert_eq!(Marker::find_in(&found.render()).as_ref(), Some(&found));
    }
});
