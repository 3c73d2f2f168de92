//! One bare mirror per repository, kept up to date incrementally with
//! libgit2: each run fetches only what is new, and each workspace borrows the
//! mirror's objects instead of cloning (see [`super::workspace`]).
//!
//! Authentication is the installation token given per fetch, handed to
//! libgit2 through a credentials callback as user `x-access-token`: it is
//! never written into a URL, the mirror's config or a log line.
//!
//! The git calls block; the `*_async` variants run them on tokio's blocking
//! pool. Fetches into one mirror are serialised by a lock the [`MirrorStore`]
//! hands out, so two pushes in a row cannot race on the same ref files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use git2::{AutotagOption, Cred, FetchOptions, FetchPrune, Oid, RemoteCallbacks, Repository};

/// Every branch, force-updated: task branches are rewritten by their authors.
const HEADS_REFSPEC: &str = "+refs/heads/*:refs/heads/*";

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("commit {0} is not in the repository: it was probably force-pushed away; push again to re-run")]
    CommitNotFound(String),
    #[error("`{0}` is not a full commit sha (40 hex digits)")]
    InvalidSha(String),
    #[error("`{0}` is not a repository name of the form owner/name")]
    InvalidRepoName(String),
    #[error("fetching {url}: {source}")]
    Fetch { url: String, source: git2::Error },
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("a git task panicked or was cancelled: {0}")]
    Join(String),
}

impl GitError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> GitError {
        let context = context.into();
        move |source| GitError::Io { context, source }
    }
}

/// Where the mirrors live: `<root>/<owner>/<name>.git`.
#[derive(Debug)]
pub struct MirrorStore {
    root: PathBuf,
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl MirrorStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        MirrorStore {
            root: root.into(),
            locks: Mutex::new(HashMap::new()),
        }
    }

    /// The mirror of `owner/name`, created empty on first use.
    pub fn mirror(&self, repo: &str) -> Result<Mirror, GitError> {
        let key = repo.to_ascii_lowercase();
        let (owner, name) = key
            .split_once('/')
            .filter(|(o, n)| safe_segment(o) && safe_segment(n))
            .ok_or_else(|| GitError::InvalidRepoName(repo.to_string()))?;
        let lock = self
            .locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.clone())
            .or_default()
            .clone();
        Mirror::open_with_lock(self.root.join(owner).join(format!("{name}.git")), lock)
    }
}

