//! The `ggp` binary: parses the command line and hands over to `ggp::cli`.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = ggp::cli::Args::parse();
    match ggp::cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
