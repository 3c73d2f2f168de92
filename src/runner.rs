//! Running acceptance tests (SPEC §6): the `local` runner's pieces, also used
//! by `taskgate run` in CI and on a laptop, and the `actions` runner's
//! ([`actions`]: dispatch a workflow that runs `taskgate run`, read its report
//! artifact back), so every runner produces the same
//! [`RunReport`](taskgate_core::report::RunReport).
//!
//! Owns: processes ([`process`]: one command in its own process group, with a
//! timeout, a scrubbed environment and capped output), the sandbox around
//! each ([`sandbox`]: bubblewrap, limits, the host check), git ([`mirror`]: one
//! bare mirror per repository; [`workspace`]: a throwaway checkout of one
//! exact commit; [`test_merge`]: a task's head merged with its story branch,
//! as pull-request CI tests it; [`deps`]: dependencies from other
//! repositories, read-only at `deps/<id>`) and the gate loop ([`local`]: re-run once, classify, check
//! artifacts and metrics, bound concurrent runs, cancel).
//!
//! Must not: talk to GitHub (except [`actions`], which reads artifacts),
//! decide task states, or take a command from the
//! commit under test. Commands come only from the [`Plan`](taskgate_core::plan::Plan)
//! the caller passes in, read from the default branch; the checkout is only
//! where they run. The code under test is untrusted: the bot runs every
//! command in the [`sandbox`] (and refuses to run any where the host cannot
//! sandbox, unless the operator opts out), and the scrubbed environment keeps
//! tokens and taskgate's secrets out of it either way. Forks are never run.
//!
//! One idea to keep in mind: a command is a process *group*. Timeouts,
//! cancellation and the end of the leader all kill the whole group, so a test
//! that forks a server cannot outlive its run.

pub mod actions;
pub mod deps;
pub mod local;
pub mod mirror;
pub mod process;
pub mod proof;
pub mod reports;
pub mod sandbox;
pub mod test_merge;
pub mod workspace;

use tokio::sync::watch;

pub use actions::{
    dispatch_inputs, fetch_report, read_report_zip, report_for_missing_artifact, ArtifactError,
    ArtifactLimits,
};
pub use deps::{DepError, DepSource};
pub use local::{plan_gates, run_gate_specs, run_gates, GateSpec, LocalRunner, RunOptions};
pub use mirror::{GitError, Mirror, MirrorStore};
pub use process::{run_command, CommandSpec, ProcessOutput};
pub use proof::{
    car_proof_gates, gates_digest, proof_gates, rollback_gates, stored_car_proof_gates,
};
pub use sandbox::{Isolation, OwnFile, Sandbox, SandboxRun};
pub use test_merge::TestMerge;
pub use workspace::Workspace;

/// Stops a running attempt when a newer push supersedes it. Dropping every
/// handle does not cancel.
#[derive(Debug, Clone)]
pub struct CancelHandle(watch::Sender<bool>);

/// Observes a [`CancelHandle`]; cheap to clone into each command.
#[derive(Debug, Clone)]
pub struct CancelToken(watch::Receiver<bool>);

/// A handle and the token it cancels.
pub fn cancel_pair() -> (CancelHandle, CancelToken) {
    let (tx, rx) = watch::channel(false);
    (CancelHandle(tx), CancelToken(rx))
}

impl CancelHandle {
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }
}

impl CancelToken {
    /// A token nobody can cancel.
    pub fn never() -> Self {
        // With the sender gone, `cancelled` pends forever.
        let (_, rx) = watch::channel(false);
        CancelToken(rx)
    }

    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once cancelled; never resolves if every handle was dropped
    /// without cancelling.
    pub async fn cancelled(&self) {
        let mut rx = self.0.clone();
        if rx.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
