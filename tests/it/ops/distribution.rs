//! How taskgate is installed and run by its users (issue 23): the composite
//! GitHub Action's script steps, played here as the runner would run them,
//! give a report the server accepts; `taskgate --version` names the commit;
//! the README's install section names only commands and flags that exist.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use saphyr::{LoadableYamlNode, Yaml};
use taskgate::runner::actions::{read_report_zip, ArtifactLimits};
use taskgate_core::ids::CommitSha;

const ACTION: &str = include_str!("../../../action.yml");
const README: &str = include_str!("../../../README.md");
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// `${{ inputs.x }}`, `${{ github.x }}` and `${{ runner.x }}` filled in as
/// the runner does.
fn expand(value: &str, inputs: &BTreeMap<&str, &str>, github: &BTreeMap<&str, &str>) -> String {
    let mut out = value.to_owned();
    while let Some(start) = out.find("${{") {
        let end = start + out[start..].find("}}").expect("closed expression") + 2;
        let expr = out[start + 3..end - 2].trim();
        let value = match expr.split_once('.') {
            Some(("inputs", name)) => inputs.get(name).copied().unwrap_or(""),
            Some(("github", name)) => github.get(name).copied().unwrap_or(""),
            Some(("runner", name)) => github
                .get(format!("runner.{name}").as_str())
                .copied()
                .unwrap_or(""),
            _ => panic!("an expression the test does not play: {expr}"),
        };
        out.replace_range(start..end, value);
    }
    out
}

fn str_of<'a>(step: &'a Yaml, key: &str) -> Option<&'a str> {
    step.as_mapping_get(key).and_then(|v| v.as_str())
}

/// One run of the action, played on this machine: where the runner's
/// folders are, and what the job dispatched.
struct Job {
    dir: tempfile::TempDir,
    inputs: BTreeMap<&'static str, &'static str>,
    github: BTreeMap<&'static str, String>,
}

impl Job {
    fn new(story: &'static str, task: &'static str, gates: &'static str) -> Job {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("runner-temp");
        std::fs::create_dir_all(&temp).unwrap();
        let inputs = BTreeMap::from([
            ("story", story),
            ("task", task),
            ("sha", SHA),
            ("gates", gates),
            ("run_id", "attempt=1"),
            ("version", ""),
        ]);
        let github = BTreeMap::from([
            ("action_repository", "taskgate/taskgate".to_owned()),
            ("action_ref", "v0.0.0-test".to_owned()),
            ("runner.temp", temp.display().to_string()),
        ]);
        Job {
            dir,
            inputs,
            github,
        }
    }

    /// The default branch's checkout (plan and config).
    fn default_branch(&self) -> std::path::PathBuf {
        self.dir.path().join("default-branch")
    }

    /// The commit under test's checkout.
    fn under_test(&self) -> std::path::PathBuf {
        self.dir.path().join("under-test")
    }

    fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("workspace")
    }

    fn expand(&self, value: &str) -> String {
        let github = self.github.iter().map(|(k, v)| (*k, v.as_str())).collect();
        expand(value, &self.inputs, &github)
    }

    /// The file the upload step uploads.
    fn uploaded_file(&self) -> std::path::PathBuf {
        let doc = Yaml::load_from_str(ACTION).expect("action.yml is YAML");
        let steps = doc[0]["runs"]["steps"].as_sequence().expect("steps");
        let upload = steps
            .iter()
            .find(|s| str_of(s, "uses").is_some_and(|u| u.starts_with("actions/upload-artifact@")))
            .expect("an upload step");
        self.workspace()
            .join(self.expand(upload["with"]["path"].as_str().unwrap()))
    }

    /// Plays every step as the runner would (the install steps excepted:
    /// the just-built binary and this machine's bubblewrap stand in),
    /// calling `after_run` once the script steps ran; the artifacts
    /// uploaded, by name.
    fn play(&self, after_run: impl FnOnce(&Path)) -> BTreeMap<String, Vec<u8>> {
        let doc = Yaml::load_from_str(ACTION).expect("action.yml is YAML");
        let action = &doc[0];
        assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
        let workspace = self.workspace();
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_taskgate")).parent().unwrap();
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
        let mut after_run = Some(after_run);
        let mut artifacts: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut ran_scripts = 0;
        for step in action["runs"]["steps"].as_sequence().expect("steps") {
            let with = |key: &str| {
                step["with"]
                    .as_mapping_get(key)
                    .map(|v| self.expand(v.as_str().unwrap_or("")))
            };
            if let Some(uses) = str_of(step, "uses") {
                let target = workspace.join(with("path").unwrap_or_default());
                if uses.starts_with("actions/checkout@") {
                    let source = match with("ref").as_deref() {
                        Some(SHA) => self.under_test(),
                        None => self.default_branch(),
                        Some(other) => panic!("checkout of {other}"),
                    };
                    copy_dir(&source, &target);
                } else if uses.starts_with("actions/upload-artifact@") {
                    assert_eq!(str_of(step, "if"), Some("always()"));
                    if let Some(after_run) = after_run.take() {
                        after_run(&workspace);
                    }
                    let file = workspace.join(with("path").unwrap());
                    let name = file.file_name().unwrap().to_str().unwrap().to_owned();
                    artifacts.insert(
                        with("name").unwrap(),
                        zip_of(&name, &std::fs::read(&file).unwrap()),
                    );
                } else {
                    panic!("a step the test does not play: {uses}");
                }
                continue;
            }
            let script = str_of(step, "run").expect("a run step");
            assert_eq!(
                str_of(step, "shell"),
                Some("bash"),
                "every script says its shell"
            );
            // Every script parses, the install steps' included.
            let syntax = Command::new("bash")
                .args(["-n", "-c", script])
                .status()
                .unwrap();
            assert!(syntax.success(), "bash -n: {script}");
            if matches!(str_of(step, "id"), Some("install" | "sandbox")) {
                continue;
            }
            let mut cmd = Command::new("bash");
            // GitHub's `shell: bash`.
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
                .current_dir(workspace.join(str_of(step, "working-directory").unwrap_or(".")))
                .env_clear()
                .env("PATH", &path)
                .env("HOME", self.dir.path())
                .env("GITHUB_WORKSPACE", &workspace)
                .env("RUNNER_TEMP", &self.github["runner.temp"])
                .env("GITHUB_SHA", "ffffffffffffffffffffffffffffffffffffffff")
                .env("RUST_LOG", "warn");
            if let Some(env) = step["env"].as_mapping() {
                for (k, v) in env {
                    cmd.env(k.as_str().unwrap(), self.expand(v.as_str().unwrap()));
                }
            }
            let out = cmd.output().unwrap();
            ran_scripts += 1;
            eprintln!(
                "{script}\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.code().is_some(), "the step ran to its end");
        }
        assert_eq!(ran_scripts, 1, "the run step");
        artifacts
    }
}

