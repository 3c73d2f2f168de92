//! The sandbox against real attacks, each through the
//! local runner's own path ([`run_gate_specs`]) with the real `bwrap`.
//!
//! Every attack test asserts that the attack *failed*, and was seen to fail
//! with the sandbox turned off: run them with `TASKGATE_TEST_SANDBOX=off` and
//! each one fails (the runner then runs the command on the host, as
//! `TASKGATE_UNSANDBOXED=1` would). That switch exists only here, in the
//! tests; the runner reads nothing of the kind.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;
use crate::runner::local::{run_gate_specs, GateSpec, RunOptions};
use crate::runner::mirror::tests::Origin;
use crate::runner::{MirrorStore, Workspace};
use taskgate_core::classify::FailureKind;
use taskgate_core::network::Network;
use taskgate_core::plan::TestSpec;
use taskgate_core::report::RunReport;

/// The sandbox as the bot runs it, or none when the tests are asked to show
/// that the attacks work without it.
pub(crate) fn isolation() -> Isolation {
    match std::env::var("TASKGATE_TEST_SANDBOX").as_deref() {
        Ok("off") => Isolation::Unsandboxed,
        _ => Isolation::Sandbox(Arc::new(Sandbox::default())),
    }
}

pub(crate) fn options(isolation: Isolation) -> RunOptions {
    RunOptions {
        default_timeout: Duration::from_secs(30),
        grace: Duration::from_millis(500),
        rerun_failures: false,
        isolation,
        ..RunOptions::default()
    }
}

fn gate(cmd: &str, timeout_seconds: Option<u64>) -> Vec<GateSpec> {
    vec![GateSpec {
        gate: "test".into(),
        tests: vec![TestSpec {
            cmd: cmd.into(),
            gate: "test".into(),
            timeout_seconds,
            reports: Vec::new(),
        }],
        expected_artifacts: Vec::new(),
        metrics: Vec::new(),
        required_tests: Vec::new(),
        notes: Vec::new(),
        problem: None,
    }]
}

/// Runs `cmd` as the only command of a task in `workdir`; its output.
pub(crate) async fn run_in(workdir: &Path, cmd: &str, options: RunOptions) -> (RunReport, String) {
    let report = run_gate_specs(
        workdir,
        taskgate_core::task::RunSubject::Task("t".into()),
        gate(cmd, None),
        options,
    )
    .await;
    let output = report.gates[0]
        .commands
        .first()
        .map(|c| c.output.clone())
        .unwrap_or_else(|| format!("{:?}", report.gates[0].summary));
    (report, output)
}

async fn attack(workdir: &Path, cmd: &str) -> String {
    run_in(workdir, cmd, options(isolation())).await.1
}

/// A work directory laid out as `taskgate serve` lays it out, with the
/// secrets an attacker wants next to it.
pub(crate) struct Host {
    _tmp: tempfile::TempDir,
    pub(crate) root: std::path::PathBuf,
    pub(crate) workspace: std::path::PathBuf,
}

impl Host {
    pub(crate) fn new() -> Host {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_owned();
        std::fs::write(
            root.join("app.pem"),
            "-----BEGIN PRIVATE KEY----- secret-key",
        )
        .unwrap();
        std::fs::write(root.join("taskgate.db"), "SQLite format 3 secret-db").unwrap();
        std::fs::write(root.join(".env"), "WEBHOOK_SECRET=secret-env\n").unwrap();
        let workspace = root.join("taskgate-work/workspaces/ws");
        std::fs::create_dir_all(&workspace).unwrap();
        Host {
            _tmp: tmp,
            root,
            workspace,
        }
    }

    fn path(&self, name: &str) -> String {
        self.root.join(name).display().to_string()
    }
}

#[tokio::test]
async fn a_sandboxed_command_runs_with_the_toolchain_and_a_private_home() {
    let host = Host::new();
    let (report, out) = run_in(
        &host.workspace,
        "pwd; echo $HOME; python3 -c 'print(6*7)'; touch made && ls",
        options(Isolation::Sandbox(Arc::new(Sandbox::default()))),
    )
    .await;
    assert!(report.passed(), "{out}");
    assert_eq!(out, "/workspace\n/home/runner\n42\nmade\n");
    assert!(
        host.workspace.join("made").exists(),
        "the workspace is writable"
    );
    assert!(
        report.gates[0]
            .warnings
            .iter()
            .all(|w| w == PROCESSES_WARNING),
        "{:?}",
        report.gates[0].warnings
    );
}

