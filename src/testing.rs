//! What the shell's unit tests share: valid ids from readable labels.
//!
//! Owns: test-only constructors. Must not: be compiled outside tests, or
//! build an id its type's constructor would refuse.

use taskgate_core::ids::CommitSha;

/// A test's commit sha from a readable label: a full sha (one fakehub
/// made) is itself, a label up to 20 bytes is its bytes in hex padded
/// with zeros (so `sha("abc")` and `sha("c0ffee")` are distinct valid
/// shas), a longer one its first 12 bytes in hex and a hash of the rest.
pub(crate) fn sha(label: &str) -> CommitSha {
    if let Ok(sha) = CommitSha::parse(label) {
        return sha;
    }
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let text = if label.len() <= 20 {
        format!("{:0<40}", hex(label.as_bytes()))
    } else {
        let fnv = label.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        format!("{}{fnv:016x}", hex(&label.as_bytes()[..12]))
    };
    CommitSha::parse(&text).expect("40 hex digits")
}
