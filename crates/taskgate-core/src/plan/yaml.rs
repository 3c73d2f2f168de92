//! The only place that knows the YAML crate (`saphyr`): it turns text into a
//! small owned tree whose every node carries its `line:column`, and offers the
//! field readers that the plan and config parsers share (unknown keys with
//! "did you mean", type errors, ranges), each pushing a [`Problem`] instead of
//! stopping at the first one.

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::{Pos, Problem, ProblemKind};
use crate::schema::Shape;

/// A YAML value with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Keys are strings (YAML allows more; our formats never need it).
    Map(Vec<(String, Pos, Node)>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "nothing",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }
}

/// Nesting deeper than this is refused before a tree is built: plans and
/// configs need a dozen levels, and each level is a stack frame in the
/// loader and in [`convert`] (30,000 levels of `- - - …` overflow it).
pub(crate) const MAX_DEPTH: usize = 64;

/// What the document may grow to once every alias is expanded, counted in
/// bytes of scalar text. saphyr bounds expansion in *nodes* (100,000), but
/// 100,000 copies of a 32 KB string are 3 GB.
pub(crate) const MAX_EXPANDED_BYTES: usize = 4 << 20;

/// Walks the parser's events (no tree, no recursion) and refuses a
/// document nested deeper than [`MAX_DEPTH`] or whose aliases expand past
/// [`MAX_EXPANDED_BYTES`]. Syntax errors are left to the loader, which
/// reports them with their place.
fn check_limits(src: &str) -> Result<(), Box<Problem>> {
    use saphyr_parser::{Event, Parser};
    let refuse = |marker: saphyr_parser::Marker, message: String| {
        Box::new(Problem::new(
            Some(Pos::new(marker.line(), marker.col() + 1)),
            ProblemKind::Syntax { message },
        ))
    };
    // Expanded bytes of each anchored node, and of each open collection.
    let mut anchors: std::collections::HashMap<usize, usize> = Default::default();
    let mut open: Vec<(usize, usize)> = Vec::new(); // (anchor id, bytes so far)
    let mut total = 0usize;
    for event in Parser::new_from_str(src) {
        let Ok((event, span)) = event else {
            return Ok(());
        };
        let mut add = |bytes: usize, open: &mut Vec<(usize, usize)>| {
            if let Some((_, so_far)) = open.last_mut() {
                *so_far = so_far.saturating_add(bytes);
            }
            total = total.saturating_add(bytes);
        };
        match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if open.len() >= MAX_DEPTH {
                    return Err(refuse(
                        span.start,
                        format!("nested more than {MAX_DEPTH} levels deep"),
                    ));
                }
                open.push((anchor, 0));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, bytes)) = open.pop() {
                    if anchor != 0 {
                        anchors.insert(anchor, bytes);
                    }
                    // Its bytes were counted in `total` as they came.
                    if let Some((_, parent)) = open.last_mut() {
                        *parent = parent.saturating_add(bytes);
                    }
                }
            }
            Event::Scalar(text, _, anchor, _) => {
                // One byte at least, so a million empty aliases count too.
                let bytes = text.len().max(1);
                if anchor != 0 {
                    anchors.insert(anchor, bytes);
                }
                add(bytes, &mut open);
            }
            Event::Alias(anchor) => {
                let bytes = anchors.get(&anchor).copied().unwrap_or(1);
                add(bytes, &mut open);
            }
            _ => {}
        }
        if total > MAX_EXPANDED_BYTES {
            return Err(refuse(
                span.start,
                format!(
                    "aliases expand this document past {} MiB",
                    MAX_EXPANDED_BYTES >> 20
                ),
            ));
        }
    }
    Ok(())
}

/// Parses one YAML document. `Ok(None)` for an empty document.
pub fn load(src: &str) -> Result<Option<Node>, Box<Problem>> {
    check_limits(src)?;
    let docs = MarkedYaml::load_from_str(src).map_err(|e| {
        let m = e.marker();
        Box::new(Problem::new(
            Some(Pos::new(m.line(), m.col() + 1)),
            ProblemKind::Syntax {
                message: e.info().to_string(),
            },
        ))
    })?;
    match docs.len() {
        0 => Ok(None),
        1 => convert(&docs[0]).map(|n| match n.value {
            Value::Null => None,
            _ => Some(n),
        }),
        _ => Err(Box::new(Problem::new(
            Some(pos_of(&docs[1])),
            ProblemKind::Syntax {
                message: "expected a single YAML document, found several".into(),
            },
        ))),
    }
}

fn pos_of(y: &MarkedYaml) -> Pos {
    Pos::new(y.span.start.line(), y.span.start.col() + 1)
}

