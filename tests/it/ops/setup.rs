//! `taskgate setup` end to end, a browser played by reqwest: the setup page
//! posts the manifest to (fake) GitHub's form, GitHub sends the browser back
//! with a code, and the credentials written work against GitHub.

use std::path::Path;

use fakehub::FakeGitHub;
use taskgate::setup::{self, SetupConfig, SetupServer};

const WEBHOOK_URL: &str = "https://taskgate.example.com/webhook";

fn config(fake: &FakeGitHub, dir: &Path) -> SetupConfig {
    SetupConfig {
        api_url: fake.url(),
        host: "127.0.0.1".into(),
        port: 0,
        env_file: dir.join(".env"),
        key_dir: dir.to_owned(),
        webhook_url: WEBHOOK_URL.into(),
        org: None,
        name: None,
        force: false,
        manifest: setup::APP_MANIFEST.into(),
    }
}

/// A browser: no redirects followed, so each hop is seen.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The value of `attr="…"` in `html`, with askama's escapes undone.
fn attribute(html: &str, attr: &str) -> String {
    let start = html
        .find(&format!("{attr}=\""))
        .unwrap_or_else(|| panic!("{attr} in {html}"))
        + attr.len()
        + 2;
    let end = start + html[start..].find('"').unwrap();
    html[start..end]
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#38;", "&")
}

/// Opens the setup page and submits its form to GitHub: GitHub's redirect.
async fn submit_form(server: &SetupServer) -> String {
    let page = browser().get(&server.url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    let action = attribute(&html, "action");
    let manifest = attribute(&html, "value");
    let answer = browser()
        .post(&action)
        .form(&[("manifest", manifest.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 302, "{}", answer.text().await.unwrap());
    answer.headers()["location"].to_str().unwrap().to_owned()
}

async fn get(url: &str) -> (u16, String) {
    let res = browser().get(url).send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

#[tokio::test]
async fn setup_registers_the_app_and_writes_credentials_that_work() {
    let fake = crate::support::CheckedFake::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "# mine\nPORT=4000\n").unwrap();
    let server = setup::start(config(&fake, dir.path())).await.unwrap();
    let back = submit_form(&server).await;

    // What GitHub was asked to register: the embedded manifest with this
    // installation's webhook and the way back here.
    let manifests = fake.app_manifests();
    assert_eq!(manifests.len(), 1);
    assert_eq!(manifests[0]["hook_attributes"]["url"], WEBHOOK_URL);
    assert_eq!(
        manifests[0]["redirect_url"],
        format!("http://127.0.0.1:{}/setup/callback", server.addr.port())
    );
    assert_eq!(manifests[0]["default_permissions"]["checks"], "write");
    assert!(
        back.starts_with(&format!(
            "http://127.0.0.1:{}/setup/callback?code=",
            server.addr.port()
        )),
        "{back}"
    );

    let (status, page) = get(&back).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("/installations/new"), "{page}");
    let registered = server.wait().await.unwrap();
    assert_eq!(registered.app_id, fake.app_id());

    let env = std::fs::read_to_string(dir.path().join(".env")).unwrap();
    assert!(env.starts_with("# mine\nPORT=4000\n"), "{env}");
    let values: std::collections::HashMap<String, String> =
        dotenvy::from_path_iter(dir.path().join(".env"))
            .unwrap()
            .map(|kv| kv.unwrap())
            .collect();
    assert_eq!(values["APP_ID"], fake.app_id().to_string());
    assert_eq!(
        Some(values["WEBHOOK_SECRET"].clone()),
        fake.converted_webhook_secret()
    );
    let key_path = Path::new(&values["PRIVATE_KEY_PATH"]);
    assert_eq!(key_path, registered.key_path);
    assert_eq!(
        std::fs::read_to_string(key_path).unwrap(),
        FakeGitHub::private_key_pem()
    );
    #[cfg(unix)]
    for secret in [key_path.to_owned(), dir.path().join(".env")] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", secret.display());
    }

    // The written credentials authenticate as the app.
    let creds = taskgate::github::AppCredentials::from_pem(
        values["APP_ID"].parse().unwrap(),
        &std::fs::read_to_string(key_path).unwrap(),
    )
    .unwrap();
    let app = taskgate::github::GitHubApp::new(&fake.url(), creds);
    assert_eq!(app.app_info().await.unwrap().id, fake.app_id());
    fake.assert_contract_kept();
}

#[tokio::test]
async fn a_callback_that_is_not_this_setups_or_a_refused_code_writes_nothing() {
    let fake = crate::support::CheckedFake::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = setup::start(config(&fake, dir.path())).await.unwrap();
    let back = submit_form(&server).await;
    let callback = format!("http://127.0.0.1:{}/setup/callback", server.addr.port());
    let code = back
        .split("code=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_owned();

    // A forged or stale state: refused before GitHub is asked.
    let (status, page) = get(&format!("{callback}?code={code}&state=0000")).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("does not match"), "{page}");
    let (status, _) = get(&format!("{callback}?code={code}")).await;
    assert_eq!(status, 400);
    // A code GitHub does not know: GitHub's answer, nothing written.
    let state = back.split("state=").nth(1).unwrap();
    let (status, page) = get(&format!("{callback}?code=feedface&state={state}")).await;
    assert_eq!(status, 502, "{page}");
    assert!(page.contains("GitHub answered 404: Not Found"), "{page}");
    let (status, _) = get(&format!("{callback}?code=..%2Fapp&state={state}")).await;
    assert_eq!(status, 400);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing written"
    );

    // The flow is still open: the real redirect completes it, once.
    let (status, _) = get(&back).await;
    assert_eq!(status, 200);
    server.wait().await.unwrap();
    assert!(dir.path().join(".env").exists());
}

