//! The driver's own promises: no Chromium fails loudly, and none is left
//! behind by a test that panics.

use std::path::Path;
use std::time::Duration;

use super::{processes_naming, Browser};

/// Whether any process is left in group `pgid` (zombies, which init
/// reaps, aside).
fn group_alive(pgid: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .any(|stat| {
            // `pid (comm) state ppid pgrp …`; comm may hold spaces.
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
        })
}

#[test]
#[should_panic(
    expected = "Install Debian's `chromium` package (`apt-get install chromium`, \
                           as .ci/run does) or set CHROMIUM to a Chromium binary"
)]
fn a_machine_without_chromium_fails_the_test_naming_the_package() {
    Browser::start_with(Path::new("/nonexistent/chromium"));
}

#[test]
fn a_panicking_test_leaves_no_chromium_process_behind() {
    let (tx, rx) = std::sync::mpsc::channel();
    let test = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let browser = Browser::start().await;
            let page = browser.open("data:text/html,<h1>Hello</h1>").await;
            assert_eq!(page.text().await, "Hello");
            tx.send((
                browser.child.id() as libc::pid_t,
                browser.home.path().to_owned(),
            ))
            .unwrap();
            panic!("a failed assertion");
        });
    });
    assert!(test.join().is_err(), "the test thread panicked");
    let (pgid, home) = rx.recv().unwrap();
    // The group was killed and reaped as the panic unwound; helpers
    // that init reaps may take a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while (group_alive(pgid) || !processes_naming(&home).is_empty())
        && std::time::Instant::now() < deadline
    {
        // allowed sleep: a bounded poll (10 s) of the processes' end.
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !group_alive(pgid),
        "Chromium's process group {pgid} is still alive"
    );
    assert_eq!(processes_naming(&home), Vec::<libc::pid_t>::new());
    assert!(!home.exists(), "the profile was removed");
}
