//! How delivery payloads are kept on disk: an LZ4 block compressed against
//! a dictionary of GitHub's JSON when that is smaller, the bytes as they
//! came otherwise.
//!
//! The bytes written per delivery (twice: to the WAL, then to the database
//! at checkpoint) are the largest cost of the intake. LZ4 is chosen over
//! stronger codecs for its speed: compressing a 12 KB payload costs about
//! as much as verifying its signature. On its own it shrinks a payload four-
//! to fivefold, to ~2.5 KB, which still takes a 4 KiB page of its own (two
//! do not fit). Most of what remains is what every payload repeats (keys,
//! URL templates, the `repository`/`sender`/`installation` objects' shape),
//! so the block may refer back into a fixed 16 KiB dictionary trained on
//! GitHub's published examples (`scripts/payload-dictionary.sh`): ~0.7 KB,
//! five to a page, at the same speed.
//!
//! A dictionary is part of the format: its bytes never change (a test pins
//! them); a new one would be a new codec beside the old.
//!
//! Blocks are written by liblz4, which hashes the dictionary once for the
//! life of the process (the `lz4dict` crate), and read by `lz4_flex`, in
//! safe Rust: both speak the same block format.

use std::sync::LazyLock;

use crate::intake::MAX_BODY_BYTES;
use lz4dict::Dictionary;

/// Stored as it came.
pub(super) const NONE: &str = "none";
/// An LZ4 block with its uncompressed size prepended (little-endian u32).
/// Written by earlier versions; still read.
pub(super) const LZ4: &str = "lz4";
/// The same, compressed against [`DICTIONARY_1`].
pub(super) const LZ4_DICT1: &str = "lz4-dict1";

/// The first payload dictionary: trained by `scripts/payload-dictionary.sh`
/// from the `@octokit/webhooks-examples` payloads in `fixtures/webhooks/`.
const DICTIONARY_1: &[u8] = include_bytes!("payload-dict-1.bin");

/// [`DICTIONARY_1`] loaded for compressing, once per process.
static LOADED_1: LazyLock<Dictionary> = LazyLock::new(|| Dictionary::new(DICTIONARY_1));

/// A payload ready to store: its codec and its bytes.
pub(super) struct Encoded {
    pub codec: &'static str,
    pub bytes: bytes::Bytes,
}

pub(super) fn encode(raw: bytes::Bytes) -> Encoded {
    match lz4dict::compress_prepend_size(&raw, Some(&LOADED_1)) {
        Ok(packed) if packed.len() < raw.len() => Encoded {
            codec: LZ4_DICT1,
            bytes: packed.into(),
        },
        _ => Encoded {
            codec: NONE,
            bytes: raw,
        },
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("payload codec `{0}` is not one this taskgate knows")]
    UnknownCodec(String),
    #[error("compressed payload claims {0} bytes, more than a delivery can have")]
    TooLarge(usize),
    #[error("compressed payload does not decompress: {0}")]
    Corrupt(String),
}

pub(super) fn decode(codec: &str, stored: Vec<u8>) -> Result<Vec<u8>, DecodeError> {
    match codec {
        NONE => Ok(stored),
        LZ4 => decompress(&stored, &[]),
        LZ4_DICT1 => decompress(&stored, DICTIONARY_1),
        other => Err(DecodeError::UnknownCodec(other.to_owned())),
    }
}