#[test]
fn the_actions_script_steps_played_as_the_runner_give_a_report_the_server_accepts() {
    let job = Job::new("file:b", "t", "test");
    // What each checkout step would check out: the default branch (its
    // plan) and the commit under test (with a plan of its own, never run).
    write(
        &job.default_branch().join(".taskgate/stories/a.yml"),
        "story: a\ntasks:\n  - id: t\n    acceptance:\n      tests: ['touch ran-a']\n",
    );
    write(
        &job.default_branch().join(".taskgate/stories/b.yml"),
        "story: b\ntasks:\n  - id: t\n    acceptance:\n      tests:\n        - { cmd: 'test -f src.txt', gate: test }\n        - { cmd: 'false', gate: lint }\n",
    );
    write(&job.under_test().join("src.txt"), "code under test\n");
    write(
        &job.under_test().join(".taskgate/stories/b.yml"),
        "story: b\ntasks:\n  - id: t\n    acceptance:\n      tests: ['touch pwned']\n",
    );

    let artifacts = job.play(|_| {});
    assert!(
        !job.workspace().join("tested/pwned").exists(),
        "the tested commit's plan did not run"
    );

    let zip = &artifacts["taskgate-report"];
    let report = read_report_zip(
        zip,
        &taskgate_core::task::RunSubject::Task("t".into()),
        &CommitSha::parse(SHA).unwrap(),
        ArtifactLimits::default(),
    )
    .expect("the server accepts the report");
    let gates: Vec<&str> = report.gates.iter().map(|g| g.gate.as_str()).collect();
    assert_eq!(
        gates,
        ["test"],
        "only the dispatched gate of the dispatched story ran"
    );
    assert!(report.passed());
}

/// Task code that leaves a process behind: it holds `lock` while it lives,
/// waits for taskgate to write the report, overwrites it with `forged.json`
/// (every gate passed) and says so in `forged`. The gate itself fails.
const FORGER: &str = r#"exec 9>lock
setsid sh -c '
  flock 9
  touch locked
  # allowed sleep: polls taskgate's report, which ends it.
  until grep -q "\"gates\"" "$1" 2>/dev/null; do sleep 0.01; done
  cat forged.json > "$1"
  touch forged
' forger "$REPORT" &
# allowed sleep: polls the forger's start.
until [ -e locked ]; do sleep 0.01; done
exit 1
"#;

