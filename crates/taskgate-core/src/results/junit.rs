//! JUnit XML, read as a stream of quick-xml events: `<testsuites>` and
//! nested `<testsuite>`s, `<testcase>` with `<failure>`, `<error>` and
//! `<skipped>`, in the dialects of pytest, jest-junit, node, nextest, Maven
//! Surefire, Gradle and TAP::Formatter::JUnit.
//!
//! Owns: the JUnit reader and its id rule (`case_id`). Must not: expand an
//! entity beyond the five predefined ones and character references, accept a
//! DOCTYPE with an internal subset or an external id, nest without bound, or
//! hold more than one event (and the capped texts of one case) at a time.

use std::borrow::Cow;
use std::io::{BufReader, Read};

use quick_xml::errors::{Error as XmlError, SyntaxError};
use quick_xml::escape::{unescape, EscapeError};
use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::Reader;

use super::text::{capped, Capped, CappedText};
use super::{
    libtest, seconds_to_ms, Limits, Outcome, ReportError, ReportFormat, TestCase, TestId,
    TestResults, Truncated,
};

/// Which tool wrote the file, where its ids need a rule of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Producer {
    Generic,
    /// `<testsuite name="pytest">`: ids are pytest node ids, lines 0-based.
    Pytest,
    /// `<testsuites name="nextest-run">`: `binary-id::test::path`.
    Nextest,
}

/// What the text between tags belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    None,
    /// The text of the `<failure>`/`<error>`/`<skipped>` that set the outcome.
    Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Failed,
    Errored,
    Skipped,
}

/// One `<testcase>` (or a suite-level `<error>`) being read.
struct CaseBuilder {
    name: String,
    classname: String,
    file: Option<String>,
    line: Option<u32>,
    duration_ms: Option<u64>,
    kind: Option<Kind>,
    message: Option<String>,
    body: CappedText,
    /// A suite-level `<error>`/`<failure>` (prove's "Dubious, test returned 2").
    suite_level: bool,
}

struct State<'a> {
    file: &'a str,
    limits: &'a Limits,
    results: TestResults,
    producer: Producer,
    depth: usize,
    seen_root: bool,
    suites: Vec<String>,
    case: Option<CaseBuilder>,
    body: Body,
}

pub(super) fn parse(
    input: impl Read,
    file: &str,
    limits: &Limits,
) -> Result<TestResults, ReportError> {
    let capped = Capped::new(input, limits.max_bytes);
    let mut reader = Reader::from_reader(BufReader::with_capacity(64 * 1024, capped));
    let mut state = State {
        file,
        limits,
        results: TestResults::new(ReportFormat::Junit),
        producer: Producer::Generic,
        depth: 0,
        seen_root: false,
        suites: Vec::new(),
        case: None,
        body: Body::None,
    };
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let event = match reader.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(error) => {
                let hit_cap = reader.get_ref().get_ref().hit_cap();
                let offset = reader.error_position();
                return state.on_error(error, offset, hit_cap);
            }
        };
        let offset = reader.buffer_position();
        if matches!(event, Event::Eof) {
            let capped = reader.get_ref().get_ref();
            state.results.bytes_read = capped.bytes_read();
            if !state.seen_root && capped.bytes_read() > 0 {
                return Err(ReportError::NoJunitRoot {
                    file: file.to_owned(),
                });
            }
            if capped.hit_cap() {
                state.results.truncated = Some(Truncated::ByteCap {
                    max_bytes: limits.max_bytes,
                });
            } else if state.depth > 0 {
                state.results.truncated = Some(Truncated::EndedEarly { offset });
            }
            return Ok(state.results);
        }
        state.on_event(event, offset)?;
    }
}

