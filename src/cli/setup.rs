//! `taskgate setup`: registers the GitHub App from `app-manifest.yml` and
//! writes its settings (see `taskgate::setup` for the flow).

use std::path::PathBuf;

use anyhow::Context;
use taskgate::setup::{self, SetupConfig};

#[derive(clap::Args, Debug)]
pub struct SetupArgs {
    /// Where GitHub will post webhooks: the public URL of `taskgate serve`'s
    /// /webhook (for a laptop, a forwarding service such as smee.io).
    #[arg(long)]
    pub webhook_url: String,
    /// Register the app under this organisation instead of your account.
    #[arg(long)]
    pub org: Option<String>,
    /// The app's name (unique on GitHub; at most 34 characters).
    #[arg(long)]
    pub name: Option<String>,
    /// A manifest to use instead of the embedded app-manifest.yml.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// GitHub's REST API base (GitHub Enterprise: https://HOST/api/v3).
    #[arg(long, env = "GITHUB_API_URL", default_value = "https://api.github.com")]
    pub github_api_url: String,
    /// Address the setup page listens on; GitHub sends the browser back here.
    #[arg(long, default_value = "localhost")]
    pub host: String,
    #[arg(long, default_value_t = 3000)]
    pub port: u16,
    /// The env file the app's settings are written to.
    #[arg(long, default_value = ".env")]
    pub env_file: PathBuf,
    /// Where the private key file is written.
    #[arg(long, default_value = ".")]
    pub key_dir: PathBuf,
    /// Replace another app's settings already in the env file.
    #[arg(long)]
    pub force: bool,
}

pub async fn run(args: SetupArgs) -> anyhow::Result<()> {
    let manifest = match &args.manifest {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the manifest {}", path.display()))?,
        None => setup::APP_MANIFEST.to_owned(),
    };
    let server = setup::start(SetupConfig {
        api_url: args.github_api_url,
        host: args.host,
        port: args.port,
        env_file: args.env_file,
        key_dir: args.key_dir,
        webhook_url: args.webhook_url,
        org: args.org,
        name: args.name,
        force: args.force,
        manifest,
    })
    .await?;
    println!(
        "Open {} in a browser to register taskgate on GitHub.",
        server.url
    );
    println!("(Waiting for GitHub to send the browser back; Ctrl-C to give up.)");
    let registered = server.wait().await?;
    println!();
    println!(
        "Registered {} (app id {}).",
        registered.name, registered.app_id
    );
    println!(
        "  wrote APP_ID, PRIVATE_KEY_PATH and WEBHOOK_SECRET to {}",
        registered.env_file.display()
    );
    println!("  the private key: {}", registered.key_path.display());
    println!(
        "Install it on your repositories: {}",
        registered.install_url
    );
    println!("Then run `taskgate serve`.");
    Ok(())
}
