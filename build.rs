//! Records the commit taskgate is built from, for `taskgate --version`
//! (`TASKGATE_COMMIT` in the crate's environment). In order: the
//! `TASKGATE_COMMIT` variable (the container build, which has no `.git`),
//! the checkout's `git rev-parse HEAD`, the `.cargo_vcs_info.json` that
//! `cargo package` writes into a published crate, else `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=TASKGATE_COMMIT");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&dir);
    let commit = std::env::var("TASKGATE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| from_git(dir))
        .or_else(|| from_vcs_info(dir))
        .unwrap_or_else(|| "unknown".into());
    let short: String = commit.trim().chars().take(12).collect();
    println!("cargo:rustc-env=TASKGATE_COMMIT={short}");
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// HEAD of the checkout this crate is the root of (not of a repository
/// that merely contains it, such as a project vendoring the crate), and the
/// files that change with it, so a new commit rebuilds.
fn from_git(dir: &Path) -> Option<String> {
    if !dir.join(".git").exists() {
        return None;
    }
    let sha = git(dir, &["rev-parse", "HEAD"])?;
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    Some(sha)
}

/// `{"git": {"sha1": "..."}, ...}`, read without a JSON parser.
fn from_vcs_info(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let rest = &text[text.find("\"sha1\"")? + 6..];
    let start = rest.find('"')? + 1;
    let end = start + rest[start..].find('"')?;
    Some(rest[start..end].to_owned())
}
