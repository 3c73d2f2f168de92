//! The ship train's actions as effects the shell performs (issue 31): a
//! car's commit to build, with the merge message of each story in it.
//!
//! Owns: [`build_car_effect`], [`car_branch`], [`CarHead`]. Must not:
//! decide what the train does (`on_train_event` does) or know how GitHub
//! builds the commit (`RepoClient::build_car` does).

use serde::{Deserialize, Serialize};

use super::CarId;
use crate::ids::{CommitSha, RepoName, StoryId};
use crate::Effect;

/// A story's head merged into a car, with its merge commit's message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarHead {
    pub story: StoryId,
    pub head: CommitSha,
    pub message: String,
}

/// The branch a car's commit is built on.
pub fn car_branch(car: CarId) -> String {
    format!("taskgate/ship-batch-{car}")
}

/// `TrainAction::Build` as an effect: the heads merged in order on `base`.
pub fn build_car_effect(
    repo: &RepoName,
    car: CarId,
    base: &CommitSha,
    heads: &[(StoryId, CommitSha)],
) -> Effect {
    let heads = heads
        .iter()
        .map(|(story, head)| CarHead {
            story: story.clone(),
            head: head.clone(),
            message: format!(
                "Merge {story} into ship batch {car}\n\n\
                 taskgate's ship train proves the stories of batch {car} together \
                 ({n} in all) and lands them as one fast-forward.",
                n = heads.len()
            ),
        })
        .collect();
    Effect::BuildShipCar {
        repo: repo.clone(),
        car,
        branch: car_branch(car),
        base: base.clone(),
        heads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_car_is_built_on_its_batch_branch_with_a_message_naming_the_batch() {
        let repo = RepoName::parse("acme/widgets").unwrap();
        let heads = [
            (
                StoryId::new("file:checkout"),
                crate::ids::sha(&"b".repeat(40)),
            ),
            (
                StoryId::new("file:search"),
                crate::ids::sha(&"c".repeat(40)),
            ),
        ];
        let effect = build_car_effect(&repo, CarId(3), &crate::ids::sha(&"a".repeat(40)), &heads);
        let Effect::BuildShipCar {
            branch,
            base,
            heads: built,
            ..
        } = effect
        else {
            panic!("{effect:?}");
        };
        assert_eq!(branch, "taskgate/ship-batch-3");
        assert_eq!(base, crate::ids::sha(&"a".repeat(40)));
        assert_eq!(
            built.iter().map(|h| &h.head).collect::<Vec<_>>(),
            vec![&heads[0].1, &heads[1].1]
        );
        insta::assert_snapshot!(built[1].message, @r"
        Merge file:search into ship batch 3

        taskgate's ship train proves the stories of batch 3 together (2 in all) and lands them as one fast-forward.
        ");
    }
}
