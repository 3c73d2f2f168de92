//! The `taskgate` command line. `anyhow` lives here and nowhere else.

// No function over 100 lines outside tests (clippy.toml sets the bound).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// The binary calls no C and dereferences no raw pointer itself.
#![forbid(unsafe_code)]

mod cli;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::{Args, Parser, Subcommand};
use taskgate::app::{self, ServeConfig};
use taskgate::github::{Backoff, Pacing};

/// mimalloc instead of glibc's allocator: the intake allocates and frees
/// many short-lived buffers per delivery, and glibc's malloc showed up
/// as a tenth of its CPU (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "taskgate",
    // `taskgate 0.1.0 (commit 1a2b3c4d5e6f)`: the commit from build.rs.
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("TASKGATE_COMMIT"), ")"),
    about = "A GitHub App that proves planned work before it ships",
    after_help = "Logs go to stderr: RUST_LOG filters them (or Probot's LOG_LEVEL; default \
                  info), LOG_FORMAT=json writes one JSON object per line. A .env file in \
                  the working directory is read first."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

impl Command {
    /// The demo narrates on stdout: logs stay quiet unless asked for.
    fn narrates(&self) -> bool {
        #[cfg(feature = "demo")]
        if matches!(self, Command::Demo(_)) {
            return true;
        }
        false
    }
}

#[derive(Subcommand)]
enum Command {
    /// Walk through what taskgate does, against a fake GitHub on this machine.
    #[cfg(feature = "demo")]
    Demo(cli::demo::DemoArgs),
    /// Run the GitHub App: webhook intake, processing and the GitHub executor.
    Serve(ServeArgs),
    /// Rebuild taskgate's record of a repository from GitHub (after losing the database).
    Resync(ResyncArgs),
    /// Bring the database up to this taskgate's schema, then exit (serve does it too).
    Migrate(MigrateArgs),
    /// Write the `actions` runner's workflow and a starter .github/taskgate.yml.
    Init(cli::init::InitArgs),
    /// Register taskgate as a GitHub App (the manifest flow) and write its settings to .env.
    Setup(cli::setup::SetupArgs),
    /// Check what a repository needs for taskgate: permissions, branch rules,
    /// drafts, assignees, workflows, failed deliveries, the sandbox. Exits 1
    /// when something stops taskgate.
    Doctor(DoctorArgs),
    /// Run a task's acceptance tests in the current checkout and print the report.
    Run(cli::run::RunArgs),
    /// Validate or show plans.
    #[command(subcommand)]
    Plan(cli::plan::PlanCommand),
    /// Classify a failed command's log (on stdin): prints its kind and summary.
    Classify(ClassifyArgs),
    /// Print the JSON Schema of a plan file or of .github/taskgate.yml.
    Schema(cli::schema::SchemaArgs),
}

#[derive(Args)]
struct ClassifyArgs {
    /// The command that produced the log (helps pick the tool's parser).
    #[arg(long, default_value = "")]
    cmd: String,
    /// The command's exit code.
    #[arg(long = "exit", default_value_t = 1, allow_negative_numbers = true)]
    exit_code: i32,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn classify(args: ClassifyArgs) -> anyhow::Result<()> {
    use std::io::Read;
    let mut log = Vec::new();
    std::io::stdin()
        .read_to_end(&mut log)
        .context("reading the log from stdin")?;
    let outcome = taskgate_core::classify::Outcome {
        command: &args.cmd,
        exit_code: Some(args.exit_code),
        signal: None,
        timed_out: false,
        timeout_seconds: None,
        output: &log,
    };
    let result = taskgate_core::classify::classify(&outcome);
    let verdict = taskgate_core::classify::verdict(&outcome, &result);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&verdict)?);
    } else {
        print!("{}", taskgate_core::classify::render_report(&verdict));
    }
    Ok(())
}

