//! The caps the parsers read through: a reader that stops at a byte cap and
//! remembers whether there was more, a text buffer that keeps only a head,
//! and a line reader that never holds more than one capped line.
//!
//! Owns: byte and length bounds. Must not: allocate in proportion to the
//! input beyond the caps it is given.

use std::io::{self, BufRead, Read};

/// Reads at most `left` bytes from `inner`; then peeks one byte to tell a
/// file that ended exactly at the cap from one that went on.
pub(super) struct Capped<R> {
    inner: R,
    left: u64,
    read: u64,
    probed: bool,
    hit: bool,
}

impl<R: Read> Capped<R> {
    pub(super) fn new(inner: R, max_bytes: u64) -> Self {
        Self {
            inner,
            left: max_bytes,
            read: 0,
            probed: false,
            hit: false,
        }
    }

    /// True once the reader stopped at the cap with bytes still unread.
    pub(super) fn hit_cap(&self) -> bool {
        self.hit
    }

    pub(super) fn bytes_read(&self) -> u64 {
        self.read
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            if !self.probed {
                let mut probe = [0u8; 1];
                let n = loop {
                    match self.inner.read(&mut probe) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        other => break other?,
                    }
                };
                self.probed = true;
                self.hit = n > 0;
            }
            return Ok(0);
        }
        let want = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        self.read += n as u64;
        Ok(n)
    }
}

/// A text that keeps its first `cap` bytes (on a character boundary) and
/// counts the rest, so a 50 MB failure message costs 4 KiB.
#[derive(Debug, Default)]
pub(super) struct CappedText {
    text: String,
    total: usize,
    cap: usize,
}

impl CappedText {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            text: String::new(),
            total: 0,
            cap,
        }
    }

    pub(super) fn push(&mut self, s: &str) {
        // Once something was cut, nothing after it is kept: the head stays
        // one piece.
        let cut = self.total > self.text.len();
        self.total = self.total.saturating_add(s.len());
        if !cut {
            let room = self.cap.saturating_sub(self.text.len());
            self.text.push_str(head(s, room));
        }
    }

    /// The kept head, marked when something was cut.
    pub(super) fn finish(self) -> String {
        if self.total > self.text.len() {
            let mut text = self.text;
            text.push_str(&format!("… [cut: {} bytes in all]", self.total));
            text
        } else {
            self.text
        }
    }
}

/// `s` capped at `cap` bytes, on a character boundary, marked when cut.
pub(super) fn capped(s: &str, cap: usize) -> String {
    let mut t = CappedText::new(cap);
    t.push(s);
    t.finish()
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
pub(super) fn head(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One line as [`LineReader`] hands it out.
pub(super) struct Line {
    /// The line's bytes without the newline (and without a `\r` before it),
    /// at most `max_line` of them.
    pub(super) bytes: Vec<u8>,
    /// The line was longer than `max_line`; the rest was skipped.
    pub(super) cut: bool,
    /// The input ended without a newline after this line (a file cut off
    /// mid-line, or a last line without one).
    pub(super) unterminated: bool,
}

/// Reads lines of at most `max_line` bytes from a `BufRead`, skipping the
/// rest of longer lines without holding them.
pub(super) struct LineReader<R> {
    inner: R,
    max_line: usize,
    pub(super) number: u64,
}

impl<R: BufRead> LineReader<R> {
    pub(super) fn new(inner: R, max_line: usize) -> Self {
        Self {
            inner,
            max_line,
            number: 0,
        }
    }

    pub(super) fn get_ref(&self) -> &R {
        &self.inner
    }

    pub(super) fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut line = Line {
            bytes: Vec::new(),
            cut: false,
            unterminated: false,
        };
        let mut any = false;
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                if !any {
                    return Ok(None);
                }
                line.unterminated = true;
                break;
            }
            any = true;
            let (chunk, used, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = self.max_line.saturating_sub(line.bytes.len());
            line.bytes
                .extend_from_slice(&chunk[..chunk.len().min(room)]);
            line.cut |= chunk.len() > room;
            self.inner.consume(used);
            if done {
                break;
            }
        }
        if line.bytes.last() == Some(&b'\r') {
            line.bytes.pop();
        }
        self.number += 1;
        Ok(Some(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_text_keeps_the_head_on_a_char_boundary_and_counts_the_rest() {
        let mut t = CappedText::new(5);
        t.push("ab");
        t.push("cdé"); // é is two bytes and would end past the cap: left out
        t.push("more");
        insta::assert_snapshot!(t.finish(), @"abcd… [cut: 10 bytes in all]");
        assert_eq!(capped("short", 5), "short");
    }

    #[test]
    fn capped_reader_tells_a_file_at_the_cap_from_a_longer_one() {
        let mut exact = Capped::new(&b"12345"[..], 5);
        io::copy(&mut exact, &mut io::sink()).unwrap();
        assert!(!exact.hit_cap());
        let mut longer = Capped::new(&b"123456"[..], 5);
        let mut out = Vec::new();
        longer.read_to_end(&mut out).unwrap();
        assert!(longer.hit_cap());
        assert_eq!(out, b"12345");
        assert_eq!(longer.bytes_read(), 5);
    }

    #[test]
    fn line_reader_cuts_long_lines_and_flags_an_unterminated_last_one() {
        let input = b"short\r\nthis line is long\nend";
        let mut r = LineReader::new(io::BufReader::with_capacity(4, &input[..]), 8);
        let a = r.next_line().unwrap().unwrap();
        assert_eq!((a.bytes.as_slice(), a.cut), (&b"short"[..], false));
        let b = r.next_line().unwrap().unwrap();
        assert_eq!((b.bytes.as_slice(), b.cut), (&b"this lin"[..], true));
        let c = r.next_line().unwrap().unwrap();
        assert_eq!((c.bytes.as_slice(), c.unterminated), (&b"end"[..], true));
        assert!(r.next_line().unwrap().is_none());
        assert_eq!(r.number, 3);
    }
}
