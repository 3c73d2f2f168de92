//! taskgate: a GitHub App that runs a verification loop for planned work.
//!
//! The crate is a functional core with an imperative shell (see
//! `docs/architecture.md`):
//! - pure: [`core`] (decisions, effects, texts), [`commands`] (the comment
//!   grammar), [`classify`] (failure kinds and summaries from test output);
//! - shell: [`intake`] (webhooks), [`store`] (SQLite inbox, state, outbox),
//!   [`runner`] (acceptance commands in process groups, git mirrors),
//!   [`github`] (App auth, client, effect executor), [`web`] (health,
//!   `/metrics`, API, dashboard), [`app`] (wiring);
//! - leaves the shell shares: [`clock`] (the injected "now"), [`metrics`]
//!   (the Prometheus registry), [`ids`] (identity newtypes).
//!
//! Arrows point inward: the shell uses the core; the core imports nothing
//! from the shell.

// No function over 100 lines outside tests (clippy.toml sets the bound).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod app;
pub mod classify;
pub mod clock;
pub mod commands;
pub mod core;
pub mod github;
pub mod ids;
pub mod intake;
pub mod metrics;
pub mod results;
pub mod runner;
pub mod setup;
pub mod store;
pub mod web;
