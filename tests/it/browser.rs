//! A small headless-Chromium driver: what a person sees on a page served
//! by the app under test (docs/decisions/browser-tests.md).
//!
//! Owns: starting Debian's Chromium headless with a fresh profile, the
//! DevTools protocol over `--remote-debugging-pipe` (JSON messages ended by
//! a NUL byte, Chromium reads fd 3 and writes fd 4), answering the page's
//! HTTP sign-in dialog as a person would, the page's visible text, clicks,
//! and PNG screenshots under `target/browser-artifacts/`.
//! Must not: skip a test when Chromium is missing (it panics, naming the
//! package to install and `CHROMIUM`), wait without a deadline, or leave a
//! Chromium process behind: dropping the [`Browser`] (also while a test
//! panics) kills its whole process group.
//!
//! Text is `innerText`: what is rendered, as laid out, so what a closed
//! `<details>` or a `display: none` element holds is not in it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{broadcast, oneshot};

mod page;
pub use page::Page;

/// The binary used unless `CHROMIUM` names another.
const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// Headless, no sandbox (tests run as root in CI), and nothing that
/// reaches out to the network, which this machine does not have.
/// (`--disable-crashpad-for-testing` would spare the crash handler, which
/// leaves the process group, but Chromium 156's network service then
/// crashes on an "FD ownership violation".)
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
];

/// The longest any one DevTools call or page load may take (a start of
/// Chromium included) on a busy two-core machine.
const DEADLINE: Duration = Duration::from_secs(30);

/// The window a page is laid out in; screenshots are as tall as the page.
const WIDTH: u32 = 1280;
const HEIGHT: u32 = 900;

/// One headless Chromium, killed (with every process it started) on drop.
pub struct Browser {
    conn: Arc<Connection>,
    child: Child,
    /// Chromium's fresh profile (`profile/`, its `--user-data-dir`), its
    /// config home (where its crash handler keeps its database) and log.
    home: tempfile::TempDir,
}

/// The DevTools connection, shared with the thread that reads it.
struct Connection {
    to_chromium: Mutex<File>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Value>>>,
    /// Chromium has exited: no answer will come.
    closed: AtomicBool,
    events: broadcast::Sender<Arc<Value>>,
    /// Per page session: the credentials to answer a sign-in dialog with.
    logins: Mutex<HashMap<String, Option<Login>>>,
    /// Requests whose dialog was answered once already.
    answered: Mutex<HashSet<String>>,
}

#[derive(Clone)]
struct Login {
    user: String,
    password: String,
}

impl Browser {
    /// Starts Chromium (`CHROMIUM`, else `/usr/bin/chromium`) and waits
    /// until it answers. Panics, loudly, when there is none: these tests
    /// never skip.
    pub async fn start() -> Browser {
        let program = std::env::var_os("CHROMIUM")
            .map_or_else(|| PathBuf::from(DEFAULT_CHROMIUM), PathBuf::from);
        let browser = Browser::start_with(&program);
        browser.call(None, "Browser.getVersion", json!({})).await;
        browser
    }