fn safe_segment(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// A bare repository holding every branch of one remote.
#[derive(Debug, Clone)]
pub struct Mirror {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

impl Mirror {
    /// Opens the bare mirror at `path`, creating it if needed. Prefer
    /// [`MirrorStore::mirror`], which also serialises fetches.
    pub fn open(path: impl Into<PathBuf>) -> Result<Mirror, GitError> {
        Mirror::open_with_lock(path.into(), Arc::default())
    }

    fn open_with_lock(path: PathBuf, lock: Arc<Mutex<()>>) -> Result<Mirror, GitError> {
        if !path.join("HEAD").exists() {
            std::fs::create_dir_all(&path)
                .map_err(GitError::io(format!("creating {}", path.display())))?;
            Repository::init_bare(&path)?;
        }
        Ok(Mirror { path, lock })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn repo(&self) -> Result<Repository, GitError> {
        Ok(Repository::open_bare(&self.path)?)
    }

    /// Whether the mirror already has this commit.
    pub fn has_commit(&self, sha: &str) -> Result<bool, GitError> {
        let oid = parse_sha(sha)?;
        Ok(self.repo()?.find_commit(oid).is_ok())
    }

    /// Fetches every branch (new commits only), then `sha` itself if no
    /// branch contains it, and returns its id. A sha the remote no longer
    /// has is [`GitError::CommitNotFound`].
    pub fn fetch_commit(&self, url: &str, token: Option<&str>, sha: &str) -> Result<Oid, GitError> {
        let oid = parse_sha(sha)?;
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let repo = self.repo()?;
        if repo.find_commit(oid).is_ok() {
            return Ok(oid);
        }
        fetch(&repo, url, token, &[HEADS_REFSPEC])?;
        if repo.find_commit(oid).is_ok() {
            return Ok(oid);
        }
        // Not on any branch (a PR head, or gone): ask for the object itself.
        // A server that does not have it refuses; that is the same answer.
        let _ = fetch(&repo, url, token, &[sha]);
        repo.find_commit(oid)
            .map(|_| oid)
            .map_err(|_| GitError::CommitNotFound(sha.to_string()))
    }

    /// Fetches every branch.
    pub fn fetch_heads(&self, url: &str, token: Option<&str>) -> Result<(), GitError> {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        fetch(&self.repo()?, url, token, &[HEADS_REFSPEC])
    }

    /// The paths that differ between the trees of `base` and `head` (both
    /// fetched already), sorted; `None` when more than `max` do. A rename
    /// names both paths.
    pub fn changed_files(
        &self,
        base: &str,
        head: &str,
        max: usize,
    ) -> Result<Option<Vec<String>>, GitError> {
        let repo = self.repo()?;
        let tree_of = |sha: &str| -> Result<git2::Tree<'_>, GitError> {
            let oid = parse_sha(sha)?;
            let commit = repo
                .find_commit(oid)
                .map_err(|_| GitError::CommitNotFound(sha.to_string()))?;
            Ok(commit.tree()?)
        };
        let (old, new) = (tree_of(base)?, tree_of(head)?);
        let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
        let mut paths = std::collections::BTreeSet::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path() {
                    paths.insert(path.to_string_lossy().into_owned());
                }
            }
            if paths.len() > max {
                return Ok(None);
            }
        }
        Ok(Some(paths.into_iter().collect()))
    }

    /// [`Mirror::fetch_commit`] on the blocking pool.
    pub async fn fetch_commit_async(
        &self,
        url: String,
        token: Option<String>,
        sha: String,
    ) -> Result<Oid, GitError> {
        let mirror = self.clone();
        tokio::task::spawn_blocking(move || mirror.fetch_commit(&url, token.as_deref(), &sha))
            .await
            .map_err(|e| GitError::Join(e.to_string()))?
    }
}

pub(crate) fn parse_sha(sha: &str) -> Result<Oid, GitError> {
    if sha.len() != 40 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(GitError::InvalidSha(sha.to_string()));
    }
    Oid::from_str(sha).map_err(|_| GitError::InvalidSha(sha.to_string()))
}

fn fetch(
    repo: &Repository,
    url: &str,
    token: Option<&str>,
    refspecs: &[&str],
) -> Result<(), GitError> {
    let mut callbacks = RemoteCallbacks::new();
    let mut asked = false;
    callbacks.credentials(move |_url, _user, _allowed| match token {
        // libgit2 asks again after a rejection; answering twice would loop.
        Some(token) if !asked => {
            asked = true;
            Cred::userpass_plaintext("x-access-token", token)
        }
        Some(_) => Err(git2::Error::from_str("the token was rejected")),
        None => Err(git2::Error::from_str(
            "the remote asks for credentials and no token was given",
        )),
    });
    let mut options = FetchOptions::new();
    options
        .remote_callbacks(callbacks)
        .download_tags(AutotagOption::None)
        .prune(if refspecs == [HEADS_REFSPEC] {
            FetchPrune::On
        } else {
            FetchPrune::Off
        });
    let mut remote = repo.remote_anonymous(url)?;
    remote
        .fetch(refspecs, Some(&mut options), None)
        .map_err(|source| GitError::Fetch {
            url: redact(url),
            source,
        })
}

