//! Move selection: players written against the [`StateMachine`] trait only.
//!
//! A [`Player`] is told its role once ([`Player::start`], with the start clock for thinking)
//! and then asked for a move in each state ([`Player::choose`]) with a deadline it must meet.
//! The players are built by [`new_player`] from a [`PlayerKind`], or with options from a
//! [`PlayerSpec`] (`mcts:c=0.7`); they never know which engine runs the rules.
//!
//! - `flat`: flat Monte Carlo (random playouts per move, no tree), the baseline to beat.
//! - [`mcts`]: Monte Carlo tree search for every game (decoupled UCT, solver, tree reuse,
//!   several threads).
//! - [`alphabeta`]: iterative-deepening alpha-beta with a transposition table, for two-player
//!   turn-taking constant-sum games.
//! - [`heuristic`]: a state evaluation learnt at the start clock from random games (fact counts
//!   that correlate with the outcome), and material and mobility: MCTS's cut playouts and
//!   prior, alpha-beta's leaves, the puzzle search's order.
//! - [`puzzle`]: best-first search for a line to goal 100 in single-player games.
//! - [`duel`]: fast games between two players, the start-clock trial that chooses how MCTS
//!   uses its heuristic.
//! - [`equilibrium`]: small two-player constant-sum games with simultaneous moves solved
//!   exactly at the start clock (a matrix game at each state) and played by an optimal mixed
//!   strategy (`auto` plays them so).
//! - [`parts`]: a game of simultaneous moves that is turn-taking games played at once, searched
//!   one part at a time (`auto` plays it so).
//! - [`probe`]: random playouts that tell which of the two suits a game; the `auto` player
//!   uses them.
//! - [`auto`]: the default player, which chooses among the searches above at the start clock.
//! - `spec`: [`PlayerSpec`], a player and its options read from text (`mcts:c=0.7`).
//! - [`hidden`]: information-set search for games with hidden information (GDL-II), over a
//!   [`Belief`](crate::belief::Belief), and which search a seat uses.
//!
//! Every search checks the clock inside its inner loops (playouts included) and returns the
//! best move found so far when the deadline comes. Goal values are 0 to 100; an undefined goal
//! counts as 0 and a goal defined more than once as its largest value.

pub mod alphabeta;
pub mod auto;
pub mod duel;
pub mod equilibrium;
mod flat;
pub mod heuristic;
pub mod hidden;
pub mod mcts;
pub mod parts;
pub mod probe;
pub mod puzzle;
mod spec;

pub use auto::AutoSettings;
pub use spec::{ALPHABETA_KEYS, AUTO_KEYS, MCTS_KEYS, PlayerSpec, SpecError};

use std::time::Instant;

use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::{MachineError, StateMachine};

/// The built-in players.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlayerKind {
    /// A uniformly random legal move.
    Random,
    /// The first legal move.
    Legal,
    /// Flat Monte Carlo: random playouts for each of our moves, no tree.
    Flat,
    /// Monte Carlo tree search.
    Mcts,
    /// Alpha-beta with iterative deepening (two-player turn-taking zero-sum games).
    Alphabeta,
    /// Single-player puzzles: a best-first search for a line to goal 100, MCTS until it finds
    /// one (MCTS alone in other games).
    Puzzle,
    /// Probes the game at the start and plays a puzzle search in single-player games, and
    /// alpha-beta when the game qualifies for it and
    /// alpha-beta solves it within the start clock, MCTS otherwise (see [`probe`]).
    Auto,
}

/// Settings shared by every player.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// Threads for playouts (engines that cannot fork use one).
    pub threads: usize,
    /// Seed of the random number generator.
    pub seed: u64,
    /// Stop a search after this many playouts (or nodes), whatever the clock says.
    pub max_iterations: Option<u64>,
    /// A counter the search adds its work to as it goes, for a progress display: each
    /// finished playout (Monte Carlo tree search) or each position searched (alpha-beta); see
    /// [`Player::work`]. Other players leave it alone.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

