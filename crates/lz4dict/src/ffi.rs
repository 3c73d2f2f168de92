//! The C prototypes: lz4-sys's own, and those in lz4.h (lz4 1.10.0, which
//! lz4-sys 1.11 builds and links) that lz4-sys does not declare.
//!
//! Owns: declarations only. Must not: call anything (the crate root does,
//! each call under a `// SAFETY:` comment).

use std::os::raw::{c_char, c_int};

pub(crate) use lz4_sys::{LZ4StreamEncode, LZ4_compressBound, LZ4_createStream, LZ4_freeStream};

unsafe extern "C" {
    pub(crate) fn LZ4_loadDictSlow(
        stream: *mut LZ4StreamEncode,
        dictionary: *const c_char,
        size: c_int,
    ) -> c_int;
    pub(crate) fn LZ4_resetStream_fast(stream: *mut LZ4StreamEncode);
    pub(crate) fn LZ4_attach_dictionary(
        working: *mut LZ4StreamEncode,
        dictionary: *const LZ4StreamEncode,
    );
    pub(crate) fn LZ4_compress_fast_continue(
        stream: *mut LZ4StreamEncode,
        source: *const c_char,
        dest: *mut c_char,
        source_size: c_int,
        dest_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    pub(crate) fn LZ4_decompress_safe_usingDict(
        source: *const c_char,
        dest: *mut c_char,
        compressed_size: c_int,
        dest_capacity: c_int,
        dictionary: *const c_char,
        dictionary_size: c_int,
    ) -> c_int;
}