#[tokio::test]
async fn reading_the_app_key_by_its_absolute_path_fails() {
    let host = Host::new();
    let out = attack(&host.workspace, &format!("cat {}", host.path("app.pem"))).await;
    assert!(!out.contains("secret-key"), "{out}");
}

#[tokio::test]
async fn reading_the_database_fails() {
    let host = Host::new();
    let out = attack(
        &host.workspace,
        &format!("cat {} ../../../taskgate.db", host.path("taskgate.db")),
    )
    .await;
    assert!(!out.contains("secret-db"), "{out}");
}

#[tokio::test]
async fn reading_the_env_file_fails() {
    let host = Host::new();
    let out = attack(
        &host.workspace,
        &format!("cat {} ../../../.env", host.path(".env")),
    )
    .await;
    assert!(!out.contains("secret-env"), "{out}");
}

#[tokio::test]
async fn writing_outside_the_workspace_fails() {
    let host = Host::new();
    let target = host.root.join("planted");
    attack(
        &host.workspace,
        &format!("echo x > {}; echo x > ../../planted2", target.display()),
    )
    .await;
    assert!(!target.exists(), "wrote {}", target.display());
    assert!(!host.root.join("taskgate-work/planted2").exists());
}

#[tokio::test]
async fn writing_gitconfig_in_home_does_not_reach_the_real_home() {
    let host = Host::new();
    let home = host.root.join("home");
    std::fs::create_dir(&home).unwrap();
    // The runner's HOME, as the scrubbed environment passes it on. (Other
    // tests of this binary do not depend on HOME.)
    let old = std::env::var_os("HOME");
    let out = {
        std::env::set_var("HOME", &home);
        let out = attack(
            &host.workspace,
            "printf '[url \"https://evil.example/\"]\\n\\tinsteadOf = https://github.com/\\n' > ~/.gitconfig; echo $HOME",
        )
        .await;
        match old {
            Some(h) => std::env::set_var("HOME", h),
            None => std::env::remove_var("HOME"),
        }
        out
    };
    assert!(
        !home.join(".gitconfig").exists(),
        "wrote the runner's ~/.gitconfig ({out})"
    );
}

#[tokio::test]
async fn connecting_to_the_hosts_loopback_fails() {
    let host = Host::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let out = attack(
        &host.workspace,
        &format!(
            "python3 -c 'import socket; s = socket.create_connection((\"127.0.0.1\", {port}), timeout=3); s.sendall(b\"hello\"); print(\"connected\")'"
        ),
    )
    .await;
    let accepted = listener.accept().map(|(mut conn, _)| {
        conn.set_nonblocking(false).unwrap();
        let mut buf = Vec::new();
        let _ = conn.read_to_end(&mut buf);
        buf
    });
    assert!(
        accepted.is_err() && !out.contains("connected"),
        "the command reached the host's listener: {out}"
    );
}

