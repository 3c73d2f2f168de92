//! The local web server of the manifest flow: the form page, GitHub's
//! redirect back, and writing the credentials.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};

use super::manifest::{check_org, form_action, manifest_json, ManifestOptions};
use super::{env_file, SetupError};
use crate::github::manifest::{convert_manifest_code, RegisteredApp};
use crate::github::GitHubError;

/// The settings `.env` gets.
const KEYS: [&str; 3] = ["APP_ID", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET"];

#[derive(Debug, Clone)]
pub struct SetupConfig {
    /// `GITHUB_API_URL`; the form goes to its web host.
    pub api_url: String,
    /// Where this server listens; GitHub sends the browser back here.
    pub host: String,
    pub port: u16,
    pub env_file: PathBuf,
    /// Where the private key file is written.
    pub key_dir: PathBuf,
    pub webhook_url: String,
    /// Register the app under this organisation instead of the person.
    pub org: Option<String>,
    pub name: Option<String>,
    /// Replace settings of another app already in the env file.
    pub force: bool,
    /// The manifest (YAML), usually [`super::APP_MANIFEST`].
    pub manifest: String,
}

/// The app GitHub registered, and where its settings went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub app_id: u64,
    pub slug: String,
    pub name: String,
    pub html_url: String,
    /// Where a person installs it on repositories.
    pub install_url: String,
    pub key_path: PathBuf,
    pub env_file: PathBuf,
}

pub struct SetupServer {
    /// The page to open in a browser.
    pub url: String,
    pub addr: SocketAddr,
    done: oneshot::Receiver<Result<Registered, SetupError>>,
    stop: Arc<Notify>,
    server: tokio::task::JoinHandle<()>,
}

impl SetupServer {
    /// Waits until GitHub sent the browser back and the files are written
    /// (or could not be: GitHub's code is spent then); then stops the server.
    pub async fn wait(self) -> Result<Registered, SetupError> {
        let result = self.done.await.unwrap_or(Err(SetupError::Stopped));
        self.stop.notify_one();
        let _ = self.server.await;
        result
    }
}

struct Flow {
    config: SetupConfig,
    manifest: String,
    action: String,
    state: String,
    done: Mutex<Option<oneshot::Sender<Result<Registered, SetupError>>>>,
}

/// Checks everything that can be checked before GitHub is involved (the
/// flags, the manifest, the env file, the key directory, the port), then
/// serves the flow.
pub async fn start(config: SetupConfig) -> Result<SetupServer, SetupError> {
    if let Some(org) = &config.org {
        check_org(org)?;
    }
    let existing = read_env(&config.env_file)?;
    if !config.force {
        if let Some(key) = env_file::conflicts(&existing, &KEYS).into_iter().next() {
            return Err(SetupError::EnvConflict(key));
        }
    }
    if !config.key_dir.is_dir() {
        return Err(SetupError::File {
            path: config.key_dir.display().to_string(),
            message: "not a directory (the private key is written there)".into(),
        });
    }
    let bind = format!("{}:{}", config.host, config.port);
    let listener = TcpListener::bind(&bind)
        .await
        .map_err(|e| SetupError::Listen {
            addr: bind.clone(),
            message: e.to_string(),
        })?;
    let addr = listener.local_addr().map_err(|e| SetupError::Listen {
        addr: bind,
        message: e.to_string(),
    })?;
    let host = match config.host.as_str() {
        "0.0.0.0" | "::" | "[::]" => "localhost",
        h => h,
    };
    let base = format!("http://{host}:{}", addr.port());
    let manifest = manifest_json(
        &config.manifest,
        &ManifestOptions {
            webhook_url: config.webhook_url.clone(),
            redirect_url: format!("{base}/setup/callback"),
            name: config.name.clone(),
        },
    )?;
    let state = random_state()?;
    let (tx, done) = oneshot::channel();
    let flow = Arc::new(Flow {
        action: form_action(
            &crate::github::web_base(&config.api_url),
            config.org.as_deref(),
            &state,
        ),
        manifest: manifest.to_string(),
        state,
        config,
        done: Mutex::new(Some(tx)),
    });
    let app = Router::new()
        .route("/", get(form_page))
        .route("/setup/callback", get(callback))
        .with_state(flow);
    let stop = Arc::new(Notify::new());
    let stopped = stop.clone();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stopped.notified().await })
            .await;
    });
    Ok(SetupServer {
        url: format!("{base}/"),
        addr,
        done,
        stop,
        server,
    })
}

fn read_env(path: &Path) -> Result<String, SetupError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(file_error(path, e)),
    }
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> SetupError {
    SetupError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// 128 bits from the operating system: the state stands in for a CSRF
/// token, so it must not be guessable.
fn random_state() -> Result<String, SetupError> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| SetupError::BadInput(format!("no randomness from the system: {e}")))?;
    Ok(hex::encode(bytes))
}

#[derive(Template)]
#[template(path = "setup.html")]
struct FormPage<'a> {
    action: &'a str,
    manifest: &'a str,
    owner: &'a str,
    webhook_url: &'a str,
}

#[derive(Template)]
#[template(path = "setup-message.html")]
struct MessagePage<'a> {
    title: &'a str,
    message: &'a str,
    link: Option<(&'a str, &'a str)>,
}

