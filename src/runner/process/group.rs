//! The process groups of one command and how they end: SIGTERM, a grace
//! period, then SIGKILL to whatever is left; SIGKILL when dropped armed.
//!
//! Owns: signalling the groups. Must not: spawn or read the command.

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::Child;

/// The process groups of one command: the leader's (`sh`, or bwrap's
/// monitor) and, in the sandbox, the sandbox's session. Dropping it while
/// armed (the run was abandoned mid-way) kills both.
pub(super) struct Group {
    pub(super) leader: Option<i32>,
    pub(super) sandbox: Option<i32>,
}

impl Group {
    fn groups(&self) -> impl Iterator<Item = i32> {
        self.leader.into_iter().chain(self.sandbox)
    }

    pub(super) fn signal(&self, sig: libc::c_int) {
        for pgid in self.groups() {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(-pgid, sig) };
        }
    }

    fn alive(&self) -> bool {
        // SAFETY: as above; signal 0 only checks for existence.
        self.groups()
            .any(|pgid| unsafe { libc::kill(-pgid, 0) } == 0)
    }

    /// SIGTERM to the group, SIGKILL to whatever is left after `grace`. In
    /// the sandbox SIGTERM goes to the sandbox's group only: bwrap's
    /// monitor dies of it, and with it at once the whole sandbox.
    pub(super) async fn terminate(
        &self,
        child: &mut Child,
        grace: Duration,
    ) -> io::Result<ExitStatus> {
        match self.sandbox {
            // SAFETY: as above.
            Some(pgid) => unsafe {
                libc::kill(-pgid, libc::SIGTERM);
            },
            None => self.signal(libc::SIGTERM),
        }
        let deadline = tokio::time::Instant::now() + grace;
        let status = match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(status) => Some(status?),
            Err(_) => None,
        };
        // The leader may be gone while children that ignore SIGTERM live on.
        while self.alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.signal(libc::SIGKILL);
        match status {
            Some(status) => Ok(status),
            None => child.wait().await,
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}
