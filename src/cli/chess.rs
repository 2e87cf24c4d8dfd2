//! `ggp pgn` and `ggp perft`: chess sheets checked against recorded games and move counts.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use shakmaty::Chess;

use crate::chess::pgn::{self, PgnGame};
use crate::chess::replay::{self, Verdict};
use crate::chess::{ChessGame, Dialect, perft};
use ggp_engine::machine::StateMachine;

use super::{EngineChoice, load_engine};
use ggp_engine::engine::{Machine, UseMachine};

/// Which dialect a chess sheet is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DialectChoice {
    /// Recognise the dialect from the sheet's initial state.
    Auto,
    /// Our `rules/chess.kif`.
    Ggp,
    /// The repository's `chess.kif`.
    Stanford,
    /// The repository's `chess_200.kif`.
    Landau,
}

/// Options of `ggp pgn`.
pub struct PgnArgs {
    /// The chess sheet.
    pub game: PathBuf,
    /// PGN files or directories (searched for `.pgn` files).
    pub files: Vec<PathBuf>,
    /// The dialect.
    pub dialect: DialectChoice,
    /// The engine.
    pub engine: EngineChoice,
}

/// Options of `ggp perft`.
pub struct PerftArgs {
    /// The chess sheet.
    pub game: PathBuf,
    /// The starting position; the sheet's initial state if absent.
    pub fen: Option<String>,
    /// The depth.
    pub depth: u32,
    /// Print the count below each move.
    pub divide: bool,
    /// Compare every node's moves with an independent move generator.
    pub check: bool,
    /// The dialect.
    pub dialect: DialectChoice,
    /// The engine.
    pub engine: EngineChoice,
}

fn chess_game<M: StateMachine>(machine: M, choice: DialectChoice) -> anyhow::Result<ChessGame<M>> {
    let dialect = match choice {
        DialectChoice::Auto => ChessGame::detect(&machine).context(
            "the sheet's initial state is not the chess starting position in any known dialect; \
             name one with --dialect",
        )?,
        DialectChoice::Ggp => Dialect::Ggp,
        DialectChoice::Stanford => Dialect::Stanford,
        DialectChoice::Landau => Dialect::Landau,
    };
    Ok(ChessGame::new(machine, dialect)?)
}

/// The `.pgn` files named or found under the named directories, sorted per directory.
fn pgn_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else if p.extension().is_some_and(|e| e == "pgn") {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// `ggp pgn`.
///
/// # Errors
/// A file cannot be read, or the sheet cannot be loaded.
pub fn pgn(args: PgnArgs) -> anyhow::Result<ExitCode> {
    let files = pgn_files(&args.files)?;
    let mut games: Vec<(PathBuf, PgnGame)> = Vec::new();
    for f in &files {
        let text = std::fs::read(f).with_context(|| format!("cannot read {}", f.display()))?;
        games.extend(pgn::read_games(&text).into_iter().map(|g| (f.clone(), g)));
    }
    struct ReplayAll<'a>(DialectChoice, &'a [(PathBuf, PgnGame)], String);
    impl UseMachine for ReplayAll<'_> {
        type Output = anyhow::Result<ExitCode>;
        fn with<M: Machine>(self, machine: M) -> Self::Output {
            replay_all(machine, self.0, self.1, &self.2)
        }
    }
    let loaded = load_engine(&args.game, args.engine)?;
    let name = loaded.engine.name().to_string();
    loaded.engine.run(ReplayAll(args.dialect, &games, name))
}

fn replay_all<M: StateMachine>(
    machine: M,
    dialect: DialectChoice,
    games: &[(PathBuf, PgnGame)],
    engine: &str,
) -> anyhow::Result<ExitCode> {
    let mut chess = chess_game(machine, dialect)?;
    eprintln!("engine: {engine}, dialect: {}", chess.dialect());
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(games.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} games, {msg}")
                .expect("a valid template"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let start = Instant::now();
    let (mut plies, mut mismatches, mut illegal) = (0, 0, 0);
    let (mut lenient, mut unmarked, mut early, mut rewritten) = (0, 0, 0, 0);
    for (path, game) in games {
        let r = replay::replay(&mut chess, game);
        plies += r.plies;
        lenient += r.lenient_promotions;
        unmarked += r.unmarked_checks;
        early += usize::from(r.ended_early.is_some());
        rewritten += game.rewritten;
        let line = match &r.verdict {
            Verdict::Agree => None,
            Verdict::Mismatch(p) => {
                mismatches += 1;
                Some(format!("mismatch: {p}"))
            }
            Verdict::Illegal(p) => {
                illegal += 1;
                Some(format!("illegal: {p}"))
            }
        };
        if let Some(line) = line {
            bar.suspend(|| {
                println!(
                    "{} game {} (line {}): {line}",
                    path.display(),
                    game.number,
                    game.line
                );
            });
        }
        bar.set_message(format!(
            "{plies} plies, {mismatches} mismatches, {illegal} illegal"
        ));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "games: {}, plies: {plies}, mismatches: {mismatches}, illegal: {illegal}",
        games.len()
    );
    eprintln!(
        "{plies} plies in {secs:.2} s ({:.0} plies/s); accepted: {rewritten} moves written as `h1Q` or `exf6ep`, {lenient} promotions without a piece (read as queen), {unmarked} checks not marked, {early} games played on after the sheet's 50-move rule, dead position or step limit ended them",
        plies as f64 / secs.max(1e-9)
    );
    Ok(if mismatches + illegal > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `ggp perft`.
///
/// # Errors
/// A bad FEN, or the sheet cannot be loaded or run.
pub fn perft(args: PerftArgs) -> anyhow::Result<ExitCode> {
    let pos = match &args.fen {
        Some(text) => Some(crate::chess::position_from_fen(text).map_err(anyhow::Error::msg)?),
        None => None,
    };
    struct Perft<'a>(&'a PerftArgs, Option<&'a Chess>, String);
    impl UseMachine for Perft<'_> {
        type Output = anyhow::Result<ExitCode>;
        fn with<M: Machine>(self, machine: M) -> Self::Output {
            perft_on(machine, self.0, self.1, &self.2)
        }
    }
    let loaded = load_engine(&args.game, args.engine)?;
    let name = loaded.engine.name().to_string();
    loaded.engine.run(Perft(&args, pos.as_ref(), name))
}

fn perft_on<M: StateMachine>(
    machine: M,
    args: &PerftArgs,
    pos: Option<&Chess>,
    engine: &str,
) -> anyhow::Result<ExitCode> {
    let mut chess = chess_game(machine, args.dialect)?;
    eprintln!("engine: {engine}, dialect: {}", chess.dialect());
    let state = match pos {
        Some(p) => chess.state_of(p)?,
        None => chess.initial_state(),
    };
    let start = Instant::now();
    if args.check {
        let pos = pos.cloned().unwrap_or_default();
        match perft::perft_checked(&mut chess, &state, &pos, args.depth) {
            Ok(n) => println!("perft {}: {n} (every node agrees with chess)", args.depth),
            Err(e) => {
                println!("{e}");
                return Ok(ExitCode::FAILURE);
            }
        }
    } else if args.divide {
        let rows = perft::divide(chess.machine_mut(), &state, args.depth)?;
        let mut total = 0;
        for (mv, n) in &rows {
            println!("{mv}: {n}");
            total += n;
        }
        println!("perft {}: {total}", args.depth);
    } else {
        let n = perft::perft(chess.machine_mut(), &state, args.depth)?;
        println!("perft {}: {n}", args.depth);
    }
    eprintln!("{:.2} s", start.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
