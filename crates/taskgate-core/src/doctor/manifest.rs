//! What the doctor reads out of YAML: the permissions and events the App
//! manifest (`app-manifest.yml`) asks for, and whether a workflow file can
//! be dispatched (`on:` names `workflow_dispatch`).

use std::collections::BTreeMap;

use crate::plan::yaml::{self, Node, Value};

/// A GitHub App permission level, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Read,
    Write,
    Admin,
}

impl Access {
    /// GitHub's word for it; `None` for anything else (`none`, a typo).
    pub fn parse(word: &str) -> Option<Access> {
        match word {
            "read" => Some(Access::Read),
            "write" => Some(Access::Write),
            "admin" => Some(Access::Admin),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Admin => "admin",
        }
    }

    /// How GitHub's settings page shows it.
    pub fn setting(self) -> &'static str {
        match self {
            Access::Read => "Read-only",
            Access::Write => "Read and write",
            Access::Admin => "Admin",
        }
    }
}

/// What the App needs: the manifest's `default_permissions` and
/// `default_events`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    pub permissions: BTreeMap<String, Access>,
    pub events: Vec<String>,
}

/// What in an App manifest cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// Not YAML: the parser's message.
    #[error("the App manifest: {0}")]
    Yaml(String),
    #[error("the App manifest is empty")]
    Empty,
    #[error("the App manifest: `{name}` has no level")]
    NoLevel { name: String },
    #[error("the App manifest: `{name}: {word}` is not a level")]
    NotALevel { name: String, word: String },
}

impl Needs {
    /// Reads a manifest; `Err` says what in it cannot be read.
    pub fn from_manifest(src: &str) -> Result<Needs, ManifestError> {
        let root = yaml::load(src)
            .map_err(|p| ManifestError::Yaml(p.message))?
            .ok_or(ManifestError::Empty)?;
        let mut needs = Needs::default();
        if let Some(Value::Map(entries)) = get(&root, "default_permissions") {
            for (name, _, level) in entries {
                let Value::Str(word) = &level.value else {
                    return Err(ManifestError::NoLevel { name: name.clone() });
                };
                let access = Access::parse(word).ok_or_else(|| ManifestError::NotALevel {
                    name: name.clone(),
                    word: word.clone(),
                })?;
                needs.permissions.insert(name.clone(), access);
            }
        }
        if let Some(Value::Seq(events)) = get(&root, "default_events") {
            needs.events = events
                .iter()
                .filter_map(|e| match &e.value {
                    Value::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect();
        }
        Ok(needs)
    }
}

/// The events GitHub sends an App only when it has a permission, with
/// that permission ("To subscribe to this event, a GitHub App must have at
/// least read-level access for the \"Merge queues\" repository
/// permission").
const EVENT_PERMISSIONS: [(&str, &str); 1] = [("merge_group", "merge_queues")];

impl Needs {
    /// The events subscribed to without the permission GitHub requires
    /// for them, each as `(event, permission)`: GitHub would never send them.
    pub fn events_without_permission(&self) -> Vec<(&'static str, &'static str)> {
        EVENT_PERMISSIONS
            .into_iter()
            .filter(|(event, permission)| {
                self.events.iter().any(|e| e == event)
                    && !self.permissions.contains_key(*permission)
            })
            .collect()
    }
}

fn get<'n>(node: &'n Node, key: &str) -> Option<&'n Value> {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, _, v)| &v.value),
        _ => None,
    }
}

/// Whether a workflow's `on:` names `workflow_dispatch`, in any of its
/// three forms: a word, a list, or a mapping. A file that is not YAML
/// cannot be dispatched.
pub fn has_dispatch_trigger(workflow: &str) -> bool {
    const TRIGGER: &str = "workflow_dispatch";
    let Ok(Some(root)) = yaml::load(workflow) else {
        return false;
    };
    match get(&root, "on") {
        Some(Value::Str(event)) => event == TRIGGER,
        Some(Value::Seq(events)) => events
            .iter()
            .any(|e| matches!(&e.value, Value::Str(s) if s == TRIGGER)),
        Some(Value::Map(events)) => events.iter().any(|(k, _, _)| k == TRIGGER),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_manifest_asks_for_what_taskgate_uses() {
        let needs =
            Needs::from_manifest(include_str!("../../../../app-manifest.yml")).expect("readable");
        assert_eq!(needs.permissions["issues"], Access::Write);
        assert_eq!(needs.permissions["metadata"], Access::Read);
        assert!(needs.events.contains(&"check_suite".to_owned()));
        assert!(needs.events.contains(&"merge_group".to_owned()));
        assert_eq!(needs.permissions["merge_queues"], Access::Read);
        assert_eq!(needs.events_without_permission(), []);
    }

    #[test]
    fn an_event_without_the_permission_github_requires_for_it_is_found() {
        let needs = Needs::from_manifest(
            "default_permissions:\n  checks: write\ndefault_events:\n  - merge_group\n",
        )
        .unwrap();
        assert_eq!(
            needs.events_without_permission(),
            [("merge_group", "merge_queues")]
        );
    }

    #[test]
    fn a_level_that_is_not_githubs_is_an_error() {
        let err = Needs::from_manifest("default_permissions:\n  issues: lots\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the App manifest: `issues: lots` is not a level"
        );
    }

    #[test]
    fn each_unreadable_manifest_says_what_is_wrong() {
        let said = [
            Needs::from_manifest("default_permissions: [\n").unwrap_err(),
            Needs::from_manifest("").unwrap_err(),
            Needs::from_manifest("default_permissions:\n  issues:\n    - write\n").unwrap_err(),
        ]
        .map(|e| e.to_string());
        insta::assert_snapshot!(said.join("\n"), @r"
        the App manifest: YAML syntax error: while parsing a node, did not find expected node content
        the App manifest is empty
        the App manifest: `issues` has no level
        ");
    }

    #[test]
    fn dispatch_triggers_in_each_form() {
        assert!(has_dispatch_trigger("on: workflow_dispatch\n"));
        assert!(has_dispatch_trigger("on: [push, workflow_dispatch]\n"));
        assert!(has_dispatch_trigger(
            "on:\n  workflow_dispatch:\n    inputs: {}\n"
        ));
        assert!(!has_dispatch_trigger("on: push\n"));
        assert!(!has_dispatch_trigger("on:\n  push:\n"));
        assert!(!has_dispatch_trigger(": not yaml ["));
    }
}
