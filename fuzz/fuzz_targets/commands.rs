//! `cargo +nightly fuzz run commands`: any UTF-8 comment body must yield its
//! commands (and its `yaml` block, for `/taskgate plan`) without panicking,
//! with the default syntax; a body without `/` holds no command.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskgate_core::commands::{command_names, parse_comment, yaml_block, Syntax};

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let commands = parse_comment(body, &Syntax::default());
    if !body.contains('/') {
        assert!(commands.is_empty(), "{commands:?}");
    }
    for command in commands.iter().flatten() {
        assert!(command_names().any(|n| n == command.name()));
    }
    yaml_block(body);
});
