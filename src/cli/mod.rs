//! The command line: clap definitions and one function per subcommand.
//!
//! Engines are loaded through [`ggp_engine::engine`]; this is (with `main.rs`) the only place
//! that uses `anyhow`.

mod bench;
mod chess;
mod factor;
mod matches;
mod play;
mod serve;
mod think;
mod tournament;
mod web;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub use ggp_engine::engine::EngineChoice;
use ggp_engine::engine::{self, Loaded, UseMachineMut};
use ggp_engine::propnet::{Budget, PropnetMachine};
use ggp_engine::resources;
use ggp_engine::trace::{self, Replay};
use ggp_gdl::gdl::{self, Description, Severity};
use ggp_gdl::kif;

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
    Playout(PlayoutArgs),
    /// Replay a reference trace and compare every step; exit 1 on the first difference.
    Replay(ReplayArgs),
    /// Measure random playouts per second.
    Bench(bench::BenchArgs),
    /// Ground a game into a propositional network and print its size, or why it stopped.
    Ground(GroundArgs),
    /// Play a game against the computer in the terminal.
    Play(play::PlayArgs),
    /// Serve a page for playing games in the browser.
    Web(web::WebArgs),
    /// Serve as a GGP player over HTTP (the match protocol).
    Serve(serve::ServeArgs),
    /// Referee one match between players and write its record.
    Match(matches::MatchArgs),
    /// Play many matches between several players on several games; tables of the results.
    Tournament(tournament::TournamentArgs),
    /// One search by a built-in player: the move, its value and the iterations per second.
    Think(think::ThinkArgs),
    /// Split a game into independent sub-games: each one's facts and moves, the facts they
    /// share, and which ones the goals and the terminal condition read.
    Factor(factor::FactorArgs),
    /// Replay PGN games on a chess sheet, checking every ply against chess; exit 1 on any
    /// mismatch or illegal game.
    Pgn {
        /// The chess sheet (.kif).
        game: PathBuf,
        /// PGN files, or directories searched for .pgn files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// How the sheet writes its state.
        #[arg(long, value_enum, default_value_t = chess::DialectChoice::Auto)]
        dialect: chess::DialectChoice,
        /// The engine.
        #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
        engine: EngineChoice,
    },
    /// Count the move sequences of a given length through a chess sheet's rules.
    Perft {
        /// The chess sheet (.kif).
        game: PathBuf,
        /// The starting position (default: the sheet's initial state).
        #[arg(long)]
        fen: Option<String>,
        /// The number of plies.
        #[arg(long)]
        depth: u32,
        /// Print the count below each move.
        #[arg(long)]
        divide: bool,
        /// Compare every position's moves with an independent move generator.
        #[arg(long)]
        check: bool,
        /// How the sheet writes its state.
        #[arg(long, value_enum, default_value_t = chess::DialectChoice::Auto)]
        dialect: chess::DialectChoice,
        /// The engine.
        #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
        engine: EngineChoice,
    },
}

/// Play random playouts and print them in the trace format.
#[derive(clap::Args, Debug)]
struct PlayoutArgs {
    /// The rule sheet (.kif).
    pub game: PathBuf,
    /// How many playouts.
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Seed of the random number generator.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop a playout after this many moves.
    #[arg(long, default_value_t = 1000)]
    pub max_steps: usize,
    /// The engine.
    #[arg(long, value_enum, default_value_t = EngineChoice::Datalog)]
    pub engine: EngineChoice,
}

/// Replay a reference trace and compare every step; exit 1 on the first difference.
#[derive(clap::Args, Debug)]
struct ReplayArgs {
    /// The rule sheet (.kif).
    pub game: PathBuf,
    /// The trace file.
    pub trace: PathBuf,
    /// The engine.
    #[arg(long, value_enum, default_value_t = EngineChoice::Datalog)]
    pub engine: EngineChoice,
}

/// Ground a game into a propositional network and print its size, or why it stopped.
#[derive(clap::Args, Debug)]
struct GroundArgs {
    /// The rule sheet (.kif).
    pub game: PathBuf,
    /// Time budget in seconds (default: the engine's).
    #[arg(long)]
    pub max_seconds: Option<f64>,
    /// Most rows of one relation while grounding (default: the engine's).
    #[arg(long)]
    pub max_atoms: Option<usize>,
    /// Most ground literals and network nodes (default: the engine's).
    #[arg(long)]
    pub max_gates: Option<usize>,
    /// Most resident memory of the process in megabytes (10^6 bytes), what it uses
    /// before grounding included (default: 4000, or half the machine's memory if less).
    #[arg(long)]
    pub max_memory_mb: Option<u64>,
}