/// Decompresses a size-prepended LZ4 block (`dictionary` empty for none).
fn decompress(stored: &[u8], dictionary: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let (size, block) = lz4_flex::block::uncompressed_size(stored)
        .map_err(|e| DecodeError::Corrupt(e.to_string()))?;
    // The size comes from the file: check it before allocating.
    if size > MAX_BODY_BYTES {
        return Err(DecodeError::TooLarge(size));
    }
    let raw = lz4_flex::block::decompress_with_dict(block, size, dictionary)
        .map_err(|e| DecodeError::Corrupt(e.to_string()))?;
    if raw.len() != size {
        return Err(DecodeError::Corrupt(format!(
            "{} bytes where {size} were recorded",
            raw.len()
        )));
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real `issues.opened` example, minified as GitHub sends it.
    fn real_payload() -> bytes::Bytes {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/webhooks/issues/opened.1.json"
        );
        let value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("JSON");
        serde_json::to_vec(&value).expect("JSON").into()
    }

    #[test]
    fn a_real_payload_is_stored_compressed_and_reads_back_identical() {
        // An `issues` example: no `issues` payload was in the dictionary's
        // training set, so this is what an unseen event gets.
        let raw = real_payload();
        let encoded = encode(raw.clone());
        assert_eq!(encoded.codec, LZ4_DICT1);
        assert!(
            encoded.bytes.len() * 8 < raw.len(),
            "{} of {} bytes",
            encoded.bytes.len(),
            raw.len()
        );
        assert_eq!(decode(encoded.codec, encoded.bytes.to_vec()).unwrap(), raw);
    }

    #[test]
    fn every_published_example_reads_back_identical_and_smaller() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/webhooks");
        let mut seen = 0;
        for event in std::fs::read_dir(root).expect("fixtures") {
            let event = event.expect("entry").path();
            if !event.is_dir() {
                continue; // the folder's README
            }
            for file in std::fs::read_dir(event).expect("event folder") {
                let raw: bytes::Bytes = std::fs::read(file.expect("entry").path())
                    .expect("fixture")
                    .into();
                let encoded = encode(raw.clone());
                assert_eq!(encoded.codec, LZ4_DICT1);
                assert_eq!(decode(encoded.codec, encoded.bytes.to_vec()).unwrap(), raw);
                seen += 1;
            }
        }
        assert!(seen > 100, "only {seen} examples found");
    }

    #[test]
    fn the_dictionary_is_the_one_payloads_were_stored_with() {
        use sha2::{Digest, Sha256};
        assert_eq!(
            hex::encode(Sha256::digest(DICTIONARY_1)),
            "68143e9fad0d2856690307779b6966a50435f6ec08358cf0e15578d38562e5c0",
            "payloads stored as `{LZ4_DICT1}` can only be read with these exact bytes"
        );
    }

    #[test]
    fn payloads_stored_before_the_dictionary_still_read_back() {
        let raw = real_payload();
        let plain = lz4_flex::block::compress_prepend_size(&raw);
        assert_eq!(decode(LZ4, plain.clone()).unwrap(), raw);
        // The codec names the dictionary; reading with the wrong one fails
        // or differs, never silently "works".
        let with_dict = encode(raw.clone()).bytes.to_vec();
        assert_ne!(decode(LZ4, with_dict).ok().as_deref(), Some(&raw[..]));
    }

    #[test]
    fn bytes_that_do_not_shrink_are_stored_as_they_came() {
        let raw = bytes::Bytes::from_static(b"{}");
        let encoded = encode(raw.clone());
        assert_eq!(encoded.codec, NONE);
        assert_eq!(decode(NONE, encoded.bytes.to_vec()).unwrap(), raw);
    }

    #[test]
    fn a_damaged_block_is_an_error_not_a_panic() {
        let mut packed = encode(real_payload()).bytes.to_vec();
        packed.truncate(packed.len() / 2);
        assert!(matches!(
            decode(LZ4_DICT1, packed),
            Err(DecodeError::Corrupt(_))
        ));
        assert!(matches!(
            decode(LZ4, vec![1, 2]),
            Err(DecodeError::Corrupt(_))
        ));
    }

    #[test]
    fn a_recorded_size_beyond_githubs_limit_is_refused_before_allocating() {
        let mut packed = vec![0xff, 0xff, 0xff, 0x7f];
        packed.extend_from_slice(b"\x10x");
        assert_eq!(decode(LZ4, packed), Err(DecodeError::TooLarge(0x7fff_ffff)));
    }

    #[test]
    fn an_unknown_codec_is_named() {
        assert_eq!(
            decode("zstd", vec![]).unwrap_err().to_string(),
            "payload codec `zstd` is not one this taskgate knows"
        );
    }
}
