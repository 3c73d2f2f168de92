//! `cargo +nightly fuzz run config`: any UTF-8 text as
//! `.github/taskgate.yml` must load without panicking; `load_config` agrees
//! with `parse_config` (`Ok` exactly when there is no error, with the same
//! config), and every failure kind is routed to a role that exists.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskgate_core::config::{load_config, parse_config, FAILURE_KINDS};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let (config, problems) = parse_config(src);
    match load_config(Some(src)) {
        Ok(loaded) => {
            assert!(!problems.iter().any(|p| p.is_error()), "{problems:?}");
            assert_eq!(loaded, config);
        }
        Err(errors) => assert!(!errors.is_empty() && errors.iter().all(|p| p.is_error())),
    }
    for kind in FAILURE_KINDS {
        let role = config.role_for(kind);
        assert!(
            config.roles.contains_key(role),
            "`{kind}` routed to unknown role `{role}`"
        );
    }
});