/// How to reach GitHub as the App, and where state lives.
#[derive(Args)]
struct AppArgs {
    /// The GitHub App's id.
    #[arg(long, env = "APP_ID")]
    app_id: u64,
    /// The App's private key (PEM); `\n` escapes are accepted.
    #[arg(
        long,
        env = "PRIVATE_KEY",
        hide_env_values = true,
        conflicts_with = "private_key_path"
    )]
    private_key: Option<String>,
    /// A file holding the App's private key (PEM).
    #[arg(long, env = "PRIVATE_KEY_PATH")]
    private_key_path: Option<PathBuf>,
    /// GitHub's REST API base (GitHub Enterprise: https://HOST/api/v3).
    #[arg(long, env = "GITHUB_API_URL", default_value = "https://api.github.com")]
    github_api_url: String,
    /// Where state lives: sqlite://PATH.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://taskgate.db",
        hide_env_values = true
    )]
    database_url: String,
}

impl AppArgs {
    /// Every path made absolute against the directory taskgate started in,
    /// once, before anything else runs (`cli::paths`).
    fn absolute(mut self) -> anyhow::Result<AppArgs> {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        self.private_key_path = self
            .private_key_path
            .map(|p| cli::paths::absolute_in(&cwd, &p));
        self.database_url = cli::paths::absolute_database_url(&cwd, &self.database_url);
        Ok(self)
    }

    /// `PRIVATE_KEY_PATH` made absolute, when the key comes from a file.
    fn absolute_key_path(&self) -> anyhow::Result<Option<PathBuf>> {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        Ok((self.private_key_path.as_ref()).map(|p| cli::paths::absolute_in(&cwd, p)))
    }

    fn private_key_pem(&self) -> anyhow::Result<String> {
        match (&self.private_key, &self.private_key_path) {
            (Some(pem), _) => Ok(pem.clone()),
            (None, Some(path)) => std::fs::read_to_string(path)
                .with_context(|| format!("reading PRIVATE_KEY_PATH {}", path.display())),
            (None, None) => {
                bail!("set PRIVATE_KEY or PRIVATE_KEY_PATH (or --private-key / --private-key-path)")
            }
        }
    }
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    app: AppArgs,
    /// The secret GitHub signs webhook deliveries with.
    #[arg(long, env = "WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: String,
    /// While rotating the webhook secret: the old one, still accepted until
    /// GitHub signs everything with the new one.
    #[arg(long, env = "WEBHOOK_SECRET_PREVIOUS", hide_env_values = true)]
    webhook_secret_previous: Option<String>,
    /// Address to listen on.
    #[arg(long, env = "HOST", default_value = "0.0.0.0")]
    host: String,
    /// Port to listen on.
    #[arg(long, env = "PORT", default_value_t = 3000)]
    port: u16,
    /// Token for the HTTP API (bearer) and the dashboard (Basic password).
    #[arg(long, env = "TASKGATE_API_TOKEN", hide_env_values = true)]
    api_token: Option<String>,
    /// /metrics needs the API token too (bearer, or Basic as Prometheus's
    /// basic_auth sends it); refused at start without TASKGATE_API_TOKEN.
    #[arg(long, env = "TASKGATE_METRICS_AUTH")]
    metrics_auth: bool,
    /// First retry delay for GitHub 5xx answers and lost connections, in ms.
    #[arg(long, env = "TASKGATE_RETRY_BASE_MS", default_value_t = 1000)]
    retry_base_ms: u64,
    /// Content-creating GitHub calls per minute and installation, evenly
    /// spaced (GitHub allows 80; 0: unspaced).
    #[arg(long, env = "TASKGATE_WRITES_PER_MINUTE", default_value_t = Pacing::default().per_minute)]
    writes_per_minute: u32,
    /// Content-creating GitHub calls in any hour per installation (GitHub
    /// allows 500; 0: unbounded).
    #[arg(long, env = "TASKGATE_WRITES_PER_HOUR", default_value_t = Pacing::default().per_hour)]
    writes_per_hour: u32,
    /// Where the local runner keeps repository mirrors and run workspaces.
    #[arg(long, env = "TASKGATE_WORK_DIR", default_value = "taskgate-work")]
    work_dir: PathBuf,
    /// Acceptance runs at once on the local runner; more wait in a queue.
    #[arg(long, env = "TASKGATE_MAX_RUNS", default_value_t = 2)]
    max_runs: usize,
    /// Days that decided deliveries and performed GitHub calls are kept
    /// (at least 3: GitHub redelivers from the past three days).
    #[arg(long, env = "TASKGATE_RETENTION_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(3..))]
    retention_days: u64,
    /// Where the runner fetches commits, `{repo}` standing for owner/name
    /// (default: the git host of GITHUB_API_URL, over HTTPS with the
    /// installation token). A `file://` template fetches without a token.
    #[arg(long, env = "TASKGATE_GIT_URL")]
    git_url: Option<String>,
    /// With several replicas on PostgreSQL: seconds a replica's claim on
    /// shared work (an installation's deliveries, an effect, a run, a
    /// periodic pass) lasts unrenewed, i.e. how soon the work of a replica
    /// that died is taken over.
    #[arg(long, env = "TASKGATE_LEASE_SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(2..=3600))]
    lease_seconds: u64,
    /// Minutes between reads of GitHub's delivery log for webhooks that
    /// failed to arrive (asked for again); 0 turns it off.
    #[arg(long, env = "TASKGATE_REDELIVER_MINUTES", default_value_t = 30)]
    redeliver_minutes: u64,
    /// The path GitHub posts webhooks to (Probot's is /api/github/webhooks).
    #[arg(long, env = "WEBHOOK_PATH", default_value = taskgate::web::DEFAULT_WEBHOOK_PATH,
          value_parser = taskgate::web::parse_webhook_path)]
    webhook_path: String,
    /// The memory webhook bodies being read and handled may hold at once, in
    /// MiB; past it a delivery waits up to 2 s, then gets 503.
    #[arg(long, env = "TASKGATE_WEBHOOK_MEMORY_MIB",
          default_value_t = taskgate::intake::DEFAULT_MEMORY_MIB,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
              .range(taskgate::intake::MAX_BODY_MIB as u64..))]
    webhook_memory_mib: usize,
    /// For development: a smee.io channel URL (the App's webhook URL) whose
    /// deliveries are replayed to this server, as Probot does.
    #[arg(long, env = "WEBHOOK_PROXY_URL", value_parser = taskgate::app::webhook_proxy::parse_proxy_url)]
    webhook_proxy_url: Option<String>,
    /// Which repositories' task code may reach the network when their
    /// `.github/taskgate.yml` asks (`runner_network: true`): `never`, or a
    /// comma-separated list of owner/repo. Public addresses only, never the
    /// host's loopback, link-local or private ones.
    #[arg(long, env = "TASKGATE_RUNNER_NETWORK", default_value = "never",
          value_parser = str::parse::<taskgate_core::network::RunnerNetwork>)]
    runner_network: taskgate_core::network::RunnerNetwork,
    /// Below this many MiB free on the work directory's disk no run
    /// starts: each queued check run says why (0: no floor).
    #[arg(long, env = "TASKGATE_MIN_FREE_MIB",
          default_value_t = taskgate_core::host_disk::DEFAULT_MIN_FREE_MIB)]
    min_free_mib: u64,
}

