//! What `taskgate run` runs: the plan (named by `--plan`, by the story's
//! key under `.taskgate/stories/`, or the only one there), its task and the
//! gates asked for, with the repository config beside the plan.
//!
//! Owns: finding and reading the plan and picking the task and its gates,
//! with the refusals that list the choices. Must not: run anything or write
//! the report (`cli/run.rs`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use taskgate::runner::{plan_gates, GateSpec};
use taskgate_core::config::{load_config, RepoConfig, CONFIG_PATH};
use taskgate_core::ids::StoryId;
use taskgate_core::plan::{check_plan, render_problems, render_validation_report, Plan, Task};
use taskgate_core::task::RunSubject;

use super::{RunArgs, STORIES_DIR};
use crate::cli::DirFiles;

/// What `taskgate run` runs: the task's id, its gates, the repo config.
pub(super) struct Loaded {
    pub(super) task: RunSubject,
    pub(super) gates: Vec<GateSpec>,
    pub(super) config: RepoConfig,
}

/// Reads the plan and config (from `--plan-root`) and picks the task and
/// its gates.
pub(super) fn load(args: &RunArgs, root: &Path) -> anyhow::Result<Loaded> {
    let plan_root = match &args.plan_root {
        Some(dir) => root.join(dir),
        None => root.to_owned(),
    };
    let story = args
        .story
        .as_ref()
        .map(StoryId::as_str)
        .filter(|s| !s.is_empty());
    let plan_path = match (&args.plan, story) {
        (Some(p), _) => p.clone(),
        (None, Some(key)) => plan_of_story(&plan_root, key)?,
        (None, None) => only_plan(&plan_root)?,
    };
    let src = std::fs::read_to_string(&plan_path)
        .with_context(|| format!("reading {}", plan_path.display()))?;
    let config_src = match std::fs::read_to_string(plan_root.join(CONFIG_PATH)) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {CONFIG_PATH}")),
    };
    let config = match load_config(config_src.as_deref()) {
        Ok(c) => c,
        Err(problems) => bail!("{}", render_problems(CONFIG_PATH, &problems)),
    };
    // Test-command discovery looks at the plan's side too.
    let files = DirFiles(plan_root.clone());
    let report = check_plan(&plan_path.display().to_string(), &src, &config, &files);
    let Some(plan) = &report.plan else {
        bail!(
            "the plan is not valid:\n{}",
            render_validation_report(std::slice::from_ref(&report))
        );
    };
    let task = pick_task(plan, args.task.as_ref())?;
    let gates = pick_gates(plan_gates(task, &files), args.gates.as_deref())?;
    Ok(Loaded {
        task: RunSubject::Task(task.id.value.clone()),
        gates,
        config,
    })
}

/// The gates named in `--gates` (comma-separated), in plan order; all of
/// them when the list is absent or empty.
fn pick_gates(all: Vec<GateSpec>, wanted: Option<&str>) -> anyhow::Result<Vec<GateSpec>> {
    let wanted: Vec<&str> = wanted
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(all);
    }
    let unknown: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|w| !all.iter().any(|g| g.gate == *w))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = all.iter().map(|g| g.gate.as_str()).collect();
        bail!(
            "the task has no gate {}; its gates: {}",
            unknown
                .iter()
                .map(|g| format!("`{g}`"))
                .collect::<Vec<_>>()
                .join(", "),
            known.join(", ")
        );
    }
    Ok(all
        .into_iter()
        .filter(|g| wanted.contains(&g.gate.as_str()))
        .collect())
}

/// The plan file of story `key` under `root` (a checkout of the default
/// branch). Only `file:` stories have one there: a story planned in a
/// `/taskgate plan` comment (`issue:N`) is refused with what to do instead.
fn plan_of_story(root: &Path, key: &str) -> anyhow::Result<PathBuf> {
    if let Some(issue) = key.strip_prefix("issue:") {
        bail!(
            "story `{key}` was planned in a `/taskgate plan` comment on issue #{issue}, and \
             the actions runner runs only plans committed to the default branch \
             ({STORIES_DIR}/): commit the plan there, or set `runner: local`"
        );
    }
    let Some(name) = key.strip_prefix("file:") else {
        bail!("`{key}` is not a story key (`file:NAME` or `issue:N`)");
    };
    // A plan is a file directly in the stories folder, never a path out of it.
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
        bail!("story `{key}` names no plan file in {STORIES_DIR}/");
    }
    let dir = root.join(STORIES_DIR);
    ["yml", "yaml"]
        .iter()
        .map(|ext| dir.join(format!("{name}.{ext}")))
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "story `{key}` has no plan on the default branch: no {STORIES_DIR}/{name}.yml \
                 (was it removed or renamed since the run was dispatched?)"
            )
        })
}

/// The single plan under `.taskgate/stories/`, or an error listing them.
fn only_plan(root: &Path) -> anyhow::Result<PathBuf> {
    let dir = root.join(STORIES_DIR);
    let mut plans: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    plans.sort();
    match plans.len() {
        1 => Ok(plans.remove(0)),
        0 => bail!("no plan found in {STORIES_DIR}/; pass one with --plan FILE"),
        _ => {
            let names: Vec<String> = plans
                .iter()
                .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
                .collect();
            bail!(
                "{} plans in {STORIES_DIR}/; pick one with --plan: {}",
                plans.len(),
                names.join(", ")
            )
        }
    }
}

