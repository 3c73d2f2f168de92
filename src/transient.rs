//! The one question asked of every failure on the decision path: is it
//! worth another try? The processor puts a delivery off on a transient
//! error and gives it up on a permanent one; each error type answers for
//! itself, next to its definition, and the processor converts any of them
//! through one `From` (`app::processor::DecideError`).
//!
//! Owns: the [`Transient`] trait. Must not: import anything of the crate
//! (it is a leaf, like `clock`), or decide how long to wait (the backoff).

/// An error that says whether trying again may succeed.
pub trait Transient: std::error::Error {
    /// Worth another try: the cause may go away by itself (GitHub answered
    /// 5xx or a rate limit or did not answer, the database was busy).
    fn is_transient(&self) -> bool;
}
