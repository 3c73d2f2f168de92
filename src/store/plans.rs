//! Stored plans, parsed once per text for the whole process: the pages,
//! the reconciler's passes, the ship's and the runs' look-ups.
//!
//! Owns: [`ParsedPlans`], the parses of the plan texts read lately, and
//! the checked plans of the reconciler (the text checked against the
//! repository's config and files, [`checked_plan`]). A 10,000-task plan
//! is 0.7 MB of YAML; parsing it again for every page, every pass and
//! every look-up was the largest CPU cost left at that size (issue 32),
//! while the text changes only when the plan is pushed again.
//! Must not: decide, or hold anything but parses: the stored text stays
//! the truth, each read gives its text, and a parse is reused only for
//! the same text (and the same config and files, for a checked plan).
//! Plans are parsed and checked by the core, as everywhere else.
//!
//! Bounded: the least recently used texts are dropped past
//! [`MAX_TEXT_BYTES`] of text or [`MAX_TEXTS`] texts, so a process that
//! has seen many plans holds only the recent ones.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use taskgate_core::plan::{parse_plan, Plan};
use taskgate_core::sync::{checked_plan, StoryPlan};

/// Texts kept, at most: 16 plans of 10,000 tasks (0.7 MB each), or
/// thousands of small ones.
pub const MAX_TEXT_BYTES: usize = 12 << 20;
pub const MAX_TEXTS: usize = 2_048;
/// Checked plans kept a text (one a config and set of files it was
/// checked against: usually one).
const CHECKS_A_TEXT: usize = 4;

/// What a check depends on besides the text.
type CheckedWith = (Option<String>, BTreeMap<String, String>);

#[derive(Default)]
struct Entry {
    /// When it was last read ([`Cache::tick`]).
    used: u64,
    /// The text parsed (`Some(None)`: it did not parse).
    parsed: Option<Option<Arc<Plan>>>,
    /// The text checked, newest last (`None`: it did not pass).
    checked: Vec<(CheckedWith, Option<Arc<Plan>>)>,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<Arc<str>, Entry>,
    /// The sum of the kept texts' lengths.
    bytes: usize,
    tick: u64,
    /// Parses and checks made (not taken from the cache).
    parses: u64,
}

impl Cache {
    /// The entry of `text`, marked as just used.
    fn entry(&mut self, text: &str) -> Option<&mut Entry> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(text)?;
        entry.used = tick;
        Some(entry)
    }

    /// The entry of `text`, made if it is new (dropping the least recently
    /// used ones past the bounds).
    fn entry_made(&mut self, text: &str) -> &mut Entry {
        self.parses += 1;
        if !self.entries.contains_key(text) {
            self.bytes += text.len();
            self.entries.insert(Arc::from(text), Entry::default());
            while self.bytes > MAX_TEXT_BYTES || self.entries.len() > MAX_TEXTS {
                let Some(oldest) = (self.entries.iter())
                    .filter(|(kept, _)| &***kept != text)
                    .min_by_key(|(_, e)| e.used)
                    .map(|(kept, _)| kept.clone())
                else {
                    break;
                };
                self.entries.remove(&oldest);
                self.bytes -= oldest.len();
            }
        }
        self.entry(text).expect("just made")
    }
}

/// The parses of the plan texts read lately, shared by every clone.
#[derive(Clone, Default)]
pub struct ParsedPlans(Arc<Mutex<Cache>>);

