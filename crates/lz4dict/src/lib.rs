//! LZ4 blocks compressed against a dictionary that is hashed once, through
//! liblz4 (`lz4-sys`), behind a safe API. taskgate's store compresses its
//! delivery payloads with it; this crate is the only place in taskgate
//! with hand-declared C prototypes.
//!
//! Why not `lz4_flex`, which decodes the blocks: its dictionary API hashes
//! the whole 16 KiB dictionary into a fresh table on every call, which cost
//! more than compressing the payload (12 µs against 3–5 µs per delivery,
//! measured in taskgate's docs/benchmarks.md). liblz4 lets a dictionary be
//! loaded into a stream once and *attached* to a working stream per block
//! (`LZ4_attach_dictionary`, stable since lz4 1.10.0), so a block costs only
//! its own compression. The output is a plain LZ4 block with the dictionary
//! as its history: the format `lz4_flex` decodes.
//!
//! Safety rests on three facts, each checked where it is used: a
//! dictionary's bytes are `'static`; its loaded stream is never written
//! after loading (liblz4 only reads an attached dictionary stream, so
//! threads may share it); each thread has its own working stream. Every
//! buffer handed to liblz4 goes with its true length, which liblz4 never
//! writes or reads past (its `_safe` decoder included, on any input).
//! The unit tests run under AddressSanitizer in CI, liblz4's C built with
//! it too, so a wrong length there is reported (docs/testing.md).
//!
//! Owns: every call to liblz4 in taskgate. Must not: hand a raw pointer
//! out of this crate, or know what the blocks hold.

// Every unsafe operation, even inside an unsafe fn, in a block of its own
// with a `// SAFETY:` comment saying why it holds.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(missing_docs)]

mod ffi;

use std::cell::RefCell;
use std::os::raw::{c_char, c_int};
use std::ptr::NonNull;

use ffi::LZ4StreamEncode;

/// Why liblz4 could not do what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// liblz4 takes blocks of at most `LZ4_MAX_INPUT_SIZE` (~2 GB).
    #[error("{len} bytes are more than liblz4 takes in one block")]
    TooLarge {
        /// The input's length.
        len: usize,
    },
    /// The compressed block would not fit in the output buffer.
    #[error("the compressed block does not fit in {capacity} bytes")]
    OutputTooSmall {
        /// The output buffer's length.
        capacity: usize,
    },
    /// Not an LZ4 block (with this dictionary) that decodes into at most
    /// `capacity` bytes; liblz4 cannot tell the two apart.
    #[error("not an LZ4 block that decodes into at most {capacity} bytes")]
    Undecodable {
        /// The output buffer's length.
        capacity: usize,
    },
    /// A size-prepended block shorter than its 4-byte size.
    #[error("a size-prepended block of {len} bytes has no room for its size")]
    NoSize {
        /// The block's length.
        len: usize,
    },
    /// A size-prepended block whose size is over the caller's limit.
    #[error("the block says it decodes into {size} bytes, more than the {limit} allowed")]
    OverLimit {
        /// The size the block states.
        size: usize,
        /// The caller's limit.
        limit: usize,
    },
}

/// An LZ4 stream allocated by liblz4, freed on drop.
struct Stream(NonNull<LZ4StreamEncode>);

impl Stream {
    fn new() -> Self {
        // SAFETY: no preconditions; a null return is an allocation failure.
        let raw = unsafe { ffi::LZ4_createStream() };
        Stream(NonNull::new(raw).expect("liblz4 could not allocate a stream (out of memory)"))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the pointer came from LZ4_createStream and is freed once.
        unsafe { ffi::LZ4_freeStream(self.0.as_ptr()) };
    }
}

/// A dictionary loaded into a stream of its own, ready to attach.
pub struct Dictionary {
    loaded: Stream,
    bytes: &'static [u8],
}

