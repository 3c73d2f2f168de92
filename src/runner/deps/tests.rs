//! The local runner with a dependency from another repository: real git
//! remotes (`file://`), the real sandbox; no mocks.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::runner::local::{Checkout, GateSpec, LocalRunner, RunOptions};
use crate::runner::mirror::tests::Origin;
use crate::runner::sandbox::{Isolation, Sandbox};
use crate::runner::MirrorStore;
use taskgate_core::classify::FailureKind;
use taskgate_core::ids::{CommitSha, RepoName, TaskId};
use taskgate_core::plan::TestSpec;
use taskgate_core::report::RunReport;
use taskgate_core::task::RunSubject;

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

/// The task's repository and the dependency's, each a real remote, and
/// the mirrors and workspaces of one runner.
struct Two {
    task: Origin,
    api: Origin,
    tmp: tempfile::TempDir,
    mirrors: MirrorStore,
}

impl Two {
    fn new() -> Two {
        let tmp = tempfile::tempdir().unwrap();
        Two {
            task: Origin::new(),
            api: Origin::new(),
            mirrors: MirrorStore::new(tmp.path().join("mirrors")),
            tmp,
        }
    }

    fn dep(&self, sha: &str) -> DepSource {
        DepSource {
            dep: RunDep {
                task: TaskId::new("api"),
                repo: RepoName::parse("acme/payments-api").unwrap(),
                sha: CommitSha::parse(sha).unwrap(),
            },
            mirror: self.mirrors.mirror("acme/payments-api").unwrap(),
            url: self.api.url(),
            token: None,
        }
    }

    async fn run(&self, sha: &str, deps: Vec<DepSource>, cmd: &str) -> RunReport {
        let options = RunOptions {
            default_timeout: Duration::from_secs(30),
            grace: Duration::from_millis(300),
            rerun_failures: false,
            sha: Some(sha.to_owned()),
            // Always the sandbox: taskgate's tests run as root, whom file
            // modes do not stop; the read-only mount does.
            isolation: Isolation::Sandbox(Arc::new(Sandbox::default())),
            ..RunOptions::default()
        };
        let task_mirror = self.mirrors.mirror("acme/web").unwrap();
        LocalRunner::new(1)
            .run_commit(
                Checkout {
                    mirror: &task_mirror,
                    url: self.task.url(),
                    token: None,
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
async fn a_gate_sees_the_dependencys_proven_commit_read_only_at_deps_id() {
    let two = Two::new();
    let proven = two.api.commit(&[("schema/intent.json", "v1")], "the API");
    two.api
        .commit(&[("schema/intent.json", "v2")], "later, unproven");
    let sha = two.task.commit(&[("app.js", "x")], "the web client");
    // Reads the dependency and its variable, then tries every way of
    // writing there: a file, a new file, a folder, its modes, removal.
    let cmd = r#"
        echo "schema: $(cat deps/api/schema/intent.json)"
        echo "sha: $TASKGATE_DEP_API_SHA"
        for try in 'echo x >> deps/api/schema/intent.json' 'touch deps/api/new' \
                   'mkdir deps/api/dir' 'chmod -R u+w deps/api' 'rm -rf deps/api/schema'; do
            if sh -c "$try" 2>/dev/null; then echo "WROTE: $try"; fi
        done
        test "$(cat deps/api/schema/intent.json)" = v1 || echo CHANGED
        git status --porcelain --untracked-files=all
        echo "git status: $?"
    "#;
    let report = two.run(&sha, vec![two.dep(&proven)], cmd).await;
    let out = &report.gates[0].commands[0].output;
    assert!(report.passed(), "{report:#?}");
    assert!(
        out.contains("schema: v1\n"),
        "the proven commit, not the head: {out}"
    );
    assert!(out.contains(&format!("sha: {proven}\n")), "{out}");
    assert!(!out.contains("WROTE") && !out.contains("CHANGED"), "{out}");
    assert!(out.contains("git status: 0\n"), "{out}");
    assert!(!out.contains("deps"), "deps/ is not in git status: {out}");
}

#[tokio::test]
async fn a_dependency_that_cannot_be_fetched_fails_the_run_as_tooling_error_naming_it() {
    let two = Two::new();
    two.api.commit(&[("schema/intent.json", "v1")], "the API");
    let sha = two.task.commit(&[("app.js", "x")], "the web client");
    let gone = "0123456789abcdef0123456789abcdef01234567";
    let report = two
        .run(&sha, vec![two.dep(gone)], "touch ran; echo ran")
        .await;
    let gate = &report.gates[0];
    assert!(!gate.passed && gate.commands.is_empty(), "{report:#?}");
    assert_eq!(gate.kind, Some(FailureKind::ToolingError));
    let why = gate.summary.as_deref().unwrap_or_default();
    assert!(
        why.contains("acme/payments-api") && why.contains(gone) && why.contains("`api`"),
        "{why}"
    );
    assert_eq!(report.runner_fault.as_deref(), Some(why));
    // Nothing else touched: the task's commit was not fetched, no
    // workspace was made.
    let task_mirror = two.mirrors.mirror("acme/web").unwrap();
    assert!(!task_mirror.has_commit(&sha).unwrap());
    assert!(!two.tmp.path().join("ws").exists());
}

#[test]
fn the_gates_variables_and_folders_follow_the_ids() {
    let dep = |id: &str| RunDep {
        task: TaskId::new(id),
        repo: RepoName::parse("acme/api").unwrap(),
        sha: CommitSha::parse(&"a".repeat(40)).unwrap(),
    };
    let deps = [dep("api"), dep("client-v2")];
    assert_eq!(
        dep_env(&deps),
        [
            ("TASKGATE_DEP_API_SHA".to_owned(), "a".repeat(40)),
            ("TASKGATE_DEP_CLIENT_V2_SHA".to_owned(), "a".repeat(40)),
        ]
    );
    assert_eq!(
        dep_dirs(&deps),
        [PathBuf::from("deps/api"), PathBuf::from("deps/client-v2")]
    );
}