#[tokio::test]
async fn a_fork_bomb_is_stopped_well_below_ten_thousand() {
    let host = Host::new();
    // Bounded: 10,000 `sleep 3017` at most, counted; the run kills the rest.
    let cmd = "python3 -c '
import subprocess
n = 0
try:
    for _ in range(10000):
        subprocess.Popen([\"sleep\", \"3017\"])
        n += 1
except OSError as e:
    print(\"stopped:\", e)
print(\"started\", n)
'";
    let start = Instant::now();
    let (_, out) = run_in(
        &host.workspace,
        cmd,
        RunOptions {
            default_timeout: Duration::from_secs(120),
            ..options(isolation())
        },
    )
    .await;
    let started: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("started "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(out.contains("stopped:"), "{out}");
    assert!(
        started < DEFAULT_MAX_PROCESSES,
        "{started} processes started"
    );
    assert!(start.elapsed() < Duration::from_secs(60));
    assert!(
        !pgrep("sleep 3017"),
        "the forked processes outlived the run"
    );
}

#[tokio::test]
async fn allocating_past_the_memory_limit_fails() {
    let host = Host::new();
    let sandbox = Sandbox {
        limits: Limits {
            memory_bytes: 1 << 30,
            ..Limits::default()
        },
        ..Sandbox::default()
    };
    let isolation = match isolation() {
        Isolation::Sandbox(_) => Isolation::Sandbox(Arc::new(sandbox)),
        other => other,
    };
    // 8 GiB of address space (zeroed pages are only mapped, not touched).
    let (report, out) = run_in(
        &host.workspace,
        "python3 -c 'b = bytearray(8 << 30); print(\"allocated\", len(b))'",
        options(isolation),
    )
    .await;
    assert!(!report.passed(), "{out}");
    assert!(
        !out.contains("allocated") && out.contains("MemoryError"),
        "{out}"
    );
}

#[tokio::test]
async fn a_child_holding_the_output_pipe_after_the_timeout_dies_with_the_run() {
    let host = Host::new();
    let start = Instant::now();
    let mut opts = options(isolation());
    opts.grace = Duration::from_millis(500);
    // `setsid` leaves the process group: only the sandbox's pid namespace
    // still holds it.
    let report = run_gate_specs(
        &host.workspace,
        taskgate_core::task::RunSubject::Task("t".into()),
        gate(
            "setsid sleep 1004 & sleep 1005 & echo started; sleep 1006",
            Some(1),
        ),
        opts,
    )
    .await;
    let elapsed = start.elapsed();
    assert!(report.gates[0].commands[0].timed_out);
    assert!(
        elapsed < Duration::from_millis(1000 + 500 + 1500),
        "{elapsed:?}"
    );
    for marker in ["sleep 1004", "sleep 1005", "sleep 1006"] {
        assert!(!pgrep(marker), "`{marker}` outlived the run");
    }
}

#[tokio::test]
async fn reading_another_repositorys_mirror_fails() {
    let origin = Origin::new();
    let sha = origin.commit(&[("a.txt", "ours")], "ours");
    let tmp = tempfile::tempdir().unwrap();
    let mirrors = MirrorStore::new(tmp.path().join("taskgate-work/mirrors"));
    let ours = mirrors.mirror("o/ours").unwrap();
    ours.fetch_commit(&origin.url(), None, &sha).unwrap();
    let other = Origin::new();
    let secret = other.commit(&[("secret.txt", "other-repo-secret")], "theirs");
    let theirs = mirrors.mirror("o/theirs").unwrap();
    theirs.fetch_commit(&other.url(), None, &secret).unwrap();
    let ws =
        Workspace::checkout(&ours, &sha, &tmp.path().join("taskgate-work/workspaces")).unwrap();
    let theirs_path = theirs.path().canonicalize().unwrap();
    let cmd = format!(
        "git log --format=%s -1; ls -R {} | head -3; git --git-dir={} show {secret}:secret.txt",
        theirs_path.display(),
        theirs_path.display()
    );
    let (_, out) = run_in(ws.path(), &cmd, options(isolation())).await;
    assert!(
        out.starts_with("ours\n"),
        "git in the workspace still reads its own mirror: {out}"
    );
    assert!(!out.contains("other-repo-secret"), "{out}");
}

#[tokio::test]
async fn a_host_that_cannot_sandbox_refuses_to_run_task_code() {
    let host = Host::new();
    let sandbox = Sandbox {
        program: "/nonexistent/taskgate-test/bwrap".into(),
        ..Sandbox::default()
    };
    let (report, _) = run_in(
        &host.workspace,
        "touch ran",
        options(Isolation::Sandbox(Arc::new(sandbox))),
    )
    .await;
    let gate = &report.gates[0];
    assert!(!gate.passed && gate.commands.is_empty());
    assert_eq!(gate.kind, Some(FailureKind::ToolingError));
    let summary = gate.summary.as_deref().unwrap();
    assert!(
        summary.starts_with("taskgate refused to run task code: this host cannot sandbox it (bubblewrap (`/nonexistent/taskgate-test/bwrap`) is not installed)"),
        "{summary}"
    );
    assert!(summary.contains("TASKGATE_UNSANDBOXED=1"), "{summary}");
    assert!(!host.workspace.join("ran").exists());
    assert_eq!(
        report.runner_fault.as_deref(),
        Some(summary),
        "not a verdict"
    );
}

/// A bug once shipped: `serve` on its default, relative work directory
/// gave bubblewrap a relative workspace, which it looked up from inside
/// that workspace and did not find. bwrap's own complaint is the runner's
/// fault: `tooling_error`, a runner fault on the report (no branch todo),
/// never a `test_failure`.
#[tokio::test]
async fn bubblewrap_failing_before_its_sandbox_starts_is_the_runners_fault() {
    let cwd = std::env::current_dir().unwrap();
    let dir = tempfile::tempdir_in(&cwd).unwrap();
    let relative = dir.path().strip_prefix(&cwd).unwrap().to_owned();
    let (report, _) = run_in(
        &relative,
        "touch ran",
        options(Isolation::Sandbox(Arc::new(Sandbox::default()))),
    )
    .await;
    let gate = &report.gates[0];
    let why = report
        .runner_fault
        .as_deref()
        .unwrap_or_else(|| panic!("a runner fault: {report:#?}"));
    assert!(
        why.starts_with("the sandbox did not start (bwrap: Can't find source path"),
        "{why}"
    );
    assert!(!gate.passed);
    assert_eq!(gate.kind, Some(FailureKind::ToolingError), "{gate:?}");
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn an_unsandboxed_run_says_so_on_every_gate() {
    let host = Host::new();
    let (report, _) = run_in(&host.workspace, "true", options(Isolation::Unsandboxed)).await;
    assert!(report.passed());
    assert_eq!(report.gates[0].warnings, [UNSANDBOXED_WARNING]);
}

#[tokio::test]
async fn the_network_when_allowed_or_refused_is_said_on_every_gate() {
    let host = Host::new();
    for (network, says) in [
        (Network::Allowed, "the sandbox allowed network access"),
        (Network::Refused, "ran offline"),
    ] {
        let (report, out) = run_in(
            &host.workspace,
            "test -e /etc/resolv.conf || echo no-resolv-conf",
            RunOptions {
                network,
                ..options(Isolation::Sandbox(Arc::new(Sandbox::default())))
            },
        )
        .await;
        assert!(report.passed(), "{out}");
        assert!(report.gates[0].warnings[0].starts_with(says), "{report:?}");
    }
}

#[test]
fn settings_come_from_the_environment_with_defaults() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    let Isolation::Sandbox(s) = Isolation::from_vars(vars(&[])) else {
        panic!("the sandbox is the default")
    };
    assert_eq!(*s, Sandbox::default());
    assert!(matches!(
        Isolation::from_vars(vars(&[("TASKGATE_UNSANDBOXED", "1")])),
        Isolation::Unsandboxed
    ));
    let Isolation::Sandbox(s) = Isolation::from_vars(vars(&[
        ("TASKGATE_UNSANDBOXED", "0"),
        ("TASKGATE_SANDBOX_MEMORY_MIB", "1024"),
        ("TASKGATE_SANDBOX_MAX_PROCESSES", "64"),
        ("TASKGATE_RUN_DISK_MIB", "512"),
        (
            "TASKGATE_SANDBOX_RO_PATHS",
            "/root/.cargo/bin:/root/.rustup",
        ),
    ])) else {
        panic!()
    };
    assert_eq!(s.limits.memory_bytes, 1 << 30);
    assert_eq!(s.limits.max_processes, 64);
    assert_eq!(s.limits.run_disk_bytes, 512 << 20);
    assert_eq!(
        s.ro_paths,
        [Path::new("/root/.cargo/bin"), Path::new("/root/.rustup")]
    );
    for (bad, why) in [
        (("TASKGATE_UNSANDBOXED", "yes"), "expected 1"),
        (("TASKGATE_SANDBOX_MAX_FILES", "many"), "whole number"),
        (("TASKGATE_RUN_DISK_MIB", "0"), "whole number"),
        (
            ("TASKGATE_SANDBOX_RO_PATHS", "relative/dir"),
            "absolute path",
        ),
        (("TASKGATE_SANDBOX_RO_PATHS", "/"), "absolute path"),
    ] {
        let got = Isolation::from_vars(|k| (k == bad.0).then(|| bad.1.to_string()));
        assert!(
            matches!(&got, Isolation::Refused(w) if w.to_string().contains(why)),
            "{bad:?}: {got:?}"
        );
    }
}

#[test]
fn the_command_line_mounts_only_the_toolchain_and_the_workspace() {
    let run = SandboxRun::new(
        Arc::new(Sandbox {
            ro_paths: vec!["/opt/toolchain".into()],
            ..Sandbox::default()
        }),
        false,
        vec!["/srv/taskgate-work/mirrors/o/r.git/objects".into()],
    )
    .unwrap();
    let etc = run.etc.passwd().parent().unwrap().display().to_string();
    let args: Vec<String> = run
        .args(
            Path::new("/srv/taskgate-work/workspaces/ws"),
            "make test",
            Some(7),
            None,
        )
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let line = args.join(" ");
    for must in [
        "--unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net",
        "--disable-userns --die-with-parent --new-session --cap-drop ALL",
        "--info-fd 7",
        "--ro-bind /usr /usr",
        "--proc /proc --dev /dev --size 1073741824 --tmpfs /tmp --size 1073741824 --tmpfs /home/runner",
        "--bind /srv/taskgate-work/workspaces/ws /workspace",
        "--ro-bind-try /srv/taskgate-work/mirrors/o/r.git/objects /srv/taskgate-work/mirrors/o/r.git/objects",
        "--ro-bind-try /opt/toolchain /opt/toolchain",
        "--chdir /workspace -- /bin/sh -c ulimit -u 512 2>/dev/null || ulimit -p 512 2>/dev/null || ",
        r#"exit 126; }; printf '\036'; exec /bin/sh -c "$1" sh make test"#,
    ] {
        assert!(line.contains(must), "`{must}` missing in {line}");
    }
    assert!(!line.contains("resolv.conf"));
    let binds: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0].contains("bind"))
        .map(|w| w[1].as_str())
        .collect();
    assert!(
        binds.iter().all(|b| b.starts_with("/usr")
            || b.starts_with("/etc/")
            || b.starts_with("/bin")
            || b.starts_with("/sbin")
            || b.starts_with("/lib")
            || b.starts_with("/srv/taskgate-work/workspaces/ws")
            || b.starts_with("/srv/taskgate-work/mirrors/o/r.git/objects")
            || b.starts_with(&etc)
            || *b == "/opt/toolchain"),
        "{binds:?}"
    );
    let with_network = SandboxRun::new(run.sandbox.clone(), true, Vec::new()).unwrap();
    let line = with_network
        .args(Path::new("/w"), "true", None, Some(9))
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        line.contains("--unshare-net") && line.contains("--block-fd 9"),
        "its own namespace, held until attached: {line}"
    );
    assert!(line.contains("/etc/resolv.conf"));
}

fn pgrep(pattern: &str) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", pattern])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_v2_cgroup_with_the_memory_controller_bounds_the_commands_memory_together() {
    // Directories standing for cgroups: the kernel shows `memory.max` in a
    // v2 cgroup whose parent delegates the memory controller, never in
    // v1's pids hierarchy.
    let limited = |with_memory: bool| {
        let dir = tempfile::tempdir().unwrap();
        if with_memory {
            std::fs::write(dir.path().join("memory.max"), "max").unwrap();
        }
        let mut cgroup = PidsCgroup {
            dir: dir.path().to_owned(),
        };
        cgroup.limit(64, 1 << 30).expect("limits written");
        // Not a real cgroup: nothing to remove on drop.
        cgroup.dir = std::path::PathBuf::new();
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).ok();
        (read("pids.max"), read("memory.max"))
    };
    assert_eq!(limited(false), (Some("64".into()), None), "v1: pids only");
    assert_eq!(
        limited(true),
        (Some("64".into()), Some((1u64 << 30).to_string()))
    );
}

