//! LZ4 block compression against a dictionary that is hashed once, through
//! liblz4 (`lz4-sys`). The one place the store calls C itself.
//!
//! Why not `lz4_flex`, which decodes the blocks: its dictionary API hashes
//! the whole 16 KiB dictionary into a fresh table on every call, which cost
//! more than compressing the payload (12 µs against 3–5 µs per delivery
//! here, measured in docs/benchmarks.md). liblz4 lets a dictionary be loaded
//! into a stream once and *attached* to a working stream per block
//! (`LZ4_attach_dictionary`, stable since lz4 1.10.0), so a block costs only
//! its own compression. The output is a plain LZ4 block with the dictionary
//! as its history: the same format `lz4_flex` decodes, so stored payloads
//! and their codec name do not change.
//!
//! Safety rests on three facts, each checked where it is used: the
//! dictionary's bytes are `'static`; its loaded stream is never written
//! after loading (liblz4 only reads an attached dictionary stream, so
//! threads may share it); each thread has its own working stream.
//!
//! Owns: the only hand-declared C prototypes in taskgate, and every call
//! to liblz4. Must not: hand a raw pointer out of this module.

// Every unsafe operation, even inside an unsafe fn, in a block of its own
// with a `// SAFETY:` comment saying why it holds.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::cell::RefCell;
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;

use lz4_sys::{LZ4StreamEncode, LZ4_compressBound, LZ4_createStream, LZ4_freeStream};

