//! How delivery payloads are kept on disk: an LZ4 block when that is
//! smaller, the bytes as they came otherwise.
//!
//! GitHub's JSON is full of repeated URLs and shrinks four- to sixfold, and
//! the bytes written per delivery (twice: to the WAL, then to the database
//! at checkpoint) were the largest cost of the intake. LZ4 is chosen over
//! stronger codecs for its speed: compressing a 12 KB payload costs about
//! as much as verifying its signature.

use crate::intake::MAX_BODY_BYTES;

/// Stored as it came.
pub(super) const NONE: &str = "none";
/// An LZ4 block with its uncompressed size prepended (little-endian u32).
pub(super) const LZ4: &str = "lz4";

/// A payload ready to store: its codec and its bytes.
pub(super) struct Encoded {
    pub codec: &'static str,
    pub bytes: bytes::Bytes,
}

pub(super) fn encode(raw: bytes::Bytes) -> Encoded {
    let packed = lz4_flex::block::compress_prepend_size(&raw);
    if packed.len() < raw.len() {
        Encoded {
            codec: LZ4,
            bytes: packed.into(),
        }
    } else {
        Encoded {
            codec: NONE,
            bytes: raw,
        }
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
        LZ4 => {
            let (size, block) = lz4_flex::block::uncompressed_size(&stored)
                .map_err(|e| DecodeError::Corrupt(e.to_string()))?;
            // The size comes from the file: check it before allocating.
            if size > MAX_BODY_BYTES {
                return Err(DecodeError::TooLarge(size));
            }
            let raw = lz4_flex::block::decompress(block, size)
                .map_err(|e| DecodeError::Corrupt(e.to_string()))?;
            if raw.len() != size {
                return Err(DecodeError::Corrupt(format!(
                    "{} bytes where {size} were recorded",
                    raw.len()
                )));
            }
            Ok(raw)
        }
        other => Err(DecodeError::UnknownCodec(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real_payload() -> bytes::Bytes {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/webhooks/issues/opened.1.json"
        );
        std::fs::read(path).expect("fixture").into()
    }

    #[test]
    fn a_real_payload_is_stored_compressed_and_reads_back_identical() {
        let raw = real_payload();
        let encoded = encode(raw.clone());
        assert_eq!(encoded.codec, LZ4);
        assert!(
            encoded.bytes.len() * 3 < raw.len(),
            "{}",
            encoded.bytes.len()
        );
        assert_eq!(decode(encoded.codec, encoded.bytes.to_vec()).unwrap(), raw);
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
        assert!(matches!(decode(LZ4, packed), Err(DecodeError::Corrupt(_))));
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
