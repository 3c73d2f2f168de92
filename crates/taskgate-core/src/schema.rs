//! The shapes of the two files people (and agents) write: a plan
//! (`.taskgate/stories/*.yml`) and the repository config
//! (`.github/taskgate.yml`), as data. Each mapping is a [`Shape`]: its keys,
//! and for each key a description, an example, its type and the limits the
//! reader enforces (ranges, choices, counts).
//!
//! Owns: the tables ([`plan`], [`config`]) and their JSON Schema form
//! ([`plan_schema`], [`config_schema`]). The readers (`plan::parse`,
//! `config::read`, `freeze`) take their keys, ranges and choices from these
//! tables through `plan::yaml::Fields::of`, so the schema cannot say what
//! the reader does not do.
//!
//! Must not: read files or decide anything about a plan; relations between
//! tasks (unknown dependencies, cycles, depth) are `plan::validate`'s, and a
//! JSON Schema cannot express them.

pub mod config;
mod json;
pub mod plan;

#[cfg(test)]
mod tests;

pub use json::{config_schema, plan_schema, text};

/// Where the published schemas live; the `$id` of each.
pub const SCHEMA_BASE_URL: &str =
    "https://raw.githubusercontent.com/taskgate/taskgate/main/schemas";

/// The published schema of `which` (`plan`, `config`).
pub fn schema_url(which: &str) -> String {
    format!("{SCHEMA_BASE_URL}/{which}.schema.json")
}

/// The first line of a file editors check against its schema
/// (yaml-language-server, which VS Code's and JetBrains' YAML support use).
pub fn modeline(which: &str) -> String {
    format!("# yaml-language-server: $schema={}", schema_url(which))
}

/// An inclusive integer range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub min: u64,
    pub max: u64,
}

impl Bound {
    pub const fn new(min: u64, max: u64) -> Self {
        Bound { min, max }
    }
}

/// What a value may be. Strings accept integers too (`id: 7` is read as
/// `"7"`), as the reader does.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Text (an integer is read as its digits).
    Str,
    /// Text matching an ECMA-262 pattern (the reader's own check).
    Pattern(&'static str),
    Bool,
    Int(Bound),
    /// An integer or a decimal number.
    Number,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// A list of strings; one string is read as a list of one; empty
    /// (`key:`) is an empty list. `unique`: each at most once.
    StrList {
        item: &'static Kind,
        unique: bool,
    },
    /// A list (empty when the key is empty), at most `max_items` long.
    List {
        item: &'static Kind,
        max_items: Option<u64>,
    },
    /// A mapping with the keys of a [`Shape`].
    Object(&'static Shape),
    /// A mapping from names to values; empty (`key:`) is an empty mapping.
    Map {
        keys: Keys,
        value: &'static Kind,
    },
    /// Any of these forms.
    AnyOf(&'static [Kind]),
    /// Nothing (`key:` with no value).
    Null,
    /// `HH:MM`, a string ([`config::TIME_PATTERN`]).
    Time,
}

/// The names a [`Kind::Map`] accepts.
#[derive(Debug, Clone, Copy)]
pub enum Keys {
    Any,
    /// A fixed set, computed (the commands' table, the failure kinds).
    Of(fn() -> Vec<&'static str>),
}

/// One key of a mapping.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub key: &'static str,
    pub description: &'static str,
    /// A JSON value (as text), shown by editors; checked against the
    /// field's own schema by a test.
    pub example: &'static str,
    pub kind: Kind,
    pub required: bool,
}

/// A mapping the reader reads: its keys, and nothing else.
#[derive(Debug)]
pub struct Shape {
    /// Its name under `$defs`.
    pub name: &'static str,
    pub description: &'static str,
    pub fields: &'static [Field],
    /// Keys of which exactly one must be present (none: no such rule).
    pub one_of: &'static [&'static str],
    /// Empty (`key:` with no value) reads as a mapping with no key.
    pub nullable: bool,
}

impl Shape {
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + Clone + '_ {
        self.fields.iter().map(|f| f.key)
    }

    pub fn field(&self, key: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// The range of an integer key.
    pub fn bound(&self, key: &str) -> Option<Bound> {
        match self.field(key)?.kind {
            Kind::Int(b) => Some(b),
            _ => None,
        }
    }

    /// The words of a choice key.
    pub fn choices(&self, key: &str) -> Option<&'static [&'static str]> {
        match self.field(key)?.kind {
            Kind::Choice(words) => Some(words),
            _ => None,
        }
    }
}

/// A repository as GitHub names one, `owner/name`: the owner letters,
/// digits and single inner `-` (at most 39), the name letters, digits,
/// `.`, `_` and `-` (at most 100), neither `.` nor `..`.
pub const REPO_PATTERN: &str =
    "^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?/(?!\\.\\.?$)[A-Za-z0-9._-]{1,100}$";

/// Whether `s` is `owner/name` as GitHub allows them ([`REPO_PATTERN`]).
pub fn is_repo_name(s: &str) -> bool {
    let Some((owner, name)) = s.split_once('/') else {
        return false;
    };
    let owner_ok = (1..=39).contains(&owner.len())
        && !owner.starts_with('-')
        && !owner.ends_with('-')
        && owner.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    let name_ok = (1..=100).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    owner_ok && name_ok
}

/// Letters, digits, `-` and `_`: task, milestone and gate ids (they become parts of branch names).
pub const ID_PATTERN: &str = "^[A-Za-z0-9_-]+$";

/// Whether `s` is an id ([`ID_PATTERN`]).
pub fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