// In lz4.h (lz4 1.10.0, which lz4-sys 1.11 builds and links) but not
// declared by lz4-sys.
unsafe extern "C" {
    fn LZ4_loadDictSlow(
        stream: *mut LZ4StreamEncode,
        dictionary: *const c_char,
        size: c_int,
    ) -> c_int;
    fn LZ4_resetStream_fast(stream: *mut LZ4StreamEncode);
    fn LZ4_attach_dictionary(working: *mut LZ4StreamEncode, dictionary: *const LZ4StreamEncode);
    fn LZ4_compress_fast_continue(
        stream: *mut LZ4StreamEncode,
        source: *const c_char,
        dest: *mut c_char,
        source_size: c_int,
        dest_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
}

/// An LZ4 stream allocated by liblz4, freed on drop.
struct Stream(NonNull<LZ4StreamEncode>);

impl Stream {
    fn new() -> Self {
        // SAFETY: no preconditions; a null return is an allocation failure.
        let raw = unsafe { LZ4_createStream() };
        Stream(NonNull::new(raw).expect("liblz4 could not allocate a stream (out of memory)"))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the pointer came from LZ4_createStream and is freed once.
        unsafe { LZ4_freeStream(self.0.as_ptr()) };
    }
}

/// A dictionary loaded into a stream of its own, ready to attach.
pub(super) struct Dictionary {
    loaded: Stream,
}

// SAFETY: the stream is liblz4's heap memory, owned by this value alone
// and tied to no thread: it may be freed on any thread.
unsafe impl Send for Dictionary {}
// SAFETY: after `new`, `loaded` is only ever passed to liblz4 as the
// read-only dictionary of an attach; concurrent readers are what
// `LZ4_attach_dictionary` is made for.
unsafe impl Sync for Dictionary {}

impl Dictionary {
    pub(super) fn new(bytes: &'static [u8]) -> Self {
        let loaded = Stream::new();
        // liblz4 keeps only the last 64 KiB; ours is 16 KiB.
        let size = c_int::try_from(bytes.len()).expect("a dictionary of a few KiB");
        // SAFETY: a fresh stream; `bytes` lives for the whole program, as
        // liblz4 requires of a dictionary it references without copying.
        unsafe { LZ4_loadDictSlow(loaded.0.as_ptr(), bytes.as_ptr().cast(), size) };
        Dictionary { loaded }
    }
}

thread_local! {
    /// Each thread's working stream, reused: allocating one per block
    /// (16 KiB, initialised) would cost a good part of what attaching saves.
    static WORKING: RefCell<Stream> = RefCell::new(Stream::new());
}

/// `input` as one LZ4 block with `dictionary` as its history, its size
/// prepended as a little-endian u32 (the layout `lz4_flex`'s
/// `decompress_size_prepended`-style readers expect). `None` when liblz4
/// cannot take the input (over its 2 GB limit).
pub(super) fn compress_prepend_size(input: &[u8], dictionary: &Dictionary) -> Option<Vec<u8>> {
    let size = c_int::try_from(input.len()).ok()?;
    let prefix = u32::try_from(input.len()).ok()?.to_le_bytes();
    // SAFETY: a pure function of its argument.
    let bound = unsafe { LZ4_compressBound(size) };
    let capacity = usize::try_from(bound).ok().filter(|&b| b > 0)?;
    let mut out = Vec::with_capacity(prefix.len() + capacity);
    out.extend_from_slice(&prefix);
    WORKING.with_borrow_mut(|working| {
        let stream = working.0.as_ptr();
        // SAFETY: `stream` is this thread's own; `dictionary.loaded` is
        // loaded and never modified (see the `Sync` impl). The destination
        // has `bound` bytes of spare capacity after the prefix, which is
        // what LZ4_compressBound guarantees is enough, and liblz4 writes
        // only the returned count of them.
        let written = unsafe {
            LZ4_resetStream_fast(stream);
            LZ4_attach_dictionary(stream, dictionary.loaded.0.as_ptr());
            LZ4_compress_fast_continue(
                stream,
                input.as_ptr().cast(),
                out.spare_capacity_mut().as_mut_ptr().cast(),
                size,
                bound,
                1,
            )
        };
        let written = usize::try_from(written).ok().filter(|&w| w > 0)?;
        // SAFETY: liblz4 initialised exactly `written` bytes after the prefix.
        unsafe { out.set_len(prefix.len() + written) };
        Some(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::LazyLock;

    static WORDS: &[u8] =
        b"{\"action\":\"opened\",\"issue\":{\"url\":\"https://api.github.com/repos/";
    static DICT: LazyLock<Dictionary> = LazyLock::new(|| Dictionary::new(WORDS));

    fn roundtrip(input: &[u8]) -> Vec<u8> {
        let packed = compress_prepend_size(input, &DICT).expect("compresses");
        lz4_flex::block::decompress_size_prepended_with_dict(&packed, WORDS).expect("decodes")
    }

    #[test]
    fn blocks_decode_with_the_dictionary_in_pure_rust() {
        for input in [
            &b""[..],
            b"x",
            WORDS,
            b"{\"action\":\"opened\",\"issue\":{\"url\":\"https://api.github.com/repos/o/r/issues/1\"}}",
        ] {
            assert_eq!(roundtrip(input), input);
        }
        // Beyond LZ4's 64 KiB window, where the dictionary falls out of reach.
        let large: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        assert_eq!(roundtrip(&large), large);
    }

    #[test]
    fn the_dictionary_is_used_and_left_unchanged_between_blocks() {
        let input = WORDS.to_vec();
        let first = compress_prepend_size(&input, &DICT).unwrap();
        // Referring back into the dictionary: far shorter than the input.
        assert!(first.len() < input.len() / 3, "{} bytes", first.len());
        // A block in between must not become the next block's history.
        compress_prepend_size(b"something else entirely, as history", &DICT).unwrap();
        assert_eq!(compress_prepend_size(&input, &DICT).unwrap(), first);
    }

    #[test]
    fn threads_share_one_dictionary() {
        let input =
            b"{\"action\":\"opened\",\"issue\":{\"url\":\"https://api.github.com/repos/x\"}}";
        let expected = compress_prepend_size(input, &DICT).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..200 {
                        assert_eq!(compress_prepend_size(input, &DICT).unwrap(), expected);
                    }
                });
            }
        });
    }
}
