//! `taskgate doctor [OWNER/REPO]`: what a repository needs for taskgate,
//! printed with what to change and where (`core::doctor` decides, the
//! shell's `app::doctor` reads GitHub). Without a repository, the one the
//! current directory's `origin` remote names.

use anyhow::{bail, Context};
use taskgate::app::doctor::Doctor;
use taskgate::github::{AppCredentials, GitHubApp};
use taskgate::runner::sandbox::disk::{DiskFloor, FreeSpace};
use taskgate::runner::Isolation;
use taskgate_core::doctor::render_terminal;
use taskgate_core::ids::RepoName;

/// What `doctor` needs besides the App's credentials.
pub struct DoctorRun {
    pub app_id: u64,
    pub private_key_pem: String,
    pub github_api_url: String,
    pub repo: Option<String>,
}

/// Prints the report; the exit code is 1 when something stops taskgate.
pub async fn run(args: DoctorRun) -> anyhow::Result<i32> {
    let repo = match &args.repo {
        Some(name) => RepoName::parse(name).map_err(anyhow::Error::msg)?,
        None => origin_repo()?,
    };
    let creds = AppCredentials::from_pem(args.app_id, &args.private_key_pem)?;
    let github = GitHubApp::new(&args.github_api_url, creds);
    let isolation = Isolation::from_env();
    let floor = disk_floor()?;
    let doctor = Doctor {
        github: &github,
        api_url: &args.github_api_url,
        now_s: chrono::Utc::now().timestamp(),
        isolation: &isolation,
        host: "this host",
        floor: &floor,
    };
    let report = doctor.report(&repo).await;
    print!("{}", render_terminal(&report));
    Ok(if report.blocks() { 1 } else { 0 })
}

/// The runner's free-space floor as `taskgate serve` reads it from the
/// same environment: `TASKGATE_MIN_FREE_MIB` under `TASKGATE_WORK_DIR`.
fn disk_floor() -> anyhow::Result<DiskFloor> {
    let min_free_mib = match std::env::var("TASKGATE_MIN_FREE_MIB") {
        Ok(v) => v
            .trim()
            .parse()
            .with_context(|| format!("TASKGATE_MIN_FREE_MIB={v} is not a whole number of MiB"))?,
        Err(_) => taskgate_core::host_disk::DEFAULT_MIN_FREE_MIB,
    };
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let work_dir = std::env::var_os("TASKGATE_WORK_DIR").unwrap_or_else(|| "taskgate-work".into());
    let work_dir = super::paths::absolute_in(&cwd, std::path::Path::new(&work_dir));
    // The folder itself may not exist yet: its nearest existing parent.
    let dir = work_dir
        .ancestors()
        .find(|p| p.exists())
        .map_or(cwd, std::path::Path::to_owned);
    Ok(DiskFloor {
        min_free_mib,
        free: FreeSpace::Disk(dir),
    })
}

/// The repository the `origin` remote of the current directory names.
fn origin_repo() -> anyhow::Result<RepoName> {
    let git = git2::Repository::discover(".")
        .context("no OWNER/REPO given, and the current directory is not in a git repository")?;
    let origin = git
        .find_remote("origin")
        .context("no OWNER/REPO given, and this repository has no `origin` remote")?;
    let url = origin.url().unwrap_or_default();
    match repo_of_remote(url) {
        Some(repo) => Ok(repo),
        None => bail!("no OWNER/REPO given, and `origin` ({url}) names no GitHub repository"),
    }
}

/// `owner/name` of a remote URL: `https://github.com/o/r(.git)`,
/// `git@github.com:o/r.git`, `ssh://git@host/o/r`.
fn repo_of_remote(url: &str) -> Option<RepoName> {
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/')?.1,
        None => url.split_once(':')?.1,
    };
    let path = path.trim_end_matches('/').trim_end_matches(".git");
    let mut parts = path.rsplit('/');
    let (name, owner) = (parts.next()?, parts.next()?);
    RepoName::parse(&format!("{owner}/{name}")).ok()
}

#[cfg(test)]
mod tests {
    use super::repo_of_remote;

    #[test]
    fn the_repository_of_each_form_of_remote() {
        let repo = |url| repo_of_remote(url).map(|r| r.to_string());
        for url in [
            "https://github.com/octo-org/hello-world.git",
            "https://github.com/octo-org/hello-world",
            "git@github.com:octo-org/hello-world.git",
            "ssh://git@ghe.example.com/octo-org/hello-world.git",
        ] {
            assert_eq!(repo(url).as_deref(), Some("octo-org/hello-world"), "{url}");
        }
        assert_eq!(repo("/srv/git/project"), None);
    }
}
