//! A story's test history on the dashboard: its slowest and its
//! most-failing tests, from `store::tests_history`.
//!
//! Pure: stored statistics in, rows to lay out. Owns the wording and the
//! caps of that part of the page. Must not: read the store or the clock.

use crate::store::{TestStat, STORY_TEST_ROWS};
use taskgate_core::report::render_duration;

/// One test of a story, as a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRow {
    pub task: String,
    pub test: String,
    /// "1.2 s", "–" when no run gave a duration.
    pub mean: String,
    /// "2 of 5 runs".
    pub failures: String,
}

/// The two lists of one story; empty when no report was ever read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoryTests {
    pub slowest: Vec<TestRow>,
    pub failing: Vec<TestRow>,
}

impl StoryTests {
    pub fn is_empty(&self) -> bool {
        self.slowest.is_empty() && self.failing.is_empty()
    }
}

/// Rows for a story's slowest and most-failing tests, at most
/// [`STORY_TEST_ROWS`] each, in the order given (the store sorts).
pub fn story_tests(slowest: &[TestStat], failing: &[TestStat]) -> StoryTests {
    let rows = |stats: &[TestStat]| {
        stats
            .iter()
            .take(STORY_TEST_ROWS as usize)
            .map(row)
            .collect()
    };
    StoryTests {
        slowest: rows(slowest),
        failing: rows(failing),
    }
}

fn row(s: &TestStat) -> TestRow {
    TestRow {
        task: s.task.clone(),
        test: s.test_id.clone(),
        mean: s.mean_ms.map_or_else(|| "–".to_string(), render_duration),
        failures: format!(
            "{} of {} run{}",
            s.failures,
            s.runs,
            if s.runs == 1 { "" } else { "s" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(test: &str, runs: u64, failures: u64, mean_ms: Option<u64>) -> TestStat {
        TestStat {
            task: "data".into(),
            test_id: test.into(),
            runs,
            failures,
            mean_ms,
        }
    }

    fn lines(rows: &[TestRow]) -> String {
        rows.iter()
            .map(|r| format!("{} · {} · {} · {}", r.task, r.test, r.mean, r.failures))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn slowest_and_most_failing_tests_read_as_rows_five_each() {
        let slowest: Vec<TestStat> = (0..7)
            .map(|i| {
                stat(
                    &format!("tests/test_a.py::test_{i}"),
                    3,
                    0,
                    Some(90_000 - i * 10_000),
                )
            })
            .collect();
        let failing = [
            stat("pkg.Calc.divides", 4, 3, Some(12)),
            stat("tests/test_b.py::test_once", 1, 1, None),
        ];
        let v = story_tests(&slowest, &failing);
        insta::assert_snapshot!(lines(&v.slowest), @r"
        data · tests/test_a.py::test_0 · 1 min 30 s · 0 of 3 runs
        data · tests/test_a.py::test_1 · 1 min 20 s · 0 of 3 runs
        data · tests/test_a.py::test_2 · 1 min 10 s · 0 of 3 runs
        data · tests/test_a.py::test_3 · 1 min 00 s · 0 of 3 runs
        data · tests/test_a.py::test_4 · 50.0 s · 0 of 3 runs
        ");
        insta::assert_snapshot!(lines(&v.failing), @r"
        data · pkg.Calc.divides · 12 ms · 3 of 4 runs
        data · tests/test_b.py::test_once · – · 1 of 1 run
        ");
        assert!(story_tests(&[], &[]).is_empty());
    }
}
