//! Why the local runner refuses to run task code in the sandbox.
//!
//! Owns: [`SettingError`] (an operator's setting taskgate refuses),
//! [`SandboxError`] (a run's sandbox could not be set up) and
//! [`ProbeFailure`] (what the host's check saw). Each Display is the
//! sentence a gate's output or `taskgate doctor` shows.
//! Must not: decide anything; none of these is retried (the probe is run
//! again by the next run, which is how a host that was fixed recovers).

use std::path::PathBuf;
use std::process::ExitStatus;

/// An operator's sandbox setting that taskgate refuses: nothing runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("TASKGATE_UNSANDBOXED={0}: expected 1 (run without the sandbox) or 0")]
    Unsandboxed(String),
    #[error("{name}={value} is too large")]
    TooLarge { name: String, value: String },
    #[error("{name}={value}: expected a whole number above 0")]
    NotANumber { name: String, value: String },
    #[error("TASKGATE_SANDBOX_RO_PATHS: `{0}` must be an absolute path other than /")]
    ReadOnlyPath(String),
    /// A read-only path that would show task code one of taskgate's own
    /// files (its key, `.env`, database, or the work directory with every
    /// repository's mirror).
    #[error(
        "TASKGATE_SANDBOX_RO_PATHS: `{}` would show task code taskgate's own {what} `{}`: \
         list only the toolchain's own folders (e.g. `~/.rustup` and `~/.cargo/bin`, \
         not their parent)",
        listed.display(),
        own.display()
    )]
    ExposesOwnFile {
        listed: PathBuf,
        own: PathBuf,
        what: OwnFile,
    },
}

/// Which of taskgate's own files a read-only path would expose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnFile {
    PrivateKey,
    EnvFile,
    Database,
    WorkDir,
}

impl std::fmt::Display for OwnFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OwnFile::PrivateKey => "private key",
            OwnFile::EnvFile => "`.env` file",
            OwnFile::Database => "database",
            OwnFile::WorkDir => "work directory (every repository's mirror and workspace)",
        })
    }
}

/// Why a run's commands may not run in the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("taskgate refused to run task code: {0}")]
    Settings(#[source] SettingError),
    /// The run's own `/etc` files could not be written.
    #[error("taskgate refused to run task code: the sandbox's files: {0}")]
    Files(#[source] std::io::Error),
    #[error(
        "taskgate refused to run task code: this host cannot sandbox it ({0}). \
         Install bubblewrap 0.8 or later (`apt-get install bubblewrap`) and allow \
         unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`; on \
         Ubuntu 24.04 also `kernel.apparmor_restrict_unprivileged_userns=0`), or set \
         TASKGATE_UNSANDBOXED=1 to run task code without a sandbox (unsafe: it gets \
         taskgate's access)"
    )]
    Unavailable(#[source] ProbeFailure),
}

/// What running `true` in the sandbox showed, when it did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeFailure {
    #[error("`{}` failed ({status}): {stderr}", program.display())]
    Failed {
        program: PathBuf,
        status: ExitStatus,
        stderr: String,
    },
    #[error("bubblewrap (`{}`) is not installed", program.display())]
    NotInstalled { program: PathBuf },
    #[error("`{}` could not start: {source}", program.display())]
    NoStart {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("`{}` did not answer within 10 s", program.display())]
    NoAnswer { program: PathBuf },
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn each_refusal_says_what_to_fix() {
        let setting = |e: SettingError| SandboxError::Settings(e).to_string();
        let name = || "TASKGATE_SANDBOX_MAX_FILES".to_owned();
        let said = [
            setting(SettingError::Unsandboxed("yes".into())),
            setting(SettingError::TooLarge {
                name: name(),
                value: "99999999999999999999".into(),
            }),
            setting(SettingError::NotANumber {
                name: name(),
                value: "many".into(),
            }),
            setting(SettingError::ReadOnlyPath("relative/dir".into())),
            SandboxError::Files(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
                .to_string(),
        ];
        insta::assert_snapshot!(said.join("\n"), @r"
            taskgate refused to run task code: TASKGATE_UNSANDBOXED=yes: expected 1 (run without the sandbox) or 0
            taskgate refused to run task code: TASKGATE_SANDBOX_MAX_FILES=99999999999999999999 is too large
            taskgate refused to run task code: TASKGATE_SANDBOX_MAX_FILES=many: expected a whole number above 0
            taskgate refused to run task code: TASKGATE_SANDBOX_RO_PATHS: `relative/dir` must be an absolute path other than /
            taskgate refused to run task code: the sandbox's files: permission denied
            ");
    }

    #[test]
    fn a_host_that_cannot_sandbox_says_what_the_probe_saw() {
        let program = || PathBuf::from("/usr/bin/bwrap");
        let said = [
            ProbeFailure::Failed {
                program: program(),
                status: ExitStatus::from_raw(1 << 8),
                stderr: "bwrap: No permissions to create new namespace".into(),
            },
            ProbeFailure::NotInstalled { program: program() },
            ProbeFailure::NoStart {
                program: program(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            },
            ProbeFailure::NoAnswer { program: program() },
        ]
        .map(|f| f.to_string());
        insta::assert_snapshot!(said.join("\n"), @r"
            `/usr/bin/bwrap` failed (exit status: 1): bwrap: No permissions to create new namespace
            bubblewrap (`/usr/bin/bwrap`) is not installed
            `/usr/bin/bwrap` could not start: permission denied
            `/usr/bin/bwrap` did not answer within 10 s
            ");
        let whole = SandboxError::Unavailable(ProbeFailure::NoAnswer { program: program() });
        insta::assert_snapshot!(whole, @"taskgate refused to run task code: this host cannot sandbox it (`/usr/bin/bwrap` did not answer within 10 s). Install bubblewrap 0.8 or later (`apt-get install bubblewrap`) and allow unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04 also `kernel.apparmor_restrict_unprivileged_userns=0`), or set TASKGATE_UNSANDBOXED=1 to run task code without a sandbox (unsafe: it gets taskgate's access)");
    }
}
