//! `cargo +nightly fuzz run plan`: any UTF-8 text as a plan file must parse
//! (or be refused with an error) and, when a plan comes out, validate
//! against the default config and an empty repository, without panicking;
//! every problem found can be rendered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use taskgate_core::config::RepoConfig;
use taskgate_core::plan::{parse_plan, render_problems, validate_plan, NoFiles, Problem};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let (plan, mut problems) = parse_plan(src);
    match &plan {
        Some(plan) => problems.extend(validate_plan(plan, &RepoConfig::default(), &NoFiles)),
        None => assert!(
            problems.iter().any(Problem::is_error),
            "no plan and no error to say why: {problems:?}"
        ),
    }
    render_problems("plan.yml", &problems);
});