impl ParsedPlans {
    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.0.lock().expect("not poisoned")
    }

    /// `text` parsed (`None`: it does not parse): the kept parse of the
    /// same text, else a new one (kept for the next read).
    pub fn parse(&self, text: &str) -> Option<Arc<Plan>> {
        if let Some(parsed) = self.cache().entry(text).and_then(|e| e.parsed.clone()) {
            return parsed;
        }
        // Parsed outside the lock: another reader is not held meanwhile.
        let plan = parse_plan(text).0.map(Arc::new);
        self.cache().entry_made(text).parsed = Some(plan.clone());
        plan
    }

    /// `plan`'s text checked against its config and files, as the
    /// reconciler uses it ([`checked_plan`]; `None`: it does not pass):
    /// the kept check of the same text, config and files, else a new one.
    pub fn check(&self, plan: &StoryPlan) -> Option<Arc<Plan>> {
        let found = self.cache().entry(&plan.plan).and_then(|e| {
            let with = e
                .checked
                .iter()
                .find(|((config, files), _)| *config == plan.config && *files == plan.files);
            with.map(|(_, checked)| checked.clone())
        });
        if let Some(checked) = found {
            return checked;
        }
        let checked = checked_plan(plan).map(Arc::new);
        let mut cache = self.cache();
        let entry = cache.entry_made(&plan.plan);
        if entry.checked.len() >= CHECKS_A_TEXT {
            entry.checked.remove(0);
        }
        let with = (plan.config.clone(), plan.files.clone());
        entry.checked.push((with, checked.clone()));
        checked
    }

    /// How many parses and checks were made rather than reused.
    pub fn parses(&self) -> u64 {
        self.cache().parses
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskgate_core::ids::{InstallationId, RepoName, StoryId};

    const PLAN: &str = "story: S\ntasks:\n  - id: a\n    title: A\n";

    fn story_plan(text: &str) -> StoryPlan {
        StoryPlan {
            repo: RepoName::parse("o/r").unwrap(),
            story: StoryId::new("file:s"),
            installation: InstallationId::new(1),
            source: ".taskgate/stories/s.yml".into(),
            plan: text.into(),
            config: None,
            files: BTreeMap::new(),
            sha: crate::testing::sha(&"a".repeat(40)),
        }
    }

    #[test]
    fn a_plan_is_parsed_again_only_when_its_text_changed() {
        let plans = ParsedPlans::default();
        let first = plans.parse(PLAN).expect("parses");
        let again = plans.parse(PLAN).expect("parses");
        assert!(Arc::ptr_eq(&first, &again), "the kept parse is reused");
        assert_eq!(plans.parses(), 1);

        let renamed = PLAN.replace("title: A", "title: B");
        let changed = plans.parse(&renamed).expect("parses");
        assert_eq!(changed.tasks[0].title, "B");
        assert!(plans.parse("story: [").is_none());
        assert!(plans.parse("story: [").is_none());
        assert_eq!(plans.parse(PLAN).unwrap().tasks[0].title, "A");
        assert_eq!(plans.parses(), 3);
    }

    #[test]
    fn a_second_pass_on_the_same_text_config_and_files_does_not_check_again() {
        let plans = ParsedPlans::default();
        let plan =
            story_plan("story: S\ntasks:\n  - { id: a, title: A, requires_testing: false }\n");
        let first = plans.check(&plan).expect("passes");
        let again = plans.check(&plan).expect("passes");
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(plans.parses(), 1);
        assert_eq!(*first, checked_plan(&plan).unwrap());

        // Another config may judge the same text differently: checked again.
        let configured = StoryPlan {
            config: Some("review: human\n".into()),
            ..plan.clone()
        };
        plans.check(&configured).expect("passes");
        assert_eq!(plans.parses(), 2);
        // A text that does not pass is not checked twice either.
        let bad = story_plan("story: S\ntasks:\n  - id: a\n  - id: a\n");
        assert!(plans.check(&bad).is_none());
        assert!(plans.check(&bad).is_none());
        assert_eq!(plans.parses(), 3);
        plans.check(&plan).expect("still kept");
        assert_eq!(plans.parses(), 3);
    }

    #[test]
    fn the_least_recently_used_texts_go_past_the_bound() {
        let plans = ParsedPlans::default();
        let filler = "#".repeat(MAX_TEXT_BYTES / 5);
        let texts: Vec<String> = (0..5).map(|n| format!("{PLAN}# {n}\n{filler}\n")).collect();
        for text in &texts[..4] {
            plans.parse(text).expect("parses");
        }
        plans.parse(&texts[0]).expect("kept"); // used again: the newest
        plans.parse(&texts[4]).expect("parses"); // drops texts[1]
        assert_eq!(plans.parses(), 5);
        plans.parse(&texts[0]).expect("kept");
        assert_eq!(plans.parses(), 5);
        plans.parse(&texts[1]).expect("parsed again");
        assert_eq!(plans.parses(), 6);
        let cache = plans.cache();
        assert!(cache.bytes <= MAX_TEXT_BYTES);
        assert_eq!(
            cache.bytes,
            cache.entries.keys().map(|t| t.len()).sum::<usize>()
        );
    }
}
