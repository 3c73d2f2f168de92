//! Owns: the plans tests push to main, built rather than written out:
//! `Plan::story("Checked work").task(Task::check()).yaml()`.
//! Must not: validate (taskgate's plan sync does, and its tests give it
//! hand-written YAML, errors and all, in `plan/sync.rs` and `fixtures/`).
//!
//! The YAML is the block form the suite always wrote by hand, so a built
//! plan is byte for byte the one it replaces.

use std::fmt::Write;

/// A story's plan file (`.taskgate/stories/*.yml`).
#[must_use]
pub struct Plan {
    story: String,
    settings: Option<String>,
    milestones: Vec<Milestone>,
    tasks: Vec<Task>,
}

/// An integration milestone: `cmd` run on the story branch once the tasks
/// `after` names are complete.
struct Milestone {
    id: String,
    after: Vec<String>,
    cmd: String,
}

/// One task of a [`Plan`], with its acceptance tests.
#[must_use]
pub struct Task {
    id: String,
    title: String,
    role: Option<String>,
    depends_on: Vec<String>,
    tests: Vec<Test>,
    required_tests: Vec<String>,
    /// `requires_testing: false`: done by hand, no tests.
    untested: bool,
}

struct Test {
    cmd: String,
    gate: Option<String>,
    timeout_seconds: Option<u32>,
}

/// The timeout a test gets unless the task says otherwise.
const TIMEOUT_SECONDS: u32 = 20;

impl Plan {
    /// A plan for the story titled `title`, with no tasks yet.
    pub fn story(title: &str) -> Plan {
        Plan {
            story: title.to_owned(),
            settings: None,
            milestones: Vec::new(),
            tasks: Vec::new(),
        }
    }

    pub fn task(mut self, task: Task) -> Plan {
        self.tasks.push(task);
        self
    }

    /// The story's `settings:`, as the entries of its mapping
    /// (`"auto_fix: false"`).
    pub fn settings(mut self, settings: &str) -> Plan {
        self.settings = Some(settings.to_owned());
        self
    }

    /// An integration milestone `id` running `cmd` (within 20 s) once the
    /// tasks `after` are complete.
    pub fn milestone(mut self, id: &str, after: &[&str], cmd: &str) -> Plan {
        self.milestones.push(Milestone {
            id: id.to_owned(),
            after: after.iter().map(|a| (*a).to_owned()).collect(),
            cmd: cmd.to_owned(),
        });
        self
    }

    pub fn yaml(&self) -> String {
        let mut out = format!("\nstory: {}\n", self.story);
        if let Some(settings) = &self.settings {
            let _ = writeln!(out, "settings: {{ {settings} }}");
        }
        if !self.milestones.is_empty() {
            out.push_str("integration:\n");
        }
        for m in &self.milestones {
            let _ = writeln!(
                out,
                "  - {{ id: {}, after: [{}], cmd: {:?}, timeout_seconds: {TIMEOUT_SECONDS} }}",
                m.id,
                m.after.join(", "),
                m.cmd
            );
        }
        out.push_str("tasks:\n");
        for task in &self.tasks {
            task.write(&mut out);
        }
        out
    }
}

impl Task {
    /// Task `id` titled `title`, with no tests yet.
    pub fn new(id: &str, title: &str) -> Task {
        Task {
            id: id.to_owned(),
            title: title.to_owned(),
            role: None,
            depends_on: Vec::new(),
            tests: Vec::new(),
            required_tests: Vec::new(),
            untested: false,
        }
    }

    /// Task `id` titled `title`, done by hand: `requires_testing: false`.
    pub fn untested(id: &str, title: &str) -> Task {
        Task {
            untested: true,
            ..Task::new(id, title)
        }
    }

    /// The task a [`super::story::Story`] pushes to: `check`, "Make the
    /// check pass", accepted by `sh check.sh`.
    pub fn check() -> Task {
        Task::new("check", "Make the check pass").runs("sh check.sh")
    }

    /// An acceptance test running `cmd`, within the suite's 20 s.
    pub fn runs(mut self, cmd: &str) -> Task {
        self.tests.push(Test {
            cmd: cmd.to_owned(),
            gate: None,
            timeout_seconds: Some(TIMEOUT_SECONDS),
        });
        self
    }

    /// The last test reports as gate `name` (else `test`).
    pub fn gate(mut self, name: &str) -> Task {
        self.last_test().gate = Some(name.to_owned());
        self
    }

    /// The last test may run `seconds`.
    pub fn timeout_seconds(mut self, seconds: u32) -> Task {
        self.last_test().timeout_seconds = Some(seconds);
        self
    }

    /// The last test names no timeout (taskgate's default applies).
    pub fn no_timeout(mut self) -> Task {
        self.last_test().timeout_seconds = None;
        self
    }

    /// The task goes to role `role` (`roles:` in the repository config).
    pub fn role(mut self, role: &str) -> Task {
        self.role = Some(role.to_owned());
        self
    }

    /// Tests that must be among those a run reports (`required_tests`).
    pub fn required_tests(mut self, names: &[&str]) -> Task {
        self.required_tests = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    pub fn depends_on(mut self, id: &str) -> Task {
        self.depends_on.push(id.to_owned());
        self
    }

    fn last_test(&mut self) -> &mut Test {
        self.tests.last_mut().expect("a test, from `runs`, first")
    }

    fn write(&self, out: &mut String) {
        if self.untested {
            let (id, title) = (&self.id, &self.title);
            let _ = writeln!(
                out,
                "  - {{ id: {id}, title: {title}, requires_testing: false }}"
            );
            return;
        }
        let _ = writeln!(out, "  - id: {}\n    title: {}", self.id, self.title);
        if let Some(role) = &self.role {
            let _ = writeln!(out, "    role: {role}");
        }
        if !self.depends_on.is_empty() {
            let _ = writeln!(out, "    depends_on: [{}]", self.depends_on.join(", "));
        }
        out.push_str("    acceptance:\n      tests:\n");
        for test in &self.tests {
            let _ = write!(out, "        - {{ cmd: {:?}", test.cmd);
            if let Some(gate) = &test.gate {
                let _ = write!(out, ", gate: {gate}");
            }
            if let Some(seconds) = test.timeout_seconds {
                let _ = write!(out, ", timeout_seconds: {seconds}");
            }
            out.push_str(" }\n");
        }
        if !self.required_tests.is_empty() {
            let names: Vec<String> = self
                .required_tests
                .iter()
                .map(|n| format!("{n:?}"))
                .collect();
            let _ = writeln!(out, "      required_tests: [{}]", names.join(", "));
        }
    }
}
