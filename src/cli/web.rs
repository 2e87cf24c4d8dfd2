//! `ggp web`: serve the page for playing games in the browser.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::web::{Config, WebServer};

/// Arguments of `ggp web`.
#[derive(clap::Args, Debug)]
pub struct WebArgs {
    /// Port to listen on (0 for any free port; the address is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to bind; other machines can connect only if this is not 127.0.0.1.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Folder of rule sheets listed on the page.
    #[arg(long, default_value = "rules")]
    rules: PathBuf,
    /// Seed for the computer players.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// Runs `ggp web` until the process is stopped.
///
/// # Errors
/// The address cannot be bound, or accepting connections failed.
pub fn run(args: WebArgs) -> anyhow::Result<ExitCode> {
    let server = WebServer::bind(Config {
        bind: args.bind,
        port: args.port,
        rules: args.rules,
        seed: args.seed,
    })?;
    match server.addr() {
        Some(addr) => println!("listening on http://{addr}/"),
        None => println!("listening"),
    }
    std::io::stdout().flush()?;
    server.serve()?;
    Ok(ExitCode::SUCCESS)
}