#[test]
fn a_read_only_path_holding_taskgates_own_files_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home/bot");
    let work = home.join("taskgate-work");
    std::fs::create_dir_all(work.join("mirrors/acme/other.git")).unwrap();
    std::fs::create_dir_all(home.join(".rustup")).unwrap();
    for file in ["app.pem", ".env", "taskgate.db"] {
        std::fs::write(home.join(file), "x").unwrap();
    }
    let own = [
        (OwnFile::PrivateKey, home.join("app.pem")),
        (OwnFile::EnvFile, home.join(".env")),
        (OwnFile::Database, home.join("taskgate.db")),
        (OwnFile::WorkDir, work.clone()),
    ];
    let listing = |paths: &[&Path]| Sandbox {
        ro_paths: paths.iter().map(|p| p.to_path_buf()).collect(),
        ..Sandbox::default()
    };
    // The toolchain's own folder is fine.
    assert_eq!(
        listing(&[&home.join(".rustup")]).refuse_own_files(&own),
        Ok(())
    );
    // A parent of the key, or a mirror inside the work directory, is not.
    let refused = listing(&[&home.join(".rustup"), &root.path().join("home")])
        .refuse_own_files(&own)
        .unwrap_err();
    assert!(
        matches!(
            &refused,
            SettingError::ExposesOwnFile {
                what: OwnFile::PrivateKey,
                ..
            }
        ),
        "{refused:?}"
    );
    let refused = listing(&[&work.join("mirrors/acme/other.git")])
        .refuse_own_files(&own)
        .unwrap_err();
    assert!(
        matches!(
            &refused,
            SettingError::ExposesOwnFile {
                what: OwnFile::WorkDir,
                ..
            }
        ),
        "{refused:?}"
    );
    // Through a link to the home folder, too.
    let link = root.path().join("link-to-home");
    std::os::unix::fs::symlink(&home, &link).unwrap();
    let refused = listing(&[&link]).refuse_own_files(&own).unwrap_err();
    let message = refused
        .to_string()
        .replace(&root.path().display().to_string(), "<tmp>");
    insta::assert_snapshot!(message, @"TASKGATE_SANDBOX_RO_PATHS: `<tmp>/link-to-home` would show task code taskgate's own private key `<tmp>/home/bot/app.pem`: list only the toolchain's own folders (e.g. `~/.rustup` and `~/.cargo/bin`, not their parent)");
}
