# Sourced by scripts/failures.sh (uses its case_dir and capture): Rust's
# everyday failures — cargo test/build/clippy/fmt/run and rustc, with the
# machine's toolchain (no crates are downloaded: the projects have no
# dependencies).
# Sourced, so $work and the helpers come from failures.sh; the projects'
# sources are quoted literally on purpose.
# shellcheck shell=bash disable=SC2016,SC2154

# crate NAME: a Cargo.toml for a package NAME with no dependencies.
crate() {
  mkdir -p src
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2021"\n' "$1" >Cargo.toml
}

if case_dir cargo-test-panic-message; then
  crate inventory
  cat >src/lib.rs <<'RS'
pub fn reserve(stock: u32, wanted: u32) -> u32 {
    if wanted > stock {
        panic!("cannot reserve {wanted} items, only {stock} in stock");
    }
    stock - wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserving_everything_leaves_nothing() {
        assert_eq!(reserve(3, 3), 0);
    }

    #[test]
    fn reserving_too_many_is_refused_gracefully() {
        assert_eq!(reserve(1, 2), 0);
    }
}
RS
  capture cargo-test-panic-message test_failure 'cargo test' \
    'reserving_too_many_is_refused_gracefully' 'cannot reserve 2 items'
fi
if case_dir cargo-test-should-panic; then
  crate parser
  cat >src/lib.rs <<'RS'
pub fn parse_percent(s: &str) -> u8 {
    s.trim_end_matches('%').parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    #[should_panic(expected = "invalid")]
    fn rejects_words() {
        super::parse_percent("lots");
    }
}
RS
  capture cargo-test-should-panic test_failure 'cargo test' 'rejects_words' 'should panic'
fi
if case_dir cargo-test-integration; then
  crate slugs
  printf 'pub fn slug(s: &str) -> String {\n    s.to_lowercase().replace(%s, "_")\n}\n' "' '" >src/lib.rs
  mkdir tests
  printf '#[test]\nfn spaces_become_dashes() {\n    assert_eq!(slugs::slug("Hello World"), "hello-world");\n}\n' >tests/slug.rs
  capture cargo-test-integration test_failure 'cargo test --test slug' \
    'spaces_become_dashes' 'tests/slug.rs:3'
fi
if case_dir cargo-test-doctest; then
  crate money
  cat >src/lib.rs <<'RS'
/// Cents to a display string.
///
/// ```
/// assert_eq!(money::show(1234), "$12.34");
/// assert_eq!(money::show(5), "$0.05");
/// ```
pub fn show(cents: u64) -> String {
    format!("${}.{}", cents / 100, cents % 100)
}
RS
  capture cargo-test-doctest test_failure 'cargo test --doc' 'src/lib.rs'
fi
if case_dir cargo-test-unwrap-none; then
  crate lookup
  cat >src/lib.rs <<'RS'
use std::collections::HashMap;

pub fn price(table: &HashMap<&str, u32>, item: &str) -> u32 {
    *table.get(item).unwrap()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    #[test]
    fn unknown_items_cost_nothing() {
        let table = HashMap::from([("tea", 3)]);
        assert_eq!(super::price(&table, "coffee"), 0);
    }
}
RS
  capture cargo-test-unwrap-none test_failure 'cargo test -q' \
    'unknown_items_cost_nothing' 'src/lib.rs:4'
fi
if case_dir cargo-build-borrow; then
  crate borrow
  cat >src/main.rs <<'RS'
fn main() {
    let mut names = vec![String::from("ada")];
    let first = &names[0];
    names.push(String::from("grace"));
    println!("{first}");
}
RS
  capture cargo-build-borrow build_failure 'cargo build' 'E0502' 'src/main.rs:4' \
    finding=src/main.rs:4
fi
if case_dir cargo-build-missing-field; then
  crate config
  cat >src/main.rs <<'RS'
struct Config {
    host: String,
    port: u16,
}

fn main() {
    let c = Config { host: "localhost".into() };
    println!("{}:{}", c.host, c.port);
}
RS
  capture cargo-build-missing-field build_failure 'cargo build' 'E0063' 'src/main.rs:7'
fi
if case_dir cargo-build-deny-warnings; then
  crate strict
  printf '#![deny(warnings)]\n\nfn main() {\n    let unused = 3;\n    println!("hi");\n}\n' >src/main.rs
  capture cargo-build-deny-warnings lint_failure 'cargo build' 'unused' 'src/main.rs:4'
fi
if case_dir cargo-test-compile-error-in-test; then
  crate calc
  cat >src/lib.rs <<'RS'
pub fn double(x: i32) -> i32 {
    x * 2
}

#[cfg(test)]
mod tests {
    #[test]
    fn doubles() {
        assert_eq!(super::tripple(2), 6);
    }
}
RS
  capture cargo-test-compile-error-in-test build_failure 'cargo test' 'E0425' 'src/lib.rs:9'
fi
if case_dir cargo-run-index-out-of-bounds; then
  crate rows
  printf 'fn main() {\n    let rows = vec![1, 2, 3];\n    let i = rows.len();\n    println!("{}", rows[i]);\n}\n' >src/main.rs
  capture cargo-run-index-out-of-bounds runtime_error 'cargo run -q' \
    'index out of bounds' 'src/main.rs:4'
fi
if case_dir cargo-run-process-exit; then
  crate cli
  printf 'fn main() {\n    eprintln!("error: config.toml not found");\n    std::process::exit(2);\n}\n' >src/main.rs
  capture cargo-run-process-exit test_failure 'cargo run -q' 'config.toml not found'
fi
if case_dir clippy-warnings; then
  crate lints
  cat >src/main.rs <<'RS'
fn main() {
    let v: Vec<u32> = vec![1, 2, 3];
    if v.len() == 0 {
        return;
    }
    let s = String::from("x");
    let t = s.clone();
    println!("{t}");
}
RS
  capture clippy-warnings lint_failure 'cargo clippy -q -- -D warnings' 'len_zero' 'src/main.rs:3'
fi
if case_dir cargo-fmt-check-lib; then
  crate fmtlib
  printf 'pub fn add(a:i32,b:i32)->i32{a+b}\n' >src/lib.rs
  capture cargo-fmt-check-lib lint_failure 'cargo fmt --check' 'src/lib.rs'
fi
if case_dir rustc-mismatched-types; then
  printf 'fn half(x: u32) -> u32 {\n    x / 2.0\n}\n\nfn main() {\n    println!("{}", half(3));\n}\n' >main.rs
  capture rustc-mismatched-types build_failure 'rustc --edition 2021 main.rs -o main' \
    'main.rs:2' finding=main.rs:2
fi
if case_dir cargo-test-hangs-under-timeout; then
  crate waits
  cat >src/lib.rs <<'RS'
#[cfg(test)]
mod tests {
    #[test]
    fn waits_for_the_lock() {
        let lock = std::sync::Mutex::new(0);
        let _held = lock.lock().unwrap();
        println!("waiting for the lock");
        loop {
            if let Ok(_again) = lock.try_lock() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
RS
  capture cargo-test-hangs-under-timeout timeout 'timeout 20 cargo test' 'timed out after 20 s'
fi