#[test]
fn a_process_task_code_leaves_behind_cannot_rewrite_the_report_before_its_upload() {
    let job = Job::new("file:s", "check", "test");
    write(
        &job.default_branch().join(".taskgate/stories/s.yml"),
        "story: s\ntasks:\n  - id: check\n    acceptance:\n      tests:\n        - { cmd: 'sh forge.sh', gate: test }\n",
    );
    // The forger aims at the very file the upload step reads.
    let report_path = job.uploaded_file();
    write(
        &job.under_test().join("forge.sh"),
        &format!("REPORT='{}'\n{FORGER}", report_path.display()),
    );
    let passed = crate::support::actions::report(SHA, &[("test", true)]);
    write(
        &job.under_test().join("forged.json"),
        &serde_json::to_string(&passed).unwrap(),
    );

    let outlived = std::cell::Cell::new(false);
    let artifacts = job.play(|workspace| {
        let tested = workspace.join("tested");
        assert!(tested.join("locked").exists(), "the forger started");
        // A forger still alive holds its lock: wait for it to have done
        // its work (its `forged` file), so the upload reads the outcome.
        let free = Command::new("flock")
            .args(["-n", "lock", "true"])
            .current_dir(&tested)
            .status()
            .unwrap()
            .success();
        outlived.set(!free);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !free && !tested.join("forged").exists() && std::time::Instant::now() < deadline {
            // allowed sleep: a bounded poll (30 s) for the forger's end.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });

    let report = read_report_zip(
        &artifacts["taskgate-report"],
        &taskgate_core::task::RunSubject::Task("check".into()),
        &CommitSha::parse(SHA).unwrap(),
        ArtifactLimits::default(),
    )
    .expect("the server accepts the report");
    assert!(
        !report.passed(),
        "the true report, not the forged one: {report:#?}"
    );
    assert!(
        !outlived.get(),
        "no process of the task outlived the run step"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn zip_of(name: &str, bytes: &[u8]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file(name, options).unwrap();
    zip.write_all(bytes).unwrap();
    zip.finish().unwrap().into_inner()
}

fn taskgate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("the taskgate binary runs")
}

#[test]
fn version_names_the_release_and_the_commit() {
    let out = taskgate(&["--version"]);
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let prefix = format!("taskgate {} (commit ", env!("CARGO_PKG_VERSION"));
    let commit = line
        .trim_end()
        .strip_prefix(&prefix)
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{commit}"
    );
}

/// The README's "Install" section, up to the next `## ` heading.
fn install_section() -> &'static str {
    let start = README.find("\n## Install\n").expect("an Install section") + 1;
    let rest = &README[start + 3..];
    &README[start..start + 3 + rest.find("\n## ").unwrap_or(rest.len())]
}

#[test]
fn the_readmes_install_section_names_commands_and_flags_that_exist() {
    let section = install_section();
    let mut checked = 0;
    for line in section.lines() {
        // Commands in the code blocks: `taskgate SUB --flag ...`.
        let Some(cmd) = line.trim().strip_prefix("taskgate ") else {
            continue;
        };
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let (sub, flags): (Vec<&str>, Vec<&str>) = match words.first() {
            Some(w) if w.starts_with("--") => (vec![], words),
            _ => (words[..1].to_vec(), words[1..].to_vec()),
        };
        let mut help_args = sub.clone();
        help_args.push("--help");
        let help = taskgate(&help_args);
        assert!(
            help.status.success(),
            "taskgate {}: no such command",
            sub.join(" ")
        );
        let help = String::from_utf8_lossy(&help.stdout);
        for flag in flags.iter().filter(|f| f.starts_with("--")) {
            let flag = flag.split('=').next().unwrap();
            assert!(
                help.contains(flag),
                "taskgate {} has no {flag}",
                sub.join(" ")
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 3,
        "the section names the flags it relies on:\n{section}"
    );
    // The Action and the image are named as the release publishes them.
    let v = env!("CARGO_PKG_VERSION");
    assert!(
        section.contains(&format!("uses: taskgate/taskgate@v{v}")),
        "{section}"
    );
    assert!(
        section.contains(&format!("ghcr.io/taskgate/taskgate:{v}")),
        "{section}"
    );
    assert!(section.contains(&format!("taskgate-v{v}-x86_64-unknown-linux-gnu.tar.gz")));
}

/// The deployment example (README, "Several replicas"): every replica runs
/// `serve` on the one PostgreSQL database, after a `migrate`, and the
/// proxy spreads requests over every replica.
#[test]
fn the_compose_example_runs_every_replica_on_one_postgres_behind_the_proxy() {
    let compose = include_str!("../../../deploy/compose.yaml");
    let nginx = include_str!("../../../deploy/nginx.conf");
    let docs = Yaml::load_from_str(compose).unwrap();
    let services = &docs[0]["services"];
    // A key of a service, or of the mapping it merges in (`<<: *taskgate`).
    fn field<'a, 'y>(service: &'a Yaml<'y>, key: &str) -> Option<&'a Yaml<'y>> {
        let merged = || service.as_mapping_get("<<")?.as_mapping_get(key);
        service.as_mapping_get(key).or_else(merged)
    }
    let url = |service: &Yaml| {
        field(service, "environment")?["DATABASE_URL"]
            .as_str()
            .map(str::to_owned)
    };
    let replicas: Vec<&str> = services
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(|k| k.as_str())
        .filter(|name| name.starts_with("taskgate-"))
        .collect();
    assert_eq!(replicas, ["taskgate-1", "taskgate-2"]);
    let shared = url(&services["migrate"]).unwrap();
    assert!(shared.starts_with("postgres://"), "{shared}");
    assert_eq!(services["migrate"]["command"][0].as_str(), Some("migrate"));
    for name in &replicas {
        let replica = &services[*name];
        assert_eq!(url(replica).as_deref(), Some(shared.as_str()), "{name}");
        let command = field(replica, "command").unwrap();
        assert_eq!(command[0].as_str(), Some("serve"), "{name}");
        assert!(
            nginx.contains(&format!("server {name}:3000")),
            "the proxy does not reach {name}"
        );
    }
}
