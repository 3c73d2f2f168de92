//! The gates of a ship's proof (`RunSubject::ShipProof`): every leaf
//! task's gates and every integration milestone, resolved with the plan's
//! files exactly as their own runs resolve them, under the names
//! `ship/<task>/<gate>` and `ship/integration-<id>`; a ship train's car
//! of several stories runs every story's, each under `ship/<story>/…`.

use std::collections::BTreeMap;

use super::local::{plan_gates, GateSpec};
use taskgate_core::plan::{parse_plan, MemFiles, Plan, RepoFiles};
use taskgate_core::ship::proof_gate;
use taskgate_core::sync::StoryPlan;
use taskgate_core::task::milestone::milestone_task;

/// Every gate the story's proof runs, in plan order then milestones;
/// only those named in `only` (the repository's `ship_gates`) when it is
/// not empty.
pub fn proof_gates(plan: &Plan, files: &dyn RepoFiles, only: &[String]) -> Vec<GateSpec> {
    let wanted = |gate: &str| only.is_empty() || only.iter().any(|g| g == gate);
    let mut out = Vec::new();
    for walked in plan.walk() {
        if walked.task.is_parent() {
            continue;
        }
        for mut gate in plan_gates(walked.task, files) {
            if wanted(&gate.gate) {
                gate.gate = proof_gate(walked.task.id.value.as_str(), &gate.gate);
                out.push(gate);
            }
        }
    }
    for milestone in &plan.integration {
        for mut gate in plan_gates(&milestone_task(milestone), files) {
            if wanted(&gate.gate) {
                gate.gate = format!("ship/{}", gate.gate);
                out.push(gate);
            }
        }
    }
    out
}

/// Every gate a car's proof runs: each story's [`proof_gates`], from its
/// own plan and files, in the car's order. A car of one story runs them
/// under the one-story proof's names; a car of several prefixes each
/// with its story (`ship/<story>/<task>/<gate>`), since two stories'
/// plans may name the same task and gate.
pub fn car_proof_gates(
    stories: &[(&str, &Plan, &dyn RepoFiles)],
    only: &[String],
) -> Vec<GateSpec> {
    if let [(_, plan, files)] = stories {
        return proof_gates(plan, *files, only);
    }
    let mut out = Vec::new();
    for (story, plan, files) in stories {
        for mut gate in proof_gates(plan, *files, only) {
            let inner = gate.gate.strip_prefix("ship/").unwrap_or(&gate.gate);
            gate.gate = format!("ship/{story}/{inner}");
            out.push(gate);
        }
    }
    out
}

/// [`car_proof_gates`] of the stories as stored: each story's plan and
/// files. A story whose stored plan no longer parses adds no gate (its
/// sync refused that plan and said so); it cannot be in a car, whose
/// stories were all proven once.
pub fn stored_car_proof_gates(stories: &[StoryPlan], only: &[String]) -> Vec<GateSpec> {
    let parsed: Vec<(&str, Plan, MemFiles)> = stories
        .iter()
        .filter_map(|s| {
            let plan = parse_plan(&s.plan).0?;
            Some((s.story.as_str(), plan, MemFiles(s.files.clone())))
        })
        .collect();
    let car: Vec<(&str, &Plan, &dyn RepoFiles)> = parsed
        .iter()
        .map(|(story, plan, files)| (*story, plan, files as &dyn RepoFiles))
        .collect();
    car_proof_gates(&car, only)
}

/// The gates of a rollback's revert: the repository's `rollback_gates`,
/// one gate each (`rollback/1`, `rollback/2`, …).
pub fn rollback_gates(commands: &[String]) -> Vec<GateSpec> {
    commands
        .iter()
        .enumerate()
        .map(|(i, cmd)| {
            let gate = format!("rollback/{}", i + 1);
            GateSpec {
                tests: vec![taskgate_core::plan::TestSpec {
                    cmd: cmd.clone(),
                    timeout_seconds: None,
                    gate: gate.clone(),
                    reports: Vec::new(),
                }],
                ..GateSpec::named(&gate)
            }
        })
        .collect()
}