/// Runs the command line; the exit code says whether the work succeeded.
///
/// # Errors
/// Any failure to read input or run an engine.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Play(a) => play::run(a),
        Command::Web(a) => web::run(a),
        Command::Check { game } => check(&game),
        Command::Serve(args) => serve::run(args),
        Command::Match(args) => matches::run(args),
        Command::Tournament(args) => tournament::run(args),
        Command::Playout(a) => playout(a),
        Command::Replay(a) => replay(a),
        Command::Bench(a) => bench::command(a),
        Command::Think(args) => think::run(&args),
        Command::Factor(args) => factor::run(&args),
        Command::Pgn {
            game,
            files,
            dialect,
            engine,
        } => chess::pgn(chess::PgnArgs {
            game,
            files,
            dialect,
            engine,
        }),
        Command::Perft {
            game,
            fen,
            depth,
            divide,
            check,
            dialect,
            engine,
        } => chess::perft(chess::PerftArgs {
            game,
            fen,
            depth,
            divide,
            check,
            dialect,
            engine,
        }),
        Command::Ground(a) => ground(a),
    }
}

/// `ggp playout`: random playouts in the trace format.
fn playout(args: PlayoutArgs) -> anyhow::Result<ExitCode> {
    let PlayoutArgs {
        game,
        count,
        seed,
        max_steps,
        engine,
    } = args;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = String::new();
    struct Playouts<'a> {
        rng: &'a mut Xoshiro256PlusPlus,
        count: usize,
        max_steps: usize,
        out: &'a mut String,
    }
    impl UseMachineMut for Playouts<'_> {
        type Output = Result<(), ggp_engine::machine::MachineError>;
        fn with<M: engine::Machine>(self, m: &mut M) -> Self::Output {
            trace::write_playouts(m, self.rng, self.count, self.max_steps, self.out)
        }
    }
    let result = load_engine(&game, engine)?.engine.run_mut(Playouts {
        rng: &mut rng,
        count,
        max_steps,
        out: &mut out,
    });
    write_stdout(&out)?;
    result.with_context(|| format!("playing {}", game.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// `ggp replay`: a reference trace replayed on an engine, step by step.
fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let ReplayArgs {
        game,
        trace: path,
        engine,
    } = args;
    let mut loaded = load_engine(&game, engine)?;
    let text = read(&path)?;
    let playouts = trace::parse(&text).with_context(|| format!("reading {}", path.display()))?;
    struct ReplayAll<'a>(&'a [trace::Playout]);
    impl UseMachineMut for ReplayAll<'_> {
        type Output = Result<Replay, ggp_engine::machine::MachineError>;
        fn with<M: engine::Machine>(self, m: &mut M) -> Self::Output {
            trace::replay(m, self.0)
        }
    }
    let outcome = loaded.engine.run_mut(ReplayAll(&playouts))?;
    match outcome {
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

/// `ggp ground`: the network's size, or why grounding stopped.
fn ground(args: GroundArgs) -> anyhow::Result<ExitCode> {
    let GroundArgs {
        game,
        max_seconds,
        max_atoms,
        max_gates,
        max_memory_mb,
    } = args;
    let description = load_description(&game)?;
    let default = Budget::default();
    let budget = Budget {
        max_seconds: max_seconds.unwrap_or(default.max_seconds),
        max_atoms: max_atoms.unwrap_or(default.max_atoms),
        max_gates: max_gates.unwrap_or(default.max_gates),
        max_memory_bytes: max_memory_mb
            .map_or(default.max_memory_bytes, |mb| mb.saturating_mul(1_000_000)),
    };
    let start = std::time::Instant::now();
    let result = PropnetMachine::new(&description, &budget);
    let elapsed = start.elapsed().as_secs_f64();
    let peak =
        resources::peak_memory().map_or("unknown".into(), |b| format!("{:.1} MB", b as f64 / 1e6));
    match result {
        Ok(machine) => {
            let stats = machine.net().stats();
            println!("base propositions: {}", stats.bases);
            println!("input propositions: {}", stats.inputs);
            println!("ground atoms: {}", stats.ground_atoms);
            println!("ground rules: {}", stats.ground_rules);
            println!(
                "gates: {} ({} in recursive blocks, {} only for goals)",
                stats.gates, stats.cyclic_gates, stats.lazy_gates
            );
            println!("links: {}", stats.edges);
            println!("build time: {elapsed:.2} s");
            println!("peak memory: {peak}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("stopped after {elapsed:.2} s (peak memory {peak}): {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Loads a game on the chosen engine. With `auto`, a game that does not ground within the
/// default budget runs on the Datalog engine, and a line on stderr says why.
fn load_engine(path: &Path, choice: EngineChoice) -> anyhow::Result<Loaded> {
    load_engine_within(path, choice, &Budget::default())
}

/// [`load_engine`] for the game started in `state` (`ggp think --state`).
fn load_engine_starting_in(
    path: &Path,
    state: &[gdl::Term],
    choice: EngineChoice,
) -> anyhow::Result<Loaded> {
    let description = load_description_starting_in(path, Some(state))?;
    engine_for(path, &description, choice, &Budget::default())
}

/// [`load_engine`] with a grounding budget of the caller's.
fn load_engine_within(
    path: &Path,
    choice: EngineChoice,
    budget: &Budget,
) -> anyhow::Result<Loaded> {
    engine_for(path, &load_description(path)?, choice, budget)
}

/// Loads the game `path` describes on the chosen engine; a fallback is said on stderr.
fn engine_for(
    path: &Path,
    description: &Description,
    choice: EngineChoice,
    budget: &Budget,
) -> anyhow::Result<Loaded> {
    let loaded = engine::load(description, choice, budget).with_context(|| match choice {
        EngineChoice::Propnet => format!("grounding {}", path.display()),
        _ => format!("building the engine for {}", path.display()),
    })?;
    if let Some(note) = loaded.fallback_note() {
        eprintln!("{note}");
    }
    Ok(loaded)
}

/// Writes `text` to standard output; a reader that has gone away (`ggp playout | head`) is
/// not an error.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Reads a text file; bytes that are not UTF-8 are named by file:line:col.
fn read(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    match kif::decode(&bytes) {
        Ok(text) => Ok(text.to_string()),
        Err(e) => bail!("{}:{e}", path.display()),
    }
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
    let features = gdl::parse_rules(&text)
        .map(|rules| gdl::validate::gdl2_features(&rules))
        .unwrap_or_default();
    let dialect = if features.is_empty() {
        String::new()
    } else {
        format!(" GDL-II ({})", features.join(", "))
    };
    println!(
        "{}: {}{dialect} ({errors} errors, {warnings} warnings)",
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
    load_description_starting_in(path, None)
}

/// [`load_description`], the game started in `state` when one is given (its `init` rules
/// replaced, [`gdl::starting_in`]).
fn load_description_starting_in(
    path: &Path,
    state: Option<&[gdl::Term]>,
) -> anyhow::Result<Description> {
    let text = read(path)?;
    let checked = match state {
        Some(facts) => Description::from_text_starting_in(&text, facts),
        None => Description::from_text(&text),
    };
    report_checked(path, checked)
}

/// The description of a checked game, its warnings printed; its errors printed and refused.
fn report_checked(
    path: &Path,
    checked: Result<Description, Vec<gdl::Diagnostic>>,
) -> anyhow::Result<Description> {
    match checked {
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

/// A game file read and parsed once, for a referee: its text (sent to the players and kept
/// in the record), its expressions (the referee's copy of the rules) and its engine.
struct GameFile {
    text: String,
    rules: Vec<kif::Sexp>,
    loaded: Loaded,
}

/// Reads, parses, validates and loads the game `path` (`ggp match`, `ggp tournament`).
fn load_game(path: &Path, choice: EngineChoice) -> anyhow::Result<GameFile> {
    let text = read(path)?;
    let rules = kif::parse(&text).with_context(|| format!("reading {}", path.display()))?;
    let checked = rules
        .iter()
        .map(gdl::rule_from_sexp)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| vec![gdl::Diagnostic::from_read_error(&e)])
        .and_then(Description::new);
    let description = report_checked(path, checked)?;
    let loaded = engine_for(path, &description, choice, &Budget::default())?;
    Ok(GameFile {
        text,
        rules,
        loaded,
    })
}