impl State<'_> {
    fn on_error(
        mut self,
        error: XmlError,
        offset: u64,
        hit_cap: bool,
    ) -> Result<TestResults, ReportError> {
        // quick-xml reports the end of input inside markup as "unclosed …":
        // a file cut off, by our cap or before it reached us.
        let ended_early = matches!(
            error,
            XmlError::Syntax(
                SyntaxError::UnclosedTag
                    | SyntaxError::UnclosedCData
                    | SyntaxError::UnclosedComment
                    | SyntaxError::UnclosedPI
                    | SyntaxError::UnclosedXmlDecl
                    | SyntaxError::UnclosedDoctype
                    | SyntaxError::UnclosedSingleQuotedAttributeValue
                    | SyntaxError::UnclosedDoubleQuotedAttributeValue
            )
        );
        self.results.bytes_read = offset;
        if hit_cap && self.seen_root {
            self.results.truncated = Some(Truncated::ByteCap {
                max_bytes: self.limits.max_bytes,
            });
            return Ok(self.results);
        }
        if ended_early && self.seen_root {
            self.results.truncated = Some(Truncated::EndedEarly { offset });
            return Ok(self.results);
        }
        Err(match error {
            XmlError::Io(e) => ReportError::Read {
                file: self.file.to_owned(),
                source: std::io::Error::new(e.kind(), e.to_string()),
            },
            XmlError::Escape(EscapeError::UnrecognizedEntity(_, name)) => {
                self.unknown_entity(offset, &name)
            }
            other => self.xml_error(offset, other.to_string()),
        })
    }

    fn on_event(&mut self, event: Event<'_>, offset: u64) -> Result<(), ReportError> {
        match event {
            Event::Start(e) => {
                self.depth += 1;
                if self.depth > self.limits.max_depth {
                    return Err(ReportError::TooDeep {
                        file: self.file.to_owned(),
                        offset,
                        max_depth: self.limits.max_depth,
                    });
                }
                self.on_start(&e, offset, false)?;
            }
            Event::Empty(e) => self.on_start(&e, offset, true)?,
            Event::End(e) => {
                self.depth = self.depth.saturating_sub(1);
                self.on_end(e.local_name().as_ref());
            }
            Event::Text(t) => self.on_text(&String::from_utf8_lossy(&t)),
            Event::CData(t) => self.on_text(&String::from_utf8_lossy(&t)),
            Event::GeneralRef(r) => {
                let c = self.resolve_ref(&r, offset)?;
                self.on_text(c.encode_utf8(&mut [0u8; 4]));
            }
            Event::DocType(d) => self.check_doctype(&d, offset)?,
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::Eof => {}
        }
        Ok(())
    }

    fn on_start(
        &mut self,
        e: &BytesStart<'_>,
        offset: u64,
        empty: bool,
    ) -> Result<(), ReportError> {
        let tag = e.local_name();
        let tag = tag.as_ref();
        if !self.seen_root {
            if tag != b"testsuites" && tag != b"testsuite" {
                return Err(ReportError::NotJunit {
                    file: self.file.to_owned(),
                    root: capped(&String::from_utf8_lossy(tag), 64),
                });
            }
            self.seen_root = true;
            if tag == b"testsuites"
                && self.attr(e, b"name", offset)?.as_deref() == Some("nextest-run")
            {
                self.producer = Producer::Nextest;
            }
        }
        match tag {
            b"testsuite" => {
                let name = self.attr(e, b"name", offset)?.unwrap_or_default();
                if name == "pytest" {
                    self.producer = Producer::Pytest;
                }
                if !empty {
                    self.suites.push(capped(&name, self.limits.max_text));
                }
            }
            b"testcase" if self.case.is_none() => {
                self.case = Some(self.case_builder(e, offset)?);
                if empty {
                    self.finish_case();
                }
            }
            b"failure" | b"error" | b"skipped" => self.on_outcome(e, tag, offset, empty)?,
            _ => {}
        }
        Ok(())
    }

    fn case_builder(&self, e: &BytesStart<'_>, offset: u64) -> Result<CaseBuilder, ReportError> {
        let max = self.limits.max_text;
        let [name, classname, file, line, time] = self.attrs(
            e,
            [b"name", b"classname", b"file", b"line", b"time"],
            offset,
        )?;
        let pytest = self.producer == Producer::Pytest;
        Ok(CaseBuilder {
            name: capped(&name.unwrap_or_default(), max),
            classname: capped(&classname.unwrap_or_default(), max),
            file: file.filter(|f| !f.is_empty()).map(|f| capped(&f, max)),
            // pytest writes 0-based lines (its `item.location`).
            line: line.and_then(|l| l.trim().parse::<u32>().ok()).map(|l| {
                if pytest {
                    l.saturating_add(1)
                } else {
                    l
                }
            }),
            duration_ms: time.and_then(|t| seconds_to_ms(&t)),
            kind: None,
            message: None,
            body: CappedText::new(max),
            suite_level: false,
        })
    }

    /// A `<failure>`, `<error>` or `<skipped>`: inside a test case it sets the
    /// outcome (skipped wins: node writes a todo as both; the first failure
    /// or error wins over later ones); directly in a suite it is a case of its
    /// own, named for the suite.
    fn on_outcome(
        &mut self,
        e: &BytesStart<'_>,
        tag: &[u8],
        offset: u64,
        empty: bool,
    ) -> Result<(), ReportError> {
        let kind = match tag {
            b"failure" => Kind::Failed,
            b"error" => Kind::Errored,
            _ => Kind::Skipped,
        };
        if self.case.is_none() {
            if kind == Kind::Skipped || self.suites.is_empty() {
                return Ok(());
            }
            let suite = self.suites.last().cloned().unwrap_or_default();
            self.case = Some(CaseBuilder {
                name: suite.clone(),
                classname: String::new(),
                file: None,
                line: None,
                duration_ms: None,
                kind: None,
                message: None,
                body: CappedText::new(self.limits.max_text),
                suite_level: true,
            });
        }
        let message = self
            .attr(e, b"message", offset)?
            .map(|m| capped(&m, self.limits.max_text));
        let Some(case) = self.case.as_mut() else {
            return Ok(());
        };
        let takes = match case.kind {
            None => true,
            Some(current) => kind == Kind::Skipped && current != Kind::Skipped,
        };
        if takes {
            case.kind = Some(kind);
            case.message = message;
            case.body = CappedText::new(self.limits.max_text);
            self.body = if empty { Body::None } else { Body::Outcome };
        }
        if empty && case.suite_level {
            self.finish_case();
        }
        Ok(())
    }

    fn on_end(&mut self, tag: &[u8]) {
        match tag {
            b"testcase" => self.finish_case(),
            b"failure" | b"error" | b"skipped" => {
                self.body = Body::None;
                if self.case.as_ref().is_some_and(|c| c.suite_level) {
                    self.finish_case();
                }
            }
            b"testsuite" => {
                self.suites.pop();
            }
            _ => {}
        }
    }

    fn on_text(&mut self, text: &str) {
        if self.body == Body::Outcome {
            if let Some(case) = self.case.as_mut() {
                case.body.push(text);
            }
        }
    }

    fn finish_case(&mut self) {
        self.body = Body::None;
        let Some(c) = self.case.take() else { return };
        let id = if c.suite_level {
            c.name.clone()
        } else {
            case_id(self.producer, self.suites.last().map(String::as_str), &c)
        };
        let details = c.body.finish();
        let message = c
            .message
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| first_line(&details));
        let outcome = match c.kind {
            None => Outcome::Passed,
            Some(Kind::Failed) => Outcome::Failed { message, details },
            Some(Kind::Errored) => Outcome::Errored { message, details },
            Some(Kind::Skipped) => Outcome::Skipped { reason: message },
        };
        let (mut file, mut line) = (c.file.clone(), c.line);
        if file.is_none() && self.producer == Producer::Nextest {
            if let Outcome::Failed { details, .. } | Outcome::Errored { details, .. } = &outcome {
                if let Some((f, l)) = libtest::panic_location(details) {
                    (file, line) = (Some(f), Some(l));
                }
            }
        }
        let suite = if c.classname.is_empty() {
            self.suites.last().cloned()
        } else {
            Some(c.classname.clone())
        };
        let case = TestCase {
            id: TestId::new(id),
            name: c.name,
            suite,
            file,
            line,
            outcome,
            duration_ms: c.duration_ms,
        };
        self.results.push(case, self.limits);
    }

    /// One attribute's value, entities resolved (the five predefined ones
    /// and character references; any other is an error), bytes read as
    /// UTF-8 with invalid sequences replaced.
    fn attr(
        &self,
        e: &BytesStart<'_>,
        key: &[u8],
        offset: u64,
    ) -> Result<Option<String>, ReportError> {
        let [value] = self.attrs(e, [key], offset)?;
        Ok(value)
    }

    /// The values of several attributes, read in one pass over the tag.
    fn attrs<const N: usize>(
        &self,
        e: &BytesStart<'_>,
        keys: [&[u8]; N],
        offset: u64,
    ) -> Result<[Option<String>; N], ReportError> {
        let mut values = [const { None }; N];
        for attr in e.attributes() {
            let attr = attr.map_err(|err| self.xml_error(offset, err.to_string()))?;
            let Some(i) = keys
                .iter()
                .position(|k| *k == attr.key.local_name().as_ref())
            else {
                continue;
            };
            let raw = String::from_utf8_lossy(&attr.value);
            values[i] = Some(match unescape(&raw) {
                Ok(value) => value.into_owned(),
                Err(EscapeError::UnrecognizedEntity(_, name)) => {
                    return Err(self.unknown_entity(offset, &name))
                }
                Err(err) => return Err(self.xml_error(offset, err.to_string())),
            });
        }
        Ok(values)
    }

    fn resolve_ref(&self, r: &BytesRef<'_>, offset: u64) -> Result<char, ReportError> {
        let name = String::from_utf8_lossy(r);
        if let Some(c) = match name.as_ref() {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "apos" => Some('\''),
            "quot" => Some('"'),
            _ => None,
        } {
            return Ok(c);
        }
        match r.resolve_char_ref() {
            Ok(Some(c)) => Ok(c),
            Ok(None) => Err(self.unknown_entity(offset, &name)),
            Err(err) => Err(self.xml_error(offset, err.to_string())),
        }
    }

    /// A DOCTYPE is only allowed bare (`<!DOCTYPE testsuites>`): entity
    /// declarations, an internal subset and an external DTD are refused.
    fn check_doctype(&self, doctype: &[u8], offset: u64) -> Result<(), ReportError> {
        let text = String::from_utf8_lossy(doctype).to_ascii_uppercase();
        if text.contains("<!ENTITY") {
            return Err(ReportError::EntityDeclarations {
                file: self.file.to_owned(),
                offset,
            });
        }
        if text.contains('[') || text.contains("SYSTEM") || text.contains("PUBLIC") {
            return Err(ReportError::DocType {
                file: self.file.to_owned(),
                offset,
            });
        }
        Ok(())
    }

    fn unknown_entity(&self, offset: u64, name: &str) -> ReportError {
        ReportError::UnknownEntity {
            file: self.file.to_owned(),
            offset,
            name: capped(name, 64),
        }
    }

    fn xml_error(&self, offset: u64, reason: String) -> ReportError {
        ReportError::Xml {
            file: self.file.to_owned(),
            offset,
            reason: capped(&reason, 256),
        }
    }
}

