//! The command line: clap definitions and one function per subcommand.
//!
//! This is the one place that picks concrete engines, and (with `main.rs`) the only place
//! that uses `anyhow`.

mod bench;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::datalog::DatalogMachine;
use crate::gdl::{self, Description, Severity};
use crate::trace::{self, Replay};

/// ggp: a General Game Playing player and GDL reasoner.
#[derive(Parser, Debug)]
#[command(name = "ggp", version, about)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Validate a rule sheet; exit 1 if it has errors.
    Check {
        /// The rule sheet (.kif).
        game: PathBuf,
    },
    /// Play random playouts and print them in the trace format.
    Playout {
        /// The rule sheet (.kif).
        game: PathBuf,
        /// How many playouts.
        #[arg(long, default_value_t = 1)]
        count: usize,
        /// Seed of the random number generator.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Stop a playout after this many moves.
        #[arg(long, default_value_t = 1000)]
        max_steps: usize,
    },
    /// Replay a reference trace and compare every step; exit 1 on the first difference.
    Replay {
        /// The rule sheet (.kif).
        game: PathBuf,
        /// The trace file.
        trace: PathBuf,
    },
    /// Measure random playouts per second.
    Bench {
        /// The rule sheet (.kif).
        game: PathBuf,
        /// How long to measure.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Seed of the random number generator.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Time each rule and print the slowest with their join plans.
        #[arg(long)]
        profile: bool,
    },
}

/// Runs the command line; the exit code says whether the work succeeded.
///
/// # Errors
/// Any failure to read input or run an engine.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Check { game } => check(&game),
        Command::Playout {
            game,
            count,
            seed,
            max_steps,
        } => {
            let mut machine = datalog_machine(&game)?;
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut out = String::new();
            let result = trace::write_playouts(&mut machine, &mut rng, count, max_steps, &mut out);
            print!("{out}");
            result.with_context(|| format!("playing {}", game.display()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay { game, trace: path } => {
            let mut machine = datalog_machine(&game)?;
            let text = read(&path)?;
            let playouts =
                trace::parse(&text).with_context(|| format!("reading {}", path.display()))?;
            match trace::replay(&mut machine, &playouts)? {
                Replay::Agree(n) => {
                    println!("agree: {n} steps");
                    Ok(ExitCode::SUCCESS)
                }
                Replay::Differ(d) => {
                    println!("{d}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        Command::Bench {
            game,
            seconds,
            seed,
            profile,
        } => {
            let mut machine = datalog_machine(&game)?;
            if profile {
                machine.engine_mut().enable_profile();
            }
            let report = bench::run(&mut machine, seconds, seed)?;
            println!("engine: datalog");
            println!("{report}");
            for (time, plan) in machine.engine_mut().profile_report(10) {
                println!("{:>10.3} s  {plan}", time.as_secs_f64());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Prints each diagnostic as `file:line:col: level: message`.
fn print_diagnostics(path: &Path, diagnostics: &[gdl::Diagnostic]) {
    for d in diagnostics {
        eprintln!("{}", d.in_file(&path.display().to_string()));
    }
}

fn check(path: &Path) -> anyhow::Result<ExitCode> {
    let text = read(path)?;
    let (verdict, diagnostics) = gdl::validate::check_text(&text);
    print_diagnostics(path, &diagnostics);
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diagnostics.len() - errors;
    println!(
        "{}: {} ({errors} errors, {warnings} warnings)",
        path.display(),
        verdict.name()
    );
    Ok(if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Reads and validates a rule sheet, printing its warnings.
///
/// # Errors
/// The file cannot be read or the sheet has errors (printed first).
pub fn load_description(path: &Path) -> anyhow::Result<Description> {
    let text = read(path)?;
    match Description::from_text(&text) {
        Ok(d) => {
            print_diagnostics(path, d.warnings());
            Ok(d)
        }
        Err(diagnostics) => {
            print_diagnostics(path, &diagnostics);
            bail!("{} is not a valid game", path.display())
        }
    }
}

fn datalog_machine(path: &Path) -> anyhow::Result<DatalogMachine> {
    let description = load_description(path)?;
    DatalogMachine::new(&description)
        .with_context(|| format!("building the engine for {}", path.display()))
}
