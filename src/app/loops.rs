//! The loops beside the processor: each runs for the life of the process
//! on its own timer, with its own failure handling.
//!
//! Owns: nothing itself; one module per loop. [`run_queue`] starts the
//! local runner's attempts, [`redeliver`] asks GitHub again for the
//! webhooks that never arrived (the shell half of `core::redeliver`),
//! [`retention`] forgets what was decided long ago, and [`supervisor`]
//! restarts the loops that panic and tells `/healthz`.
//! Must not: decide anything; decisions stay in the core, taken by the
//! processor on what these loops record.

pub mod redeliver;
pub mod retention;
pub mod run_queue;
pub mod supervisor;