// SAFETY: the stream is liblz4's heap memory, owned by this value alone
// and tied to no thread: it may be freed on any thread.
unsafe impl Send for Dictionary {}
// SAFETY: after `new`, `loaded` is only ever passed to liblz4 as the
// read-only dictionary of an attach; concurrent readers are what
// `LZ4_attach_dictionary` is made for.
unsafe impl Sync for Dictionary {}

impl Dictionary {
    /// Loads `bytes` (liblz4 uses its last 64 KiB) for compressing. The
    /// bytes are `'static` because liblz4 refers to them without copying.
    pub fn new(bytes: &'static [u8]) -> Self {
        let loaded = Stream::new();
        // liblz4 keeps only the last 64 KiB: a longer slice loses nothing
        // by being cut to them, and then its length fits a C int.
        let bytes = &bytes[bytes.len().saturating_sub(64 * 1024)..];
        let size = c_int::try_from(bytes.len()).expect("64 KiB fit a C int");
        // SAFETY: a fresh stream; `bytes` is readable for `size` bytes and
        // lives for the whole program, as liblz4 requires of a dictionary
        // it references without copying.
        unsafe { ffi::LZ4_loadDictSlow(loaded.0.as_ptr(), bytes.as_ptr().cast(), size) };
        Dictionary { loaded, bytes }
    }

    /// The bytes the blocks refer back into (what a decoder needs).
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }
}

thread_local! {
    /// Each thread's working stream, reused: allocating one per block
    /// (16 KiB, initialised) would cost a good part of what attaching saves.
    static WORKING: RefCell<Stream> = RefCell::new(Stream::new());
}

/// The most bytes a block of `len` input bytes compresses to (liblz4's
/// `LZ4_compressBound`), or `None` over liblz4's limit.
pub fn compress_bound(len: usize) -> Option<usize> {
    let size = c_int::try_from(len).ok()?;
    // SAFETY: a pure function of its argument.
    let bound = unsafe { ffi::LZ4_compressBound(size) };
    usize::try_from(bound).ok().filter(|&b| b > 0)
}

/// Compresses `input` into `dest` as one LZ4 block, against `dictionary`
/// if given; returns the bytes written.
///
/// # Safety
/// `dest` must be valid for writes of `capacity` bytes.
unsafe fn compress_to(
    input: &[u8],
    dictionary: Option<&Dictionary>,
    dest: *mut c_char,
    capacity: usize,
) -> Result<usize, Error> {
    let too_large = Error::TooLarge { len: input.len() };
    let size = c_int::try_from(input.len()).map_err(|_| too_large)?;
    compress_bound(input.len()).ok_or(too_large)?;
    // liblz4 takes an int: a larger buffer is offered as the largest int.
    let offered = c_int::try_from(capacity).unwrap_or(c_int::MAX);
    let written = WORKING.with_borrow_mut(|working| {
        let stream = working.0.as_ptr();
        // SAFETY: `stream` is this thread's own, reset before use (which
        // also detaches any earlier dictionary).
        unsafe { ffi::LZ4_resetStream_fast(stream) };
        if let Some(dictionary) = dictionary {
            // SAFETY: `dictionary.loaded` is loaded and never modified (see
            // the `Sync` impl); it outlives this call, the only one that
            // reads it through `stream`.
            unsafe { ffi::LZ4_attach_dictionary(stream, dictionary.loaded.0.as_ptr()) };
        }
        // SAFETY: `input` is readable for `size` bytes; `dest` is writable
        // for `capacity >= offered` bytes (the caller's contract), and
        // liblz4 writes no more than `offered` of them, returning 0 when
        // the block does not fit.
        unsafe {
            ffi::LZ4_compress_fast_continue(stream, input.as_ptr().cast(), dest, size, offered, 1)
        }
    });
    usize::try_from(written)
        .ok()
        .filter(|&w| w > 0)
        .ok_or(Error::OutputTooSmall { capacity })
}

