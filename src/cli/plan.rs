//! `taskgate plan validate|show`.

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
        /// Print the problems as JSON.
        #[arg(long)]
        json: bool,
        /// The repository root (for the config and test-command discovery).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
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
        PlanCommand::Validate { files, json, repo } => validate(&files, json, &repo),
        PlanCommand::Show {
            file,
            mermaid,
            repo,
        } => show(&file, mermaid, &repo),
    }
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
