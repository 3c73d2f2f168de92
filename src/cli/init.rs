//! `taskgate init`: writes the `actions` runner's workflow, an agent
//! workflow (a role's `agent: { workflow: … }`, given the evidence through
//! `env:`) and a starter repository config into a checkout. Existing files are left alone unless
//! `--force`; then nothing at all is written. The templates live in
//! `templates/` and are compiled in.
//!
//! The workflow's job is taskgate's own GitHub Action (`action.yml` at the
//! root of taskgate's repository), pinned to this binary's version: the
//! server reads only reports of its own format. The repository is
//! `Cargo.toml`'s `repository`, or `--action-repo` for a fork or a mirror.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use taskgate_core::config::CONFIG_PATH;

/// Where the runner workflow goes; its name is `runner_workflow`'s default.
pub const WORKFLOW_PATH: &str = ".github/workflows/taskgate-run.yml";
pub const WORKFLOW_TEMPLATE: &str = include_str!("../../templates/taskgate-run.yml");
/// Where the template's `uses:` names the action; replaced by
/// `OWNER/NAME@vVERSION`.
const ACTION_PLACEHOLDER: &str = "TASKGATE_ACTION";
pub const CONFIG_TEMPLATE: &str = include_str!("../../templates/taskgate.yml");
/// Where the agent workflow goes: a role's `agent: { workflow:
/// taskgate-agent.yml }` dispatches it with the evidence.
pub const AGENT_WORKFLOW_PATH: &str = ".github/workflows/taskgate-agent.yml";
pub const AGENT_WORKFLOW_TEMPLATE: &str = include_str!("../../templates/taskgate-agent.yml");

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// The repository checkout to write into.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Overwrite the files if they exist.
    #[arg(long)]
    pub force: bool,
    /// The GitHub repository (OWNER/NAME) whose taskgate action the workflow
    /// uses, at this version's tag; default: taskgate's own repository.
    #[arg(long, value_name = "OWNER/NAME")]
    pub action_repo: Option<String>,
}

/// The repository of taskgate's action: `Cargo.toml`'s `repository`.
pub fn default_action_repo() -> &'static str {
    let url = env!("CARGO_PKG_REPOSITORY");
    let url = url.strip_prefix("https://github.com/").unwrap_or(url);
    let url = url.trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url)
}

/// The workflow `init` writes: the template using `repo`'s action at this
/// version's tag (`v0.1.0`), as the release workflow tags it.
pub fn render_workflow(repo: &str) -> String {
    let action = format!("{repo}@v{}", env!("CARGO_PKG_VERSION"));
    WORKFLOW_TEMPLATE.replace(ACTION_PLACEHOLDER, &action)
}

/// `OWNER/NAME`, each part a GitHub name (letters, digits, `-`, `_`, `.`).
fn check_repo(repo: &str) -> anyhow::Result<()> {
    let part = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match repo.split_once('/') {
        Some((owner, name)) if part(owner) && part(name) => Ok(()),
        _ => bail!("--action-repo: `{repo}` is not a GitHub repository OWNER/NAME"),
    }
}

