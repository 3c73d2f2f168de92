//! Owns: the real git side of a scenario: a bare repository the local
//! runner fetches from (`file://`), a work tree to commit in, and [`git`].
//! Must not: talk to the fake GitHub (a [`super::story::Story`] mirrors
//! what is committed here into it, with the same shas).

use std::path::{Path, PathBuf};
use std::process::Command;

use taskgate::app::loops::run_queue::GitSource;

use super::REPO;

/// Runs `git args` in `dir` as the agent; its trimmed output. Fails the
/// test if git does.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "agent")
        .env("GIT_AUTHOR_EMAIL", "agent@example.com")
        .env("GIT_COMMITTER_NAME", "agent")
        .env("GIT_COMMITTER_EMAIL", "agent@example.com")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A real bare repository the runner fetches from (`file://`), plus a work
/// tree to commit in, mirrored into the fake GitHub with the same shas.
pub struct Origin {
    _dir: tempfile::TempDir,
    root: PathBuf,
    pub work: PathBuf,
}

impl Origin {
    pub fn new() -> Origin {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("remotes");
        let bare = root.join(format!("{REPO}.git"));
        std::fs::create_dir_all(&bare).unwrap();
        git(&bare, &["init", "--bare", "-q"]);
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        git(&work, &["remote", "add", "origin", bare.to_str().unwrap()]);
        std::fs::write(work.join("README.md"), "hello\n").unwrap();
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "start"]);
        git(&work, &["push", "-q", "origin", "main"]);
        Origin {
            _dir: dir,
            root,
            work,
        }
    }

    /// The bare repository the runner fetches from.
    pub fn bare(&self) -> PathBuf {
        self.root.join(format!("{REPO}.git"))
    }

    /// The parents of a real commit, from the bare repository.
    pub fn parents(&self, sha: &str) -> Vec<String> {
        git(&self.bare(), &["rev-list", "--parents", "-n", "1", sha])
            .split_whitespace()
            .skip(1)
            .map(str::to_owned)
            .collect()
    }

    pub fn source(&self) -> GitSource {
        GitSource {
            url_template: format!("file://{}/{{repo}}.git", self.root.display()),
            with_token: false,
        }
    }

    /// Commits `files` on `branch` as GitHub has it at `from` (a commit
    /// the fake GitHub made, or one pushed), and pushes it; returns the sha.
    pub fn commit_from(
        &self,
        branch: &str,
        from: &str,
        files: &[(&str, &str)],
        message: &str,
    ) -> String {
        git(
            &self.work,
            &[
                "fetch",
                "-q",
                "origin",
                "+refs/fakehub/*:refs/fakehub/*",
                "+refs/heads/*:refs/remotes/origin/*",
            ],
        );
        git(&self.work, &["checkout", "-q", "-B", branch, from]);
        self.commit(branch, files, message)
    }

    /// Commits `files` on `branch` and pushes it; returns the sha.
    pub fn commit(&self, branch: &str, files: &[(&str, &str)], message: &str) -> String {
        git(&self.work, &["checkout", "-q", "-B", branch]);
        for (path, content) in files {
            let path = self.work.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        git(&self.work, &["add", "."]);
        git(
            &self.work,
            &["commit", "-q", "--allow-empty", "-m", message],
        );
        git(&self.work, &["push", "-q", "-f", "origin", branch]);
        git(&self.work, &["rev-parse", "HEAD"])
    }
}