/// What a search adds to [`SearchConfig::progress`] as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Work {
    /// Finished playouts (Monte Carlo searches).
    #[default]
    Playouts,
    /// Positions searched (alpha-beta).
    Positions,
}

impl Work {
    /// The plural noun people read: `playouts`, `positions`.
    pub fn noun(self) -> &'static str {
        match self {
            Work::Playouts => "playouts",
            Work::Positions => "positions",
        }
    }
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            threads: 1,
            seed: 0,
            max_iterations: None,
            progress: None,
        }
    }
}

/// A chosen move and what the search did to find it.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice<Mv> {
    /// The move.
    pub mv: Mv,
    /// Playouts (MCTS) or nodes (alpha-beta) spent on this choice.
    pub iterations: u64,
    /// The expected goal value of the move for us, 0 to 100, when the search has one.
    pub value: Option<f64>,
    /// Whether `value` is proven rather than estimated.
    pub proven: bool,
}

impl<Mv> Choice<Mv> {
    /// A move played without searching (the only legal one, or one a fixed rule picks).
    pub fn unsearched(mv: Mv) -> Choice<Mv> {
        Choice {
            mv,
            iterations: 0,
            value: None,
            proven: false,
        }
    }
}

/// Why a player could not choose.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    /// The engine failed.
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// The state is terminal or the role has no legal move.
    #[error("no legal move to choose from")]
    NoMove,
}

/// A move chooser for one role of one match.
pub trait Player<M: StateMachine>: Send {
    /// The player's name, for logs and match records.
    fn name(&self) -> String;

    /// The match starts and `role` is ours; the player may think until `deadline`.
    ///
    /// # Errors
    /// The engine failed.
    fn start(&mut self, machine: &mut M, role: usize, deadline: Instant)
    -> Result<(), SearchError>;

    /// Our move in `state`, chosen before `deadline`.
    ///
    /// # Errors
    /// The engine failed, or there is no legal move.
    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError>;

    /// The settings of the information-set search ([`hidden::HiddenPlayer`]) that stands in
    /// for the player where it cannot see the state (a game of hidden information, see
    /// [`hidden::choose_for_seat`]): the player's own MCTS settings (the defaults for a
    /// player without any); `None` for a player that picks a legal move by a fixed rule
    /// (random, legal), which keeps choosing among its legal moves.
    fn hidden_settings(&self) -> Option<mcts::MctsSettings> {
        Some(mcts::MctsSettings::default())
    }

    /// What the player adds to [`SearchConfig::progress`] as it searches (known after
    /// [`Player::start`]).
    fn work(&self) -> Work {
        Work::Playouts
    }
}

/// A new player of the given kind, with its default settings.
pub fn new_player<M>(kind: PlayerKind, config: &SearchConfig) -> Box<dyn Player<M>>
where
    M: StateMachine + Send + 'static,
{
    new_player_with(&PlayerSpec::from(kind), config)
}

/// A new player as `spec` says.
fn new_player_with<M>(spec: &PlayerSpec, config: &SearchConfig) -> Box<dyn Player<M>>
where
    M: StateMachine + Send + 'static,
{
    let config = config.clone();
    match spec.kind {
        PlayerKind::Random => Box::new(SimplePlayer::new(true, config.seed)),
        PlayerKind::Legal => Box::new(SimplePlayer::new(false, config.seed)),
        PlayerKind::Flat => Box::new(flat::FlatPlayer::new(config)),
        PlayerKind::Mcts => Box::new(mcts::MctsPlayer::with_settings(config, spec.mcts.clone())),
        PlayerKind::Alphabeta => Box::new(alphabeta::AlphaBetaPlayer::with_settings(
            config,
            spec.alphabeta.clone(),
        )),
        PlayerKind::Puzzle => Box::new(puzzle::PuzzlePlayer::new(config, spec.mcts.clone())),
        PlayerKind::Auto => Box::new(auto::AutoPlayer::<M>::new(
            config,
            spec.mcts.clone(),
            spec.auto,
        )),
    }
}

