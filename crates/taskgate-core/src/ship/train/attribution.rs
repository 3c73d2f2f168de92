//! Attribution: which story in a failed batch most likely broke it, from
//! the evidence a proof leaves (the failing tests, and the file each one
//! lives in when the results say) and the files each story changed.
//!
//! Owns: the scores and the choice of suspects. Must not: decide what is
//! proven next (`train`), or read anything.
//!
//! The idea a reader needs: a story that changed the file a failing test
//! lives in is the strongest suspect; one that changed a file beside it
//! (same folder) or a file the test's name mentions comes next. A batch
//! where no story scores, or where the best score is shared, has no
//! suspect: the train splits it in halves instead (`train`), which finds
//! the guilty story in as many runs as binary search does.

use std::collections::BTreeSet;

use crate::ids::StoryId;
use crate::results::TestId;

/// A failing test as a proof reports it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct FailingTest {
    /// The test's name as its tool prints it (`tests/api.py::test_login`,
    /// `store::tests::reads_back`).
    pub name: String,
    /// The file it lives in, when the results say.
    pub file: Option<String>,
    /// The failing case's id in the gate's test results, when it wrote
    /// any: what a flaky event of it is recorded under (`core::flaky`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<TestId>,
}

impl FailingTest {
    /// What names the test from one proof to the next: its case id when
    /// the results gave one, else its gate's line. Not the line with a
    /// case: the line names the proof's gate (`ship/<task>/<gate>`, the
    /// car's first story's task), which differs between two cars that
    /// hold the same failing test, and a failure seen twice would pass
    /// for a flaky one.
    pub fn key(&self) -> &str {
        self.case.as_ref().map_or(&self.name, |c| c.as_str())
    }

    /// The same test as `other` ([`FailingTest::key`]).
    pub fn is(&self, other: &FailingTest) -> bool {
        self.key() == other.key()
    }
}

/// A story's changed files, as the batch's evidence.
pub struct Changed<'a> {
    pub story: &'a StoryId,
    pub files: &'a BTreeSet<String>,
}

/// Points for a failing test whose own file the story changed.
const SAME_FILE: u32 = 4;
/// Points for a changed file in the failing test's folder.
const SAME_FOLDER: u32 = 2;
/// Points for a changed file whose stem the test's name mentions.
const NAMED: u32 = 1;

/// The story the evidence points at, if one stands out: the one with the
/// highest score, when that score is above zero and no other story has
/// it.
pub fn likely_culprit(stories: &[Changed<'_>], failing: &[FailingTest]) -> Option<StoryId> {
    let scored: Vec<(u32, &StoryId)> = stories
        .iter()
        .map(|c| (score(c.files, failing), c.story))
        .collect();
    let best = scored.iter().map(|(s, _)| *s).max().unwrap_or(0);
    let mut top = scored.iter().filter(|(s, _)| *s == best);
    match (best, top.next(), top.next()) {
        (0, ..) => None,
        (_, Some((_, story)), None) => Some((*story).clone()),
        _ => None,
    }
}

/// How strongly `files` (one story's changes) point at `failing`.
pub fn score(files: &BTreeSet<String>, failing: &[FailingTest]) -> u32 {
    failing.iter().map(|t| test_score(files, t)).sum()
}

fn test_score(files: &BTreeSet<String>, test: &FailingTest) -> u32 {
    let mut points = 0;
    if let Some(file) = test.file.as_deref() {
        if files.contains(file) {
            points += SAME_FILE;
        } else if files.iter().any(|f| folder(f) == folder(file)) {
            points += SAME_FOLDER;
        }
    }
    // The case id, not the gate's line: the line names the car's first
    // story's task, which would point at that story whatever failed.
    let name = test.key().to_ascii_lowercase();
    if files
        .iter()
        .filter_map(|f| stem(f))
        .any(|s| s.len() >= 3 && name.contains(&s.to_ascii_lowercase()))
    {
        points += NAMED;
    }
    points
}

fn folder(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn stem(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next()?;
    let stem = name.split('.').next()?;
    (!stem.is_empty()).then_some(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn test(name: &str, file: Option<&str>) -> FailingTest {
        FailingTest {
            name: name.to_owned(),
            file: file.map(str::to_owned),
            case: None,
        }
    }

    fn culprit(changes: &[(&str, &[&str])], failing: &[FailingTest]) -> Option<String> {
        let stories: Vec<(StoryId, BTreeSet<String>)> = changes
            .iter()
            .map(|(s, f)| (StoryId::from(*s), files(f)))
            .collect();
        let changed: Vec<Changed<'_>> = stories
            .iter()
            .map(|(story, files)| Changed { story, files })
            .collect();
        likely_culprit(&changed, failing).map(|s| s.as_str().to_owned())
    }

    #[test]
    fn a_case_is_named_by_its_id_not_by_the_line_of_the_proofs_gate() {
        // The line names the car's first story's task (`ship/s21/...`);
        // both stories changed the shared test file the case lives in.
        let failing = [FailingTest {
            name: "`ship/s21/test` (test_failure): 1 test failed".into(),
            file: Some("tests/shared.rs".into()),
            case: Some(crate::results::TestId::new("s22::works")),
        }];
        let found = culprit(
            &[
                ("s21", &["src/s21.rs", "tests/shared.rs"]),
                ("s22", &["src/s22.rs", "tests/shared.rs"]),
            ],
            &failing,
        );
        assert_eq!(found.as_deref(), Some("s22"));
    }

    #[test]
    fn the_story_that_changed_the_failing_tests_file_is_the_suspect() {
        let failing = [test("test_login", Some("tests/test_auth.py"))];
        let found = culprit(
            &[
                ("a", &["src/billing.py"]),
                ("b", &["tests/test_auth.py", "src/auth.py"]),
                ("c", &["docs/readme.md"]),
            ],
            &failing,
        );
        assert_eq!(found.as_deref(), Some("b"));
    }

    #[test]
    fn a_change_beside_the_failing_test_or_named_by_it_points_at_its_story() {
        let beside = [test("reads_back", Some("src/store/runs.rs"))];
        assert_eq!(
            culprit(
                &[("a", &["src/store/tasks.rs"]), ("b", &["src/web/api.rs"])],
                &beside
            )
            .as_deref(),
            Some("a")
        );
        let named = [test("billing::tests::totals_add_up", None)];
        assert_eq!(
            culprit(
                &[("a", &["src/auth.rs"]), ("b", &["src/billing.rs"])],
                &named
            )
            .as_deref(),
            Some("b")
        );
    }

    #[test]
    fn no_evidence_or_a_tie_names_no_suspect() {
        let failing = [test("test_x", Some("tests/test_x.py"))];
        assert_eq!(
            culprit(&[("a", &["src/a.py"]), ("b", &["lib/b.py"])], &failing),
            None
        );
        let tie = [test("t", Some("tests/shared.py"))];
        assert_eq!(
            culprit(
                &[("a", &["tests/shared.py"]), ("b", &["tests/shared.py"])],
                &tie
            ),
            None
        );
        assert_eq!(culprit(&[("a", &["x.py"])], &[]), None);
    }

    #[test]
    fn short_stems_are_not_evidence() {
        // `io.rs` would be "mentioned" by half of all test names.
        let failing = [test("scenario::a_ratio_is_kept", None)];
        assert_eq!(
            culprit(&[("a", &["src/io.rs"]), ("b", &[])], &failing),
            None
        );
    }
}
