//! Findings as check-run annotations: GitHub's shape, each finding once,
//! paths only inside the repository.
//!
//! Owns: [`Annotation`], [`relative_path`] (the one rule for "is this path
//! in the repository"), the per-request batches and the per-gate cap with
//! its count of what was left out. Must not: do IO or decide a gate's
//! verdict (a command's level comes from [`excused_by_quarantine`]).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::text::{clip_middle, one_line};
use super::{evidence, excused_by_quarantine, GateResult, MAX_ANNOTATIONS_PER_GATE};
use crate::classify::neutralize_mentions;

/// GitHub accepts at most this many annotations per check-run request.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// A check-run annotation, in GitHub's field names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub annotation_level: AnnotationLevel,
    pub message: String,
    pub title: Option<String>,
}

/// Annotations in the chunks GitHub accepts per request.
pub fn annotation_batches(annotations: &[Annotation]) -> Vec<&[Annotation]> {
    annotations.chunks(ANNOTATIONS_PER_REQUEST).collect()
}

/// `path` relative to the repository root, or `None` when it lies outside:
/// the `workspace` prefix and a leading `./` are stripped; absolute paths
/// and paths with `..` are refused.
pub fn relative_path(path: &str, workspace: &str) -> Option<String> {
    let ws = workspace.trim_end_matches('/');
    let mut rel = match path.strip_prefix(ws) {
        Some(rest) if !ws.is_empty() && rest.starts_with('/') => &rest[1..],
        _ => path,
    };
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest;
    }
    let inside = !rel.is_empty()
        && !rel.starts_with('/')
        && !rel.contains('\\')
        && rel.split('/').all(|c| c != ".." && !c.is_empty());
    inside.then(|| rel.to_string())
}

/// The gate's findings as annotations, each once, at most
/// [`MAX_ANNOTATIONS_PER_GATE`], and how many distinct ones were left out.
/// One pass; duplicates are found by hash, not by search.
pub(super) fn gate_annotations(gate: &GateResult, workspace: &str) -> (Vec<Annotation>, usize) {
    let mut out: Vec<Annotation> = Vec::new();
    let mut seen: HashSet<Annotation> = HashSet::new();
    let mut left_out = 0;
    let mut add = |a: Annotation| {
        if seen.contains(&a) {
            return;
        }
        if out.len() < MAX_ANNOTATIONS_PER_GATE {
            out.push(a.clone());
        } else {
            left_out += 1;
        }
        seen.insert(a);
    };
    if let Some(tests) = &gate.tests {
        evidence::test_annotations(tests, workspace).for_each(&mut add);
    }
    for c in &gate.commands {
        let Some(class) = &c.classification else {
            continue;
        };
        // A command the quarantine excused did not fail its gate.
        let level = if c.passed() || excused_by_quarantine(c, gate.tests.as_ref()) {
            AnnotationLevel::Warning
        } else {
            AnnotationLevel::Failure
        };
        let title = clip_middle(&format!("{}: {}", class.kind, one_line(&c.cmd)), 255);
        for f in &class.findings {
            let Some(path) = relative_path(&f.path, workspace) else {
                continue;
            };
            let line = f.line.max(1);
            let a = Annotation {
                path,
                start_line: line,
                end_line: line,
                annotation_level: level,
                message: neutralize_mentions(&f.message),
                title: Some(title.clone()),
            };
            add(a);
        }
    }
    (out, left_out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Finding;
    use crate::report::fixtures::failing_gate;
    use crate::report::render_check_output;

    #[test]
    fn relative_paths_stay_inside_the_repository() {
        assert_eq!(
            relative_path("/ws/a/src/x.rs", "/ws/a/").as_deref(),
            Some("src/x.rs")
        );
        assert_eq!(
            relative_path("./src/x.rs", "/ws/a").as_deref(),
            Some("src/x.rs")
        );
        assert_eq!(relative_path("/ws/ab/x.rs", "/ws/a"), None);
        assert_eq!(relative_path("src/../../x.rs", ""), None);
        assert_eq!(relative_path("/etc/passwd", "/ws/a"), None);
    }

    #[test]
    fn a_gate_with_200000_findings_gets_at_most_150_distinct_annotations() {
        let mut gate = failing_gate();
        let class = gate.commands[2].classification.as_mut().unwrap();
        // Every finding twice: duplicates are dropped before the cap counts.
        class.findings = (0..200_000)
            .map(|i| Finding {
                path: format!("src/m{}.py", i / 2),
                line: 1,
                column: None,
                message: "E501".into(),
            })
            .collect();
        let out = render_check_output(&gate, "");
        assert_eq!(out.annotations.len(), MAX_ANNOTATIONS_PER_GATE);
        let paths: Vec<&str> = out.annotations.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(paths[..3], ["src/m0.py", "src/m1.py", "src/m2.py"]);
        assert_eq!(paths[149], "src/m149.py");
        assert!(
            out.summary
                .ends_with("99850 more findings not shown as annotations (at most 150 a gate)."),
            "{}",
            out.summary
        );
    }

    #[test]
    fn annotations_go_in_batches_of_fifty() {
        let a = Annotation {
            path: "a".into(),
            start_line: 1,
            end_line: 1,
            annotation_level: AnnotationLevel::Notice,
            message: "m".into(),
            title: None,
        };
        let all = vec![a; 120];
        let sizes: Vec<usize> = annotation_batches(&all).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, vec![50, 50, 20]);
    }
}
