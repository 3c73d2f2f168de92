//! Parsed plans for the read-only pages (`/api/stories`, the dashboard).
//!
//! Owns: the last parse of each story's plan, reused while the stored text
//! is the same. A 10,000-task plan is 0.7 MB of YAML; parsing it on every
//! `GET` was most of the answer's time (issue 32), while the text changes
//! only when the plan is pushed again.
//! Must not: decide or write; plans are parsed by the core's
//! [`parse_plan`], as everywhere else, and the stored text stays the truth
//! (each read compares it with the text the cached parse came from).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use taskgate_core::ids::{RepoName, StoryId};
use taskgate_core::plan::{parse_plan, Plan};

/// The plan text a parse came from, and the plan (`None`: it did not parse).
type Parsed = (Arc<str>, Option<Arc<Plan>>);

/// One entry a story, replaced when its text changes: as many entries as
/// stories the pages have shown.
#[derive(Clone, Default)]
pub struct ParsedPlans(Arc<Mutex<HashMap<(RepoName, StoryId), Parsed>>>);

impl ParsedPlans {
    /// `text`, the story's stored plan, parsed: the kept parse when it came
    /// from the same text, else a new one (kept for the next read).
    pub fn parse(&self, repo: &RepoName, story: &StoryId, text: &str) -> Option<Arc<Plan>> {
        let key = (repo.clone(), story.clone());
        if let Some((kept, plan)) = self.0.lock().expect("not poisoned").get(&key) {
            if **kept == *text {
                return plan.clone();
            }
        }
        // Parsed outside the lock: another page is not held meanwhile.
        let plan = parse_plan(text).0.map(Arc::new);
        self.0
            .lock()
            .expect("not poisoned")
            .insert(key, (Arc::from(text), plan.clone()));
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "story: S\ntasks:\n  - id: a\n    title: A\n";

    #[test]
    fn a_plan_is_parsed_again_only_when_its_text_changed() {
        let plans = ParsedPlans::default();
        let (repo, story) = (RepoName::parse("o/r").unwrap(), StoryId::new("file:s"));
        let first = plans.parse(&repo, &story, PLAN).expect("parses");
        let again = plans.parse(&repo, &story, PLAN).expect("parses");
        assert!(Arc::ptr_eq(&first, &again), "the kept parse is reused");

        let renamed = PLAN.replace("title: A", "title: B");
        let changed = plans.parse(&repo, &story, &renamed).expect("parses");
        assert_eq!(changed.tasks[0].title, "B");
        assert!(plans.parse(&repo, &story, "story: [").is_none());
        assert_eq!(
            plans.parse(&repo, &story, PLAN).unwrap().tasks[0].title,
            "A"
        );
    }
}
