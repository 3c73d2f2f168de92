//! References to issues that do not have a number yet.
//!
//! A first sync creates every issue of a story in one pass, in plan order,
//! before any number is known; a task's body names its dependencies
//! (`#12`), so each body had to be written twice: created with titles,
//! then edited with numbers. Instead, a body rendered for a create carries
//! a *reference* where a number is missing: the issue's marker key, what to
//! write after the number, and what to write if there is still none. The
//! executor resolves references just before the create
//! ([`resolve_issue_refs`]), by then knowing every issue made earlier in
//! the pass: a dependency listed before its dependant (the usual order)
//! gets its number at once, and the next pass finds nothing to edit.
//!
//! Owns the token format. Must not: look numbers up (the caller passes a
//! lookup) or appear in anything but a create's body.

/// Private-use characters delimit a reference; they are stripped from the
/// text a reference carries, so a title cannot forge one.
const OPEN: char = '\u{E000}';
const SEP: char = '\u{E001}';
const CLOSE: char = '\u{E002}';

fn clean(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(*c, OPEN | SEP | CLOSE))
        .collect()
}

/// `#<number of marker><suffix>` once the issue exists, else `fallback`.
pub fn issue_ref(marker: &str, suffix: &str, fallback: &str) -> String {
    format!(
        "{OPEN}{}{SEP}{}{SEP}{}{CLOSE}",
        clean(marker),
        clean(suffix),
        clean(fallback)
    )
}

/// The marker keys `text` refers to, each once, in order.
pub fn referenced_markers(text: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len_utf8()..];
        let Some(end) = after.find(CLOSE) else {
            break;
        };
        if let Some((marker, _)) = after[..end].split_once(SEP) {
            if !keys.iter().any(|k| k == marker) {
                keys.push(marker.to_owned());
            }
        }
        rest = &after[end + CLOSE.len_utf8()..];
    }
    keys
}

/// Replaces every reference in `text`: `number` gives the issue number of a
/// marker key, when that issue exists.
pub fn resolve_issue_refs(text: &str, number: impl Fn(&str) -> Option<u64>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len_utf8()..];
        let Some(end) = after.find(CLOSE) else {
            // Not a reference of ours: kept as it is.
            out.push_str(&rest[start..]);
            return out;
        };
        let mut parts = after[..end].split(SEP);
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(marker), Some(suffix), Some(fallback), None) => match number(marker) {
                Some(n) => {
                    out.push('#');
                    out.push_str(&n.to_string());
                    out.push_str(suffix);
                }
                None => out.push_str(fallback),
            },
            _ => out.push_str(&after[..end]),
        }
        rest = &after[end + CLOSE.len_utf8()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_becomes_the_number_when_known_else_its_fallback() {
        let text = format!(
            "- {} · `ready`\n- {}Signals: 1/2\n",
            issue_ref("story=s task=data", "", "Data loading"),
            issue_ref("story=s task=signals", " · ", "")
        );
        let known = |m: &str| (m == "story=s task=data").then_some(3);
        assert_eq!(
            resolve_issue_refs(&text, known),
            "- #3 · `ready`\n- Signals: 1/2\n"
        );
        assert_eq!(
            referenced_markers(&text),
            ["story=s task=data", "story=s task=signals"]
        );
        let all = |_: &str| Some(7);
        assert_eq!(
            resolve_issue_refs(&text, all),
            "- #7 · `ready`\n- #7 · Signals: 1/2\n"
        );
    }

    #[test]
    fn a_title_cannot_forge_a_reference_and_stray_delimiters_are_kept() {
        let forged = format!("x{OPEN}story=s task=a{SEP}{SEP}{CLOSE}");
        let text = issue_ref("story=s task=b", "", &forged);
        assert_eq!(
            resolve_issue_refs(&text, |_| None),
            "xstory=s task=a",
            "the fallback's delimiters were stripped"
        );
        let stray = format!("a{OPEN}b");
        assert_eq!(resolve_issue_refs(&stray, |_| Some(1)), stray);
        assert_eq!(resolve_issue_refs("plain", |_| Some(1)), "plain");
    }
}
