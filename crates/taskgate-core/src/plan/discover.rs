//! Test-command discovery (SPEC §2): a leaf with no `tests` is tested with
//! `make test-<id>` when the Makefile has that target, else by project type
//! (`cargo test`, `pytest`, `npm test`, `go test ./...`). The answer always
//! carries the reason, so that the chosen command is shown, never silent.

use super::{Task, TestSpec, DEFAULT_GATE};

/// A read-only view of the repository at the commit a plan comes from. The
/// shell backs it with git (a tree at a commit) or a directory.
pub trait RepoFiles {
    fn exists(&self, path: &str) -> bool;
    fn read(&self, path: &str) -> Option<String>;
}

/// A repository with no files: nothing can be discovered.
pub struct NoFiles;

impl RepoFiles for NoFiles {
    fn exists(&self, _: &str) -> bool {
        false
    }
    fn read(&self, _: &str) -> Option<String> {
        None
    }
}

/// An in-memory repository (tests, plans posted in comments with a file
/// list fetched up front): path → contents.
#[derive(Debug, Clone, Default)]
pub struct MemFiles(pub std::collections::BTreeMap<String, String>);

impl MemFiles {
    pub fn new(files: &[(&str, &str)]) -> Self {
        MemFiles(
            files
                .iter()
                .map(|(p, c)| (p.to_string(), c.to_string()))
                .collect(),
        )
    }
}

impl RepoFiles for MemFiles {
    fn exists(&self, path: &str) -> bool {
        self.0.contains_key(path)
    }
    fn read(&self, path: &str) -> Option<String> {
        self.0.get(path).cloned()
    }
}

/// A discovered command and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Discovered {
    pub cmd: String,
    /// For people: "the Makefile has a `test-data` target".
    pub reason: String,
}

impl Discovered {
    pub fn as_test(&self) -> TestSpec {
        TestSpec {
            cmd: self.cmd.clone(),
            timeout_seconds: None,
            gate: DEFAULT_GATE.into(),
            reports: Vec::new(),
        }
    }
}

/// How a task will be tested.
#[derive(Debug, Clone, PartialEq)]
pub enum EffectiveTests<'p> {
    /// The plan lists the tests.
    Declared(&'p [TestSpec]),
    /// Found in the repository.
    Discovered(Discovered),
    /// `requires_testing: false`, or a parent task (its children are tested).
    NotRequired,
    /// Requires testing, but there is nothing to run: a validation error.
    Missing,
}

pub fn effective_tests<'p>(task: &'p Task, repo: &dyn RepoFiles) -> EffectiveTests<'p> {
    if task.is_parent() || !task.requires_testing {
        EffectiveTests::NotRequired
    } else if !task.acceptance.tests.is_empty() {
        EffectiveTests::Declared(&task.acceptance.tests)
    } else {
        match discover_test_command(task.id.as_str(), repo) {
            Some(d) => EffectiveTests::Discovered(d),
            None => EffectiveTests::Missing,
        }
    }
}

/// Finds the command that tests the task `id`, in SPEC §2's order.
pub fn discover_test_command(id: &str, repo: &dyn RepoFiles) -> Option<Discovered> {
    let target = format!("test-{id}");
    for makefile in ["Makefile", "makefile", "GNUmakefile"] {
        if repo
            .read(makefile)
            .is_some_and(|text| makefile_has_target(&text, &target))
        {
            return Some(Discovered {
                cmd: format!("make {target}"),
                reason: format!("the {makefile} has a `{target}` target"),
            });
        }
    }
    let found = |cmd: &str, reason: &str| {
        Some(Discovered {
            cmd: cmd.into(),
            reason: reason.into(),
        })
    };
    if repo.exists("Cargo.toml") {
        return found("cargo test", "Cargo.toml: a Rust project");
    }
    if let Some(marker) = [
        "pyproject.toml",
        "pytest.ini",
        "setup.py",
        "setup.cfg",
        "tox.ini",
    ]
    .into_iter()
    .find(|p| repo.exists(p))
    {
        return found("pytest", &format!("{marker}: a Python project"));
    }
    if repo
        .read("package.json")
        .is_some_and(|text| package_json_has_test(&text))
    {
        return found("npm test", "package.json has a `test` script");
    }
    if repo.exists("go.mod") {
        return found("go test ./...", "go.mod: a Go project");
    }
    None
}

/// Whether a Makefile defines `target` (`target:`, `a target b:`, but not
/// a variable assignment `target := …`).
pub fn makefile_has_target(makefile: &str, target: &str) -> bool {
    makefile.lines().any(|line| {
        if line.starts_with(['\t', '#', ' ']) {
            return false;
        }
        let Some((names, rest)) = line.split_once(':') else {
            return false;
        };
        if rest.starts_with('=') {
            return false;
        }
        names.split_whitespace().any(|n| n == target)
    })
}

/// npm's generated placeholder script fails on purpose; it is not a test.
fn package_json_has_test(text: &str) -> bool {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return false;
    };
    match json.pointer("/scripts/test").and_then(|v| v.as_str()) {
        Some(script) => !script.contains("no test specified"),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(id: &str, files: &[(&str, &str)]) -> Option<String> {
        discover_test_command(id, &MemFiles::new(files)).map(|d| d.cmd)
    }

    #[test]
    fn makefile_target_wins_over_project_type() {
        let files = MemFiles::new(&[
            ("Makefile", "all:\n\ttrue\ntest-data: build\n\tpytest\n"),
            ("Cargo.toml", ""),
        ]);
        let d = discover_test_command("data", &files).unwrap();
        assert_eq!(d.cmd, "make test-data");
        assert_eq!(d.reason, "the Makefile has a `test-data` target");
    }

    #[test]
    fn makefile_without_the_target_falls_back_to_project_type() {
        let files = [
            ("Makefile", "test-other:\n\ttrue\ntest-data := 1\n"),
            ("pyproject.toml", ""),
        ];
        assert_eq!(cmd("data", &files).as_deref(), Some("pytest"));
    }

    #[test]
    fn makefile_targets_on_one_line_and_recipes_are_told_apart() {
        assert!(makefile_has_target("test-a test-b: deps\n", "test-b"));
        assert!(!makefile_has_target("\ttest-b: not a target\n", "test-b"));
        assert!(!makefile_has_target("# test-b:\n", "test-b"));
        assert!(makefile_has_target("test-b::\n", "test-b"));
    }

    #[test]
    fn project_types_in_spec_order() {
        assert_eq!(
            cmd("x", &[("Cargo.toml", ""), ("go.mod", "")]).as_deref(),
            Some("cargo test")
        );
        assert_eq!(
            cmd("x", &[("setup.py", ""), ("go.mod", "")]).as_deref(),
            Some("pytest")
        );
        let pkg = r#"{"scripts":{"test":"jest"}}"#;
        assert_eq!(
            cmd("x", &[("package.json", pkg), ("go.mod", "")]).as_deref(),
            Some("npm test")
        );
        assert_eq!(
            cmd("x", &[("go.mod", "module x")]).as_deref(),
            Some("go test ./...")
        );
    }

    #[test]
    fn npm_placeholder_test_script_is_not_a_test() {
        let pkg = r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#;
        assert_eq!(cmd("x", &[("package.json", pkg)]), None);
        assert_eq!(cmd("x", &[("package.json", "{not json")]), None);
    }

    #[test]
    fn nothing_to_discover_in_an_empty_repository() {
        assert_eq!(discover_test_command("x", &NoFiles), None);
    }
}
