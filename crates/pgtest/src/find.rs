//! Finding PostgreSQL's server programs: `initdb` on `PATH` first (the
//! user's choice wins), else the highest version under Debian's
//! `/usr/lib/postgresql/<version>/bin`, where the `postgresql` package puts
//! them (Debian's `/usr/bin` has only the client wrappers). The directory
//! used is `initdb`'s real one, symlinks resolved: `pg_ctl` and `postgres`
//! must sit beside it, as every PostgreSQL build lays them out.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::PgError;

/// Where Debian's `postgresql-<version>` packages install the server.
pub(crate) const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The directory holding `initdb`, `pg_ctl` and `postgres`, searched in
/// `path` (a `PATH` value) and then in `debian_root`'s versions, highest
/// first.
pub(crate) fn bindir(path: Option<&OsStr>, debian_root: &Path) -> Result<PathBuf, PgError> {
    let on_path = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("initdb"));
    let debian = versions(debian_root)
        .into_iter()
        .map(|dir| dir.join("bin").join("initdb"));
    on_path
        .chain(debian)
        .filter(|initdb| is_executable(initdb))
        .filter_map(|initdb| Some(fs::canonicalize(initdb).ok()?.parent()?.to_path_buf()))
        .find(|dir| {
            ["pg_ctl", "postgres"]
                .iter()
                .all(|p| is_executable(&dir.join(p)))
        })
        .ok_or(PgError::NotInstalled)
}

/// `root`'s subdirectories named as versions (`15`, `9.6`), highest first.
fn versions(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let version = name
                .to_str()?
                .split('.')
                .map(|part| part.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((version, entry.path()))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, dir)| dir).collect()
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_install(dir: &Path) {
        fs::create_dir_all(dir).unwrap();
        for program in ["initdb", "pg_ctl", "postgres"] {
            let path = dir.join(program);
            fs::write(&path, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn nothing_installed_is_not_installed_and_says_which_package() {
        let empty = tempfile::tempdir().unwrap();
        let err = bindir(Some(OsStr::new("")), &empty.path().join("none")).unwrap_err();
        assert!(matches!(err, PgError::NotInstalled));
        assert!(
            err.to_string().contains("Debian's `postgresql` package"),
            "{err}"
        );
    }

    #[test]
    fn debian_layout_takes_the_highest_version() {
        let root = tempfile::tempdir().unwrap();
        for version in ["9.6", "13", "15", "not-a-version"] {
            fake_install(&root.path().join(version).join("bin"));
        }
        let found = bindir(None, root.path()).unwrap();
        assert_eq!(found, fs::canonicalize(root.path().join("15/bin")).unwrap());
    }

    #[test]
    fn path_comes_first_and_a_lone_initdb_is_not_enough() {
        let root = tempfile::tempdir().unwrap();
        fake_install(&root.path().join("debian/15/bin"));
        fake_install(&root.path().join("custom"));
        let lone = root.path().join("lone");
        fs::create_dir(&lone).unwrap();
        fs::copy(root.path().join("custom/initdb"), lone.join("initdb")).unwrap();
        let path = std::env::join_paths([&lone, &root.path().join("custom")]).unwrap();
        let found = bindir(Some(&path), &root.path().join("debian")).unwrap();
        assert_eq!(found, fs::canonicalize(root.path().join("custom")).unwrap());
    }
}
