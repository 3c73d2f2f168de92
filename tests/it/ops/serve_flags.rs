//! `taskgate serve`'s settings refused before anything starts, and its
//! logs as a collector reads them.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use taskgate::intake::signature::sign;

fn serve(args: &[&str]) -> (Option<i32>, String) {
    serve_with(args, &[])
}

/// `taskgate serve` with the settings it requires; GitHub is never reached.
fn serve_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_taskgate"));
    command
        .arg("serve")
        .args(args)
        .env("APP_ID", "1")
        .env("WEBHOOK_SECRET", "secret")
        .env(
            "PRIVATE_KEY_PATH",
            concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys/test-app.pem"),
        )
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .env("PORT", "0");
    command
}

fn serve_with(args: &[&str], envs: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = serve_command(args)
        .envs(envs.iter().copied())
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The start was refused with exit `code` and a message saying each of
/// `says`.
fn assert_refused((code, stderr): (Option<i32>, String), expected: i32, says: &[&str]) {
    assert_eq!(code, Some(expected), "{stderr}");
    for part in says {
        assert!(stderr.contains(part), "expected `{part}` in: {stderr}");
    }
}

#[test]
fn a_retention_shorter_than_githubs_redelivery_window_is_refused() {
    assert_refused(
        serve(&["--retention-days", "2"]),
        2,
        &["invalid value '2' for '--retention-days <RETENTION_DAYS>'"],
    );
    assert_refused(
        serve(&["--retention-days", "a month"]),
        2,
        &["--retention-days"],
    );
}

#[test]
fn a_webhook_memory_budget_below_one_largest_body_is_refused() {
    assert_refused(
        serve_with(&[], &[("TASKGATE_WEBHOOK_MEMORY_MIB", "24")]),
        2,
        &[
            "invalid value '24' for '--webhook-memory-mib <WEBHOOK_MEMORY_MIB>'",
            "24 is not in 25..",
        ],
    );
}

#[test]
fn metrics_behind_the_api_token_without_a_token_is_refused() {
    assert_refused(
        serve_with(
            &[],
            &[
                ("TASKGATE_METRICS_AUTH", "true"),
                ("DATABASE_URL", "sqlite:///nonexistent-dir/never-opened.db"),
            ],
        ),
        1,
        &["TASKGATE_METRICS_AUTH asks /metrics for TASKGATE_API_TOKEN, which is not set"],
    );
}

#[test]
fn an_unknown_log_format_is_refused() {
    assert_refused(
        serve_with(&[], &[("LOG_FORMAT", "yaml")]),
        1,
        &["LOG_FORMAT must be `text` or `json`, not `yaml`"],
    );
}

/// `taskgate serve` on a free port of 127.0.0.1 with JSON logs, read as
/// they come.
struct Served {
    child: std::process::Child,
    logs: std::sync::mpsc::Receiver<String>,
    _db: tempfile::TempDir,
}

impl Served {
    fn start() -> Served {
        let db = tempfile::tempdir().unwrap();
        let mut child = serve_command(&[])
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "info")
            .env("HOST", "127.0.0.1")
            .env("TASKGATE_REDELIVER_MINUTES", "0")
            .env(
                "DATABASE_URL",
                format!("sqlite://{}", db.path().join("t.db").display()),
            )
            .stderr(Stdio::piped())
            .spawn()
            .expect("start taskgate serve");
        let (lines, logs) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        Served {
            child,
            logs,
            _db: db,
        }
    }

    /// The next log line whose message is `what`.
    fn next(&self, what: &str) -> Value {
        loop {
            let line = self
                .logs
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no log line {what}"));
            let entry: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON object ({e}): {line}"));
            if entry["message"] == what {
                return entry;
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn json_logs_are_one_object_a_line_carrying_the_deliverys_span() {
    let served = Served::start();
    let listening = served.next("listening");
    assert_eq!(listening["level"], "INFO", "{listening}");
    assert!(listening["timestamp"].is_string(), "{listening}");
    let addr = listening["local"].as_str().expect("the address").to_owned();

    let body = br#"{"zen":"Keep it logically awesome.","hook_id":1}"#;
    let answer = reqwest::Client::new()
        .post(format!("http://{addr}/webhook"))
        .header("x-github-event", "ping")
        .header("x-github-delivery", "d-json-1")
        .header("x-hub-signature-256", sign(b"secret", body))
        .body(body.to_vec())
        .send()
        .await
        .expect("the server answers");
    assert_eq!(answer.status().as_u16(), 202);
    let recorded = served.next("recorded");
    let span = &recorded["spans"][0];
    assert_eq!(span["name"], "delivery", "{recorded}");
    assert_eq!(span["id"], "d-json-1", "{recorded}");
    assert_eq!(span["event"], "ping", "{recorded}");
}

#[tokio::test]
async fn sigterm_stops_the_server_though_a_connection_is_open() {
    let mut served = Served::start();
    let addr = served.next("listening")["local"]
        .as_str()
        .expect("the address")
        .to_owned();
    // A kept-alive connection between requests must not hold the stop up.
    let idle = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let pid = served.child.id() as libc::pid_t;
    // SAFETY: a signal to the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    served.next("shutting down");
    // Its log ends when it exits: read to the end, for at most 20 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match served.logs.recv_timeout(left) {
            Ok(_) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("still running 20 s after SIGTERM")
            }
        }
    }
    let status = served.child.wait().unwrap();
    assert!(status.success(), "{status}");
    drop(idle);
}

#[test]
fn a_webhook_proxy_url_that_is_not_an_http_url_is_refused() {
    assert_refused(
        serve(&["--webhook-proxy-url", "smee.io/abc"]),
        2,
        &["is not an http(s) URL of a channel"],
    );
}

/// What `--help` tells a person, every setting and its variable: a change
/// to a flag shows up here.
#[test]
fn the_help_names_every_setting() {
    for (name, args) in [
        ("help", vec!["--help"]),
        ("serve_help", vec!["serve", "--help"]),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_taskgate"))
            .args(&args)
            .env_clear()
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(0));
        insta::assert_snapshot!(name, String::from_utf8_lossy(&out.stdout));
    }
}