fn convert(y: &MarkedYaml) -> Result<Node, Box<Problem>> {
    let pos = pos_of(y);
    let syntax = |message: &str| {
        Box::new(Problem::new(
            Some(pos),
            ProblemKind::Syntax {
                message: message.into(),
            },
        ))
    };
    let value = match &y.data {
        YamlData::Value(s) => match s {
            Scalar::Null => Value::Null,
            Scalar::Boolean(b) => Value::Bool(*b),
            Scalar::Integer(i) => Value::Int(*i),
            Scalar::FloatingPoint(f) => Value::Float(f.into_inner()),
            Scalar::String(s) => Value::Str(s.to_string()),
        },
        YamlData::Representation(s, _, _) => Value::Str(s.to_string()),
        YamlData::Sequence(items) => {
            Value::Seq(items.iter().map(convert).collect::<Result<_, _>>()?)
        }
        YamlData::Mapping(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (k, v) in map {
                let key = match &k.data {
                    YamlData::Value(Scalar::String(s)) => s.to_string(),
                    YamlData::Value(Scalar::Integer(i)) => i.to_string(),
                    YamlData::Value(Scalar::Boolean(b)) => b.to_string(),
                    _ => {
                        return Err(Box::new(Problem::new(
                            Some(pos_of(k)),
                            ProblemKind::Syntax {
                                message: "mapping keys must be plain strings".into(),
                            },
                        )))
                    }
                };
                entries.push((key, pos_of(k), convert(v)?));
            }
            Value::Map(entries)
        }
        YamlData::Tagged(_, inner) => return convert(inner),
        YamlData::Alias(_) => return Err(syntax("YAML aliases are not supported here")),
        YamlData::BadValue => return Err(syntax("invalid value")),
    };
    Ok(Node { pos, value })
}

/// Every place of a document as a JSON pointer: values (and mappings, and
/// lists) by where they start, keys by where they are written. A block
/// mapping starts where its first key does: a problem about a key
/// ([`Problem::is_about_a_key`]) takes the key's pointer, any other the
/// mapping's.
#[derive(Debug, Clone, Default)]
pub struct Pointers {
    values: std::collections::HashMap<Pos, String>,
    keys: std::collections::HashMap<Pos, String>,
}

impl Pointers {
    pub fn of(root: &Node) -> Self {
        let mut index = Pointers::default();
        index.walk(root, String::new());
        index
    }

    fn walk(&mut self, node: &Node, at: String) {
        match &node.value {
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.walk(item, format!("{at}/{i}"));
                }
            }
            Value::Map(entries) => {
                for (key, pos, value) in entries {
                    let here = format!("{at}/{}", escape(key));
                    self.keys.entry(*pos).or_insert_with(|| here.clone());
                    self.walk(value, here);
                }
            }
            Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => {}
        }
        // The outermost node that starts here wins (a mapping over its
        // first value), so it is inserted after its children.
        self.values.insert(node.pos, at);
    }

    /// The pointer of the place `problem` names.
    pub fn locate(&self, problem: &Problem) -> Option<String> {
        let pos = problem.pos?;
        let (first, then) = if problem.is_about_a_key() {
            (&self.keys, &self.values)
        } else {
            (&self.values, &self.keys)
        };
        first.get(&pos).or_else(|| then.get(&pos)).cloned()
    }

    /// Gives each problem without a pointer the one of its place.
    pub fn attach(&self, problems: &mut [Problem]) {
        for p in problems.iter_mut().filter(|p| p.pointer.is_none()) {
            p.pointer = self.locate(p);
        }
    }
}

/// A key as a JSON pointer token: `~` → `~0`, `/` → `~1`.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl Node {
    /// The value as JSON, for checking a document against its schema.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(x) => J::from(*x),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, _, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// The closest candidate, if it is close enough to be a plausible typo.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, c)| *score >= 0.8 && *c != word)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

/// A mapping being read: each known key is fetched once; unknown keys were
/// already reported when the reader was made.
pub(crate) struct Fields<'n> {
    pub pos: Pos,
    entries: &'n [(String, Pos, Node)],
    /// The table the keys, ranges and choices come from ([`Fields::of`]).
    shape: Option<&'static Shape>,
}

impl<'n> Fields<'n> {
    /// `what` names the thing for messages ("task `data`", "settings").
    pub fn new(
        node: &'n Node,
        what: &str,
        allowed: &[&str],
        problems: &mut Vec<Problem>,
    ) -> Option<Self> {
        let Value::Map(entries) = &node.value else {
            problems.push(wrong_type(node, what, "a mapping"));
            return None;
        };
        for (key, pos, _) in entries {
            if !allowed.contains(&key.as_str()) {
                problems.push(Problem::new(
                    Some(*pos),
                    ProblemKind::UnknownKey {
                        key: key.clone(),
                        context: what.to_string(),
                        suggestion: did_you_mean(key, allowed.iter().copied()),
                    },
                ));
            }
        }
        Some(Fields {
            pos: node.pos,
            entries,
            shape: None,
        })
    }