/// A URL safe to show: any `user:password@` part removed.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::process::Command;

    /// A non-bare repository with commits made by the git CLI.
    pub(crate) struct Origin {
        pub dir: tempfile::TempDir,
    }

    impl Origin {
        pub fn new() -> Origin {
            let origin = Origin {
                dir: tempfile::tempdir().unwrap(),
            };
            origin.git(&["init", "-q", "-b", "main"]);
            origin
        }

        pub fn git(&self, args: &[&str]) -> String {
            let out = Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@example.com",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .current_dir(self.dir.path())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        }

        /// Writes the files and commits them; returns the sha.
        pub fn commit(&self, files: &[(&str, &str)], message: &str) -> String {
            for (path, text) in files {
                let p = self.dir.path().join(path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            self.git(&["add", "-A"]);
            self.git(&["commit", "-q", "--allow-empty", "-m", message]);
            self.git(&["rev-parse", "HEAD"])
        }

        pub fn url(&self) -> String {
            format!("file://{}", self.dir.path().display())
        }
    }

    #[test]
    fn changed_files_are_the_paths_whose_content_differs_between_two_trees() {
        let origin = Origin::new();
        let a = origin.commit(&[("src/app.py", "1"), ("README.md", "x")], "a");
        origin.git(&["mv", "README.md", "docs.md"]);
        let b = origin.commit(&[("src/app.py", "2"), ("tests/new.py", "t")], "b");
        let c = origin.commit(&[], "empty");
        let root = tempfile::tempdir().unwrap();
        let mirror = MirrorStore::new(root.path()).mirror("o/r").unwrap();
        mirror.fetch_commit(&origin.url(), None, &c).unwrap();
        let changed = mirror.changed_files(&a, &b, 10).unwrap().unwrap();
        assert_eq!(
            changed,
            ["README.md", "docs.md", "src/app.py", "tests/new.py"]
        );
        assert_eq!(mirror.changed_files(&b, &c, 10).unwrap(), Some(vec![]));
        assert_eq!(
            mirror.changed_files(&a, &b, 3).unwrap(),
            None,
            "over the cap"
        );
        let unknown = "0".repeat(40);
        assert!(matches!(
            mirror.changed_files(&unknown, &b, 10),
            Err(GitError::CommitNotFound(_))
        ));
    }

    #[test]
    fn fetches_branches_incrementally_and_finds_commits() {
        let origin = Origin::new();
        let first = origin.commit(&[("a.txt", "1")], "first");
        let store_dir = tempfile::tempdir().unwrap();
        let store = MirrorStore::new(store_dir.path());
        let mirror = store.mirror("Owner/Repo").unwrap();
        assert!(mirror.path().ends_with("owner/repo.git"));
        assert!(!mirror.has_commit(&first).unwrap());
        assert_eq!(
            mirror
                .fetch_commit(&origin.url(), None, &first)
                .unwrap()
                .to_string(),
            first
        );
        let second = origin.commit(&[("a.txt", "2")], "second");
        mirror
            .fetch_commit(&origin.url(), Some("unused-token"), &second)
            .unwrap();
        assert!(mirror.has_commit(&first).unwrap() && mirror.has_commit(&second).unwrap());
        let repo = mirror.repo().unwrap();
        assert_eq!(
            repo.find_reference("refs/heads/main")
                .unwrap()
                .target()
                .unwrap()
                .to_string(),
            second
        );
    }

    #[test]
    fn a_force_pushed_away_commit_is_commit_not_found() {
        let origin = Origin::new();
        origin.commit(&[("a.txt", "1")], "first");
        let gone = origin.commit(&[("a.txt", "2")], "to be rewritten");
        origin.git(&["reset", "-q", "--hard", "HEAD~1"]);
        origin.git(&["reflog", "expire", "--expire=now", "--all"]);
        origin.git(&["gc", "-q", "--prune=now"]);
        let store_dir = tempfile::tempdir().unwrap();
        let mirror = MirrorStore::new(store_dir.path()).mirror("o/r").unwrap();
        let err = mirror.fetch_commit(&origin.url(), None, &gone).unwrap_err();
        assert!(
            matches!(&err, GitError::CommitNotFound(s) if *s == gone),
            "{err}"
        );
        assert!(err.to_string().contains("force-pushed away"));
    }

    #[test]
    fn bad_names_and_shas_are_refused() {
        let store = MirrorStore::new("/nonexistent");
        assert!(matches!(
            store.mirror("../etc"),
            Err(GitError::InvalidRepoName(_))
        ));
        assert!(matches!(
            store.mirror("o/.git"),
            Err(GitError::InvalidRepoName(_))
        ));
        assert!(matches!(parse_sha("main"), Err(GitError::InvalidSha(_))));
    }

    #[test]
    fn an_unreachable_remote_names_the_url_without_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let mirror = Mirror::open(dir.path().join("m.git")).unwrap();
        let err = mirror
            .fetch_heads("file:///nonexistent/taskgate-origin", None)
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("fetching file:///nonexistent/taskgate-origin"),
            "{err}"
        );
        assert_eq!(
            redact("https://x-access-token:ghs_x@github.com/o/r"),
            "https://github.com/o/r"
        );
    }
}