/// A digest of the gates a story's proof runs, as its stored `plan`
/// (parsed; `None` when it no longer parses) and `files` define them
/// now: what a ship train keys its remembered proofs by
/// (`Train::with_gates`), so a tree a looser definition passed is proven
/// again. Taken over the resolved gates' debug form: a new taskgate
/// version may change it, which costs one proof again.
pub fn gates_digest(plan: Option<&Plan>, files: &BTreeMap<String, String>) -> String {
    use sha2::{Digest, Sha256};
    let resolved = match plan {
        Some(plan) => format!("{:?}", proof_gates(plan, &MemFiles(files.clone()), &[])),
        None => "the stored plan does not parse".to_owned(),
    };
    hex::encode(&Sha256::digest(resolved.as_bytes())[..12])
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::plan::{parse_plan, MemFiles};

    #[test]
    fn a_proof_runs_every_leaf_gate_and_every_milestone() {
        let (plan, problems) = parse_plan(
            "story: S\nintegration:\n  - { id: smoke, after: [data], cmd: 'sh smoke.sh' }\ntasks:\n  - id: data\n    title: D\n    acceptance: { tests: [{ cmd: 'true', gate: unit }, { cmd: 'true', gate: lint }] }\n  - id: docs\n    title: Docs\n    requires_testing: false\n  - id: group\n    title: G\n    tasks:\n      - { id: entry, title: E, acceptance: { tests: [{ cmd: 'true' }] } }\n",
        );
        let plan = plan.unwrap_or_else(|| panic!("{problems:?}"));
        let names = |only: &[&str]| -> Vec<String> {
            let only: Vec<String> = only.iter().map(|g| (*g).to_owned()).collect();
            proof_gates(&plan, &MemFiles::default(), &only)
                .into_iter()
                .map(|g| g.gate)
                .collect()
        };
        assert_eq!(
            names(&[]),
            [
                "ship/data/unit",
                "ship/data/lint",
                "ship/entry/test",
                "ship/integration-smoke"
            ]
        );
        // `ship_gates: [unit, integration-smoke]`: those only.
        assert_eq!(
            names(&["unit", "integration-smoke"]),
            ["ship/data/unit", "ship/integration-smoke"]
        );
    }

    #[test]
    fn the_gates_digest_moves_with_a_gate_definition_not_with_a_title() {
        let digest = |title: &str, cmd: &str| {
            let text = format!("story: S\ntasks:\n  - {{ id: core, title: {title}, acceptance: {{ tests: [{{ cmd: '{cmd}', gate: unit }}] }} }}\n");
            let plan = parse_plan(&text).0.expect("plan parses");
            gates_digest(Some(&plan), &BTreeMap::new())
        };
        let loose = digest("Core", "pytest -q");
        assert_eq!(loose, digest("The core", "pytest -q"));
        assert_ne!(loose, digest("Core", "pytest -q --strict"));
        assert_ne!(loose, gates_digest(None, &BTreeMap::new()));
    }

    #[test]
    fn a_car_of_several_stories_runs_each_story_gates_under_its_name() {
        let parse = |text: &str| parse_plan(text).0.expect("plan parses");
        let a = parse("story: A\ntasks:\n  - { id: core, title: C, acceptance: { tests: [{ cmd: 'true', gate: unit }] } }\n");
        let b = parse("story: B\ntasks:\n  - { id: core, title: C, acceptance: { tests: [{ cmd: 'false', gate: unit }] } }\n");
        let files = MemFiles::default();
        let names = |stories: &[(&str, &Plan, &dyn RepoFiles)]| -> Vec<String> {
            car_proof_gates(stories, &[])
                .into_iter()
                .map(|g| g.gate)
                .collect()
        };
        // One story: the one-story proof's names.
        assert_eq!(names(&[("a", &a, &files)]), ["ship/core/unit"]);
        assert_eq!(
            names(&[("a", &a, &files), ("b", &b, &files)]),
            ["ship/a/core/unit", "ship/b/core/unit"]
        );
    }
}