impl ServeArgs {
    fn into_config(mut self) -> anyhow::Result<ServeConfig> {
        self.app = self.app.absolute()?;
        let cwd = std::env::current_dir().context("reading the current directory")?;
        self.work_dir = cli::paths::absolute_in(&cwd, &self.work_dir);
        Ok(ServeConfig {
            app_id: self.app.app_id,
            private_key_pem: self.app.private_key_pem()?,
            webhook_secret: self.webhook_secret,
            previous_webhook_secret: self.webhook_secret_previous,
            github_api_url: self.app.github_api_url,
            host: self.host,
            port: self.port,
            database_url: self.app.database_url,
            api_token: self.api_token,
            metrics_auth: self.metrics_auth,
            backoff: Backoff {
                base: Duration::from_millis(self.retry_base_ms),
                ..Backoff::default()
            },
            pacing: Pacing {
                per_minute: self.writes_per_minute,
                per_hour: self.writes_per_hour,
            },
            work_dir: self.work_dir,
            max_concurrent_runs: self.max_runs,
            git: self
                .git_url
                .map(|template| taskgate::app::loops::run_queue::GitSource {
                    with_token: !template.starts_with("file://"),
                    url_template: template,
                }),
            tick_every: Duration::from_secs(60),
            actions_watch: taskgate::app::DEFAULT_ACTIONS_WATCH,
            retention: Duration::from_secs(self.retention_days * 24 * 60 * 60),
            lease: Duration::from_secs(self.lease_seconds),
            redeliver_every: (self.redeliver_minutes > 0)
                .then(|| Duration::from_secs(self.redeliver_minutes * 60)),
            webhook_proxy_url: self.webhook_proxy_url,
            webhook_path: self.webhook_path,
            webhook_memory_mib: self.webhook_memory_mib,
            header_read_timeout: taskgate::web::HEADER_READ_TIMEOUT,
            clock: taskgate::clock::Clock::system(),
            runner_network: self.runner_network,
            isolation: taskgate::runner::Isolation::from_env(),
            min_free_mib: self.min_free_mib,
            free_space: None,
            idle_polls: taskgate::app::IdlePolls::DEFAULT,
        })
    }
}