/// Compresses `input` into `out` as one LZ4 block, against `dictionary` if
/// given; returns the bytes written. [`compress_bound`] bytes are always
/// enough; fewer may be, and when they are not the answer is
/// [`Error::OutputTooSmall`].
pub fn compress_into(
    input: &[u8],
    dictionary: Option<&Dictionary>,
    out: &mut [u8],
) -> Result<usize, Error> {
    // SAFETY: `out` is writable for its whole length.
    unsafe { compress_to(input, dictionary, out.as_mut_ptr().cast(), out.len()) }
}

/// `input` as one LZ4 block with `dictionary` (if any) as its history, its
/// size prepended as a little-endian u32 (the layout of `lz4_flex`'s
/// `decompress_size_prepended`).
pub fn compress_prepend_size(
    input: &[u8],
    dictionary: Option<&Dictionary>,
) -> Result<Vec<u8>, Error> {
    let too_large = Error::TooLarge { len: input.len() };
    let prefix = u32::try_from(input.len())
        .map_err(|_| too_large)?
        .to_le_bytes();
    let bound = compress_bound(input.len()).ok_or(too_large)?;
    let mut out = Vec::with_capacity(prefix.len() + bound);
    out.extend_from_slice(&prefix);
    let spare = out.spare_capacity_mut();
    // SAFETY: `spare` is the vector's own spare capacity, writable for its
    // whole length (at least `bound`, which always suffices).
    let written =
        unsafe { compress_to(input, dictionary, spare.as_mut_ptr().cast(), spare.len()) }?;
    // SAFETY: liblz4 initialised exactly `written` bytes after the prefix,
    // and `written <= spare.len()`.
    unsafe { out.set_len(prefix.len() + written) };
    Ok(out)
}

/// Decodes the LZ4 `block` into `out`, with `dictionary` (if any) as its
/// history; returns the bytes written. Any input is safe: a corrupt block,
/// or one that decodes to more than `out` holds, is
/// [`Error::Undecodable`], never a read or write out of bounds (liblz4's
/// `_safe` decoder).
pub fn decompress_into(
    block: &[u8],
    dictionary: Option<&[u8]>,
    out: &mut [u8],
) -> Result<usize, Error> {
    let undecodable = Error::Undecodable {
        capacity: out.len(),
    };
    let size = c_int::try_from(block.len()).map_err(|_| undecodable)?;
    let capacity = c_int::try_from(out.len()).unwrap_or(c_int::MAX);
    let dictionary = dictionary.unwrap_or_default();
    let dictionary = &dictionary[dictionary.len().saturating_sub(64 * 1024)..];
    let dict_size = c_int::try_from(dictionary.len()).expect("64 KiB fit a C int");
    // SAFETY: `block` is readable for `size` bytes, `dictionary` for
    // `dict_size`, `out` writable for `capacity <= out.len()`; the `_safe`
    // decoder stays within all three whatever the block holds, and
    // returns a negative count when it cannot decode.
    let written = unsafe {
        ffi::LZ4_decompress_safe_usingDict(
            block.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            size,
            capacity,
            dictionary.as_ptr().cast(),
            dict_size,
        )
    };
    usize::try_from(written).map_err(|_| undecodable)
}

/// Decodes a block written by [`compress_prepend_size`], refusing one that
/// says it decodes into more than `limit` bytes (before allocating them).
pub fn decompress_size_prepended(
    stored: &[u8],
    dictionary: Option<&[u8]>,
    limit: usize,
) -> Result<Vec<u8>, Error> {
    let Some((prefix, block)) = stored.split_first_chunk::<4>() else {
        return Err(Error::NoSize { len: stored.len() });
    };
    let size = usize::try_from(u32::from_le_bytes(*prefix)).unwrap_or(usize::MAX);
    if size > limit {
        return Err(Error::OverLimit { size, limit });
    }
    let mut out = vec![0; size];
    let written = decompress_into(block, dictionary, &mut out)?;
    if written != size {
        return Err(Error::Undecodable { capacity: size });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
