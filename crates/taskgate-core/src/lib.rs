//! taskgate-core: what taskgate decides, given what happened.
//!
//! The pure half of taskgate (see `docs/architecture.md`). The shell, the
//! `taskgate` crate, feeds it domain events and carries out the effects it
//! returns.
//!
//! Owns: domain events, effects (the GitHub calls a decision implies, as
//! data), state changes, the texts people read, the comment grammar
//! ([`commands`]), failure classification ([`classify`]), test-report
//! parsing ([`results`]) and the identity newtypes ([`ids`]).
//! Must not: do IO, await, read the clock or the environment. The crate
//! depends on no runtime, HTTP, database or git crate, so the compiler keeps
//! the arrows pointing inward; time and configuration come in as
//! arguments, so every decision is a plain function that tests can call.

// No function over 100 lines outside tests (clippy.toml sets the bound).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// No unsafe code: the core is data and decisions.
#![forbid(unsafe_code)]
// No clock, environment, files, processes or sleeping (clippy.toml lists
// them); tests read their fixtures from disk.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod classify;
pub mod commands;
pub mod ids;
pub mod results;

pub mod audit;
pub mod config;
mod decide;
pub mod doctor;
mod effect;
mod event;
pub mod failure;
pub mod flaky;
pub mod freeze;
pub mod host_disk;
pub mod internal;
pub mod network;
pub mod pace;
pub mod plan;
pub mod redeliver;
pub mod refusal;
pub mod render;
pub mod report;
pub mod schema;
pub mod ship;
pub mod story;
pub mod sync;
pub mod task;
pub mod webhook;

pub use decide::{answer_comment, is_own, on_event, on_unused, CommentRef, Context, Decision};
pub use effect::{
    hidden_marker, AttemptRef, CheckAnnotation, CheckConclusion, CheckRunSpec, CheckStatus,
    CheckUpdate, Effect, IssueState, Reaction, APPROVE_BRANCH_ACTION, RETRY_ACTION, WAKE_SUBJECT,
};
pub use event::{Actor, Change, Event};