#[derive(Args)]
struct MigrateArgs {
    /// The database: sqlite://PATH or postgres://USER@HOST:PORT/DB.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://taskgate.db",
        hide_env_values = true
    )]
    database_url: String,
}

fn migrate(args: MigrateArgs) -> anyhow::Result<()> {
    let (from, to) = taskgate::store::Store::migrate_url(&args.database_url)?;
    if from == to {
        println!("the schema is at version {to}, this taskgate's; nothing to do");
    } else {
        println!("migrated the schema from version {from} to {to}");
    }
    Ok(())
}

#[derive(Args)]
struct DoctorArgs {
    #[command(flatten)]
    app: AppArgs,
    /// The repository, as owner/name (default: the one the current
    /// directory's `origin` remote names).
    #[arg(value_name = "OWNER/REPO")]
    repo: Option<String>,
}

async fn doctor(args: DoctorArgs) -> anyhow::Result<i32> {
    cli::doctor::run(cli::doctor::DoctorRun {
        app_id: args.app.app_id,
        private_key_pem: args.app.private_key_pem()?,
        github_api_url: args.app.github_api_url,
        repo: args.repo,
    })
    .await
}

#[derive(Args)]
struct ResyncArgs {
    #[command(flatten)]
    app: AppArgs,
    /// The repository to rebuild, as owner/name.
    #[arg(long)]
    repo: String,
}

async fn resync(args: ResyncArgs) -> anyhow::Result<()> {
    let repo = taskgate_core::ids::RepoName::parse(&args.repo).map_err(anyhow::Error::msg)?;
    let creds =
        taskgate::github::AppCredentials::from_pem(args.app.app_id, &args.app.private_key_pem()?)?;
    let github = taskgate::github::GitHubApp::new(&args.app.github_api_url, creds);
    let store = taskgate::store::Store::open_url(&args.app.database_url)?;
    let found = taskgate::app::resync::resync(&github, &store, &repo).await?;
    println!(
        "{repo}: installation {}, {} issues, {} branches, {} labels recorded from GitHub",
        found.installation, found.issues, found.branches, found.labels
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    runtime()
        .context("starting the async runtime")?
        .block_on(run())
}

/// The async runtime, with one worker thread per core but one: the store's
/// writer is a thread of its own, busy whenever deliveries arrive (every
/// commit is its work), so a worker per core would have the two compete for
/// a core on every group commit. On two cores this measured ~10 % less CPU
/// per delivery (docs/benchmarks.md). `TOKIO_WORKER_THREADS` still decides
/// when set, as tokio documents.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(worker_threads(cores()));
    }
    builder.build()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// All cores but one, and at least one.
fn worker_threads(cores: usize) -> usize {
    cores.saturating_sub(1).max(1)
}

/// How logs are written on stderr: lines for people, or one JSON object
/// per line for a log collector. `LOG_FORMAT` as Probot names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

fn log_format(value: Option<&str>) -> anyhow::Result<LogFormat> {
    match value.map(str::trim) {
        // Probot calls its human format `pretty`.
        None | Some("" | "text" | "pretty") => Ok(LogFormat::Text),
        Some("json") => Ok(LogFormat::Json),
        Some(other) => {
            anyhow::bail!("LOG_FORMAT must be `text` or `json`, not `{other}`")
        }
    }
}

