//! A command's output: the pipe its stdout and stderr share, drained to
//! the end, keeping the first and last half of the budget and a count of
//! every byte.
//!
//! Owns: the pipe and the capped capture. Must not: interpret the output (the runner's reports do).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// A pipe whose ends are closed on exec (the child gets dup2'd copies).
pub(super) fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are fresh descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub(super) async fn drain(
    mut reader: pipe::Receiver,
    max: usize,
    mut stop: oneshot::Receiver<()>,
) -> io::Result<Capture> {
    let mut capture = Capture::new(max);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            n = reader.read(&mut buf) => match n? {
                0 => break,
                n => capture.push(&buf[..n]),
            },
            _ = &mut stop => break,
        }
    }
    Ok(capture)
}

/// The first half of the budget, the last half, and a count of everything.
#[derive(Debug)]
pub(super) struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    head_max: usize,
    tail_max: usize,
    pub(super) total: u64,
}

impl Capture {
    pub(super) fn new(max: usize) -> Self {
        Capture {
            head: Vec::new(),
            tail: Vec::new(),
            head_max: max / 2,
            tail_max: max - max / 2,
            total: 0,
        }
    }

    pub(super) fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = self.head_max - self.head.len();
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= self.tail_max {
            self.tail.clear();
            self.tail
                .extend_from_slice(&chunk[chunk.len() - self.tail_max..]);
        } else {
            self.tail.extend_from_slice(chunk);
            // Compact rarely (at twice the size) to keep pushes amortised O(n).
            if self.tail.len() >= 2 * self.tail_max {
                self.keep_last_tail();
            }
        }
    }

    fn keep_last_tail(&mut self) {
        let excess = self.tail.len().saturating_sub(self.tail_max);
        self.tail.copy_within(excess.., 0);
        self.tail.truncate(self.tail_max);
    }

    pub(super) fn finish(&self) -> (Vec<u8>, bool) {
        let tail = &self.tail[self.tail.len().saturating_sub(self.tail_max)..];
        let kept = (self.head.len() + tail.len()) as u64;
        let mut out = self.head.clone();
        let truncated = self.total > kept;
        if truncated {
            let cut = self.total - kept;
            out.extend_from_slice(
                format!("\n[taskgate: {cut} bytes of output cut here]\n").as_bytes(),
            );
        }
        out.extend_from_slice(tail);
        (out, truncated)
    }
}