    /// Starts the Chromium at `program`, without waiting for it.
    fn start_with(program: &Path) -> Browser {
        assert!(
            program.is_file(),
            "no Chromium at {}: the browser tests need headless Chromium. Install Debian's \
             `chromium` package (`apt-get install chromium`, as .ci/run does) or set CHROMIUM \
             to a Chromium binary.",
            program.display()
        );
        let home = tempfile::tempdir().expect("a temporary profile directory");
        let log = File::create(home.path().join("chromium.log")).expect("Chromium's log");
        let (commands_read, commands_write) = pipe();
        let (replies_read, replies_write) = pipe();
        let (fd3, fd4) = (above_stdio(&commands_read), above_stdio(&replies_write));
        let (raw3, raw4) = (fd3.as_raw_fd(), fd4.as_raw_fd());
        let mut cmd = Command::new(program);
        cmd.args(FLAGS)
            .arg(format!(
                "--user-data-dir={}",
                home.path().join("profile").display()
            ))
            .arg(format!("--window-size={WIDTH},{HEIGHT}"))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            // The crash handler's database, otherwise in ~/.config: its
            // command line then names `home`, which is how it is found.
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .process_group(0);
        // SAFETY: between fork and exec only async-signal-safe calls (dup2,
        // prctl) on descriptors opened before the fork. Both sources are
        // above 4, so dup2 always makes a new descriptor, without CLOEXEC.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(raw3, 3) != 3 || libc::dup2(raw4, 4) != 4 {
                    return Err(std::io::Error::last_os_error());
                }
                // Should this test die without unwinding. (The signal
                // comes when the starting thread ends: a test's own thread
                // outlives its browser.)
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", program.display()));
        // Our copies of Chromium's ends: the replies end at its exit.
        drop((commands_read, replies_write, fd3, fd4));
        let (events, _) = broadcast::channel(1024);
        let conn = Arc::new(Connection {
            to_chromium: Mutex::new(File::from(commands_write)),
            next_id: AtomicU64::new(1),
            pending: Mutex::default(),
            closed: AtomicBool::new(false),
            events,
            logins: Mutex::default(),
            answered: Mutex::default(),
        });
        let reader = Arc::clone(&conn);
        std::thread::spawn(move || reader.read_replies(File::from(replies_read)));
        Browser { conn, child, home }
    }

    /// Opens `url` without credentials: a sign-in dialog is dismissed, as
    /// a person who has no password would, and the page shows the refusal.
    pub async fn open(&self, url: &str) -> Page<'_> {
        self.open_with(url, None).await
    }

    /// Opens `url`, answering its HTTP sign-in dialog once with `user` and
    /// `password` (a second dialog, for a refused password, is dismissed).
    pub async fn open_signed_in(&self, url: &str, user: &str, password: &str) -> Page<'_> {
        let login = Login {
            user: user.to_owned(),
            password: password.to_owned(),
        };
        self.open_with(url, Some(login)).await
    }

    async fn open_with(&self, url: &str, login: Option<Login>) -> Page<'_> {
        let target = self
            .call(None, "Target.createTarget", json!({ "url": "about:blank" }))
            .await;
        let target = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
            )
            .await;
        let session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        lock(&self.conn.logins).insert(session.clone(), login);
        Page::load(self, session, url).await
    }

    /// Sends `method` and waits for its result; panics on an error or after
    /// [`DEADLINE`], with the end of Chromium's log.
    async fn call(&self, session: Option<&str>, method: &str, params: Value) -> Value {
        let (id, reply) = self.conn.send(session, method, params);
        let message = match tokio::time::timeout(DEADLINE, reply).await {
            Ok(Ok(message)) => message,
            Ok(Err(_)) => self.fail(&format!("Chromium exited during {method}")),
            Err(_) => {
                lock(&self.conn.pending).remove(&id);
                self.fail(&format!("{method} had no answer within {DEADLINE:?}"))
            }
        };
        if let Some(error) = message.get("error") {
            self.fail(&format!("{method} failed: {error}"));
        }
        message["result"].clone()
    }

    fn fail(&self, what: &str) -> ! {
        let log =
            std::fs::read_to_string(self.home.path().join("chromium.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(30)..].join("\n");
        panic!("headless Chromium: {what}\n--- the end of Chromium's log ---\n{tail}");
    }
}

impl Drop for Browser {
    /// Kills Chromium's process group (`process_group(0)`: its renderers
    /// and helpers), then its crash handlers, which left the group for a
    /// session of their own; they are the processes whose command line
    /// names this browser's `home`.
    fn drop(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
        for pid in processes_naming(self.home.path()) {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The processes whose command line mentions `path`.
fn processes_naming(path: &Path) -> Vec<libc::pid_t> {
    let needle = path.as_os_str().as_encoded_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmd| cmd.windows(needle.len()).any(|w| w == needle))
        })
        .collect()
}

impl Connection {
    fn send(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> (u64, oneshot::Receiver<Value>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let mut pending = lock(&self.pending);
        // Once closed, the sender is dropped here: the call hears it.
        if !self.closed.load(Ordering::SeqCst) {
            pending.insert(id, tx);
        }
        drop(pending);
        self.post(id, session, method, params);
        (id, rx)
    }

    /// Writes one message; a closed pipe shows as the call's missing answer.
    fn post(&self, id: u64, session: Option<&str>, method: &str, params: Value) {
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).expect("JSON");
        bytes.push(0);
        let _ = lock(&self.to_chromium).write_all(&bytes);
    }

    /// The reading thread: answers go to their callers, the sign-in dialog
    /// and paused requests are answered here, other events are broadcast.
    /// Ends when Chromium does.
    fn read_replies(&self, from_chromium: File) {
        let mut reader = BufReader::new(from_chromium);
        let mut message = Vec::new();
        while matches!(reader.read_until(0, &mut message), Ok(n) if n > 0) {
            if message.last() == Some(&0) {
                message.pop();
            }
            if let Ok(value) = serde_json::from_slice::<Value>(&message) {
                self.dispatch(value);
            }
            message.clear();
        }
        // Chromium is gone: every waiting call hears it at once.
        let mut pending = lock(&self.pending);
        self.closed.store(true, Ordering::SeqCst);
        pending.clear();
    }

    fn dispatch(&self, message: Value) {
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            if let Some(reply) = lock(&self.pending).remove(&id) {
                let _ = reply.send(message);
            }
            return;
        }
        let session = message["sessionId"].as_str().map(str::to_owned);
        let request = message["params"]["requestId"].clone();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        match message["method"].as_str() {
            Some("Fetch.requestPaused") => self.post(
                id,
                session.as_deref(),
                "Fetch.continueRequest",
                json!({ "requestId": request }),
            ),
            Some("Fetch.authRequired") => {
                let response = self.sign_in(session.as_deref(), request.as_str().unwrap_or(""));
                self.post(
                    id,
                    session.as_deref(),
                    "Fetch.continueWithAuth",
                    json!({ "requestId": request, "authChallengeResponse": response }),
                );
            }
            _ => {
                let _ = self.events.send(Arc::new(message));
            }
        }
    }

    /// What a person types into the sign-in dialog: the page's credentials
    /// the first time, and Cancel when there are none or they were refused.
    fn sign_in(&self, session: Option<&str>, request: &str) -> Value {
        let login = session.and_then(|s| lock(&self.logins).get(s).cloned().flatten());
        let first = lock(&self.answered).insert(request.to_owned());
        match login {
            Some(l) if first => json!({
                "response": "ProvideCredentials",
                "username": l.user,
                "password": l.password,
            }),
            _ => json!({ "response": "CancelAuth" }),
        }
    }
}

/// A pipe, both ends closed on exec.
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    let ok = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0;
    assert!(ok, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 succeeded, so both are fresh descriptors we now own.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// A copy of `fd` numbered 10 or above (still closed on exec), so that
/// putting it at 3 or 4 in the child never collides with itself.
fn above_stdio(fd: &OwnedFd) -> OwnedFd {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor we own.
    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
    assert!(copy >= 10, "fcntl: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh descriptor we now own.
    unsafe { OwnedFd::from_raw_fd(copy) }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