#[test]
fn a_webhook_path_another_route_uses_is_refused() {
    assert_refused(
        serve(&["--webhook-path", "/metrics"]),
        2,
        &["is taken by another route"],
    );
    assert_refused(
        serve_with(&[], &[("WEBHOOK_PATH", "hooks")]),
        2,
        &["must start with `/`"],
    );
}

/// `taskgate migrate`, as an operator runs it before a rolling upgrade: on
/// a new database it says from which version to which, then that there is
/// nothing to do; an unknown kind of database is refused with what works.
#[test]
fn migrate_says_what_it_did_on_sqlite_and_postgres() {
    let migrate = |url: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_taskgate"))
            .args(["migrate", "--database-url", url])
            // anyhow prints a backtrace when these ask for one.
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .output()
            .expect("the binary runs");
        let text = String::from_utf8_lossy(if out.status.success() {
            &out.stdout
        } else {
            &out.stderr
        });
        (out.status.code(), text.trim().to_owned())
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}", dir.path().join("t.db").display());
    let pg = pgtest::fresh_database();
    for url in [sqlite.as_str(), pg.url()] {
        let (code, first) = migrate(url);
        assert_eq!(code, Some(0), "{first}");
        assert!(
            first.starts_with("migrated the schema from version 0 to "),
            "{first}"
        );
        let (_, again) = migrate(url);
        assert!(again.ends_with("this taskgate's; nothing to do"), "{again}");
    }
    let (code, refused) = migrate("mysql://localhost/taskgate");
    assert_eq!(code, Some(1));
    insta::assert_snapshot!(refused, @"Error: `mysql://localhost/taskgate` is not a supported DATABASE_URL (use sqlite://PATH or postgres://USER@HOST:PORT/DB)");
}

/// A database password never reaches a terminal: `--help` with
/// `DATABASE_URL` set does not show its value, and a refused URL is echoed
/// with its password masked.
#[test]
fn a_database_password_is_shown_neither_by_help_nor_by_an_error() {
    let url = "postgres://taskgate:s3cret-pw@127.0.0.1:9/taskgate";
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["migrate", "--help"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_taskgate"))
            .args(&args)
            .env("DATABASE_URL", url)
            .output()
            .expect("the binary runs");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(!help.contains("s3cret-pw"), "{args:?} shows it:\n{help}");
    }
    let (code, stderr) = serve_with(&[], &[("DATABASE_URL", "mysql://root:s3cret-pw@db/x")]);
    assert_ne!(code, Some(0));
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    assert!(stderr.contains("mysql://root:***@db/x"), "{stderr}");
}

#[test]
fn a_read_only_path_that_would_show_task_code_taskgates_own_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".rustup")).unwrap();
    let key = home.join("app.pem");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys/test-app.pem"),
        &key,
    )
    .unwrap();
    let key = key.display().to_string();
    let work = home.join("taskgate-work").display().to_string();
    let start = |key: &str, work: &str, ro_paths: String| {
        let out = serve_command(&[])
            .current_dir(dir.path())
            .env("PRIVATE_KEY_PATH", key)
            .env("TASKGATE_WORK_DIR", work)
            .env("TASKGATE_SANDBOX_RO_PATHS", ro_paths)
            .output()
            .expect("the binary runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The folder holding the key, and a mirror inside the work directory.
    assert_refused(
        start(&key, &work, home.display().to_string()),
        1,
        &["TASKGATE_SANDBOX_RO_PATHS", "private key", "app.pem"],
    );
    assert_refused(
        start(
            &key,
            &work,
            format!("{}/.rustup:{work}/mirrors/acme", home.display()),
        ),
        1,
        &["work directory", "taskgate-work"],
    );
    // The working directory holds the default database (the key and the
    // work directory elsewhere).
    let fixture_key = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys/test-app.pem");
    let other_work = elsewhere.path().join("work").display().to_string();
    assert_refused(
        start(fixture_key, &other_work, dir.path().display().to_string()),
        1,
        &["database", "taskgate.db"],
    );
    // Nothing was opened or written.
    assert!(!dir.path().join("taskgate.db").exists());
    assert!(!home.join("taskgate-work").exists());
    assert!(!elsewhere.path().join("work").exists());
}
