//! The defaults are the product (issue 33): `taskgate serve` started as the
//! README says — a fresh directory as its working directory, `.env` as
//! `setup` writes it, only the README's variables, the default work
//! directory and database — takes a task to a green check run. And the
//! same with the container image's defaults (`/data`), read from the
//! Dockerfile, as far as that can be done without building the image.
//!
//! Nothing here names a path for taskgate: the runner's workspaces, its
//! mirrors and the SQLite file land where the defaults put them, relative
//! ones included, and commits are fetched over git's smart HTTP from the
//! web host of `GITHUB_API_URL` with the installation token, as from
//! github.com.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use fakehub::FakeGitHub;

use crate::support::{free_port, INSTALLATION, REPO, SECRET};

const PLAN: &str = r#"
story: Greeting
tasks:
  - id: hello
    title: Say hello
    acceptance:
      tests:
        - { cmd: "grep -q hello hello.txt", timeout_seconds: 30 }
"#;

/// A `taskgate serve` process, killed when dropped; its stderr kept for
/// the failure message.
struct Served {
    child: Child,
    log: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls `found` until it gives something, for at most two minutes (a
    /// real process, a real sandbox, a real fetch); fails with the
    /// server's log.
    async fn wait_for<T>(&self, what: &str, mut found: impl FnMut() -> Option<T>) -> T {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            if let Some(t) = found() {
                return t;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}\n--- taskgate's log ---\n{}",
                self.log()
            );
            // allowed sleep: a bounded poll (two minutes).
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// Starts the real binary in `cwd` with a cleared environment: `PATH` and
/// `HOME` as a shell has them, then `vars`.
fn serve_in(cwd: &Path, vars: &[(&str, String)]) -> Served {
    let log = cwd.join("serve.log");
    let child = Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .arg("serve")
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::var("HOME").unwrap_or_default())
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start taskgate serve");
    Served { child, log }
}

/// `.env` as `taskgate setup` writes it, the key beside it.
fn write_setup_env(dir: &Path, fake: &FakeGitHub) {
    std::fs::write(
        dir.join("taskgate-test.private-key.pem"),
        FakeGitHub::private_key_pem(),
    )
    .unwrap();
    // A relative key path: what a user who moves the file next to `.env`
    // writes; setup itself writes an absolute one.
    std::fs::write(
        dir.join(".env"),
        format!(
            "APP_ID={}\nPRIVATE_KEY_PATH=taskgate-test.private-key.pem\nWEBHOOK_SECRET=\"{SECRET}\"\n",
            fake.app_id()
        ),
    )
    .unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "octocat")
        .env("GIT_AUTHOR_EMAIL", "octocat@example.com")
        .env("GIT_COMMITTER_NAME", "octocat")
        .env("GIT_COMMITTER_EMAIL", "octocat@example.com")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// A repository whose commits are real (its first one made by git),
/// served over smart HTTP.
fn backed_repo(fake: &FakeGitHub, dir: &Path) -> fakehub::RepoHandle {
    let bare = dir.join("origin.git");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(dir, &["init", "--bare", "-q", "-b", "main", "origin.git"]);
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("README.md"), "# hello-world\n").unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "Initial commit"]);
    git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
    let repo = fake.install(INSTALLATION, REPO);
    repo.back_with_git(&bare);
    repo
}

/// The plan pushed to main, then the agent's work to the task branch:
/// the task's gate goes green on that commit.
async fn a_task_goes_green(fake: &FakeGitHub, repo: &fakehub::RepoHandle, served: &Served) {
    fake.set_permission("octocat", "write");
    repo.push_files(
        "main",
        &[(".taskgate/stories/greeting.yml", PLAN)],
        "Plan",
        "octocat",
    );
    let branch = served
        .wait_for("the task issue and its branch", || {
            repo.issues()
                .into_iter()
                .find(|i| i.title == "Say hello")
                .map(|i| format!("taskgate/task-{}-hello", i.number))
                .filter(|b| repo.branch_sha(b).is_some())
        })
        .await;
    let sha = repo.push_files(&branch, &[("hello.txt", "hello\n")], "Say it", "agent");
    let ours = |c: &fakehub::CheckRun| c.head_sha == sha && c.name.starts_with("taskgate/");
    let runs = served
        .wait_for("the task's check runs completed", || {
            let runs: Vec<_> = repo.check_runs().into_iter().filter(ours).collect();
            (!runs.is_empty() && runs.iter().all(|c| c.status == "completed")).then_some(runs)
        })
        .await;
    assert!(
        runs.iter()
            .all(|c| c.conclusion.as_deref() == Some("success")),
        "the task's check runs on {sha}: {runs:#?}\n--- taskgate's log ---\n{}",
        served.log()
    );
}

