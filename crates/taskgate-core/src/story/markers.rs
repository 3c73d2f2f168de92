//! Hidden markers: `<!-- taskgate:story=file:momentum task=data -->`, the
//! last line of every issue body taskgate writes. `taskgate resync` reads
//! them back to rebuild its database from GitHub, and the sync looks for them
//! before creating an issue so that nothing is created twice.
//!
//! A key is a list of `name=value` fields separated by spaces. Values are
//! percent-encoded down to `A-Z a-z 0-9 _ . : / + -` (a `-` that follows
//! another `-` is encoded too), so a key can hold any story or task id and
//! still never contains `--`, `>` or whitespace: it cannot end the HTML
//! comment early, and it reads back exactly as it was written.
//!
//! An issue taskgate writes in a repository other than its story's home (a
//! task of a story spanning repositories, issue 49) carries a [`Placed`]
//! marker naming the home: `story=file:checkout home=acme/api task=web`.
//! [`Marker::find_in`] refuses such a marker (its `home` field is not a
//! [`Marker`] field), so code that knows only one repository never mistakes
//! another home's story for one of its own.

use crate::effect::hidden_marker;
use crate::ids::{RepoName, StoryId};
use crate::plan::TaskId;

/// Where story files live on the default branch (SPEC §2).
pub const STORIES_DIR: &str = ".taskgate/stories/";

/// What a taskgate issue is, as written in its hidden marker.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Marker {
    /// The story issue. `story` is a story key ([`story_key_for_file`],
    /// [`story_key_for_issue`]).
    Story { story: StoryId },
    /// A task issue (parent or leaf) of a story.
    Task { story: StoryId, task: TaskId },
    /// A branch todo of a failing task (SPEC §4): `depth` counts from 1;
    /// `round` counts the task's failure episodes (a green run or an
    /// escalation ends one), so a task that fails again after passing gets
    /// new issues instead of finding the closed ones. Round 1 is not
    /// written: `story=… task=… todo=<depth>`, later rounds add `round=<n>`.
    BranchTodo {
        story: StoryId,
        task: TaskId,
        depth: u32,
        round: u32,
    },
}

impl Marker {
    /// The story key this marker belongs to.
    pub fn story(&self) -> &StoryId {
        match self {
            Marker::Story { story }
            | Marker::Task { story, .. }
            | Marker::BranchTodo { story, .. } => story,
        }
    }

    /// `story=<story>`, `story=<story> task=<id>` or `story=<story>
    /// task=<id> todo=<depth>[ round=<n>]`, values escaped.
    pub fn key(&self) -> String {
        match self {
            Marker::Story { story } => format!("story={}", encode(story.as_str())),
            Marker::Task { story, task } => {
                format!(
                    "story={} task={}",
                    encode(story.as_str()),
                    encode(task.as_str())
                )
            }
            Marker::BranchTodo {
                story,
                task,
                depth,
                round,
            } => {
                let mut key = format!(
                    "story={} task={} todo={depth}",
                    encode(story.as_str()),
                    encode(task.as_str())
                );
                if *round > 1 {
                    key.push_str(&format!(" round={round}"));
                }
                key
            }
        }
    }

    /// Reads back a key written by [`Marker::key`] (the store keeps issues
    /// by key); `None` for anything else.
    pub fn from_key(key: &str) -> Option<Marker> {
        parse_key(key).and_then(Placed::at_home)
    }

    /// The hidden HTML comment: `<!-- taskgate:story=… -->`.
    pub fn render(&self) -> String {
        hidden_marker(&self.key())
    }

    /// The first well-formed story, task or branch-todo marker in `body`. Surrounding
    /// text and whitespace inside the comment are tolerated; a marker with
    /// unknown or repeated fields, a bad escape or unsafe characters is
    /// refused (skipped), as are taskgate markers of other kinds.
    pub fn find_in(body: &str) -> Option<Marker> {
        body.match_indices("<!--").find_map(|(i, _)| {
            let inside = body[i + 4..].trim_start().strip_prefix("taskgate:")?;
            let end = inside.find("-->")?;
            parse_key(&inside[..end]).and_then(Placed::at_home)
        })
    }
}

/// A marker as written on an issue in some repository: `home` names the
/// story's repository when the issue lives elsewhere (issue 49), and is
/// `None` for the home's own issues, whose keys are exactly
/// [`Marker::key`]. The `home` field follows `story`, so every key of one
/// home's story in a part repository starts with [`Placed::story_prefix`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Placed {
    pub marker: Marker,
    pub home: Option<RepoName>,
}

