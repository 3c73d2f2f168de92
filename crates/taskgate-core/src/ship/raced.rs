//! What taskgate says when a commit it builds in several calls on a
//! branch (a proof, a ship batch, a revert) kept coming back built on
//! someone else's commit (issue 51): a writer pushing onto the branch
//! between taskgate's calls, on every branch it tried.
//!
//! Owns: [`raced`]. Must not: decide what follows (the proof is refused,
//! the car formed again, the rollback refused, as for any commit GitHub
//! could not build) or read GitHub (the shell checks each merge's parents
//! and tries fresh branches).

/// Which commit could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RacedBuild {
    /// A one-story proof (`taskgate/ship-<issue>`).
    Proof,
    /// A ship train car (`taskgate/ship-batch-<car>`).
    Car,
    /// A rollback's revert (`taskgate/revert-<issue>`).
    Revert,
}

/// Why nothing was built: a sentence, said after "the story at … fails
/// with base …:" on a proof, or on its own on a rollback.
pub fn raced(build: RacedBuild, last_branch: &str, attempts: u32) -> String {
    let what = match build {
        RacedBuild::Proof => "the proof commit",
        RacedBuild::Car => "the ship batch's commit",
        RacedBuild::Revert => "the revert",
    };
    format!(
        "Someone else's commit landed on the branch while taskgate built {what}, on {attempts} branches in a row (the last `{last_branch}`), so nothing was built, tested or landed. Only taskgate should push to `taskgate/*` branches: restrict them with a ruleset that lists the taskgate app as a bypass actor."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raced_build_says_what_came_in_and_how_to_stop_it() {
        insta::assert_snapshot!(raced(RacedBuild::Proof, "taskgate/ship-12-5f0c2a9e41d7", 3), @"Someone else's commit landed on the branch while taskgate built the proof commit, on 3 branches in a row (the last `taskgate/ship-12-5f0c2a9e41d7`), so nothing was built, tested or landed. Only taskgate should push to `taskgate/*` branches: restrict them with a ruleset that lists the taskgate app as a bypass actor.");
        insta::assert_snapshot!(raced(RacedBuild::Car, "taskgate/ship-batch-3-a1b2c3d4e5f6", 3), @"Someone else's commit landed on the branch while taskgate built the ship batch's commit, on 3 branches in a row (the last `taskgate/ship-batch-3-a1b2c3d4e5f6`), so nothing was built, tested or landed. Only taskgate should push to `taskgate/*` branches: restrict them with a ruleset that lists the taskgate app as a bypass actor.");
        insta::assert_snapshot!(raced(RacedBuild::Revert, "taskgate/revert-12-0a1b2c3d4e5f", 3), @"Someone else's commit landed on the branch while taskgate built the revert, on 3 branches in a row (the last `taskgate/revert-12-0a1b2c3d4e5f`), so nothing was built, tested or landed. Only taskgate should push to `taskgate/*` branches: restrict them with a ruleset that lists the taskgate app as a bypass actor.");
    }
}
