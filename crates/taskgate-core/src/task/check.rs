//! Check-run identity: every check run taskgate opens for a gate carries an
//! `external_id` naming its story, task, attempt and gate, so a button press
//! or a "Re-run" on GitHub leads straight back to the task, and a create
//! retried after a crash finds the run GitHub already made.

use super::RunSubject;
use crate::ids::StoryId;
use crate::story::markers::{decode_value, encode_value};

/// What a gate's check run is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckKey {
    pub story: StoryId,
    pub task: RunSubject,
    pub attempt: u32,
    pub gate: String,
}

/// `story=file:x task=data attempt=3 gate=unit`, values escaped like markers.
pub fn check_key(story: &StoryId, task: &RunSubject, attempt: u32, gate: &str) -> String {
    format!(
        "story={} task={} attempt={attempt} gate={}",
        encode_value(story.as_str()),
        encode_value(&task.key()),
        encode_value(gate)
    )
}

/// Reads back a [`check_key`]; anything else (another app's id) is `None`.
pub fn parse_check_key(key: &str) -> Option<CheckKey> {
    let mut fields = key.split(' ');
    let mut next = |name: &str| {
        fields
            .next()
            .and_then(|f| f.strip_prefix(name))
            .and_then(|f| f.strip_prefix('='))
    };
    let story = decode_value(next("story")?)?;
    let task = RunSubject::parse(&decode_value(next("task")?)?).ok()?;
    let attempt = next("attempt")?.parse().ok()?;
    let gate = decode_value(next("gate")?)?;
    if fields.next().is_some() {
        return None;
    }
    Some(CheckKey {
        story: StoryId::new(story),
        task,
        attempt,
        gate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_back_exactly_even_with_odd_ids() {
        for (story, task, gate) in [
            ("file:momentum", "data", "unit"),
            ("issue:12", "a b=c", "lint/strict"),
            ("file:x--y", "-->", "ünï"),
        ] {
            let task = RunSubject::Task(task.into());
            let key = check_key(&StoryId::new(story), &task, 7, gate);
            assert!(!key.contains("-->"), "{key}");
            assert_eq!(
                parse_check_key(&key),
                Some(CheckKey {
                    story: story.into(),
                    task,
                    attempt: 7,
                    gate: gate.into()
                })
            );
        }
    }

    #[test]
    fn foreign_ids_are_not_keys() {
        for other in [
            "",
            "42",
            "story=a task=b attempt=x gate=c",
            "story=a task=b attempt=1",
            "story=a task=b attempt=1 gate=c extra=1",
        ] {
            assert_eq!(parse_check_key(other), None, "{other}");
        }
    }
}