impl Placed {
    /// A marker of the home's own issue.
    pub fn home(marker: Marker) -> Self {
        Placed { marker, home: None }
    }

    /// A marker of an issue in a part repository of `home`'s story.
    pub fn in_part(marker: Marker, home: &RepoName) -> Self {
        Placed {
            marker,
            home: Some(home.clone()),
        }
    }

    /// The marker, if it is the home's own (no `home` field).
    fn at_home(self) -> Option<Marker> {
        match self.home {
            None => Some(self.marker),
            Some(_) => None,
        }
    }

    /// `story=<story>[ home=<owner/name>][ task=…]`, values escaped.
    pub fn key(&self) -> String {
        let key = self.marker.key();
        let Some(home) = &self.home else {
            return key;
        };
        match key.split_once(' ') {
            Some((story, rest)) => format!("{story} home={} {rest}", encode(home.as_str())),
            None => format!("{key} home={}", encode(home.as_str())),
        }
    }

    /// The prefix of every key of `story` placed for `home` (`None`: the
    /// home's own), followed by a space or nothing.
    pub fn story_prefix(story: &StoryId, home: Option<&RepoName>) -> String {
        Placed {
            marker: Marker::Story {
                story: story.clone(),
            },
            home: home.cloned(),
        }
        .key()
    }

    /// Reads back a key written by [`Placed::key`], with or without `home`.
    pub fn from_key(key: &str) -> Option<Placed> {
        parse_key(key)
    }

    /// The hidden HTML comment: `<!-- taskgate:story=… home=… -->`.
    pub fn render(&self) -> String {
        hidden_marker(&self.key())
    }

    /// As [`Marker::find_in`], also reading a marker that names its home:
    /// what `taskgate resync` of a part repository files under its story.
    pub fn find_in(body: &str) -> Option<Placed> {
        body.match_indices("<!--").find_map(|(i, _)| {
            let inside = body[i + 4..].trim_start().strip_prefix("taskgate:")?;
            let end = inside.find("-->")?;
            parse_key(&inside[..end])
        })
    }
}

/// The story key of a plan file: `.taskgate/stories/momentum.yml` →
/// `file:momentum` (a file outside the stories folder keeps its path).
pub fn story_key_for_file(path: &str) -> StoryId {
    let path = path.strip_prefix("./").unwrap_or(path);
    let name = path.strip_prefix(STORIES_DIR).unwrap_or(path);
    let name = name
        .strip_suffix(".yml")
        .or_else(|| name.strip_suffix(".yaml"))
        .unwrap_or(name);
    StoryId::new(format!("file:{name}"))
}

/// The story key of a plan posted with `/taskgate plan` on issue `number`.
pub fn story_key_for_issue(number: u64) -> StoryId {
    StoryId::new(format!("issue:{number}"))
}

fn parse_key(key: &str) -> Option<Placed> {
    let mut story = None;
    let mut home = None;
    let mut task = None;
    let mut todo = None;
    let mut round = None;
    for field in key.split_ascii_whitespace() {
        let (name, value) = field.split_once('=')?;
        let slot = match name {
            "story" => &mut story,
            "home" => &mut home,
            "task" => &mut task,
            "todo" => &mut todo,
            "round" => &mut round,
            _ => return None,
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(decode(value)?);
    }
    let story = StoryId::new(story?);
    // A home reads back only as written: a repository name, lower case.
    let home = match home {
        None => None,
        Some(h) => Some(RepoName::parse(&h).ok().filter(|r| r.as_str() == h)?),
    };
    let marker = match (task, todo, round) {
        (None, None, None) => Marker::Story { story },
        (Some(task), None, None) => Marker::Task {
            story,
            task: TaskId::new(task),
        },
        (Some(task), Some(depth), round) => {
            let round = match round {
                None => 1,
                Some(r) => number(&r).filter(|r| *r > 1)?,
            };
            Marker::BranchTodo {
                story,
                task: TaskId::new(task),
                depth: number(&depth)?,
                round,
            }
        }
        _ => return None,
    };
    Some(Placed { marker, home })
}

/// A positive decimal number written canonically (no sign, no leading zero).
fn number(s: &str) -> Option<u32> {
    let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && !s.starts_with('0');
    canonical.then(|| s.parse().ok()).flatten()
}

fn is_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'/' | b'+' | b'-')
}

fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if is_safe(b) && !(b == b'-' && out.ends_with('-')) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(value: &str) -> Option<String> {
    if value.contains("--") {
        return None;
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = value.get(i + 1..i + 3)?;
                if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if is_safe(b) => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

/// Escapes one value the way marker fields are escaped (for other keys
/// built in the same style, such as check-run ids).
pub fn encode_value(value: &str) -> String {
    encode(value)
}

/// Reverses [`encode_value`]; `None` for a malformed escape.
pub fn decode_value(value: &str) -> Option<String> {
    decode(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(story: &str, id: &str) -> Marker {
        Marker::Task {
            story: story.into(),
            task: TaskId::new(id),
        }
    }

    #[test]
    fn markers_render_as_hidden_comments() {
        let story = Marker::Story {
            story: story_key_for_file(".taskgate/stories/momentum.yml"),
        };
        assert_eq!(story.render(), "<!-- taskgate:story=file:momentum -->");
        assert_eq!(
            task(story_key_for_issue(12).as_str(), "data").render(),
            "<!-- taskgate:story=issue:12 task=data -->"
        );
        assert_eq!(
            task("file:a b", "x-->y").key(),
            "story=file:a%20b task=x-%2D%3Ey"
        );
    }

    #[test]
    fn story_keys_name_the_file_or_the_issue() {
        assert_eq!(
            story_key_for_file(".taskgate/stories/momentum.yml"),
            "file:momentum"
        );
        assert_eq!(
            story_key_for_file("./.taskgate/stories/team/q3.yaml"),
            "file:team/q3"
        );
        assert_eq!(story_key_for_file("plans/x.yml"), "file:plans/x");
        assert_eq!(story_key_for_issue(12), "issue:12");
    }

    #[test]
    fn found_among_surrounding_text_and_whitespace() {
        let body = "Some text\n\n<!-- a plain comment -->\n<!--taskgate:story=file:m   task=data-->\ntrailing";
        assert_eq!(Marker::find_in(body), Some(task("file:m", "data")));
        let spaced = "x <!--\n  taskgate:story=issue:3\n-->";
        assert_eq!(
            Marker::find_in(spaced),
            Some(Marker::Story {
                story: "issue:3".into()
            })
        );
        let second = format!("{}\n{}", task("a", "b").render(), task("c", "d").render());
        assert_eq!(Marker::find_in(&second), Some(task("a", "b")));
        assert_eq!(Marker::find_in("no marker here"), None);
    }

    #[test]
    fn malformed_markers_are_refused() {
        for bad in [
            "<!-- taskgate:task=data -->",
            "<!-- taskgate:story=a story=b -->",
            "<!-- taskgate:story=a task=b extra=c -->",
            "<!-- taskgate:story=a task -->",
            "<!-- taskgate:story=a%zz -->",
            "<!-- taskgate:story=a%4 -->",
            "<!-- taskgate:story=a%FF -->",
            "<!-- taskgate:story=a--b -->",
            "<!-- taskgate:story=a>b -->",
            "<!-- taskgate:story=a<!-- x -->",
            "<!-- taskgate:story=a",
            "<!-- taskgate:reply-to=12 -->",
            "<!-- taskgate: -->",
            "<!-- taskgate:story=a todo=1 -->",
            "<!-- taskgate:story=a task=b todo=0 -->",
            "<!-- taskgate:story=a task=b todo=01 -->",
            "<!-- taskgate:story=a task=b todo=x -->",
            "<!-- taskgate:story=a task=b todo=-1 -->",
            "<!-- taskgate:story=a task=b todo=99999999999 -->",
            "<!-- taskgate:story=a task=b round=2 -->",
            "<!-- taskgate:story=a task=b todo=1 round=1 -->",
            "<!-- taskgate:story=a task=b todo=1 todo=2 -->",
            "<!-- taskgate:todo-attempt=2 story=a task=b todo=1 -->",
        ] {
            assert_eq!(Marker::find_in(bad), None, "{bad}");
        }
        // A malformed marker does not hide a good one after it.
        let body = "<!-- taskgate:story=a--b -->\n<!-- taskgate:story=ok -->";
        assert_eq!(
            Marker::find_in(body),
            Some(Marker::Story { story: "ok".into() })
        );
    }

    #[test]
    fn branch_todo_markers_name_task_depth_and_round() {
        let todo = |depth, round| Marker::BranchTodo {
            story: "file:m".into(),
            task: TaskId::new("data"),
            depth,
            round,
        };
        assert_eq!(
            todo(1, 1).render(),
            "<!-- taskgate:story=file:m task=data todo=1 -->"
        );
        assert_eq!(todo(2, 3).key(), "story=file:m task=data todo=2 round=3");
        for m in [todo(1, 1), todo(2, 1), todo(5, 12)] {
            let body = format!("Diagnosis\n\n{}\n", m.render());
            assert_eq!(Marker::find_in(&body), Some(m.clone()));
            assert_eq!(m.story(), "file:m");
        }
        assert_ne!(todo(1, 1).key(), task("file:m", "data").key());
    }

    #[test]
    fn a_marker_outside_the_home_names_the_home_and_only_placed_reads_it() {
        let home = RepoName::parse("acme/payments-api").unwrap();
        let web = Placed::in_part(task("file:checkout", "web"), &home);
        assert_eq!(
            web.render(),
            "<!-- taskgate:story=file:checkout home=acme/payments-api task=web -->"
        );
        let story = Placed::in_part(
            Marker::Story {
                story: "file:checkout".into(),
            },
            &home,
        );
        assert_eq!(story.key(), "story=file:checkout home=acme/payments-api");
        assert_eq!(
            Placed::story_prefix(&"file:checkout".into(), Some(&home)),
            story.key()
        );
        assert!(web.key().starts_with(&format!("{} ", story.key())));
        let body = format!("Checkout page\n\n{}\n", web.render());
        assert_eq!(Placed::find_in(&body), Some(web.clone()));
        assert_eq!(Placed::from_key(&web.key()), Some(web.clone()));
        // Code that knows one repository never takes it for its own story.
        assert_eq!(Marker::find_in(&body), None);
        assert_eq!(Marker::from_key(&web.key()), None);
        // The home's own markers are unchanged, and read both ways.
        let own = Placed::home(task("file:checkout", "api"));
        assert_eq!(own.key(), "story=file:checkout task=api");
        assert_eq!(
            Placed::find_in(&own.render()),
            Some(Placed::home(task("file:checkout", "api")))
        );
        assert_eq!(
            Placed::story_prefix(&"file:checkout".into(), None),
            "story=file:checkout"
        );
    }

    #[test]
    fn a_home_reads_back_only_as_written() {
        for bad in [
            "<!-- taskgate:story=a home=Acme/API task=b -->",
            "<!-- taskgate:story=a home=acme task=b -->",
            "<!-- taskgate:story=a home=a/b/c task=b -->",
            "<!-- taskgate:story=a home=a/b home=a/c task=b -->",
            "<!-- taskgate:story=a home= task=b -->",
        ] {
            assert_eq!(Placed::find_in(bad), None, "{bad}");
        }
        let todo = Placed::in_part(
            Marker::BranchTodo {
                story: "file:m".into(),
                task: TaskId::new("data"),
                depth: 2,
                round: 3,
            },
            &RepoName::parse("o/r-s.t_u").unwrap(),
        );
        assert_eq!(
            todo.key(),
            "story=file:m home=o/r-s.t_u task=data todo=2 round=3"
        );
        assert_eq!(Placed::find_in(&todo.render()), Some(todo));
    }

    /// A small deterministic generator (no proptest in this crate).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    #[test]
    fn every_generated_marker_round_trips_and_stays_inside_its_comment() {
        let alphabet: Vec<char> = "ab-Z09_.:/+->< =%&\"'`!@#\n\t-é日🚀\\{}[]"
            .chars()
            .collect();
        let mut rng = Lcg(7);
        for case in 0..5000 {
            let mut word = || -> String {
                let len = rng.next(14);
                (0..len)
                    .map(|_| alphabet[rng.next(alphabet.len())])
                    .collect()
            };
            let story = StoryId::new(word());
            let marker = if case % 3 == 0 {
                Marker::Story { story }
            } else if case % 5 == 0 {
                Marker::BranchTodo {
                    story,
                    task: TaskId::new(word()),
                    depth: rng.next(6) as u32 + 1,
                    round: rng.next(4) as u32 + 1,
                }
            } else {
                Marker::Task {
                    story,
                    task: TaskId::new(word()),
                }
            };
            let key = marker.key();
            assert!(!key.contains("--") && !key.contains('>'), "{key:?}");
            assert!(!key.contains(['\n', '\t', '<']), "{key:?}");
            let body = format!("Title text -- with > noise\n\n{}\n", marker.render());
            assert_eq!(Marker::find_in(&body), Some(marker.clone()), "{key:?}");
        }
    }
}
