//! Which files are reports, and in which format: the sniffer
//! ([`detect_format`]) and discovery over a workspace's file list
//! ([`report_candidates`] for the usual locations, [`ReportGlobs`] for a
//! gate's `reports:` globs).
//!
//! Owns: the list of usual report locations. Must not: touch the file
//! system: paths in, paths out (the runner lists the workspace and reads the
//! first bytes).

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use super::{ReportError, ReportFormat};

/// The format of a report from its first bytes (a few hundred are enough)
/// and its file name; `None` when neither says.
pub fn detect_format(head: &[u8], file_name: &str) -> Option<ReportFormat> {
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    if text.starts_with('<') {
        return (text.contains("<testsuite")
            || text.contains("<testcase")
            || text.starts_with("<?xml"))
        .then_some(ReportFormat::Junit);
    }
    if let Some(format) = text.lines().take(20).find_map(sniff_line) {
        return Some(format);
    }
    let lower = file_name.to_ascii_lowercase();
    if lower.ends_with(".xml") {
        Some(ReportFormat::Junit)
    } else if lower.ends_with(".tap") {
        Some(ReportFormat::Tap)
    } else {
        None
    }
}

fn sniff_line(line: &str) -> Option<ReportFormat> {
    let line = line.trim();
    if line.starts_with('{') {
        if line.contains("\"Action\"") {
            return Some(ReportFormat::GoTestJson);
        }
        if line.contains("\"type\"") && line.contains("\"event\"") {
            return Some(ReportFormat::LibtestJson);
        }
        return None;
    }
    let tap = line.starts_with("TAP version ")
        || (line.starts_with("1..") && line[3..].starts_with(|c: char| c.is_ascii_digit()))
        || line.starts_with("ok ")
        || line.starts_with("not ok ");
    tap.then_some(ReportFormat::Tap)
}

/// A report file found in the workspace, with the format its name suggests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: String,
    pub format: Option<ReportFormat>,
}

/// The usual report locations, as globs over workspace-relative paths.
const USUAL: &[(&str, Option<ReportFormat>)] = &[
    ("**/junit.xml", Some(ReportFormat::Junit)),
    ("**/junit-*.xml", Some(ReportFormat::Junit)),
    ("**/*.junit.xml", Some(ReportFormat::Junit)),
    ("**/report.xml", Some(ReportFormat::Junit)),
    ("**/test-report.xml", Some(ReportFormat::Junit)),
    ("**/test-results.xml", Some(ReportFormat::Junit)),
    // Maven Surefire and Failsafe, Gradle.
    ("**/TEST-*.xml", Some(ReportFormat::Junit)),
    ("**/surefire-reports/*.xml", Some(ReportFormat::Junit)),
    ("**/build/test-results/**/*.xml", Some(ReportFormat::Junit)),
    // cargo-nextest's profiles.
    ("**/target/nextest/**/junit.xml", Some(ReportFormat::Junit)),
    ("**/*.tap", Some(ReportFormat::Tap)),
    ("**/test-results.json", None),
    ("**/test-report.json", None),
    ("**/go-test.json", Some(ReportFormat::GoTestJson)),
    ("**/libtest.json", Some(ReportFormat::LibtestJson)),
];

/// Trees that hold other projects' files, never this run's reports.
const IGNORED: &[&str] = &[
    "**/node_modules/**",
    "**/.git/**",
    "**/vendor/**",
    "**/.venv/**",
];

/// The usual report files among a workspace's files (paths relative to the
/// workspace, `/`-separated), in the order given.
pub fn report_candidates(paths: &[&str]) -> Vec<Candidate> {
    let usual = set(USUAL.iter().map(|(g, _)| *g)).expect("the usual globs are valid");
    let ignored = set(IGNORED.iter().copied()).expect("the ignored globs are valid");
    let mut matches = Vec::new();
    paths
        .iter()
        .filter(|p| !ignored.is_match(p))
        .filter_map(|p| {
            usual.matches_into(p, &mut matches);
            let first = *matches.first()?;
            Some(Candidate {
                path: (*p).to_owned(),
                format: USUAL[first].1,
            })
        })
        .collect()
}

/// A gate's configured `reports:` globs (`*` stays within one directory,
/// `**` crosses them).
#[derive(Debug, Clone, Default)]
pub struct ReportGlobs {
    set: GlobSet,
}

impl ReportGlobs {
    pub fn new(globs: &[&str]) -> Result<Self, ReportError> {
        let mut builder = GlobSetBuilder::new();
        for glob in globs {
            builder.add(compile(glob)?);
        }
        let set = builder.build().map_err(|e| ReportError::BadGlob {
            glob: globs.join(", "),
            reason: e.kind().to_string(),
        })?;
        Ok(Self { set })
    }

