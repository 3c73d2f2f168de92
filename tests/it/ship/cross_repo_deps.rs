//! A run's dependency from another repository of the installation (issue
//! 49 step 6), at the runner: fetched from the fake GitHub over git's
//! smart HTTP with the installation's token, checked out read-only at
//! `deps/<id>`, its proven commit in `TASKGATE_DEP_<ID>_SHA`. The run
//! queue does not hand jobs their dependencies yet
//! (docs/decisions/cross-repo.md, "What the wiring needs next").

use std::path::Path;
use std::time::Duration;

use fakehub::FakeGitHub;
use taskgate::app::loops::run_queue::GitSource;
use taskgate::github::{AppCredentials, GitHubApp};
use taskgate::runner::local::Checkout;
use taskgate::runner::{DepSource, GateSpec, LocalRunner, MirrorStore, RunOptions};
use taskgate_core::classify::FailureKind;
use taskgate_core::ids::{CommitSha, InstallationId, RepoName, TaskId};
use taskgate_core::plan::TestSpec;
use taskgate_core::report::RunReport;
use taskgate_core::task::{RunDep, RunSubject};

use crate::support::origin::git;
use crate::support::CheckedFake;

const INSTALLATION: u64 = 61;

/// `full_name` installed in `installation`, backed by a real bare
/// repository whose `main` has one commit of `files`.
fn backed(
    fake: &FakeGitHub,
    dir: &Path,
    installation: u64,
    full_name: &str,
    files: &[(&str, &str)],
) -> fakehub::RepoHandle {
    let slug = full_name.replace('/', "-");
    let (bare, work) = (dir.join(format!("{slug}.git")), dir.join(&slug));
    std::fs::create_dir_all(&work).unwrap();
    git(
        dir,
        &["init", "--bare", "-q", "-b", "main", bare.to_str().unwrap()],
    );
    git(&work, &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        let p = work.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&work, &["add", "."]);
    git(&work, &["commit", "-q", "-m", "start"]);
    git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
    let repo = fake.install(installation, full_name);
    repo.back_with_git(&bare);
    repo
}

fn gate(cmd: &str) -> Vec<GateSpec> {
    vec![GateSpec {
        tests: vec![TestSpec {
            cmd: cmd.into(),
            gate: "test".into(),
            timeout_seconds: None,
            reports: Vec::new(),
        }],
        ..GateSpec::named("test")
    }]
}

struct Scene {
    fake: CheckedFake,
    tmp: tempfile::TempDir,
    mirrors: MirrorStore,
    source: GitSource,
    token: String,
}

impl Scene {
    async fn start() -> Scene {
        let fake = CheckedFake::start().await;
        let tmp = tempfile::tempdir().unwrap();
        let creds = AppCredentials::from_pem(fake.app_id(), FakeGitHub::private_key_pem()).unwrap();
        let source = GitSource::for_api(&fake.url());
        // Installed before the token is minted: the token is for the
        // installation's repositories.
        backed(
            &fake,
            tmp.path(),
            INSTALLATION,
            "acme/web",
            &[("app.js", "x")],
        );
        let token = GitHubApp::new(&fake.url(), creds)
            .installation_token(InstallationId::new(INSTALLATION))
            .await
            .unwrap();
        Scene {
            mirrors: MirrorStore::new(tmp.path().join("mirrors")),
            fake,
            tmp,
            source,
            token,
        }
    }

    fn url(&self, repo: &str) -> String {
        self.source.url_template.replace("{repo}", repo)
    }

    fn dep(&self, repo: &str, sha: &str) -> DepSource {
        DepSource {
            dep: RunDep {
                task: TaskId::new("api"),
                repo: RepoName::parse(repo).unwrap(),
                sha: CommitSha::parse(sha).unwrap(),
            },
            mirror: self.mirrors.mirror(repo).unwrap(),
            url: self.url(repo),
            token: Some(self.token.clone()),
        }
    }

    async fn run(&self, deps: Vec<DepSource>, cmd: &str) -> RunReport {
        let web = self.fake.repo("acme/web");
        let sha = web.branch_sha("main").unwrap();
        let options = RunOptions {
            default_timeout: Duration::from_secs(30),
            rerun_failures: false,
            sha: Some(sha),
            isolation: crate::support::hold::isolation(),
            ..RunOptions::default()
        };
        LocalRunner::new(1)
            .run_commit(
                Checkout {
                    mirror: &self.mirrors.mirror("acme/web").unwrap(),
                    url: self.url("acme/web"),
                    token: Some(self.token.clone()),
                    workspaces: self.tmp.path().join("ws"),
                    deps,
                },
                RunSubject::Task("web".into()),
                gate(cmd),
                options,
                |_| {},
            )
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_gate_reads_the_dependency_of_another_repository_at_its_proven_commit() {
    let scene = Scene::start().await;
    let api = backed(
        &scene.fake,
        scene.tmp.path(),
        INSTALLATION,
        "acme/payments-api",
        &[("schema/intent.json", "v1")],
    );
    let proven = api.branch_sha("main").unwrap();
    // The default branch moves on: the run still gets the proven commit.
    api.push_files("main", &[("schema/intent.json", "v2")], "later", "octocat");
    let cmd = r#"echo "schema: $(cat deps/api/schema/intent.json)"
        echo "sha: $TASKGATE_DEP_API_SHA"
        if touch deps/api/new 2>/dev/null; then echo WROTE; fi"#;
    let report = scene
        .run(vec![scene.dep("acme/payments-api", &proven)], cmd)
        .await;
    let out = &report.gates[0].commands[0].output;
    assert!(report.passed(), "{report:#?}");
    assert!(out.contains("schema: v1\n"), "{out}");
    assert!(out.contains(&format!("sha: {proven}\n")), "{out}");
    assert!(!out.contains("WROTE"), "deps/ is read-only: {out}");
}

#[tokio::test]
async fn a_dependency_the_token_cannot_fetch_fails_the_run_as_tooling_error_naming_it() {
    let scene = Scene::start().await;
    // Another installation's repository: the token is refused for it.
    let lib = backed(
        &scene.fake,
        scene.tmp.path(),
        INSTALLATION + 1,
        "other/lib",
        &[("lib.rs", "x")],
    );
    let sha = lib.branch_sha("main").unwrap();
    let report = scene
        .run(vec![scene.dep("other/lib", &sha)], "echo ran")
        .await;
    let gate = &report.gates[0];
    assert!(!gate.passed && gate.commands.is_empty(), "{report:#?}");
    assert_eq!(gate.kind, Some(FailureKind::ToolingError));
    let why = gate.summary.as_deref().unwrap_or_default();
    assert!(why.contains("other/lib") && why.contains(&sha), "{why}");
    assert!(
        !why.contains(&scene.token),
        "the token is never said: {why}"
    );
    assert!(
        !scene.tmp.path().join("ws").exists(),
        "no workspace was made"
    );
}
