//! `ggp think`: one search by a built-in player, with what it did, to watch and time the
//! players outside a match.
//!
//! The position is the initial state, the state after `--random-moves` random joint moves
//! from it (seeded; an error if the game ends on the way), or the state after the first
//! `--ply` joint moves of a match record (`--record`, every move checked against the rules),
//! to ask again what the player thought at a move of a match it lost. With `--state` the game
//! starts in the facts given, its `init` rules replaced (as ggp-base's PlayerTester poses a
//! test position), so that the start clock analyses the position as a game of its own. The
//! player gets `--start-seconds` to start and `--seconds` to choose; the line printed gives
//! the move, its value, whether it is proven, the iterations (playouts for MCTS, nodes for
//! alpha-beta) and their rate.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::StateMachine;
use ggp_match::record::MatchRecord;
use ggp_search::search::{PlayerSpec, SearchConfig};

use super::{EngineChoice, load_engine, load_engine_starting_in};
use ggp_engine::engine::{Machine, UseMachineMut};

/// Arguments of `ggp think`.
#[derive(clap::Args, Debug)]
pub struct ThinkArgs {
    /// The rule sheet (.kif).
    game: std::path::PathBuf,
    /// The player: NAME[:key=value,...] (see the README's player specs).
    #[arg(long, default_value = "mcts")]
    player: PlayerSpec,
    /// The role number (0 is the first role).
    #[arg(long, default_value_t = 0)]
    role: usize,
    /// Seconds to choose.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Seconds to start (the start clock).
    #[arg(long, default_value_t = 0.0)]
    start_seconds: f64,
    /// The game starts in this state, a list of facts (`"( (cell 1 1 x) (control red) )"`),
    /// in place of its `init` rules.
    #[arg(long, conflicts_with = "record")]
    state: Option<String>,
    /// Random joint moves played from the initial state first.
    #[arg(long, default_value_t = 0, conflicts_with = "record")]
    random_moves: usize,
    /// A match record (ggp.org JSON, as `ggp match` and `ggp tournament` write) whose moves
    /// lead to the position; `--ply` says how many of them.
    #[arg(long, requires = "ply")]
    record: Option<std::path::PathBuf>,
    /// With `--record`: the number of the record's joint moves played before the search.
    #[arg(long, requires = "record")]
    ply: Option<usize>,
    /// Search threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seed of the search and of the random moves.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The engine.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    engine: EngineChoice,
}

/// Runs `ggp think`.
///
/// # Errors
/// The game cannot be loaded, or the engine or the search failed.
pub fn run(args: &ThinkArgs) -> anyhow::Result<ExitCode> {
    super::serve::init_logging();
    let mut loaded = match &args.state {
        Some(text) => {
            let facts =
                ggp_gdl::gdl::parse_state(text).with_context(|| format!("--state {text}"))?;
            load_engine_starting_in(&args.game, &facts, args.engine)?
        }
        None => load_engine(&args.game, args.engine)?,
    };
    println!("engine: {}", loaded.engine.name());
    loaded.engine.run_mut(Think(args))
}

struct Think<'a>(&'a ThinkArgs);

impl UseMachineMut for Think<'_> {
    type Output = anyhow::Result<ExitCode>;
    fn with<M: Machine>(self, machine: &mut M) -> Self::Output {
        think(machine, self.0)
    }
}

fn think<M: StateMachine + Send + 'static>(
    machine: &mut M,
    args: &ThinkArgs,
) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.role < machine.roles().len(),
        "the game has {} roles",
        machine.roles().len()
    );
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(args.seed);
    let mut state = machine.initial_state();
    if let (Some(path), Some(ply)) = (&args.record, args.ply) {
        state = recorded_state(machine, path, ply)?;
    }
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    for played in 0..args.random_moves {
        machine.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch)?;
        state = machine.next_state_unchecked(&state, &joint)?;
        if machine.is_terminal(&state)? {
            let goals = machine
                .goals(&state)
                .map_or_else(|e| e.to_string(), |g| format!("goals {g:?}"));
            anyhow::bail!(
                "the game ended after {} of the {} random moves ({goals}); \
                 ask for fewer --random-moves or another --seed",
                played + 1,
                args.random_moves
            );
        }
    }
    let config = SearchConfig {
        threads: args.threads,
        seed: args.seed,
        max_iterations: None,
        ..SearchConfig::default()
    };
    let mut player = args.player.build::<M>(&config);
    let seconds = |s: f64| Duration::from_secs_f64(s.max(0.0));
    player
        .start(
            machine,
            args.role,
            Instant::now() + seconds(args.start_seconds),
        )
        .context("starting")?;
    let started = Instant::now();
    let choice = player
        .choose(machine, &state, started + seconds(args.seconds))
        .context("choosing")?;
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{}: move {} value {} proven {} iterations {} in {elapsed:.3} s ({:.0}/s)",
        player.name(),
        machine.move_term(choice.mv),
        choice.value.map_or("-".into(), |v| format!("{v:.1}")),
        choice.proven,
        choice.iterations,
        choice.iterations as f64 / elapsed.max(1e-9),
    );
    Ok(ExitCode::SUCCESS)
}

/// The state after the first `ply` joint moves of the record at `path`, each checked against
/// the rules.
fn recorded_state<M: StateMachine>(
    machine: &mut M,
    path: &std::path::Path,
    ply: usize,
) -> anyhow::Result<M::State> {
    let record = MatchRecord::load(path)?;
    let joints = record
        .joint_moves(machine)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    anyhow::ensure!(
        ply <= joints.len(),
        "{}: the record has {} joint moves, not {ply}",
        path.display(),
        joints.len()
    );
    let mut state = machine.initial_state();
    for (step, joint) in joints[..ply].iter().enumerate() {
        anyhow::ensure!(
            !machine.is_terminal(&state)?,
            "{}: the game is over before move {}",
            path.display(),
            step + 1
        );
        state = machine
            .next_state(&state, joint)
            .with_context(|| format!("{}: move {}", path.display(), step + 1))?;
    }
    anyhow::ensure!(
        !machine.is_terminal(&state)?,
        "{}: the game is over after {ply} moves; ask for an earlier --ply",
        path.display()
    );
    Ok(state)
}
