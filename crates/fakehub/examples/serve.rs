//! The fake GitHub as a process of its own, for benchmarks that need an
//! API that answers (`BENCH_GITHUB=up bash bench/intake.sh`): installs the
//! App on one repository and serves until killed.
//!
//!     cargo run -p fakehub --example serve -- OWNER/REPO INSTALLATION_ID
//!
//! Prints the API's base URL, then the App's id, one per line, on stdout.
//! Owns nothing but that start-up; the fake's behaviour is the library's.
//! Must not: shape answers for a benchmark (no per-bench mocks).

use fakehub::FakeGitHub;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [repo, installation] = args.as_slice() else {
        eprintln!("usage: serve OWNER/REPO INSTALLATION_ID");
        std::process::exit(2);
    };
    let Ok(installation) = installation.parse::<u64>() else {
        eprintln!("not an installation id: {installation}");
        std::process::exit(2);
    };
    let fake = FakeGitHub::start().await;
    // A benchmark's writes are not paced like a real App's.
    fake.set_secondary_limit(0);
    fake.install(installation, repo);
    println!("{}", fake.url());
    println!("{}", fake.app_id());
    std::future::pending::<()>().await;
}
