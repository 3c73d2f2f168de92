//! `taskgate setup`: registering taskgate as a GitHub App from
//! `app-manifest.yml`, through GitHub's manifest flow (as Probot does).
//!
//! Owns: the manifest as posted (the embedded one with this installation's
//! URLs), the short-lived local web server a browser goes through, the
//! exchange of GitHub's one-time code for the app's credentials, and
//! writing them: the private key to a file only its owner can read, and
//! `APP_ID`, `PRIVATE_KEY_PATH`, `WEBHOOK_SECRET` into `.env`.
//! Must not: touch the store or any installation; it runs before there is
//! an app.
//!
//! The flow:
//! 1. `GET /` here shows a form that posts the manifest to GitHub
//!    (`/settings/apps/new`, or an organisation's) with a random `state`.
//! 2. The person confirms on GitHub, which sends the browser back to
//!    `/setup/callback?code=…&state=…` here.
//! 3. A state that is not ours is refused and changes nothing (another
//!    flow's callback, or a forged one). The code is exchanged, once, for
//!    the app id, key and secret (`github::manifest`).
//! 4. The files are written and the page links to the app's installation
//!    page; the server stops. A code GitHub refuses leaves everything as it
//!    was and the form open, to try again. Files that cannot be written
//!    once GitHub registered the app end the flow with what to do (the
//!    code is spent).

mod env_file;
mod manifest;
mod server;

pub use env_file::merge as merge_env;
pub use manifest::{form_action, manifest_json, ManifestOptions, APP_MANIFEST};
pub use server::{start, Registered, SetupConfig, SetupServer};

/// What can go wrong before or during the flow, each said so a person
/// knows what to change.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SetupError {
    #[error("{0}")]
    BadInput(String),
    #[error("app manifest: {0}")]
    Manifest(String),
    #[error(
        "the env file already sets {0} for another app; pass --force to replace it, or --env-file to write elsewhere"
    )]
    EnvConflict(String),
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("cannot listen on {addr} for GitHub's redirect: {message}")]
    Listen { addr: String, message: String },
    #[error("GitHub did not register the app: {0}")]
    GitHub(String),
    #[error("the setup server stopped before GitHub sent the browser back")]
    Stopped,
    #[error("{0}")]
    NotSaved(String),
}