/// Which logs are written: `RUST_LOG` (tracing's filter syntax) when set,
/// else Probot's `LOG_LEVEL`, else `default`. A filter that cannot be read
/// stops the start, instead of logging at a level nobody asked for.
fn log_filter(
    rust_log: Option<&str>,
    log_level: Option<&str>,
    default: &str,
) -> anyhow::Result<tracing_subscriber::EnvFilter> {
    if let Some(directives) = rust_log.map(str::trim).filter(|d| !d.is_empty()) {
        return tracing_subscriber::EnvFilter::try_new(directives)
            .with_context(|| format!("RUST_LOG `{directives}` is not a log filter"));
    }
    let level = match log_level.map(str::trim).filter(|l| !l.is_empty()) {
        None => default,
        Some(level @ ("trace" | "debug" | "info" | "warn" | "error")) => level,
        // Probot's level above error; taskgate has nothing above it.
        Some("fatal") => "error",
        Some(other) => anyhow::bail!(
            "LOG_LEVEL must be trace, debug, info, warn, error or fatal, not `{other}`"
        ),
    };
    Ok(tracing_subscriber::EnvFilter::new(level))
}

/// The files of taskgate's own that task code must never read: its key,
/// the `.env` it read, its SQLite database, its work directory.
fn own_files(
    config: &ServeConfig,
    key_file: Option<PathBuf>,
    env_file: Option<PathBuf>,
) -> Vec<(taskgate::runner::OwnFile, PathBuf)> {
    use taskgate::runner::OwnFile;
    let mut own: Vec<_> = key_file
        .map(|k| (OwnFile::PrivateKey, k))
        .into_iter()
        .collect();
    own.extend(env_file.map(|e| (OwnFile::EnvFile, e)));
    if let Ok(taskgate::store::DatabaseUrl::Sqlite(db)) =
        taskgate::store::DatabaseUrl::parse(&config.database_url)
    {
        own.push((OwnFile::Database, db));
    }
    own.push((OwnFile::WorkDir, config.work_dir.clone()));
    own
}