/// Writes the files; returns what to print.
pub fn run(args: &InitArgs) -> anyhow::Result<String> {
    let repo = args.action_repo.as_deref().unwrap_or(default_action_repo());
    check_repo(repo)?;
    let workflow = render_workflow(repo);
    let files = [
        (WORKFLOW_PATH, workflow.as_str()),
        (AGENT_WORKFLOW_PATH, AGENT_WORKFLOW_TEMPLATE),
        (CONFIG_PATH, CONFIG_TEMPLATE),
    ];
    let existing: Vec<&str> = files
        .iter()
        .map(|(rel, _)| *rel)
        .filter(|rel| args.dir.join(rel).exists())
        .collect();
    if !existing.is_empty() && !args.force {
        bail!(
            "{} already exist{}; nothing was written. Pass --force to overwrite.",
            and_list(&existing),
            if existing.len() == 1 { "s" } else { "" }
        );
    }
    let mut out = String::new();
    for (rel, content) in files {
        write(&args.dir.join(rel), content)?;
        let verb = if existing.contains(&rel) {
            "overwrote"
        } else {
            "wrote"
        };
        out.push_str(&format!("{verb} {rel}\n"));
    }
    out.push_str(
        "\nNext: commit these files to the default branch. Tests run on the taskgate \
         server by default;\nset `runner: actions` in .github/taskgate.yml to run them \
         with the workflow instead.\nA role whose agent is `{ workflow: taskgate-agent.yml }` \
         gets the evidence of each failure there:\nreplace its last step with your coding agent.\n",
    );
    Ok(out)
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn write(path: &Path, content: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, content).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate::runner::actions::{REPORT_ARTIFACT, REPORT_FILE, WORKFLOW_INPUTS};
    use taskgate_core::config::{load_config, parse_config, RepoConfig};

    /// The composite action the workflow uses (taskgate's repository root).
    const ACTION: &str = include_str!("../../action.yml");

    fn init(dir: &Path, force: bool) -> anyhow::Result<String> {
        run(&InitArgs {
            dir: dir.to_owned(),
            force,
            action_repo: None,
        })
    }

    fn workflow() -> String {
        render_workflow(default_action_repo())
    }

    #[test]
    fn init_writes_the_workflow_and_the_starter_config() {
        let dir = tempfile::tempdir().unwrap();
        insta::assert_snapshot!(init(dir.path(), false).unwrap(), @r"
        wrote .github/workflows/taskgate-run.yml
        wrote .github/workflows/taskgate-agent.yml
        wrote .github/taskgate.yml

        Next: commit these files to the default branch. Tests run on the taskgate server by default;
        set `runner: actions` in .github/taskgate.yml to run them with the workflow instead.
        A role whose agent is `{ workflow: taskgate-agent.yml }` gets the evidence of each failure there:
        replace its last step with your coding agent.
        ");
        let read = |rel: &str| std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert_eq!(read(WORKFLOW_PATH), workflow());
        assert_eq!(read(AGENT_WORKFLOW_PATH), AGENT_WORKFLOW_TEMPLATE);
        assert_eq!(read(CONFIG_PATH), CONFIG_TEMPLATE);
    }

    #[test]
    fn init_refuses_to_overwrite_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join(CONFIG_PATH);
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(&config, "runner: actions\n").unwrap();
        let err = init(dir.path(), false).unwrap_err().to_string();
        insta::assert_snapshot!(err, @".github/taskgate.yml already exists; nothing was written. Pass --force to overwrite.");
        assert!(!dir.path().join(WORKFLOW_PATH).exists());
        assert_eq!(
            std::fs::read_to_string(&config).unwrap(),
            "runner: actions\n"
        );
    }

    #[test]
    fn init_force_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        init(dir.path(), false).unwrap();
        std::fs::write(dir.path().join(WORKFLOW_PATH), "old").unwrap();
        let err = init(dir.path(), false).unwrap_err().to_string();
        assert!(
            err.starts_with(
                ".github/workflows/taskgate-run.yml, .github/workflows/taskgate-agent.yml and .github/taskgate.yml already exist;"
            ),
            "{err}"
        );
        insta::assert_snapshot!(init(dir.path(), true).unwrap().lines().take(3).collect::<Vec<_>>().join("\n"), @r"
        overwrote .github/workflows/taskgate-run.yml
        overwrote .github/workflows/taskgate-agent.yml
        overwrote .github/taskgate.yml
        ");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(WORKFLOW_PATH)).unwrap(),
            workflow()
        );
    }

    #[test]
    fn the_starter_config_loads_cleanly_and_states_the_defaults() {
        let (config, problems) = parse_config(CONFIG_TEMPLATE);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config, RepoConfig::default());
        assert_eq!(load_config(Some(CONFIG_TEMPLATE)).unwrap(), config);
        // Editors check it against the published schema.
        assert_eq!(
            CONFIG_TEMPLATE.lines().next(),
            Some(taskgate_core::schema::modeline("config").as_str())
        );
        // Every top-level key is shown, the unset ones as comments.
        for key in [
            "runner:",
            "runner_workflow:",
            "runner_network:",
            "roles:",
            "routing:",
            "limits:",
            "review:",
            "allow_self_approval:",
            "auto_fix:",
            "merge_method:",
            "ship_label:",
            "# deploy_workflow:",
            "# validation_workflow:",
            "commands:",
        ] {
            assert!(CONFIG_TEMPLATE.lines().any(|l| l.starts_with(key)), "{key}");
        }
    }

    #[test]
    fn the_workflow_uses_the_action_at_this_version() {
        let v = env!("CARGO_PKG_VERSION");
        assert_eq!(WORKFLOW_TEMPLATE.matches(ACTION_PLACEHOLDER).count(), 1);
        assert_eq!(default_action_repo(), "taskgate/taskgate");
        let line = |w: &str| {
            w.lines()
                .find(|l| l.trim_start().starts_with("uses:"))
                .unwrap()
                .trim()
                .replace(v, "X.Y.Z")
        };
        assert_eq!(line(&workflow()), "uses: taskgate/taskgate@vX.Y.Z");
        assert_eq!(
            line(&render_workflow("acme/taskgate-fork")),
            "uses: acme/taskgate-fork@vX.Y.Z"
        );
        let dir = tempfile::tempdir().unwrap();
        let with = |repo: &str| {
            run(&InitArgs {
                dir: dir.path().to_owned(),
                force: true,
                action_repo: Some(repo.into()),
            })
        };
        assert!(with("acme/fork").is_ok());
        let read = std::fs::read_to_string(dir.path().join(WORKFLOW_PATH)).unwrap();
        assert!(read.contains(&format!("uses: acme/fork@v{v}\n")));
        for bad in ["acme", "acme/", "a/b/c", "acme/x y", "../x"] {
            let err = with(bad).unwrap_err().to_string();
            assert!(
                err.contains("is not a GitHub repository OWNER/NAME"),
                "{bad}: {err}"
            );
        }
    }

    /// The workflow as `init` writes it (the version hidden).
    #[test]
    fn the_workflow_as_written() {
        let v = env!("CARGO_PKG_VERSION");
        insta::assert_snapshot!(workflow().replace(v, "X.Y.Z"));
    }

    /// The names a workflow's `workflow_dispatch` declares, in order.
    fn input_names<'a>(inputs: &'a saphyr::Yaml<'a>) -> Vec<&'a str> {
        inputs
            .as_mapping()
            .expect("inputs")
            .keys()
            .filter_map(|k| k.as_str())
            .collect()
    }

    #[test]
    fn the_workflow_matches_what_the_runner_dispatches_and_reads() {
        use saphyr::LoadableYamlNode;
        let doc = saphyr::Yaml::load_from_str(&workflow()).expect("valid YAML");
        let root = &doc[0];
        let inputs = &root["on"]["workflow_dispatch"]["inputs"];
        let names = input_names(inputs);
        assert_eq!(names, WORKFLOW_INPUTS);
        assert!(names.len() <= 10, "older GitHub servers accept 10 inputs");
        // The job hands every input to the action, which takes each.
        let steps = root["jobs"]["run"]["steps"].as_sequence().unwrap();
        assert_eq!(steps.len(), 1);
        let with = steps[0]["with"].as_mapping().expect("with");
        for name in WORKFLOW_INPUTS {
            let value = with
                .iter()
                .find(|(k, _)| k.as_str() == Some(name))
                .and_then(|(_, v)| v.as_str());
            assert_eq!(value, Some(format!("${{{{ inputs.{name} }}}}").as_str()));
        }
        let action = saphyr::Yaml::load_from_str(ACTION).expect("valid YAML");
        let action = &action[0];
        for name in WORKFLOW_INPUTS {
            assert!(!action["inputs"][name].is_badvalue(), "action input {name}");
        }
        let upload = action["runs"]["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|s| {
                s.as_mapping_get("uses")
                    .and_then(|u| u.as_str())
                    .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
            })
            .expect("an upload step");
        assert_eq!(upload["with"]["name"].as_str(), Some(REPORT_ARTIFACT));
        // Out of the task code's reach, under the runner's temp folder; the
        // artifact's entry is named after the file.
        let path = upload["with"]["path"].as_str().unwrap();
        assert!(path.starts_with("${{ runner.temp }}/"), "{path}");
        assert!(path.ends_with(&format!("/{REPORT_FILE}")), "{path}");
        assert_eq!(upload["if"].as_str(), Some("always()"));
        let default_workflow = RepoConfig::default().runner_workflow;
        assert!(WORKFLOW_PATH.ends_with(&default_workflow));
    }

    #[test]
    fn the_agent_workflow_as_written() {
        insta::assert_snapshot!(AGENT_WORKFLOW_TEMPLATE);
    }

    /// It declares what taskgate dispatches, and the evidence (output of
    /// the code under test) reaches its scripts only through `env:`.
    #[test]
    fn the_agent_workflow_takes_the_evidence_through_env_only() {
        use saphyr::LoadableYamlNode;
        use taskgate_core::failure::AGENT_INPUTS;
        let doc = saphyr::Yaml::load_from_str(AGENT_WORKFLOW_TEMPLATE).expect("valid YAML");
        let root = &doc[0];
        let inputs = &root["on"]["workflow_dispatch"]["inputs"];
        let names = input_names(inputs);
        assert_eq!(names, AGENT_INPUTS);
        assert_eq!(inputs["evidence"]["required"].as_bool(), Some(false));
        let steps = root["jobs"]["agent"]["steps"].as_sequence().unwrap();
        let mut evidence_in_env = false;
        for step in steps {
            if let Some(run) = step.as_mapping_get("run").and_then(|r| r.as_str()) {
                assert!(!run.contains("${{"), "an expression inside a script: {run}");
            }
            let env = step.as_mapping_get("env").and_then(|e| e.as_mapping());
            evidence_in_env |= env.is_some_and(|env| {
                env.values()
                    .any(|v| v.as_str() == Some("${{ inputs.evidence }}"))
            });
        }
        assert!(evidence_in_env, "the evidence reaches a step through env");
        let (config, problems) =
            parse_config("roles:\n  coder: { agent: { workflow: taskgate-agent.yml } }\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(AGENT_WORKFLOW_PATH.ends_with(
            config.roles["coder"]
                .agent
                .as_ref()
                .and_then(taskgate_core::config::AgentRoute::workflow)
                .expect("a workflow agent")
        ));
    }
}