fn page(status: StatusCode, title: &str, message: &str, link: Option<(&str, &str)>) -> Response {
    let html = MessagePage {
        title,
        message,
        link,
    }
    .render()
    .expect("the page template writes only to a String");
    (status, Html(html)).into_response()
}

async fn form_page(State(flow): State<Arc<Flow>>) -> Response {
    if flow.done.lock().expect("not poisoned").is_none() {
        return finished();
    }
    let owner = match &flow.config.org {
        Some(org) => format!("the organisation {org}"),
        None => "your account".to_owned(),
    };
    let html = FormPage {
        action: &flow.action,
        manifest: &flow.manifest,
        owner: &owner,
        webhook_url: &flow.config.webhook_url,
    }
    .render()
    .expect("the page template writes only to a String");
    Html(html).into_response()
}

fn finished() -> Response {
    page(
        StatusCode::GONE,
        "Already registered",
        "This setup has registered its app and stopped. Run `taskgate setup` again to register another.",
        None,
    )
}

#[derive(serde::Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
}

async fn callback(State(flow): State<Arc<Flow>>, Query(q): Query<CallbackQuery>) -> Response {
    if flow.done.lock().expect("not poisoned").is_none() {
        return finished();
    }
    let start_again = "Start again from this server's first page.";
    let given = q.state.as_deref().unwrap_or("");
    if !crate::web::auth::same_secret(given.as_bytes(), flow.state.as_bytes()) {
        return page(
            StatusCode::BAD_REQUEST,
            "Not this setup's callback",
            &format!("The state GitHub sent back does not match this setup's, so nothing was done. {start_again}"),
            None,
        );
    }
    let Some(code) = q.code.filter(|c| !c.is_empty()) else {
        return page(
            StatusCode::BAD_REQUEST,
            "No code",
            &format!("GitHub's redirect carries a `code`; this one has none, so nothing was done. {start_again}"),
            None,
        );
    };
    let app = match convert_manifest_code(&flow.config.api_url, &code).await {
        Ok(app) => app,
        Err(e) => {
            let status = match e {
                GitHubError::Config(_) => StatusCode::BAD_REQUEST,
                _ => StatusCode::BAD_GATEWAY,
            };
            tracing::warn!(error = %e, "manifest code not converted");
            return page(
                status,
                "GitHub did not register the app",
                &format!(
                    "{e}. Nothing was written. A code works once and for an hour; {start_again}"
                ),
                None,
            );
        }
    };
    match write_credentials(&flow.config, &app) {
        Ok(registered) => {
            let message = format!(
                "{} (app id {}) is registered. Its id, key and webhook secret are in {}; the private key is {}. Install it on your repositories, then run `taskgate serve`.",
                registered.name,
                registered.app_id,
                registered.env_file.display(),
                registered.key_path.display()
            );
            let answer = page(
                StatusCode::OK,
                "Registered",
                &message,
                Some(("Install it", &registered.install_url)),
            );
            if let Some(tx) = flow.done.lock().expect("not poisoned").take() {
                let _ = tx.send(Ok(registered));
            }
            answer
        }
        Err(e) => {
            let message = format!(
                "GitHub registered {} (app id {}), but its settings could not be written: {e}. Delete the app in its settings on GitHub ({}/advanced) and run setup again.",
                app.name, app.id, app.html_url
            );
            let answer = page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Registered, but not saved",
                &message,
                None,
            );
            // GitHub's code is spent: this flow cannot finish any more.
            if let Some(tx) = flow.done.lock().expect("not poisoned").take() {
                let _ = tx.send(Err(SetupError::NotSaved(message)));
            }
            answer
        }
    }
}

/// The key file (owner-only), then `.env`.
fn write_credentials(config: &SetupConfig, app: &RegisteredApp) -> Result<Registered, SetupError> {
    let secret = app
        .webhook_secret
        .as_deref()
        .ok_or_else(|| SetupError::GitHub("GitHub sent no webhook secret".into()))?;
    let key_path =
        std::path::absolute(config.key_dir.join(format!("{}.private-key.pem", app.slug)))
            .map_err(|e| file_error(&config.key_dir, e))?;
    write_private(&key_path, app.pem.as_bytes())?;
    let existing = read_env(&config.env_file)?;
    let key_path_text = key_path.display().to_string();
    let app_id = app.id.to_string();
    let merged = env_file::merge(
        &existing,
        &[
            ("APP_ID", &app_id),
            ("PRIVATE_KEY_PATH", &key_path_text),
            ("WEBHOOK_SECRET", secret),
        ],
        config.force,
    )?;
    write_private(&config.env_file, merged.as_bytes())?;
    Ok(Registered {
        app_id: app.id,
        slug: app.slug.clone(),
        name: app.name.clone(),
        install_url: format!("{}/installations/new", app.html_url.trim_end_matches('/')),
        html_url: app.html_url.clone(),
        key_path,
        env_file: config.env_file.clone(),
    })
}

/// Writes a file only its owner may read: it holds a secret.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), SetupError> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // An existing file keeps its mode on open: narrow it too.
        if path.exists() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| file_error(path, e))?;
        }
    }
    let mut file = options.open(path).map_err(|e| file_error(path, e))?;
    file.write_all(bytes).map_err(|e| file_error(path, e))?;
    file.sync_all().map_err(|e| file_error(path, e))
}
