//! Text helpers for everything the report shows: untrusted tool output made
//! safe for a terminal or a Markdown code fence, and cut to a byte limit.
//!
//! Owns: [`plain_text`], [`clean_log`], [`code_span`], [`break_comment_openers`], [`clip_middle`] (head
//! and tail kept, on char boundaries, the cut said) and small wording
//! helpers. Must not: know the report's structure; these work on strings.

use crate::classify::{neutralize_mentions, strip_ansi};

/// `850 ms`, `1.2 s`, `3 min 05 s`.
pub fn render_duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {:02} s", ms / 60_000, (ms / 1000) % 60),
    }
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(super) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A Markdown code span that holds `s` whatever backticks it contains, on
/// one line, mentions neutralised: for commands and other untrusted text.
pub fn code_span(s: &str) -> String {
    let s = break_comment_openers(&neutralize_mentions(&one_line(s)));
    let longest = longest_backtick_run(&s);
    let ticks = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{s}{pad}{ticks}")
}

pub(super) fn fenced(s: &str) -> String {
    format!("```text\n{}\n```\n", clean_log(s).trim_end())
}

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `<!--` broken by a zero-width space: task output quoted in an issue or
/// comment can never carry an HTML comment, so never one of taskgate's
/// markers (`<!-- taskgate:… -->`) for a later read-back to find. Inside a
/// code fence or span an entity would show as written; the space does not.
pub fn break_comment_openers(s: &str) -> String {
    s.replace("<!--", "<!\u{200B}--")
}

/// Tool output made safe inside a ```` ``` ```` fence on GitHub: see
/// [`plain_text`], then mentions neutralised, comment openers broken
/// ([`break_comment_openers`]) and a zero-width space put between
/// consecutive backticks so no line can close the fence.
pub fn clean_log(s: &str) -> String {
    let plain = plain_text(s);
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        if c == '`' && out.ends_with('`') {
            out.push('\u{200B}');
        }
        out.push(c);
    }
    break_comment_openers(&neutralize_mentions(&out))
}

/// Tool output without terminal escapes and control characters (newlines
/// and tabs kept, carriage returns dropped): what a terminal or a code block
/// can show as is. The escapes go through [`strip_ansi`], the classifier's,
/// so the two readings of tool output cannot drift apart.
pub fn plain_text(s: &str) -> String {
    let mut out = strip_ansi(s);
    out.retain(|c| c != '\r');
    out
}

/// `s` within `max` bytes: the head and the tail kept, cut on char
/// boundaries, with a line saying how many bytes were cut.
pub fn clip_middle(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let marker = |cut: usize| format!("\n… {cut} bytes cut …\n");
    let room = max.saturating_sub(marker(s.len()).len());
    if room == 0 {
        return String::new();
    }
    let mut head = room / 2;
    while !s.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = s.len() - (room - head);
    while !s.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}{}{}", &s[..head], marker(tail - head), &s[tail..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_middle_cuts_on_char_boundaries() {
        for max in 0..40 {
            let s = clip_middle(&"aé🎉".repeat(10), max);
            assert!(s.len() <= max, "{max}: {s}");
        }
        insta::assert_snapshot!(clip_middle(&"0123456789".repeat(6), 40), @r"
            012345678
            … 42 bytes cut …
            123456789
            ");
    }
}
