//! The pure core: what taskgate decides, given what happened.
//!
//! Owns: domain events, effects (the GitHub calls a decision implies, as
//! data), state changes, and the texts people read.
//! Must not: do IO, await, read the clock or the environment, or import any
//! shell module (intake, store, github, web). Time and configuration come in
//! as arguments, so every decision is a plain function that tests can call.

pub mod audit;
pub mod config;
mod decide;
pub mod doctor;
mod effect;
mod event;
pub mod failure;
pub mod flaky;
pub mod freeze;
pub mod internal;
pub mod network;
pub mod pace;
pub mod plan;
pub mod redeliver;
pub mod refusal;
pub mod render;
pub mod report;
pub mod ship;
pub mod story;
pub mod sync;
pub mod task;

pub use decide::{answer_comment, is_own, on_event, on_unused, CommentRef, Context, Decision};
pub use effect::{
    hidden_marker, AttemptRef, CheckAnnotation, CheckConclusion, CheckRunSpec, CheckStatus,
    CheckUpdate, Effect, IssueState, Reaction, APPROVE_BRANCH_ACTION, RETRY_ACTION,
};
pub use event::{Actor, Change, Event};
