//! A writer's push that lands between two of the App's calls on one
//! branch (issue 51): the race an App meets when it builds a commit in
//! several calls on a branch others may push to (a ship batch, a
//! one-story proof, a revert).
//!
//! Owns: the races a test arms ([`RepoHandle::on_next_write_to`]),
//! noticing the App's write to a branch one names when `emit` applies it
//! (under the state lock: [`heard`]), and running each race once, after
//! that write is applied and before its answer goes back ([`run`]), so
//! whatever the race pushes is on GitHub before the App's next call.
//! Must not: decide anything for the App, or fire on a person's write
//! (only the App's own writes arm the moment).
//!
//! On GitHub the writer learns the moment from the branch's `create`
//! webhook (sent here too, by `emit::branch_moved`) and pushes as fast as
//! she can: a race is that writer at her fastest.

use std::sync::Arc;

use crate::state::State;
use crate::{RepoHandle, Shared};

/// What a race does, once: given the repository and the branch the App
/// just wrote.
type Race = Box<dyn FnOnce(&RepoHandle, &str) + Send>;

/// The races waiting for their write, and those whose write came.
#[derive(Default)]
pub struct Races {
    armed: Vec<Armed>,
    /// (repository key, branch, race), oldest first.
    due: Vec<(String, String, Race)>,
}

struct Armed {
    repo: String,
    /// A branch name where `*` stands for any characters but `/`, as a
    /// ruleset's `fnmatch` pattern.
    pattern: String,
    race: Race,
}

/// The App (`sender`) wrote `branch` of repository `key`: the first race
/// armed on a pattern naming it is due.
pub(crate) fn heard(st: &mut State, key: &str, branch: &str, sender: &str) {
    if sender != st.bot_login() {
        return;
    }
    let races = &mut st.races;
    let found = (races.armed.iter()).position(|a| a.repo == key && matches(&a.pattern, branch));
    if let Some(at) = found {
        let armed = races.armed.remove(at);
        (races.due).push((armed.repo, branch.to_owned(), armed.race));
    }
}

/// Runs the races that are due, outside the state lock (a race pushes
/// through a [`RepoHandle`], as a person does).
pub(crate) fn run(shared: &Arc<Shared>) {
    loop {
        let (repo, branch, race) = {
            let mut st = shared.lock();
            if st.races.due.is_empty() {
                return;
            }
            st.races.due.remove(0)
        };
        race(&RepoHandle::new(shared.clone(), repo), &branch);
    }
}

/// Whether `branch` matches `pattern` (`*`: any run of characters
/// without `/`).
fn matches(pattern: &str, branch: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == branch,
        Some((before, after)) => {
            let Some(rest) = branch.strip_prefix(before) else {
                return false;
            };
            (0..=rest.len())
                .filter(|&i| rest.is_char_boundary(i))
                .take_while(|&i| !rest[..i].contains('/'))
                .any(|i| matches(after, &rest[i..]))
        }
    }
}

impl RepoHandle {
    /// Arms `race` to run once, right after the App's next write to a
    /// branch matching `pattern` (`taskgate/ship-batch-*`) is applied and
    /// before GitHub's answer reaches the App: what `race` pushes lands
    /// between that call and the App's next one. A race may arm another.
    pub fn on_next_write_to(
        &self,
        pattern: &str,
        race: impl FnOnce(&RepoHandle, &str) + Send + 'static,
    ) {
        let mut st = self.shared().lock();
        st.races.armed.push(Armed {
            repo: self.key().to_owned(),
            pattern: pattern.to_owned(),
            race: Box::new(race),
        });
    }

    /// A writer's push of a merge she made herself: a commit on `parents`
    /// (the base and a story's head, say: the parents of taskgate's own
    /// proof commit) whose tree is the last parent's with `files` written,
    /// pushed onto `branch` by `pusher` (`push` as for any push). Returns
    /// its sha.
    pub fn push_merge(
        &self,
        branch: &str,
        parents: &[&str],
        files: &[(&str, &str)],
        pusher: &str,
    ) -> String {
        self.shared().lock().user(pusher);
        let before = self.branch_sha(branch);
        let sha = self.write(|r, _| {
            let last = parents.last().expect("a merge has parents");
            let mut tree = r.commits[*last].files.clone();
            for (path, content) in files {
                tree.insert((*path).to_owned(), (*content).to_owned());
            }
            let parents = parents.iter().map(|p| (*p).to_owned()).collect();
            let sha = r.add_commit(parents, "Merge", tree);
            r.branches.insert(branch.to_owned(), sha.clone());
            sha
        });
        self.act(|st, at| crate::emit::branch_moved(st, at, branch, before, pusher));
        sha
    }

    /// How many races armed on this repository still wait for their write.
    pub fn races_armed(&self) -> usize {
        let st = self.shared().lock();
        (st.races.armed.iter())
            .filter(|a| a.repo == self.key())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_star_stands_for_any_characters_but_a_slash() {
        assert!(matches("taskgate/ship-batch-*", "taskgate/ship-batch-3"));
        assert!(matches(
            "taskgate/ship-batch-*",
            "taskgate/ship-batch-3-r5x"
        ));
        assert!(matches("taskgate/ship-*", "taskgate/ship-12"));
        assert!(!matches("taskgate/ship-batch-*", "taskgate/ship-12"));
        assert!(!matches("taskgate/*", "taskgate/ship/12"));
        assert!(matches("main", "main"));
        assert!(!matches("main", "mainline"));
    }
}