#[tokio::test]
async fn another_apps_settings_in_the_env_file_stop_setup_before_anything_unless_forced() {
    let fake = crate::support::CheckedFake::start().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "APP_ID=7\n").unwrap();
    let err = setup::start(config(&fake, dir.path())).await.err().unwrap();
    assert_eq!(
        err.to_string(),
        "the env file already sets APP_ID for another app; pass --force to replace it, or --env-file to write elsewhere"
    );
    let forced = SetupConfig {
        force: true,
        org: Some("acme".into()),
        ..config(&fake, dir.path())
    };
    let server = setup::start(forced).await.unwrap();
    let back = submit_form(&server).await;
    assert_eq!(get(&back).await.0, 200);
    server.wait().await.unwrap();
    let env = std::fs::read_to_string(dir.path().join(".env")).unwrap();
    assert!(
        env.starts_with(&format!("APP_ID={}\n", fake.app_id())),
        "{env}"
    );
}

#[tokio::test]
async fn bad_flags_are_refused_with_what_to_change() {
    let fake = crate::support::CheckedFake::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            SetupConfig {
                webhook_url: "localhost:3000/webhook".into(),
                ..config(&fake, dir.path())
            },
            "--webhook-url must be an http(s) URL",
        ),
        (
            SetupConfig {
                org: Some("acme/evil".into()),
                ..config(&fake, dir.path())
            },
            "--org `acme/evil` is not a GitHub organisation login",
        ),
        (
            SetupConfig {
                key_dir: dir.path().join("missing"),
                ..config(&fake, dir.path())
            },
            "not a directory",
        ),
    ];
    for (bad, expected) in cases {
        let err = setup::start(bad).await.err().unwrap().to_string();
        assert!(err.contains(expected), "{err}");
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

/// `taskgate setup` as a person runs it, in `dir`.
fn setup_cli(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_taskgate"))
        .arg("setup")
        .args(args)
        .args(["--port", "0"])
        .current_dir(dir)
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_refuses_bad_flags_and_another_apps_env_file_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = setup_cli(dir.path(), &["--webhook-url", "ftp://x/webhook"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--webhook-url must be an http(s) URL"),
        "{stderr}"
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());

    std::fs::write(dir.path().join(".env"), "APP_ID=7\n").unwrap();
    let (code, stderr) = setup_cli(dir.path(), &["--webhook-url", WEBHOOK_URL]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("the env file already sets APP_ID for another app"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".env")).unwrap(),
        "APP_ID=7\n"
    );
}

#[tokio::test]
async fn settings_that_cannot_be_written_are_said_with_what_to_do() {
    let fake = crate::support::CheckedFake::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let server = setup::start(SetupConfig {
        env_file: gone.join(".env"),
        ..config(&fake, dir.path())
    })
    .await
    .unwrap();
    let back = submit_form(&server).await;
    // The env file's directory goes away while the person is on GitHub.
    std::fs::remove_dir(&gone).unwrap();
    let (status, page) = get(&back).await;
    assert_eq!(status, 500, "{page}");
    assert!(page.contains("could not be written"), "{page}");
    assert!(page.contains("Delete the app"), "{page}");
    // GitHub's code is spent: the flow ends with the error, not success.
    let err = server.wait().await.unwrap_err().to_string();
    assert!(
        err.contains("could not be written") && err.contains("Delete the app"),
        "{err}"
    );
}
