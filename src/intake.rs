//! Webhook intake: the HTTP endpoint GitHub posts to.
//!
//! Owns: signature verification, the body's limits (size, time, and the
//! memory all bodies in hand may hold), header and payload checks,
//! recording the delivery, and translating payloads into core events.
//! Must not: do the work a delivery implies on the request path. A delivery
//! is answered as soon as it is durably recorded; the processor
//! (`crate::app::processor`) picks it up from the store afterwards, so a
//! restart resumes where the last run stopped. The one decision taken here
//! is the core's answer for an event and action nothing acts on
//! (`core::on_unused`): it needs no payload, state or IO, and is stored with
//! the delivery as already processed.

pub mod age;
mod budget;
pub mod event;
mod handler;
pub mod kept;
pub mod payload;
pub mod signature;
pub mod translate;

pub use budget::{BodyBudget, BudgetTooSmall, DEFAULT_MEMORY_MIB, MAX_BODY_BYTES, MAX_BODY_MIB};
pub use handler::{webhook, IntakeState};