/// The id rule for JUnit (docs/decisions/test-reports.md):
/// - pytest: its node id, `path/to/test_mod.py::Class::test_name`, the path
///   from the `file` attribute, else from the dotted classname (the parts
///   before the first capitalised one are the module);
/// - nextest: `binary-id::test::path` (classname is the binary id);
/// - others: `classname.name` (`::` between them when the name is a Rust
///   path), or, where the classname is absent, the same as the name, or
///   node's constant `test`, the innermost suite and the name, `suite > name`,
///   unless the name already starts with the suite (jest-junit).
fn case_id(producer: Producer, suite: Option<&str>, c: &CaseBuilder) -> String {
    let class = c.classname.as_str();
    match producer {
        Producer::Pytest => pytest_id(class, &c.name, c.file.as_deref()),
        _ if class.is_empty() || class == c.name || class == "test" => match suite {
            Some(s) if !s.is_empty() && !c.name.starts_with(s) => format!("{s} > {}", c.name),
            _ => c.name.clone(),
        },
        _ if c.name.contains("::") || producer == Producer::Nextest => {
            format!("{class}::{}", c.name)
        }
        _ => format!("{class}.{}", c.name),
    }
}

fn pytest_id(classname: &str, name: &str, file: Option<&str>) -> String {
    if classname.is_empty() {
        return name.to_owned();
    }
    let parts: Vec<&str> = classname.split('.').collect();
    let split = parts
        .iter()
        .position(|p| p.starts_with(|c: char| c.is_ascii_uppercase()))
        .unwrap_or(parts.len());
    let path: Cow<'_, str> = match file {
        Some(f) if f.ends_with(".py") => Cow::Borrowed(f),
        _ => Cow::Owned(format!("{}.py", parts[..split].join("/"))),
    };
    let mut id = path.into_owned();
    for part in parts[split..].iter().chain(std::iter::once(&name)) {
        id.push_str("::");
        id.push_str(part);
    }
    id
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests;
