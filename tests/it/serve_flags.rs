//! `taskgate serve`'s settings refused before anything starts.

use std::process::Command;

fn serve(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .arg("serve")
        .args(args)
        .env("APP_ID", "1")
        .env("WEBHOOK_SECRET", "secret")
        .env(
            "PRIVATE_KEY_PATH",
            concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys/test-app.pem"),
        )
        // Never reached: the settings are refused first.
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .env("PORT", "0")
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_retention_shorter_than_githubs_redelivery_window_is_refused() {
    let (code, stderr) = serve(&["--retention-days", "2"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("invalid value '2' for '--retention-days <RETENTION_DAYS>'"),
        "{stderr}"
    );
    let (code, stderr) = serve(&["--retention-days", "a month"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--retention-days"), "{stderr}");
}
