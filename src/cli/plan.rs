//! `taskgate plan validate|show|new`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use taskgate_core::config::{load_config, RepoConfig, CONFIG_PATH};
use taskgate_core::plan::{
    check_plan, render_mermaid, render_problems, render_tree, render_validation_report, Problem,
};

use super::DirFiles;

#[derive(Subcommand)]
pub enum PlanCommand {
    /// Check plan files; lists every problem as file:line:column, exits 1 on any error.
    Validate {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// `json`: the reports as JSON, each problem with its line, column
        /// and JSON pointer.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Same as `--format json`.
        #[arg(long, hide = true)]
        json: bool,
        /// The repository root (for the config and test-command discovery).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
    },
    /// Write a new plan with one task (`.taskgate/stories/<id>.yml`) and validate it.
    New {
        /// The story's title.
        title: String,
        /// The repository root to write into.
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Overwrite the file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Print a plan's task tree with states and dependencies.
    Show {
        file: PathBuf,
        /// Print a Mermaid dependency graph instead.
        #[arg(long)]
        mermaid: bool,
        #[arg(long, default_value = ".")]
        repo: PathBuf,
    },
}

/// Runs the command; returns the process exit code.
pub fn run(command: PlanCommand) -> anyhow::Result<i32> {
    match command {
        PlanCommand::Validate {
            files,
            format,
            json,
            repo,
        } => validate(&files, json || format == Format::Json, &repo),
        PlanCommand::New { title, repo, force } => {
            let (text, code) = new(&title, &repo, force)?;
            print!("{text}");
            Ok(code)
        }
        PlanCommand::Show {
            file,
            mermaid,
            repo,
        } => show(&file, mermaid, &repo),
    }
}

/// How `plan validate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Writes the starter plan for `title` and validates it; returns what to
/// print and the exit code.
pub fn new(title: &str, repo: &Path, force: bool) -> anyhow::Result<(String, i32)> {
    let starter = taskgate_core::plan::starter::starter(title);
    let path = repo.join(&starter.path);
    if path.exists() && !force {
        anyhow::bail!(
            "{} already exists; nothing was written. Pass --force to overwrite.",
            starter.path
        );
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, &starter.text).with_context(|| format!("writing {}", path.display()))?;
    let config = repo_config(repo)?.unwrap_or_default();
    let report = check_plan(
        &starter.path,
        &starter.text,
        &config,
        &DirFiles(repo.to_owned()),
    );
    let text = format!(
        "wrote {}\n{}",
        starter.path,
        render_validation_report(std::slice::from_ref(&report))
    );
    Ok((text, if report.is_ok() { 0 } else { 1 }))
}

/// The repository's config, or the problems that keep it from loading.
fn repo_config(repo: &Path) -> anyhow::Result<Result<RepoConfig, Vec<Problem>>> {
    let path = repo.join(CONFIG_PATH);
    let src = match std::fs::read_to_string(&path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    Ok(load_config(src.as_deref()))
}

fn validate(files: &[PathBuf], json: bool, repo: &Path) -> anyhow::Result<i32> {
    let config = match repo_config(repo)? {
        Ok(config) => config,
        Err(problems) => {
            eprint!("{}", render_problems(CONFIG_PATH, &problems));
            return Ok(1);
        }
    };
    let dir = DirFiles(repo.to_owned());
    let mut reports = Vec::new();
    for file in files {
        let src =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        reports.push(check_plan(&file.display().to_string(), &src, &config, &dir));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        print!("{}", render_validation_report(&reports));
    }
    Ok(if reports.iter().all(|r| r.is_ok()) {
        0
    } else {
        1
    })
}

fn show(file: &Path, mermaid: bool, repo: &Path) -> anyhow::Result<i32> {
    let config = match repo_config(repo)? {
        Ok(config) => config,
        Err(problems) => {
            eprint!("{}", render_problems(CONFIG_PATH, &problems));
            return Ok(1);
        }
    };
    let dir = DirFiles(repo.to_owned());
    let src =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let report = check_plan(&file.display().to_string(), &src, &config, &dir);
    let Some(plan) = &report.plan else {
        eprint!(
            "{}",
            render_validation_report(std::slice::from_ref(&report))
        );
        return Ok(1);
    };
    // Outside the server nothing has run yet: every task shows as pending.
    let states = HashMap::new();
    if mermaid {
        print!("{}", render_mermaid(plan, &states));
    } else {
        print!("{}", render_tree(plan, &states, &dir));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_new_writes_a_valid_plan_and_refuses_to_overwrite_it() {
        let dir = tempfile::tempdir().unwrap();
        let (out, code) = new("Export daily reports", dir.path(), false).unwrap();
        assert_eq!(code, 0);
        insta::assert_snapshot!(out);
        let written = std::fs::read_to_string(
            dir.path()
                .join(".taskgate/stories/export-daily-reports.yml"),
        )
        .unwrap();
        assert!(written.starts_with("# yaml-language-server: $schema="));
        let err = new("Export daily reports", dir.path(), false).unwrap_err();
        insta::assert_snapshot!(err.to_string());
        assert_eq!(new("Export daily reports", dir.path(), true).unwrap().1, 0);
    }
}