async fn run() -> anyhow::Result<()> {
    // A missing .env is normal; a malformed one is worth stopping for.
    let env_file = match dotenvy::dotenv() {
        Ok(path) => Some(path),
        Err(e) if e.not_found() => None,
        Err(e) => return Err(e).context("reading .env"),
    };
    let cli = Cli::parse();
    // The demo narrates on stdout; its logs stay quiet unless asked for.
    let default_filter = if cli.command.narrates() {
        "warn"
    } else {
        "info"
    };
    let format = log_format(std::env::var("LOG_FORMAT").ok().as_deref())?;
    let filter = log_filter(
        std::env::var("RUST_LOG").ok().as_deref(),
        std::env::var("LOG_LEVEL").ok().as_deref(),
        default_filter,
    )?;
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Text => logs.init(),
        // Every span the line is in (a delivery's, a run's, an effect's),
        // so a collector can follow one delivery, task or GitHub call.
        LogFormat::Json => logs
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .init(),
    }
    match cli.command {
        #[cfg(feature = "demo")]
        Command::Demo(args) => cli::demo::run(args).await?,
        Command::Serve(args) => {
            // The sandbox's settings (TASKGATE_SANDBOX_*, TASKGATE_UNSANDBOXED)
            // are read once, at start, for every run; a mistake in them
            // stops the start instead.
            let key_file = args.app.absolute_key_path()?;
            let config = args.into_config()?;
            match &config.isolation {
                taskgate::runner::Isolation::Refused(why) => anyhow::bail!(why.clone()),
                // A read-only path must not show task code taskgate's own
                // files: refused before anything is opened or written.
                taskgate::runner::Isolation::Sandbox(sandbox) => {
                    sandbox.refuse_own_files(&own_files(&config, key_file, env_file))?
                }
                _ => {}
            }
            let running = app::start(config).await?;
            running.wait().await;
        }
        Command::Classify(args) => classify(args)?,
        Command::Schema(args) => print!("{}", cli::schema::run(&args)),
        Command::Resync(args) => resync(args).await?,
        Command::Migrate(args) => migrate(args)?,
        Command::Init(args) => print!("{}", cli::init::run(&args)?),
        Command::Setup(args) => cli::setup::run(args).await?,
        Command::Doctor(args) => {
            let code = doctor(args).await?;
            if code != 0 {
                std::process::exit(code);
            }
        }
        Command::Run(args) => {
            let code = cli::run::run(args).await?;
            if code != 0 {
                std::process::exit(code);
            }
        }
        Command::Plan(command) => {
            let code = cli::plan::run(command)?;
            if code != 0 {
                std::process::exit(code);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve_config(flags: &[&str]) -> ServeConfig {
        let key = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/keys/test-app.pem");
        let mut argv = vec!["taskgate", "serve", "--app-id", "1"];
        argv.extend(["--private-key-path", key, "--webhook-secret", "s"]);
        argv.extend(flags);
        let Command::Serve(args) = Cli::try_parse_from(argv).expect("flags parse").command else {
            unreachable!("parsed `serve`")
        };
        args.into_config().expect("a complete configuration")
    }

    #[test]
    fn the_runner_network_is_never_unless_the_operator_lists_repositories() {
        use taskgate_core::network::RunnerNetwork;
        assert_eq!(serve_config(&[]).runner_network, RunnerNetwork::Never);
        let listed = serve_config(&["--runner-network", "octo/web,Octo/API"]).runner_network;
        assert_eq!(listed.to_string(), "octo/api,octo/web");
    }

    #[test]
    fn the_runtime_leaves_a_core_to_the_stores_writer() {
        assert_eq!(
            [1, 2, 4, 16].map(worker_threads),
            [1, 1, 3, 15],
            "cores 1, 2, 4, 16"
        );
        if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
            let runtime = runtime().expect("a runtime");
            assert_eq!(runtime.metrics().num_workers(), worker_threads(cores()));
        }
    }

    #[test]
    fn rust_log_wins_then_probots_log_level_then_the_default() {
        let filter =
            |rust_log, log_level| log_filter(rust_log, log_level, "info").map(|f| f.to_string());
        assert_eq!(filter(None, None).unwrap(), "info");
        assert_eq!(filter(None, Some("debug")).unwrap(), "debug");
        assert_eq!(filter(None, Some("fatal")).unwrap(), "error");
        assert_eq!(filter(Some(""), Some("warn")).unwrap(), "warn");
        assert_eq!(
            filter(Some("taskgate=debug"), Some("error")).unwrap(),
            "taskgate=debug"
        );
        let err = filter(None, Some("loud")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LOG_LEVEL must be trace, debug, info, warn, error or fatal, not `loud`"
        );
        let err = filter(Some("taskgate=loud"), None).unwrap_err();
        assert!(
            err.to_string().starts_with("RUST_LOG `taskgate=loud`"),
            "{err}"
        );
    }

    #[test]
    fn logs_are_text_unless_json_is_asked_for_and_other_formats_are_refused() {
        for text in [None, Some(""), Some("text"), Some("pretty"), Some(" text ")] {
            assert_eq!(log_format(text).unwrap(), LogFormat::Text, "{text:?}");
        }
        assert_eq!(log_format(Some("json")).unwrap(), LogFormat::Json);
        let err = log_format(Some("yaml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LOG_FORMAT must be `text` or `json`, not `yaml`"
        );
    }

    #[test]
    fn a_previous_webhook_secret_is_taken_only_when_given() {
        if std::env::var_os("WEBHOOK_SECRET_PREVIOUS").is_some() {
            return; // the environment would answer for the flag
        }
        assert_eq!(serve_config(&[]).previous_webhook_secret, None);
        let rotating = serve_config(&["--webhook-secret-previous", "old"]);
        assert_eq!(rotating.previous_webhook_secret.as_deref(), Some("old"));
        assert_eq!(rotating.webhook_secret, "s");
    }

    #[test]
    fn missed_deliveries_are_asked_for_every_thirty_minutes_unless_turned_off() {
        let every = |flags: &[&str]| serve_config(flags).redeliver_every;
        assert_eq!(every(&[]), Some(Duration::from_secs(30 * 60)));
        assert_eq!(
            every(&["--redeliver-minutes", "5"]),
            Some(Duration::from_secs(5 * 60))
        );
        // 0 turns the pass off: `app::start` spawns it only for `Some`.
        assert_eq!(every(&["--redeliver-minutes", "0"]), None);
    }

    #[test]
    fn the_default_paths_are_made_absolute_against_the_start_directory() {
        let cwd = std::env::current_dir().unwrap();
        let config = serve_config(&[
            "--work-dir",
            "taskgate-work",
            "--database-url",
            "sqlite://t.db",
        ]);
        assert_eq!(config.work_dir, cwd.join("taskgate-work"));
        assert_eq!(
            config.database_url,
            format!("sqlite://{}", cwd.join("t.db").display())
        );
    }
}
