//! taskgate: a GitHub App that runs a verification loop for planned work.
//!
//! This crate is the imperative shell around the pure core, the
//! `taskgate-core` crate (decisions, effects, texts, the comment grammar,
//! failure classification, test reports, identity newtypes; see
//! `docs/architecture.md`):
//! - shell: [`intake`] (webhooks), [`store`] (SQLite or PostgreSQL inbox, state, outbox),
//!   [`runner`] (acceptance commands in process groups, git mirrors),
//!   [`github`] (App auth, client, effect executor), [`web`] (health,
//!   `/metrics`, API, dashboard), [`app`] (wiring);
//! - leaves the shell shares: [`clock`] (the injected "now"), [`metrics`]
//!   (the Prometheus registry).
//!
//! Arrows point inward: the shell uses the core; the core cannot import
//! the shell (it is another crate, with none of the shell's dependencies).

// No function over 100 lines outside tests (clippy.toml sets the bound).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// An unsafe fn's body is not one unsafe block: each operation in it needs its own.
#![deny(unsafe_op_in_unsafe_fn)]
// No unsafe code outside the runner, whose libc calls (process groups,
// namespaces, mounts, pipes) are the shell's only ones; liblz4's C is
// reached through the `lz4dict` crate's safe API. `deny` rather than
// `forbid` so that the runner alone may allow it (.ci/run checks that no
// other module does).
#![deny(unsafe_code)]

pub mod app;
pub mod clock;
pub mod github;
pub mod intake;
pub mod metrics;
#[allow(unsafe_code)]
pub mod runner;
pub mod setup;
pub mod store;
#[cfg(test)]
pub(crate) mod testing;
pub mod transient;
pub mod web;