    /// Whether `path` matches any glob.
    pub fn is_match(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    /// The paths that match any glob, in the order given.
    pub fn matches<'a>(&self, paths: &[&'a str]) -> Vec<&'a str> {
        paths
            .iter()
            .copied()
            .filter(|p| self.set.is_match(p))
            .collect()
    }
}

fn compile(glob: &str) -> Result<Glob, ReportError> {
    let trimmed = glob.trim().trim_start_matches("./");
    GlobBuilder::new(trimmed)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| ReportError::BadGlob {
            glob: glob.to_owned(),
            reason: e.kind().to_string(),
        })
}

fn set<'a>(globs: impl Iterator<Item = &'a str>) -> Result<GlobSet, ReportError> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        builder.add(compile(glob)?);
    }
    builder.build().map_err(|e| ReportError::BadGlob {
        glob: String::new(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_from_the_first_bytes_then_the_name() {
        let cases: &[(&[u8], &str, Option<ReportFormat>)] = &[
            (
                b"<?xml version=\"1.0\"?><testsuites>",
                "x",
                Some(ReportFormat::Junit),
            ),
            (
                b"\xef\xbb\xbf  <testsuite name=\"a\">",
                "x",
                Some(ReportFormat::Junit),
            ),
            (b"<html><body>", "index.html", None),
            (b"TAP version 14\n1..2\n", "out", Some(ReportFormat::Tap)),
            (b"1..5\nok 1 - adds\n", "out.txt", Some(ReportFormat::Tap)),
            (
                b"{\"Time\":\"t\",\"Action\":\"run\",\"Package\":\"p\"}\n",
                "x",
                Some(ReportFormat::GoTestJson),
            ),
            (
                b"{ \"type\": \"suite\", \"event\": \"started\" }\n",
                "x",
                Some(ReportFormat::LibtestJson),
            ),
            (b"", "results.tap", Some(ReportFormat::Tap)),
            (b"", "TEST-a.xml", Some(ReportFormat::Junit)),
            (b"hello\n", "notes.txt", None),
            (b"\xff\xfe garbage", "bin", None),
        ];
        for (head, name, want) in cases {
            assert_eq!(
                detect_format(head, name),
                *want,
                "{name}: {:?}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn the_usual_report_locations_are_found_and_other_trees_left_out() {
        let paths = [
            "junit.xml",
            "src/lib.rs",
            "target/surefire-reports/TEST-demo.CalcTest.xml",
            "app/build/test-results/test/TEST-a.b.CTest.xml",
            "target/nextest/ci/junit.xml",
            "t/out.tap",
            "node_modules/jest-junit/junit.xml",
            "web/test-results.json",
            "reports/pom.xml",
        ];
        let found: Vec<(String, Option<ReportFormat>)> = report_candidates(&paths)
            .into_iter()
            .map(|c| (c.path, c.format))
            .collect();
        insta::assert_debug_snapshot!(found, @r#"
        [
            (
                "junit.xml",
                Some(
                    Junit,
                ),
            ),
            (
                "target/surefire-reports/TEST-demo.CalcTest.xml",
                Some(
                    Junit,
                ),
            ),
            (
                "app/build/test-results/test/TEST-a.b.CTest.xml",
                Some(
                    Junit,
                ),
            ),
            (
                "target/nextest/ci/junit.xml",
                Some(
                    Junit,
                ),
            ),
            (
                "t/out.tap",
                Some(
                    Tap,
                ),
            ),
            (
                "web/test-results.json",
                None,
            ),
        ]
        "#);
    }

    #[test]
    fn configured_globs_match_within_and_across_directories() {
        let globs = ReportGlobs::new(&["reports/*.xml", "./out/**/*.tap"]).unwrap();
        let paths = [
            "reports/a.xml",
            "reports/deep/b.xml",
            "out/x/y/z.tap",
            "out/z.tap",
            "a.xml",
        ];
        assert_eq!(
            globs.matches(&paths),
            vec!["reports/a.xml", "out/x/y/z.tap", "out/z.tap"]
        );
    }

    #[test]
    fn a_bad_glob_is_refused_with_its_text() {
        let err = ReportGlobs::new(&["reports/[a.xml"]).unwrap_err();
        insta::assert_snapshot!(err, @"`reports/[a.xml` is not a valid report glob: unclosed character class; missing ']'");
    }
}