    /// A mapping of `shape`: its keys are the shape's, and [`Fields::bounded`]
    /// and [`Fields::choice_of`] read their limits from it.
    pub fn of(
        node: &'n Node,
        what: &str,
        shape: &'static Shape,
        problems: &mut Vec<Problem>,
    ) -> Option<Self> {
        let keys: Vec<&str> = shape.keys().collect();
        let mut f = Fields::new(node, what, &keys, problems)?;
        f.shape = Some(shape);
        Some(f)
    }

    /// The shape's field `key`; a key the table lacks is a reader bug,
    /// loud in tests.
    fn declared(&self, key: &str) -> Option<&'static crate::schema::Field> {
        let field = self.shape.and_then(|s| s.field(key));
        debug_assert!(field.is_some(), "`{key}` is not in the reader's table");
        field
    }

    /// An integer within the range the shape gives `key`.
    pub fn bounded(&self, key: &str, problems: &mut Vec<Problem>) -> Option<u64> {
        match self.declared(key)?.kind {
            crate::schema::Kind::Int(b) => self.int(key, b.min, b.max, problems),
            _ => None,
        }
    }

    /// One of the words the shape gives `key`.
    pub fn choice_of(&self, key: &str, problems: &mut Vec<Problem>) -> Option<String> {
        match self.declared(key)?.kind {
            crate::schema::Kind::Choice(words) => self.choice(key, words, problems),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&'n Node> {
        debug_assert!(
            self.shape.is_none_or(|s| s.field(key).is_some()),
            "`{key}` is not in the reader's table"
        );
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, _, n)| n)
    }

    pub fn str(&self, key: &str, problems: &mut Vec<Problem>) -> Option<String> {
        self.get(key).and_then(|n| as_str(n, key, problems))
    }

    pub fn bool(&self, key: &str, problems: &mut Vec<Problem>) -> Option<bool> {
        let n = self.get(key)?;
        match n.value {
            Value::Bool(b) => Some(b),
            _ => {
                problems.push(wrong_type(n, key, "true or false"));
                None
            }
        }
    }

    /// An integer within `min..=max`.
    pub fn int(&self, key: &str, min: u64, max: u64, problems: &mut Vec<Problem>) -> Option<u64> {
        self.get(key)
            .and_then(|n| as_int(n, key, min, max, problems))
    }

    /// A list of strings; a single string is accepted as a list of one.
    pub fn str_list(&self, key: &str, problems: &mut Vec<Problem>) -> Vec<(String, Pos)> {
        let Some(n) = self.get(key) else {
            return Vec::new();
        };
        match &n.value {
            Value::Seq(items) => items
                .iter()
                .filter_map(|i| as_str(i, key, problems).map(|s| (s, i.pos)))
                .collect(),
            Value::Null => Vec::new(),
            Value::Str(_) | Value::Int(_) => as_str(n, key, problems)
                .map(|s| vec![(s, n.pos)])
                .unwrap_or_default(),
            _ => {
                problems.push(wrong_type(n, key, "a list of strings"));
                Vec::new()
            }
        }
    }

    /// One of a fixed set of words.
    pub fn choice(
        &self,
        key: &str,
        allowed: &[&str],
        problems: &mut Vec<Problem>,
    ) -> Option<String> {
        let n = self.get(key)?;
        let s = as_str(n, key, problems)?;
        if allowed.contains(&s.as_str()) {
            return Some(s);
        }
        problems.push(Problem::new(
            Some(n.pos),
            ProblemKind::InvalidValue {
                field: key.to_string(),
                suggestion: did_you_mean(&s, allowed.iter().copied()),
                value: s,
                expected: allowed.join(", "),
            },
        ));
        None
    }
}

pub(crate) fn wrong_type(node: &Node, field: &str, expected: &str) -> Problem {
    Problem::new(
        Some(node.pos),
        ProblemKind::WrongType {
            field: field.to_string(),
            expected: expected.to_string(),
            found: node.value.type_name().to_string(),
        },
    )
}

/// Strings, and integers read as their digits (`id: 1` is fine).
pub(crate) fn as_str(node: &Node, field: &str, problems: &mut Vec<Problem>) -> Option<String> {
    match &node.value {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => {
            problems.push(wrong_type(node, field, "a string"));
            None
        }
    }
}

pub(crate) fn as_int(
    node: &Node,
    field: &str,
    min: u64,
    max: u64,
    problems: &mut Vec<Problem>,
) -> Option<u64> {
    let Value::Int(i) = node.value else {
        problems.push(wrong_type(node, field, "an integer"));
        return None;
    };
    if i < min as i64 || i > max as i64 {
        problems.push(Problem::new(
            Some(node.pos),
            ProblemKind::OutOfRange {
                field: field.to_string(),
                value: i,
                min,
                max,
            },
        ));
        return None;
    }
    Some(i as u64)
}
