//! Subcommands of the `taskgate` binary other than `serve`. This is the
//! binary edge: files and stdin are read here, `anyhow` is allowed here.

#[cfg(feature = "demo")]
pub mod demo;
pub mod doctor;
pub mod init;
pub mod paths;
pub mod plan;
pub mod run;
pub mod schema;
pub mod setup;

use std::path::{Path, PathBuf};

use taskgate_core::plan::RepoFiles;

/// The working tree as the plan's repository view, for test-command
/// discovery from the command line.
pub struct DirFiles(pub PathBuf);

impl DirFiles {
    fn path(&self, rel: &str) -> Option<PathBuf> {
        // Discovery only asks for repository-relative paths; refuse others.
        let rel = Path::new(rel);
        (rel.is_relative()
            && !rel
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir)))
        .then(|| self.0.join(rel))
    }
}

impl RepoFiles for DirFiles {
    fn exists(&self, path: &str) -> bool {
        self.path(path).is_some_and(|p| p.exists())
    }
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.path(path)?).ok()
    }
}