/// Whether `deadline` has passed.
fn past(deadline: Instant) -> bool {
    Instant::now() >= deadline
}

/// Why a timed computation (a playout, an iteration) stopped before its end.
#[derive(Debug)]
pub enum Halt {
    /// The deadline passed.
    Deadline,
    /// The engine failed.
    Engine(MachineError),
}

impl From<MachineError> for Halt {
    fn from(e: MachineError) -> Halt {
        Halt::Engine(e)
    }
}

/// One step of a random game from `state`: the state after a uniformly random joint move
/// (written into `joint`), or `None` where some role has no legal move. GDL promises every role
/// a move in every state that is not terminal; a sheet that breaks the promise (in 4pttc a role
/// can be left with nothing to move) ends a random game there, instead of failing the
/// start-clock analysis that plays it.
fn random_step<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    rng: &mut impl rand::Rng,
    joint: &mut Vec<M::Move>,
    scratch: &mut Vec<M::Move>,
) -> Result<Option<M::State>, MachineError> {
    match machine.random_joint_move_into(state, rng, joint, scratch) {
        Ok(()) => machine.next_state_unchecked(state, joint).map(Some),
        Err(MachineError::NoLegalMoves { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The goal value of role number `role` in `state`, 0 to 100: 0 when the rules give none,
/// the largest when they give several.
fn goal_or_zero<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    role: usize,
) -> Result<u8, MachineError> {
    Ok(machine
        .goal_values(state, role)?
        .last()
        .copied()
        .unwrap_or(0))
}

/// Scratch buffers for [`timed_playout`].
struct PlayoutBuffers<Mv> {
    joint: Vec<Mv>,
    legal: Vec<Mv>,
}

impl<Mv> Default for PlayoutBuffers<Mv> {
    fn default() -> Self {
        PlayoutBuffers {
            joint: Vec::new(),
            legal: Vec::new(),
        }
    }
}

/// Plays uniformly random joint moves from `state` until a terminal state or `max_steps`
/// moves, looking at the clock before every move; returns the last state.
fn timed_playout<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    rng: &mut impl rand::Rng,
    deadline: Instant,
    max_steps: usize,
    buffers: &mut PlayoutBuffers<M::Move>,
) -> Result<M::State, Halt> {
    let mut state = state.clone();
    for _ in 0..max_steps {
        if machine.is_terminal(&state)? {
            break;
        }
        if past(deadline) {
            return Err(Halt::Deadline);
        }
        machine.random_joint_move_into(&state, rng, &mut buffers.joint, &mut buffers.legal)?;
        state = machine.next_state_unchecked(&state, &buffers.joint)?;
    }
    Ok(state)
}

/// The `random` and `legal` players.
struct SimplePlayer {
    random: bool,
    role: usize,
    rng: Xoshiro256PlusPlus,
}

impl SimplePlayer {
    fn new(random: bool, seed: u64) -> SimplePlayer {
        SimplePlayer {
            random,
            role: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }
}

impl<M: StateMachine> Player<M> for SimplePlayer {
    fn name(&self) -> String {
        if self.random { "random" } else { "legal" }.to_string()
    }

    fn hidden_settings(&self) -> Option<mcts::MctsSettings> {
        None
    }

    fn start(&mut self, _: &mut M, role: usize, _: Instant) -> Result<(), SearchError> {
        self.role = role;
        Ok(())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        _: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        let moves = machine.legal_moves(state, self.role)?;
        let mv = if self.random {
            moves.choose(&mut self.rng).copied()
        } else {
            moves.first().copied()
        };
        Ok(Choice::unsearched(mv.ok_or(SearchError::NoMove)?))
    }
}
