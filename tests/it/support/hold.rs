//! Owns: gates a test opens ([`Hold`]), the way bors's `TestSyncMarker`
//! holds a background step: task code runs [`Hold::wait`] and stops there
//! until the test calls [`Hold::release`]; the test can wait until a run
//! is actually held ([`Hold::until_held`]). Also the sandbox every test
//! app's runs get ([`isolation`]): the operator's, with the folder of the
//! holds read-only in it, so sandboxed task code sees a release.
//! Must not: drive taskgate, or time anything: a hold opens when the test
//! says so, never after a while.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use taskgate::runner::{Isolation, Sandbox};

use super::eventually;

/// Where every hold of this test binary lives: under cargo's own folder
/// for integration tests' files (`<target>/tmp`), so outside the sandbox's
/// private `/tmp`, and outside every app's work directory.
static ROOT: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("holds");
    std::fs::create_dir_all(&root).unwrap();
    root
});

/// The isolation of a test app's runs: taskgate's (from the environment,
/// as the binary reads it), plus the holds' folder read-only in the
/// sandbox.
pub fn isolation() -> Isolation {
    match Isolation::from_env() {
        Isolation::Sandbox(sandbox) => {
            let mut ro_paths = sandbox.ro_paths.clone();
            ro_paths.push(ROOT.clone());
            Isolation::Sandbox(Arc::new(Sandbox {
                ro_paths,
                ..Sandbox::clone(&sandbox)
            }))
        }
        // Unsandboxed task code sees the host's files anyway.
        other @ (Isolation::Unsandboxed | Isolation::Host | Isolation::Refused(_)) => other,
    }
}

/// A gate task code waits at until the test opens it. Open for good once
/// released: every later run passes it at once.
pub struct Hold {
    dir: tempfile::TempDir,
    /// The wait's poll interval, unique to this hold, so that its `sleep`
    /// is told apart among the host's processes.
    nap: String,
}

impl Hold {
    pub fn new() -> Hold {
        Hold {
            dir: tempfile::tempdir_in(&*ROOT).unwrap(),
            nap: format!("0.05{:06}", fastrand::u32(..1_000_000)),
        }
    }

    fn open(&self) -> PathBuf {
        self.dir.path().join("open")
    }

    /// A shell command that returns once the hold is released, or
    /// dropped with the test (a poll of the release file: task code can
    /// only look at the folder, read-only). A hold the sandbox does not
    /// show fails the command at once, saying so, rather than pass.
    pub fn wait(&self) -> String {
        let dir = self.dir.path().display();
        // allowed sleep: the poll of a hold, which the test ends.
        let poll = format!("sleep {}", self.nap);
        format!(
            "{{ [ -d {dir} ] || {{ echo 'the hold {dir} is not in the sandbox' >&2; exit 97; }}; }} && \
             until [ -e {} ] || [ ! -d {dir} ]; do {poll}; done",
            self.open().display(),
        )
    }

    /// [`Hold::wait`] only where the tree holds `file`: a file the test
    /// pushes to the default branch just before the ship, so that the
    /// proof waits and the task's own runs before it do not.
    pub fn wait_where(&self, file: &str) -> String {
        format!("if [ -f {file} ]; then {}; fi\n", self.wait())
    }

    /// Opens the gate: a waiting run goes on, a later one does not stop.
    pub fn release(&self) {
        std::fs::write(self.open(), "").unwrap();
    }

    /// Whether a run waits at this hold now: its poll's `sleep` is alive
    /// (a killed one not yet reaped has no command line).
    pub fn is_held(&self) -> bool {
        let wanted = format!("sleep\0{}\0", self.nap);
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .any(|cmdline| cmdline == wanted.as_bytes())
    }

    /// Waits until a run waits at this hold.
    pub async fn until_held(&self) {
        eventually("a run waits at the hold", || async { self.is_held() }).await;
    }
}