/// The README's variables beyond `.env`: where GitHub is (a test server,
/// as for GitHub Enterprise) and where to listen.
fn readme_vars(fake: &FakeGitHub, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("GITHUB_API_URL", fake.url()),
        ("HOST", "127.0.0.1".into()),
        ("PORT", port.to_string()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_started_as_the_readme_says_takes_a_task_to_green() {
    let fake = FakeGitHub::start().await;
    let git = tempfile::tempdir().unwrap();
    let repo = backed_repo(&fake, git.path());
    let cwd = tempfile::tempdir().unwrap();
    write_setup_env(cwd.path(), &fake);
    let port = free_port();
    let served = serve_in(cwd.path(), &readme_vars(&fake, port));
    fake.set_app_webhook(&format!("http://127.0.0.1:{port}/webhook"), SECRET);
    a_task_goes_green(&fake, &repo, &served).await;
    // The defaults, relative to where it was started.
    assert!(cwd.path().join("taskgate.db").is_file());
    assert!(cwd.path().join("taskgate-work/mirrors").is_dir());
}

/// The image's `ENV` lines and `WORKDIR`, with `/data` (its volume) moved
/// to `volume`.
fn image_defaults(volume: &Path) -> (PathBuf, Vec<(String, String)>) {
    let dockerfile = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Dockerfile"))
        .expect("the Dockerfile");
    let runtime = dockerfile
        .rsplit_once("\nFROM ")
        .map(|(_, stage)| stage)
        .expect("a runtime stage");
    let joined = runtime.replace("\\\n", " ");
    let data = volume.display().to_string();
    let mut vars = Vec::new();
    let mut workdir = None;
    for line in joined.lines().map(str::trim) {
        if let Some(env) = line.strip_prefix("ENV ") {
            for pair in env.split_whitespace() {
                let (k, v) = pair.split_once('=').expect("ENV K=V");
                vars.push((k.to_owned(), v.replace("/data", &data)));
            }
        } else if let Some(dir) = line.strip_prefix("WORKDIR ") {
            workdir = Some(PathBuf::from(dir.replace("/data", &data)));
        }
    }
    (workdir.expect("a WORKDIR"), vars)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_the_container_images_defaults_takes_a_task_to_green() {
    let fake = FakeGitHub::start().await;
    let git = tempfile::tempdir().unwrap();
    let repo = backed_repo(&fake, git.path());
    let volume = tempfile::tempdir().unwrap();
    let (workdir, image) = image_defaults(volume.path());
    assert!(
        image.iter().any(|(k, _)| k == "TASKGATE_WORK_DIR"),
        "{image:?}"
    );
    std::fs::create_dir_all(&workdir).unwrap();
    let port = free_port();
    let mut vars: Vec<(&str, String)> = image
        .iter()
        .filter(|(k, _)| k != "HOST" && k != "PORT")
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    // The operator's `-e` flags of the README's `docker run`.
    vars.extend([
        ("APP_ID", fake.app_id().to_string()),
        ("PRIVATE_KEY", FakeGitHub::private_key_pem().to_owned()),
        ("WEBHOOK_SECRET", SECRET.to_owned()),
    ]);
    vars.extend(readme_vars(&fake, port));
    let served = serve_in(&workdir, &vars);
    fake.set_app_webhook(&format!("http://127.0.0.1:{port}/webhook"), SECRET);
    a_task_goes_green(&fake, &repo, &served).await;
    assert!(volume.path().join("taskgate.db").is_file());
    assert!(volume.path().join("work/mirrors").is_dir());
}