/// The task named by `--task`, or the only leaf that requires testing.
fn pick_task<'p>(plan: &'p Plan, id: Option<&RunSubject>) -> anyhow::Result<&'p Task> {
    let testable: Vec<&Task> = plan
        .leaves()
        .into_iter()
        .filter(|t| t.requires_testing)
        .collect();
    let choices = || {
        testable
            .iter()
            .map(|t| t.id.value.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match id {
        // A milestone or a proof is no task of the plan.
        Some(id) => match id.task().and_then(|task| plan.task(task)) {
            Some(t) if !t.is_parent() => Ok(t),
            Some(_) => bail!(
                "task `{id}` is a parent task: its children are tested; pick one of: {}",
                choices()
            ),
            None => bail!(
                "no task `{id}` in the plan; tasks that require testing: {}",
                choices()
            ),
        },
        None if testable.len() == 1 => Ok(testable[0]),
        None if testable.is_empty() => bail!("no task in the plan requires testing"),
        None => bail!(
            "the plan has {} tasks that require testing; pick one with --task: {}",
            testable.len(),
            choices()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::plan::NoFiles;

    fn plan(src: &str) -> Plan {
        check_plan("p.yml", src, &RepoConfig::default(), &NoFiles)
            .plan
            .expect("valid plan")
    }

    #[test]
    fn the_only_testable_leaf_is_picked_and_choices_are_listed() {
        let one = plan("story: s\ntasks:\n  - { id: a, acceptance: { tests: [x] } }\n  - { id: d, requires_testing: false }\n");
        assert_eq!(pick_task(&one, None).unwrap().id.value.as_str(), "a");
        let two = plan("story: s\ntasks:\n  - id: p\n    tasks:\n      - { id: a, acceptance: { tests: [x] } }\n      - { id: b, acceptance: { tests: [y] } }\n");
        let err = pick_task(&two, None).unwrap_err().to_string();
        assert_eq!(
            err,
            "the plan has 2 tasks that require testing; pick one with --task: a, b"
        );
        let task = |id: &str| RunSubject::parse(id).unwrap();
        let err = pick_task(&two, Some(&task("p"))).unwrap_err().to_string();
        assert!(err.contains("`p` is a parent task"), "{err}");
        assert!(pick_task(&two, Some(&task("zz")))
            .unwrap_err()
            .to_string()
            .contains("no task `zz`"));
    }

    #[test]
    fn gates_are_filtered_in_plan_order() {
        let p = plan("story: s\ntasks:\n  - id: a\n    acceptance:\n      tests:\n        - { cmd: x, gate: test }\n        - { cmd: y, gate: lint }\n");
        let task = pick_task(&p, None).unwrap();
        let gates = || plan_gates(task, &NoFiles);
        let names = |g: Vec<GateSpec>| g.into_iter().map(|g| g.gate).collect::<Vec<_>>();
        assert_eq!(names(pick_gates(gates(), None).unwrap()), ["test", "lint"]);
        assert_eq!(
            names(pick_gates(gates(), Some("")).unwrap()),
            ["test", "lint"]
        );
        assert_eq!(
            names(pick_gates(gates(), Some("lint, test")).unwrap()),
            ["test", "lint"]
        );
        assert_eq!(names(pick_gates(gates(), Some("lint")).unwrap()), ["lint"]);
        let err = pick_gates(gates(), Some("lint,e2e"))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "the task has no gate `e2e`; its gates: test, lint");
    }

    #[test]
    fn the_only_plan_file_is_found() {
        let dir = tempfile::tempdir().unwrap();
        assert!(only_plan(dir.path())
            .unwrap_err()
            .to_string()
            .contains("no plan found"));
        let stories = dir.path().join(STORIES_DIR);
        std::fs::create_dir_all(&stories).unwrap();
        std::fs::write(stories.join("a.yml"), "").unwrap();
        assert_eq!(only_plan(dir.path()).unwrap(), stories.join("a.yml"));
        std::fs::write(stories.join("b.yml"), "").unwrap();
        let err = only_plan(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("pick one with --plan: .taskgate/stories/a.yml, .taskgate/stories/b.yml"),
            "{err}"
        );
    }

    #[test]
    fn a_story_key_names_its_plan_file_and_nothing_outside_the_stories_folder() {
        let dir = tempfile::tempdir().unwrap();
        let stories = dir.path().join(STORIES_DIR);
        std::fs::create_dir_all(&stories).unwrap();
        std::fs::write(stories.join("a.yml"), "").unwrap();
        std::fs::write(stories.join("b.yaml"), "").unwrap();
        let plan = |key: &str| plan_of_story(dir.path(), key).map_err(|e| e.to_string());
        assert_eq!(plan("file:a"), Ok(stories.join("a.yml")));
        assert_eq!(plan("file:b"), Ok(stories.join("b.yaml")));
        assert!(plan("file:c")
            .unwrap_err()
            .contains("no .taskgate/stories/c.yml"));
        for bad in ["file:../a", "file:x/a", "file:", "file:.a", "a"] {
            assert!(plan(bad).is_err(), "{bad}");
        }
        insta::assert_snapshot!(plan("issue:12").unwrap_err(), @"story `issue:12` was planned in a `/taskgate plan` comment on issue #12, and the actions runner runs only plans committed to the default branch (.taskgate/stories/): commit the plan there, or set `runner: local`");
    }
}
