//! Paths from the environment or a flag, made absolute once at start.
//!
//! Owns: turning the relative paths a user gives (`TASKGATE_WORK_DIR`'s
//! default `taskgate-work`, `DATABASE_URL`'s `sqlite://taskgate.db`,
//! `PRIVATE_KEY_PATH`) into absolute ones against the directory `serve`
//! was started in. Must not: create or check anything on disk.
//!
//! Why: a relative path means something else to every process that starts
//! elsewhere. The runner starts bubblewrap with the workspace as its
//! working directory, and a relative `taskgate-work/workspaces/…` given to
//! it was looked up inside that workspace (every gate of every
//! task failed with "bwrap: Can't find source path").

use std::path::{Path, PathBuf};

/// `path` against `cwd` when it is relative (`.` and `..` kept: they are
/// the user's words, and resolving symlinks is not ours to do).
pub fn absolute_in(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    }
}

/// A `sqlite://PATH` (or `sqlite:PATH`) URL with an absolute path; any
/// other URL as it is (the store refuses what it cannot open).
pub fn absolute_database_url(cwd: &Path, url: &str) -> String {
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"));
    match path {
        Some(path) if !path.is_empty() && !path.starts_with(':') => {
            format!("sqlite://{}", absolute_in(cwd, Path::new(path)).display())
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_taken_from_the_start_directory_absolute_ones_kept() {
        let cwd = Path::new("/srv/taskgate");
        assert_eq!(
            absolute_in(cwd, Path::new("taskgate-work")),
            Path::new("/srv/taskgate/taskgate-work")
        );
        assert_eq!(
            absolute_in(cwd, Path::new("/data/work")),
            Path::new("/data/work")
        );
    }

    #[test]
    fn a_sqlite_url_gets_an_absolute_path_other_urls_stay() {
        let cwd = Path::new("/srv/taskgate");
        assert_eq!(
            absolute_database_url(cwd, "sqlite://taskgate.db"),
            "sqlite:///srv/taskgate/taskgate.db"
        );
        assert_eq!(
            absolute_database_url(cwd, "sqlite:///data/taskgate.db"),
            "sqlite:///data/taskgate.db"
        );
        assert_eq!(
            absolute_database_url(cwd, "postgres://u:p@db/taskgate"),
            "postgres://u:p@db/taskgate"
        );
        assert_eq!(
            absolute_database_url(cwd, "sqlite:state/t.db"),
            "sqlite:///srv/taskgate/state/t.db"
        );
        assert_eq!(absolute_database_url(cwd, "sqlite://"), "sqlite://");
    }
}
