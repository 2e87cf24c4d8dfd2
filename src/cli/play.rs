//! `ggp play`: a game against the computer in the terminal.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};

use super::{EngineChoice, engine_for, load_description, read};
use crate::play::terminal::{self, Ending, Glyphs, Options, ProgressSink};
use crate::play::{Game, Level, Seat};
use ggp_engine::engine::{self, Machine, UseMachine};
use ggp_engine::machine::StateMachine;
use ggp_gdl::gdl::Term;
use ggp_match::record::MatchRecord;

/// Arguments of `ggp play`.
#[derive(clap::Args, Debug)]
pub struct PlayArgs {
    /// The rule sheet (.kif).
    game: PathBuf,
    /// A role you play (repeat for several; the first role when not given).
    #[arg(long = "as", value_name = "ROLE")]
    roles: Vec<String>,
    /// The computer's level: random, easy (alpha-beta over 1,000 positions where it plays,
    /// else 100 MCTS playouts), medium (20,000 or 1,000), hard (100,000 or 10,000), or a think
    /// time in seconds (MCTS).
    #[arg(long, default_value = "medium", value_parser = parse_level)]
    vs: Level,
    /// Let the computer play every role, and watch.
    #[arg(long, conflicts_with = "roles")]
    watch: bool,
    /// Seconds to wait after each move when nobody had to choose.
    #[arg(long, default_value_t = 1.0)]
    pause: f64,
    /// Continue a match saved with `save FILE`.
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
    /// Seed for the computer players and the board detection.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The engine (auto: the propnet when the game grounds within a few seconds).
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    engine: EngineChoice,
    /// Draw pieces with letters only (the default when the locale is not UTF-8 or TERM=dumb).
    #[arg(long)]
    ascii: bool,
}

fn parse_level(text: &str) -> Result<Level, String> {
    text.parse()
}

/// Runs `ggp play`.
///
/// # Errors
/// The game cannot be loaded, a role or record is wrong, or the game failed.
pub fn run(args: PlayArgs) -> anyhow::Result<ExitCode> {
    let text = read(&args.game)?;
    let description = load_description(&args.game)?;
    let loaded = engine_for(
        &args.game,
        &description,
        args.engine,
        &engine::quick_budget(),
    )?;
    let record = match &args.resume {
        Some(path) => Some(
            MatchRecord::from_json(&read(path)?)
                .with_context(|| format!("reading {}", path.display()))?,
        ),
        None => None,
    };
    struct Session<'a> {
        rules: &'a [ggp_gdl::gdl::Rule],
        text: &'a str,
        args: &'a PlayArgs,
        record: Option<&'a MatchRecord>,
    }
    impl UseMachine for Session<'_> {
        type Output = anyhow::Result<ExitCode>;
        fn with<M: Machine>(self, m: M) -> Self::Output {
            session(m, self.rules, self.text, self.args, self.record)
        }
    }
    loaded.engine.run(Session {
        rules: description.rules(),
        text: &text,
        args: &args,
        record: record.as_ref(),
    })
}

fn session<M: StateMachine + Send + 'static>(
    machine: M,
    rules: &[ggp_gdl::gdl::Rule],
    text: &str,
    args: &PlayArgs,
    record: Option<&MatchRecord>,
) -> anyhow::Result<ExitCode> {
    let seats = seats(machine.roles(), &args.roles, args.watch, args.vs)?;
    let mut game = Game::new(machine, rules, text, seats, args.seed)?;
    if let Some(record) = record {
        game.resume(record)
            .with_context(|| format!("resuming {}", args.resume.as_ref().unwrap().display()))?;
    }
    let hint = match args.vs {
        Level::Random | Level::Easy => Level::Medium,
        other => other,
    };
    let mut options = Options::plain(Duration::from_secs_f64(args.pause.max(0.0)), hint);
    let var = |name: &str| std::env::var(name).ok();
    let dumb = var("TERM").as_deref() == Some("dumb");
    let tty = io::stdout().is_terminal() && !dumb;
    if !args.ascii {
        options.glyphs = Glyphs::detect(var);
    }
    options.color = tty && var("NO_COLOR").is_none_or(|v| v.is_empty());
    options.clear = tty;
    if tty && io::stderr().is_terminal() {
        options.progress = Some(ProgressSink(Arc::new(Mutex::new(io::stderr()))));
    }
    let stdin = io::stdin();
    match terminal::run(&mut game, stdin.lock(), io::stdout(), &options)? {
        Ending::Finished(_) | Ending::Stopped => Ok(ExitCode::SUCCESS),
    }
}

/// One seat per role: human for the roles named in `--as` (the first role when none is
/// named), the computer at `level` for the others.
fn seats(roles: &[Term], named: &[String], watch: bool, level: Level) -> anyhow::Result<Vec<Seat>> {
    let mut seats = vec![Seat::Computer(level); roles.len()];
    if watch {
        return Ok(seats);
    }
    if named.is_empty() {
        seats[0] = Seat::Human;
        return Ok(seats);
    }
    for name in named {
        let Some(i) = roles
            .iter()
            .position(|r| r.to_string().eq_ignore_ascii_case(name))
        else {
            let all: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
            bail!(
                "no role {name:?} in this game; its roles are {}",
                all.join(", ")
            );
        };
        seats[i] = Seat::Human;
    }
    Ok(seats)
}
