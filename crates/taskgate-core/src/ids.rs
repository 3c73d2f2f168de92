//! Newtypes for the identities taskgate passes around.
//!
//! GitHub has several integers and strings that look alike (an issue's
//! number vs its database id, a delivery id vs a request id). Giving each its
//! own type lets the compiler stop the classic mix-ups, e.g. passing an issue
//! number where the sub-issue API wants the issue's database id.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! int_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(u64);

        impl $name {
            /// Any number is one: GitHub assigns them, taskgate only
            /// carries them.
            pub const fn new(id: u64) -> Self {
                $name(id)
            }

            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

macro_rules! str_id {
    ($(#[$doc:meta])* $name:ident) => {
        str_id!(@serde(transparent) $(#[$doc])* $name);
    };
    (@serde($($serde:tt)*) $(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde($($serde)*)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The text, for a caller that keeps it (a row, a payload).
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

int_id!(
    /// The number shown in an issue's or pull request's URL (`#12`).
    IssueNumber
);
int_id!(
    /// An issue's database id: what the sub-issue and dependency APIs want.
    IssueId
);
int_id!(
    /// An issue comment's database id.
    CommentId
);
int_id!(
    /// A GitHub App installation.
    InstallationId
);
int_id!(
    /// A GitHub user's database id; users are identified by id, not login.
    UserId
);
int_id!(
    /// A row of the outbox.
    EffectId
);

str_id!(
    /// `X-GitHub-Delivery`: unique per delivery, repeated on redelivery.
    DeliveryId
);
str_id!(
    @serde(try_from = "String", into = "String")
    /// A full commit sha (40 or 64 lowercase hex digits), built only by
    /// [`CommitSha::parse`]: a payload, an answer or a stored row with
    /// anything else is an error naming where it came from.
    CommitSha
);

str_id!(
    /// A task's id inside its plan (`data`, `signals`): stable across edits,
    /// used in markers, branch slugs and `depends_on`.
    TaskId
);
str_id!(
    @serde(try_from = "String", into = "String")
    /// A story's identity: its story key, `file:<name>` for a plan file
    /// ([`crate::story::markers::story_key_for_file`]) or `issue:<n>` for a
    /// plan posted on an issue ([`crate::story::markers::story_key_for_issue`]).
    /// Not the story's title ([`crate::plan::Plan::story`]). Read from a
    /// payload or a stored record through [`StoryId::parse`].
    StoryId
);

/// Reading a checked id: serde's `try_from`, so a bad one in a payload is
/// an error at its path, and `into` to write it back as the same text.
macro_rules! checked_text {
    ($name:ident, $error:ident) => {
        impl TryFrom<String> for $name {
            type Error = $error;

            fn try_from(text: String) -> Result<Self, $error> {
                $name::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

checked_text!(CommitSha, CommitShaError);
checked_text!(StoryId, StoryKeyError);

impl DeliveryId {
    pub fn new(id: impl Into<String>) -> Self {
        DeliveryId(id.into())
    }
}

impl TaskId {
    pub fn new(id: impl Into<String>) -> Self {
        TaskId(id.into())
    }
}

impl StoryId {
    pub fn new(key: impl Into<String>) -> Self {
        StoryId(key.into())
    }

    /// A story key as a person or the `actions` runner types it, by the
    /// plan grammar ([`crate::story::markers::story_key_for_file`],
    /// [`crate::story::markers::story_key_for_issue`]): `file:NAME`, NAME
    /// not empty and without whitespace (markers split on it), or
    /// `issue:N`, N an issue number (digits, no leading zero).
    pub fn parse(key: &str) -> Result<Self, StoryKeyError> {
        let number =
            |n: &str| !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit());
        match key.split_once(':') {
            Some(("file", name)) if !name.is_empty() && !name.contains(char::is_whitespace) => {
                Ok(StoryId::new(key))
            }
            Some(("issue", n)) if number(n) => Ok(StoryId::new(key)),
            _ => Err(StoryKeyError(key.to_owned())),
        }
    }
}

/// A text that is no story key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a story key (`file:NAME` or `issue:N`)")]
pub struct StoryKeyError(pub String);

/// Conversions and comparisons with text, for the plan ids that tests and
/// payloads spell as literals.
macro_rules! text_conversions {
    ($name:ident) => {
        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                $name(text.to_owned())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

text_conversions!(TaskId);

impl From<String> for TaskId {
    fn from(text: String) -> Self {
        TaskId(text)
    }
}
text_conversions!(StoryId);

/// A text that is no full commit sha.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a full commit sha (40 or 64 lowercase hex digits)")]
pub struct CommitShaError(pub String);

impl CommitSha {
    /// A full commit sha as git and GitHub write it: 40 lowercase hex
    /// digits (SHA-1), or 64 (a repository in git's SHA-256 object format,
    /// which git supports and GitHub may serve; taskgate compares shas as
    /// text, so it need not know which). Anything else — a short sha, upper
    /// case, a branch name, empty — is refused: a sha that is not one
    /// would be compared, stored and sent back to GitHub as if it were.
    pub fn parse(text: &str) -> Result<Self, CommitShaError> {
        let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
        match text.len() {
            40 | 64 if text.bytes().all(hex) => Ok(CommitSha(text.to_owned())),
            _ => Err(CommitShaError(text.to_owned())),
        }
    }

    /// For `#[serde(deserialize_with = …)]` on what GitHub answers: the
    /// text read through [`CommitSha::parse`].
    pub fn deserialize_checked<'de, D>(deserializer: D) -> Result<CommitSha, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        let text = String::deserialize(deserializer)?;
        CommitSha::parse(&text).map_err(serde::de::Error::custom)
    }

    /// [`CommitSha::deserialize_checked`] for a sha GitHub may send as
    /// `null`.
    pub fn deserialize_checked_option<'de, D>(
        deserializer: D,
    ) -> Result<Option<CommitSha>, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        Option::<String>::deserialize(deserializer)?
            .map(|text| CommitSha::parse(&text).map_err(serde::de::Error::custom))
            .transpose()
    }

    /// The first seven characters, as people write a commit. Never panics,
    /// even on a malformed sha from a payload.
    pub fn short(&self) -> &str {
        self.0.get(..7).unwrap_or(&self.0)
    }
}

/// `owner/name`, normalised to lower case: GitHub treats repository names
/// case-insensitively, so two spellings must not become two repositories.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RepoName(String);

/// A text that is not `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not of the form owner/name")]
pub struct RepoNameError(pub String);

impl RepoName {
    /// Accepts `owner/name`; rejects anything else with a reason.
    pub fn parse(full_name: &str) -> Result<Self, RepoNameError> {
        let mut parts = full_name.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(owner), Some(name), None) if !owner.is_empty() && !name.is_empty() => {
                Ok(RepoName(full_name.to_ascii_lowercase()))
            }
            _ => Err(RepoNameError(full_name.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A test's commit sha from a readable label: a full sha is itself, a
/// label up to 20 bytes is its bytes in hex padded with zeros (so
/// `sha("main")` and `sha("car-1")` are distinct valid shas), a longer one
/// its first 12 bytes in hex and a hash of the rest.
#[cfg(test)]
pub(crate) fn sha(label: &str) -> CommitSha {
    if let Ok(sha) = CommitSha::parse(label) {
        return sha;
    }
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    if label.len() <= 20 {
        return CommitSha(format!("{:0<40}", hex(label.as_bytes())));
    }
    let fnv = label.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    CommitSha(format!("{}{fnv:016x}", hex(&label.as_bytes()[..12])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_are_case_insensitive() {
        assert_eq!(
            RepoName::parse("Octo/Hello").unwrap(),
            RepoName::parse("octo/hello").unwrap()
        );
    }

    #[test]
    fn short_shas_never_split_a_character() {
        assert_eq!(CommitSha("0123456789abcdef".into()).short(), "0123456");
        assert_eq!(CommitSha("abc".into()).short(), "abc");
        assert_eq!(
            CommitSha("ab\u{e9}\u{e9}\u{e9}\u{e9}".into()).short(),
            "ab\u{e9}\u{e9}\u{e9}\u{e9}"
        );
    }

    #[test]
    fn commit_shas_are_40_or_64_lowercase_hex_digits() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(CommitSha::parse(sha1).unwrap().as_str(), sha1);
        assert!(CommitSha::parse(&"f".repeat(64)).is_ok(), "SHA-256");
        for bad in [
            "",
            "abc",
            "0123456",
            &sha1.to_uppercase(),
            &"g".repeat(40),
            &"a".repeat(41),
            "main",
        ] {
            assert!(CommitSha::parse(bad).is_err(), "{bad}");
        }
        insta::assert_snapshot!(
            CommitSha::parse("abc").unwrap_err(),
            @"`abc` is not a full commit sha (40 or 64 lowercase hex digits)"
        );
        #[derive(Debug, Deserialize)]
        struct Answer {
            #[serde(deserialize_with = "CommitSha::deserialize_checked")]
            sha: CommitSha,
            #[serde(deserialize_with = "CommitSha::deserialize_checked_option")]
            merge: Option<CommitSha>,
        }
        let read = |v: serde_json::Value| serde_json::from_value::<Answer>(v);
        let ok = read(serde_json::json!({"sha": sha1, "merge": null})).unwrap();
        assert_eq!((ok.sha.as_str(), ok.merge), (sha1, None));
        let err = read(serde_json::json!({"sha": "", "merge": null})).unwrap_err();
        assert!(
            err.to_string().contains("`` is not a full commit sha"),
            "{err}"
        );
        let err = read(serde_json::json!({"sha": sha1, "merge": "HEAD"})).unwrap_err();
        assert!(
            err.to_string().contains("`HEAD` is not a full commit sha"),
            "{err}"
        );
    }

    #[test]
    fn checked_ids_are_checked_when_read_and_written_back_as_text() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        let read: CommitSha = serde_json::from_value(serde_json::json!(sha1)).unwrap();
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::json!(sha1)
        );
        let err = serde_json::from_value::<CommitSha>(serde_json::json!("main")).unwrap_err();
        insta::assert_snapshot!(err, @"`main` is not a full commit sha (40 or 64 lowercase hex digits)");
        let story: StoryId = serde_json::from_value(serde_json::json!("issue:20")).unwrap();
        assert_eq!(story, "issue:20");
        let err = serde_json::from_value::<StoryId>(serde_json::json!("momentum")).unwrap_err();
        insta::assert_snapshot!(err, @"`momentum` is not a story key (`file:NAME` or `issue:N`)");
        assert_eq!(
            sha("main-0").as_str(),
            "6d61696e2d300000000000000000000000000000"
        );
        assert_ne!(sha("tree:a+b+c+d+e+f+g+h+i"), sha("tree:a+b+c+d+e+f+g+h+j"));
    }

    #[test]
    fn story_keys_follow_the_plan_grammar() {
        for good in ["file:momentum", "file:team/checks", "issue:20"] {
            assert_eq!(StoryId::parse(good).unwrap(), good);
        }
        for bad in [
            "",
            "momentum",
            "file:",
            "file:a b",
            "issue:",
            "issue:x",
            "issue:007",
            "pr:3",
        ] {
            assert!(StoryId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_repo_names_are_refused() {
        for bad in ["", "octo", "octo/", "/x", "a/b/c"] {
            assert!(RepoName::parse(bad).is_err(), "{bad}");
        }
        insta::assert_snapshot!(
            RepoName::parse("octo").unwrap_err(),
            @"`octo` is not of the form owner/name"
        );
    }
}
