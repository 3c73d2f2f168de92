//! Text hygiene shared by every parser: bounded lossy decoding, ANSI
//! stripping, line helpers, and the mention neutraliser for summaries.

use super::{Classification, FailureKind, Finding};

/// Bytes kept from the start of a huge log. Compilers and test collectors
/// report the first (usually root) error near the top.
const HEAD_BYTES: usize = 256 * 1024;
/// Bytes kept from the end. Test runners print their failure recap and
/// totals last, and a crash's final message is there too. The middle of a
/// multi-megabyte log is mostly repetition; dropping it bounds the work.
const TAIL_BYTES: usize = 256 * 1024;

/// A log as clean lines: lossily decoded, ANSI and control codes removed,
/// carriage-return overwrites resolved, trailing whitespace trimmed.
pub(crate) struct Log {
    pub lines: Vec<String>,
}

impl Log {
    pub fn from_bytes(bytes: &[u8]) -> Log {
        let mut lines = Vec::new();
        if bytes.len() <= HEAD_BYTES + TAIL_BYTES {
            push_lines(&mut lines, bytes);
        } else {
            let head = &bytes[..HEAD_BYTES];
            // Drop the partial last line of the head and first of the tail.
            let head = match head.iter().rposition(|&b| b == b'\n') {
                Some(i) => &head[..i],
                None => head,
            };
            let tail = &bytes[bytes.len() - TAIL_BYTES..];
            let tail = match tail.iter().position(|&b| b == b'\n') {
                Some(i) => &tail[i + 1..],
                None => tail,
            };
            push_lines(&mut lines, head);
            let skipped = bytes.len() - head.len() - tail.len();
            lines.push(format!("[... {skipped} bytes omitted ...]"));
            push_lines(&mut lines, tail);
        }
        Log { lines }
    }

    pub fn is_blank(&self) -> bool {
        self.lines.iter().all(|l| l.trim().is_empty())
    }

    pub fn last_meaningful(&self) -> Option<&str> {
        self.lines
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| is_meaningful(l))
    }

    /// The line at `i`, or "" past the end: lets look-ahead skip bounds checks.
    pub fn at(&self, i: usize) -> &str {
        self.lines.get(i).map(String::as_str).unwrap_or("")
    }
}

fn push_lines(out: &mut Vec<String>, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let clean = strip_ansi(&text);
    for raw in clean.split('\n') {
        // A progress bar rewrites its line with `\r`; what a terminal would
        // show is the last non-empty segment.
        let line = raw
            .split('\r')
            .rev()
            .find(|s| !s.trim().is_empty())
            .unwrap_or("");
        out.push(line.trim_end().to_string());
    }
    if out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
}

/// Removes ANSI escape sequences (CSI, OSC, charset selection) and other C0
/// control characters except tab, newline and carriage return. One pass.
/// taskgate's one escape stripper: the classifier reads logs through it and
/// `core::report::plain_text` makes tool output showable with it.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte.
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    // Operating-system command: ends at BEL or ESC '\'.
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                Some('(' | ')' | '*' | '+') => {
                    chars.next();
                }
                _ => {}
            },
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A line worth quoting: has a letter or digit and is not a bare rule or
/// the shell's job-control noise.
pub(crate) fn is_meaningful(line: &str) -> bool {
    let t = line.trim();
    t.chars().any(|c| c.is_alphanumeric())
        && !matches!(t, "Killed" | "Terminated" | "FAIL" | "FAILED")
}

/// Cuts `s` to at most `max` characters, marking the cut with `…`.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A source location: path, line, optional column.
pub(crate) type Loc = (String, u32, Option<u32>);

/// Parses `path:line[:col]` (the text up to the end of `s`, or up to the
/// first `: ` after the numbers). Returns the path, line and column.
pub(crate) fn parse_location(s: &str) -> Option<Loc> {
    let s = s.trim().trim_end_matches(':');
    let mut parts = s.rsplitn(3, ':');
    let last = parts.next()?;
    let mid = parts.next()?;
    let mid_is_number = !mid.is_empty() && mid.bytes().all(|b| b.is_ascii_digit());
    match (mid.parse::<u32>(), last.parse::<u32>(), parts.next()) {
        (Ok(line), Ok(col), Some(path)) if is_path(path) => {
            Some((clean_path(path), line, Some(col)))
        }
        (_, Ok(line), _) if !mid_is_number => {
            let path = s.rsplit_once(':')?.0;
            is_path(path).then(|| (clean_path(path), line, None))
        }
        _ => None,
    }
}

