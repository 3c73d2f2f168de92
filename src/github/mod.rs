//! GitHub: App authentication, the HTTP client, and the effect executor.
//!
//! Owns: JWTs, installation tokens, every request taskgate sends to GitHub,
//! retries, backoff and rate-limit pacing.
//! Must not: decide what to do (the core decides; this module only performs
//! the effects it is handed) or touch SQL directly (it goes through `Store`).

pub mod auth;
pub mod client;
pub mod executor;
mod perform;
mod perform_runs;
pub mod permissions;

pub use auth::{app_jwt, AppCredentials, GitHubApp};
pub use client::{ApiResponse, Capped, GitHubError};
pub use executor::{Backoff, Executor, Pacing};
pub use permissions::Permissions;
