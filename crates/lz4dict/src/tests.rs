//! The safe API on the inputs that reach the C's edges: empty, one byte,
//! large (past LZ4's 64 KiB window), incompressible, with and without a
//! dictionary; corrupt blocks and buffers too small. Run under
//! AddressSanitizer in CI, so an out-of-bounds access in liblz4 or in the
//! lengths we hand it fails here.

use super::*;
use std::sync::LazyLock;

static WORDS: &[u8] = b"{\"action\":\"opened\",\"issue\":{\"url\":\"https://api.github.com/repos/";
static DICT: LazyLock<Dictionary> = LazyLock::new(|| Dictionary::new(WORDS));

/// Bytes LZ4 cannot shrink (xorshift noise): their block is larger than
/// they are, the case where `compress_bound` is needed in full.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

fn large() -> Vec<u8> {
    (0..200_000u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect()
}

fn inputs() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        b"x".to_vec(),
        WORDS.to_vec(),
        b"{\"action\":\"opened\",\"issue\":{\"url\":\"https://api.github.com/repos/o/r/issues/1\"}}"
            .to_vec(),
        large(),
        noise(100_000),
    ]
}

#[test]
fn every_input_round_trips_with_and_without_the_dictionary() {
    for input in inputs() {
        for dictionary in [None, Some(&*DICT)] {
            let packed = compress_prepend_size(&input, dictionary).expect("compresses");
            let bytes = dictionary.map(Dictionary::bytes);
            let back = decompress_size_prepended(&packed, bytes, input.len()).expect("decodes");
            assert!(
                back == input,
                "{} bytes, dictionary {}",
                input.len(),
                bytes.is_some()
            );
        }
    }
}

#[test]
fn blocks_decode_with_the_dictionary_in_pure_rust() {
    for input in inputs() {
        let packed = compress_prepend_size(&input, Some(&DICT)).unwrap();
        let back = lz4_flex::block::decompress_size_prepended_with_dict(&packed, WORDS);
        assert!(
            back.expect("lz4_flex decodes") == input,
            "{} bytes",
            input.len()
        );
        let plain = compress_prepend_size(&input, None).unwrap();
        let back = lz4_flex::block::decompress_size_prepended(&plain);
        assert!(
            back.expect("lz4_flex decodes") == input,
            "{} bytes",
            input.len()
        );
    }
}

#[test]
fn incompressible_input_grows_within_the_bound() {
    let input = noise(100_000);
    let bound = compress_bound(input.len()).unwrap();
    let mut out = vec![0; bound];
    let written = compress_into(&input, Some(&DICT), &mut out).unwrap();
    assert!(
        written > input.len() && written <= bound,
        "{written} of {bound}"
    );
}

#[test]
fn the_dictionary_is_used_and_left_unchanged_between_blocks() {
    let input = WORDS.to_vec();
    let first = compress_prepend_size(&input, Some(&DICT)).unwrap();
    // Referring back into the dictionary: far shorter than the input.
    assert!(first.len() < input.len() / 3, "{} bytes", first.len());
    // A block in between must not become the next block's history.
    compress_prepend_size(b"something else entirely, as history", Some(&DICT)).unwrap();
    assert_eq!(compress_prepend_size(&input, Some(&DICT)).unwrap(), first);
    // Nor does an earlier block's dictionary stay attached.
    let plain = compress_prepend_size(&input, None).unwrap();
    assert!(plain.len() > input.len(), "{} bytes", plain.len());
}

#[test]
fn threads_share_one_dictionary() {
    let input = b"{\"action\":\"opened\",\"issue\":{\"url\":\"https://api.github.com/repos/x\"}}";
    let expected = compress_prepend_size(input, Some(&DICT)).unwrap();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..200 {
                    assert_eq!(compress_prepend_size(input, Some(&DICT)).unwrap(), expected);
                }
            });
        }
    });
}

#[test]
fn an_output_buffer_too_small_is_refused_and_left_within_bounds() {
    let input = large();
    let needed = compress_prepend_size(&input, Some(&DICT)).unwrap().len() - 4;
    for capacity in [0, 1, needed / 2, needed - 1] {
        let mut out = vec![0; capacity];
        assert_eq!(
            compress_into(&input, Some(&DICT), &mut out),
            Err(Error::OutputTooSmall { capacity })
        );
    }
    let mut out = vec![0; needed];
    assert_eq!(compress_into(&input, Some(&DICT), &mut out), Ok(needed));

    // Decoding into less than the block holds.
    let block = &compress_prepend_size(&input, None).unwrap()[4..];
    let mut out = vec![0; input.len() - 1];
    assert_eq!(
        decompress_into(block, None, &mut out),
        Err(Error::Undecodable {
            capacity: input.len() - 1
        })
    );
}

#[test]
fn corrupt_blocks_are_refused_without_reading_or_writing_out_of_bounds() {
    let input = large();
    let packed = compress_prepend_size(&input, Some(&DICT)).unwrap();
    let block = &packed[4..];
    let mut out = vec![0; input.len()];
    // Cut short anywhere, or with a byte changed anywhere in its first
    // kilobyte (tokens, lengths and offsets), a block decodes to an error
    // or to something, never past its buffers.
    for cut in (0..block.len()).step_by(97) {
        assert!(
            decompress_into(&block[..cut], Some(WORDS), &mut out).is_err(),
            "cut at {cut}"
        );
    }
    for at in 0..block.len().min(1024) {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = block.to_vec();
            bad[at] ^= flip;
            let _ = decompress_into(&bad, Some(WORDS), &mut out);
        }
    }
    // An offset reaching before the dictionary's start: a literal then a
    // match 0xffff back, with no dictionary to reach into.
    let reaches_back = [0x10, b'a', 0xff, 0xff, 0x00];
    assert_eq!(
        decompress_into(&reaches_back, None, &mut out),
        Err(Error::Undecodable {
            capacity: out.len()
        })
    );
    // A size prefix larger than the caller allows is refused before any
    // allocation; one that is no size at all is refused too.
    assert_eq!(
        decompress_size_prepended(&[0xff, 0xff, 0xff, 0x7f, 0], None, 1 << 20),
        Err(Error::OverLimit {
            size: 0x7fff_ffff,
            limit: 1 << 20
        })
    );
    assert_eq!(
        decompress_size_prepended(&[1, 0], None, 10),
        Err(Error::NoSize { len: 2 })
    );
    // A block that decodes to fewer bytes than its prefix says.
    let mut short = packed.clone();
    short[..4].copy_from_slice(&u32::try_from(input.len() + 1).unwrap().to_le_bytes());
    assert!(decompress_size_prepended(&short, Some(WORDS), usize::MAX).is_err());
}