fn is_path(p: &str) -> bool {
    !p.is_empty() && !p.contains(char::is_whitespace) && p.len() < 512
}

/// `./src/a.rs` → `src/a.rs`; annotations want repository-relative paths.
pub(crate) fn clean_path(p: &str) -> String {
    p.trim().trim_start_matches("./").to_string()
}

/// Text between the first pair of `open`/`close` delimiters after `start`.
pub(crate) fn between(s: &str, open: char, close: char) -> Option<&str> {
    let (_, rest) = s.split_once(open)?;
    let (inner, _) = rest.split_once(close)?;
    Some(inner)
}

pub(crate) fn finding(loc: Loc, message: impl Into<String>) -> Finding {
    Finding {
        path: loc.0,
        line: loc.1,
        column: loc.2,
        message: message.into(),
    }
}

pub(crate) fn classification(
    kind: FailureKind,
    lines: &[String],
    findings: Vec<Finding>,
) -> Classification {
    Classification {
        kind,
        summary: lines.join("\n"),
        findings,
    }
}

/// `path:line[:col]` for a summary.
pub(crate) fn show_location(f: &Finding) -> String {
    match f.column {
        Some(c) => format!("{}:{}:{}", f.path, f.line, c),
        None => format!("{}:{}", f.path, f.line),
    }
}

/// Makes text safe to paste into a GitHub comment: `@name` would notify
/// someone and `#123` (or `owner/repo#123`) would link and back-reference an
/// issue. A zero-width joiner after `@` or `#` (when a name or number follows)
/// breaks the autolink while the text still reads the same.
pub fn neutralize_mentions(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if (c == '@' || c == '#') && chars.peek().is_some_and(|n| n.is_ascii_alphanumeric()) {
            out.push('\u{200D}');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neutralize_mentions_breaks_pings_and_issue_links() {
        let s = neutralize_mentions("cc @octocat, see #123 and rust-lang/rust#42");
        assert_eq!(
            s,
            "cc @\u{200D}octocat, see #\u{200D}123 and rust-lang/rust#\u{200D}42"
        );
        // Nothing to break: attributes, lone signs, non-ASCII stay as they are.
        assert_eq!(
            neutralize_mentions("#[test] a @ b # c"),
            "#[test] a @ b # c"
        );
        assert_eq!(neutralize_mentions("@é #"), "@é #");
        assert_eq!(neutralize_mentions(""), "");
        let twice = neutralize_mentions(&s);
        assert_eq!(twice, s, "idempotent");
    }

    #[test]
    fn strip_ansi_removes_csi_osc_and_charset_codes() {
        let s =
            "\x1b[1m\x1b[91merror\x1b[0m: x \x1b]8;;http://e\x07link\x1b]8;;\x1b\\ \x1b(Bend\x08";
        assert_eq!(strip_ansi(s), "error: x link end");
        assert_eq!(strip_ansi("\x1b"), "");
        assert_eq!(strip_ansi("a\x1b[12"), "a");
    }

    #[test]
    fn log_resolves_carriage_returns_and_bounds_huge_input() {
        let log = Log::from_bytes(b"10%\r50%\r100%\r\nok\r\n");
        assert_eq!(log.lines, ["100%", "ok"]);

        let mut big = b"first error\n".to_vec();
        big.extend(std::iter::repeat_n(b"noise line\n".as_slice(), 200_000).flatten());
        big.extend_from_slice(b"last line\n");
        let log = Log::from_bytes(&big);
        assert_eq!(log.lines.first().map(String::as_str), Some("first error"));
        assert_eq!(log.last_meaningful(), Some("last line"));
        assert!(log.lines.iter().any(|l| l.contains("bytes omitted")));
        assert!(log.lines.len() < 60_000);
    }

    #[test]
    fn parse_location_reads_path_line_and_column() {
        assert_eq!(
            parse_location("./src/a.rs:3:9"),
            Some(("src/a.rs".into(), 3, Some(9)))
        );
        assert_eq!(
            parse_location("calc_test.go:8:"),
            Some(("calc_test.go".into(), 8, None))
        );
        assert_eq!(parse_location("no location"), None);
        assert_eq!(parse_location("a b:3"), None);
        assert_eq!(parse_location("x.rs:99999999999:1"), None);
    }
}
