//! Why a ship request is not taken: one rule for the label, the command
//! and the HTTP API ([`ship_refusal`]), and one typed reason
//! ([`ShipRefusal`]) that each of them renders the same way.

use super::decide::ShipContext;
use super::{ShipState, StoryRecord};
use crate::config::Permission;
use crate::effect::Effect;
use crate::ids::{IssueNumber, UserId};

/// Why a story cannot ship now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShipRefusal {
    /// Some task or milestone is not complete: what is missing.
    NotShippable { missing: Vec<String> },
    /// Shippable, but the story PR has not arrived yet.
    PrNotOpen,
    /// Shippable, but a person closed the story PR without merging.
    PrClosed,
    /// A ship is under way: a second request is a no-op.
    AlreadyShipping,
    /// The repository is frozen (a person's freeze or a freeze window).
    Frozen { because: String },
    /// Shipped already (`deployed`, `review-ready`, `needs-fix`).
    Past(ShipState),
}

impl ShipRefusal {
    /// A no-op rather than a refusal: the story shipped or is shipping.
    pub fn is_ignored(&self) -> bool {
        matches!(self, ShipRefusal::AlreadyShipping | ShipRefusal::Past(_))
    }

    /// The reasons, one sentence each, as the API lists them and the
    /// label's refusal bullets them.
    pub fn reasons(&self) -> Vec<String> {
        match self {
            ShipRefusal::NotShippable { missing } => missing.clone(),
            ShipRefusal::PrNotOpen => vec!["the story pull request is not open yet".into()],
            ShipRefusal::PrClosed => {
                vec!["the story pull request was closed; reopen it to ship".into()]
            }
            ShipRefusal::AlreadyShipping => vec!["the story is already shipping".into()],
            ShipRefusal::Frozen { because } => vec![format!("nothing lands now: {because}")],
            ShipRefusal::Past(state) => vec![format!("the story is {} already", state.name())],
        }
    }

    /// The decision's outcome: `ship refused: …` or `ship ignored: …`; it
    /// is also what `/taskgate ship` answers after "did nothing:".
    pub fn outcome(&self) -> String {
        let verb = if self.is_ignored() {
            "ignored"
        } else {
            "refused"
        };
        format!("ship {verb}: {}", self.reasons().join("; "))
    }
}

/// Whether a ship request on `record` would be refused, and why. `None`:
/// it would merge.
pub fn ship_refusal(record: &StoryRecord) -> Option<ShipRefusal> {
    match record.state {
        ShipState::Queued | ShipState::Proving | ShipState::Shipping => {
            Some(ShipRefusal::AlreadyShipping)
        }
        ShipState::Deployed
        | ShipState::ReviewReady
        | ShipState::NeedsFix
        | ShipState::RolledBack => Some(ShipRefusal::Past(record.state)),
        ShipState::Building => Some(ShipRefusal::NotShippable {
            missing: record.missing.clone(),
        }),
        ShipState::Shippable if record.pr.is_none() || record.head.is_none() => {
            Some(if record.pr_closed {
                ShipRefusal::PrClosed
            } else {
                ShipRefusal::PrNotOpen
            })
        }
        ShipState::Shippable => None,
    }
}

/// Someone without the `ship` command's permission added the ship label
/// to story PR `pr`: the label goes, and a comment says why. `by` is the
/// sender, when the webhook named one.
pub fn on_ship_label_without_permission(
    ctx: &ShipContext,
    pr: IssueNumber,
    by: Option<(UserId, &str)>,
    needs: Permission,
    has: Option<Permission>,
) -> Vec<Effect> {
    let login = by.map_or("someone", |(_, login)| login);
    let label = &ctx.config.ship_label;
    let text = format!(
        "{} Adding `{}` ships the story, so the label was removed.",
        crate::render::permission_refused(
            "ship",
            needs,
            login,
            has,
            &crate::commands::Syntax::default(),
        ),
        crate::report::plain_text(label),
    );
    vec![
        Effect::LabelIssue {
            repo: ctx.repo.clone(),
            issue: pr,
            add: vec![],
            remove: vec![label.clone()],
        },
        Effect::PostComment {
            repo: ctx.repo.clone(),
            issue: pr,
            body: text,
            marker: format!(
                "ship-label-refused pr={pr} sender={}",
                by.map_or(0, |(id, _)| id.get())
            ),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::IssueNumber;

    fn shippable() -> StoryRecord {
        StoryRecord {
            state: ShipState::Shippable,
            pr: Some(IssueNumber::new(9)),
            head: Some(crate::ids::sha("abc")),
            ..StoryRecord::default()
        }
    }

    #[test]
    fn a_shippable_story_with_its_pr_ships() {
        assert_eq!(ship_refusal(&shippable()), None);
    }

    #[test]
    fn a_closed_story_pr_is_told_apart_from_one_not_open_yet() {
        let waiting = StoryRecord {
            pr: None,
            ..shippable()
        };
        assert_eq!(ship_refusal(&waiting), Some(ShipRefusal::PrNotOpen));
        let closed = StoryRecord {
            pr_closed: true,
            ..waiting
        };
        let refusal = ship_refusal(&closed).unwrap();
        assert_eq!(refusal, ShipRefusal::PrClosed);
        insta::assert_snapshot!(refusal.outcome(), @"ship refused: the story pull request was closed; reopen it to ship");
    }

    #[test]
    fn a_story_shipping_or_past_it_is_ignored() {
        let shipping = StoryRecord {
            state: ShipState::Shipping,
            ..shippable()
        };
        let refusal = ship_refusal(&shipping).unwrap();
        assert!(refusal.is_ignored());
        insta::assert_snapshot!(refusal.outcome(), @"ship ignored: the story is already shipping");
        let deployed = StoryRecord {
            state: ShipState::Deployed,
            ..shippable()
        };
        insta::assert_snapshot!(ship_refusal(&deployed).unwrap().outcome(), @"ship ignored: the story is deployed already");
    }
}
