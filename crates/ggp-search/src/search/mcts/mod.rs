//! Monte Carlo tree search (UCT) for any game: any number of roles, simultaneous moves.
//!
//! **Decoupled UCT.** A node holds, for every role, its legal moves and one statistic (visits,
//! summed reward) per move. Each role picks its own move by UCB1 over its own statistics
//! (unvisited moves first, at random), and the picks form the joint move; children are keyed
//! by the joint move (its index in mixed radix over the roles' move lists). A playout's goal
//! values, scaled to 0..1, are added to every role's statistic along the path. In a
//! turn-taking position the one role with a choice makes it and the others have a single
//! move, so this is plain UCT. In a game of three or more roles the other roles' rewards are
//! read paranoidly, each `1 − ours`: the tree plays them as if together against us, not each
//! for itself; in a two-role game whose goals do not always sum alike, the opponent's reward
//! is half its goal and half our loss ([`Rivalry`]).
//!
//! **Solver: score bounds.** Every node keeps, per role, a value it is sure of (`low`) and a
//! value it cannot exceed (`high`), on the 0..1 scale (Cazenave and Saffidine, "Score Bounded
//! Monte-Carlo Tree Search", 2010, extended to any number of roles). A terminal node's bounds
//! are its goals; a new node's are 0 and 1. After each iteration the bounds are recomputed
//! bottom up along the path (`Tree::tighten`):
//! - where at most one role (the mover) has a choice, the mover is sure of its best child's
//!   `low`; a child that gives it 100 for sure is taken outright (a proven win); otherwise the
//!   other roles' bounds range over the children the mover may still prefer;
//! - in a simultaneous position each role is sure of what its best move guarantees against
//!   every reply, and the node is exact only when all outcomes agree (conservative: no
//!   mixed-strategy reasoning).
//!
//! A node is *settled* when `low == high` for every role. Selection never descends into a
//! settled node (reaching one backs up its value without a playout), and the mover skips
//! moves whose child is settled or cannot beat what it is already sure of, so proven losses
//! are avoided and draws can be proven. At the root, a move sure to give 100 is played at
//! once (of several, the quickest win the tree shows; of sure losses, the slowest), and the
//! search stops as soon as the root is settled.
//!
//! **Implicit minimax values.** Where anti-decisive playouts play to the end and a heuristic
//! was learnt, every node also keeps, per role, an implicit minimax value (Lanctot, Winands,
//! Pepels and Sturtevant, "Monte Carlo Tree Search with Heuristic Evaluations using Implicit
//! Minimax Backups", 2014): the heuristic's estimate of its state when it is added, the goals
//! when terminal, and, after each iteration, bottom up along the path, the value of the child
//! best for the node's one mover. The mover then scores a move by `0.6 · mean + 0.4 · value`
//! ([`IMPLICIT_WEIGHT`]) instead of the mean alone: the heuristic's minimax over the tree steers
//! the search, the playouts still decide the means.
//!
//! **Tree reuse.** The tree of the previous search is kept. When [`Player::choose`] is called
//! with a new state, it is looked for among the previous root's children and grandchildren
//! if found, what it reaches becomes the new tree (kept where it is, the other slots freed
//! for new nodes: see `tree.rs`), else a new tree is started.
//!
//! **Settings and the start clock.** [`MctsSettings`] are what the spec asks for, checked once
//! and never changed; [`MctsPlayer::start`] turns them into a [`Plan`] for the match (the
//! heuristics learnt, anti-decisive playouts on or off, playouts cut or not), a new value
//! computed from the settings by each start.
//!
//! **Threads** (see [`parallel`]). Each thread has its own machine (from
//! [`StateMachine::fork`]), random generator, policies and tree, and the trees' root
//! statistics are merged to choose the move: no lock, no virtual loss, each thread
//! deterministic for a seed (Chaslot, Winands and van den Herik, "Parallel Monte-Carlo Tree
//! Search", 2008). Engines that cannot fork run one thread.
//!
//! **Clock and memory.** The clock is checked before every iteration and before every move
//! of a playout; an iteration cut by the deadline is dropped. Nodes are counted with an
//! estimate of their size in bytes ([`MctsSettings::memory_bytes`] over all trees); a full
//! tree stops growing and keeps running playouts from its leaves. An engine error in a playout
//! drops that iteration and is counted; an error while expanding a node makes it a settled
//! node worth 0 to every role.

mod batch;
mod eval;
mod parallel;
mod playout;
mod select;
mod solver;
mod tree;

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::{MachineError, StateMachine};

use super::duel::{DuelPlan, Side, duel};
use super::heuristic::{self, Heuristic};
use super::probe::probe;
use super::{Choice, Halt, Player, SearchConfig, SearchError, random_step};

/// The most tree nodes read to find the quickest of several sure wins (the slowest of sure
/// losses) at the root.
const WIN_LENGTH_NODES: usize = 100_000;
/// The longest time spent learning heuristics at the start clock (at most a quarter of it).
const MAX_LEARNING: std::time::Duration = std::time::Duration::from_secs(8);
/// The most random games learnt from.
const MAX_LEARNING_GAMES: usize = 100_000;
/// With `anti=auto`: anti-decisive playouts are used when they run at least this many a
/// second from states along the game (one thread). Below it a 5 s move gets fewer than 25,000 of
/// them; the rate is the machine's, measured at the start clock, the same rule in every game.
pub const ANTI_MIN_RATE: f64 = 5_000.0;
/// With `anti=auto`: anti-decisive playouts are used when they change on average at least
/// this many choices a playout (a win in one taken, or a move refused that handed the
/// opponent one): below it most of them play as uniform ones would, at many times the cost.
pub const ANTI_MIN_CHANGES: f64 = 0.5;
/// With `anti=auto`: the longest measurement of the anti-decisive playouts.
const ANTI_PROBE: std::time::Duration = std::time::Duration::from_millis(500);
/// With a heuristic as prior (the heuristic trial's other way): a new node's estimate counts
/// as this many visits.
pub const TRIAL_PRIOR: u32 = 10;
/// With implicit minimax values ([`Plan::implicit`]): their weight in a move's value, the
/// playouts' mean taking the rest. 0.4 is within the range Lanctot, Winands, Pepels and
/// Sturtevant ("Monte Carlo Tree Search with Heuristic Evaluations using Implicit Minimax
/// Backups", CIG 2014) found best in Breakthrough and Lines of Action; not tuned here.
pub const IMPLICIT_WEIGHT: f64 = 0.4;
/// The heuristic trial's games ([`MctsSettings::heuristic_trial`]): the heuristic's seat
/// moves round the roles, so an even number gives each side each seat in a two-player game.
pub const HEURISTIC_TRIAL_GAMES: usize = 4;
/// Cut playouts are kept when they win the heuristic trial by at least this many games net
/// ([`super::duel::DuelResult::net_wins`]): one game won outright, the others drawn. A
/// slimmer margin is noise in four fast games (gt_prisoner's and smallest_4player's trials
/// kept cutting on 0.54–0.60, a goal margin or one game in two, and those matches were lost;
/// `docs/experiments/heuristic-trial.md`). Less a rounding allowance, so that a score summed
/// from goal margins that is one game net in exact arithmetic counts.
const HEURISTIC_TRIAL_MARGIN: f64 = 1.0 - 1e-9;
/// The most random games that measure the heuristic trial games' expected length.
const HEURISTIC_TRIAL_PROBES: u64 = 200;
/// A heuristic trial game longer than this is a draw.
const HEURISTIC_TRIAL_PLIES: usize = 300;
/// The most random games that look for different goal sums in a two-player game.
const GOAL_SUM_PLAYOUTS: u64 = 100;
/// The longest look for different goal sums in a two-player game.
const GOAL_SUM_PROBE: std::time::Duration = std::time::Duration::from_millis(500);
/// The shortest think time of a heuristic trial move.
const MIN_HEURISTIC_TRIAL_MOVE: std::time::Duration = std::time::Duration::from_millis(5);

/// Anti-decisive playouts: off, on, or chosen at the start clock by their measured rate and
/// effect ([`ANTI_MIN_RATE`], [`ANTI_MIN_CHANGES`]; before the start, and without a start
/// clock, off). `Auto` is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anti {
    /// Uniform playouts.
    Off,
    /// Anti-decisive playouts.
    On,
    /// On when the start clock's measurement finds them fast enough and of use; on, they
    /// play to the end, without the heuristic's cut-off (a learnt heuristic then gives the
    /// tree's implicit minimax values).
    Auto,
}

pub use eval::{Evaluation, GoalEvaluation, HeuristicEvaluation, Rivalry};
use parallel::{Context, Hand, MoveSummary, Worker, merge_root, run_all};
pub use playout::{DecisivePlayout, PlayoutPolicy, UniformPlayout};
pub use select::{MoveView, Selection, Ucb1};
use tree::{Node, Tree};

/// Tuning of the MCTS player: what a spec asks for, checked when the spec is parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct MctsSettings {
    /// The UCB1 exploration constant, on rewards scaled to 0..1.
    pub exploration: f64,
    /// Estimated bytes all trees together may use.
    pub memory_bytes: usize,
    /// A playout that has not ended after this many moves is scored by the goals of its last
    /// state.
    pub max_playout_steps: usize,
    /// Decisive playouts that also avoid, where they can, a move after which the next mover
    /// wins in one ([`DecisivePlayout`]). By default chosen at the start clock
    /// ([`Anti::Auto`]).
    pub anti: Anti,
    /// Learn a heuristic per role at the start clock ([`crate::search::heuristic`], a quarter
    /// of it, at most 8 s) and value playouts cut after [`cutoff`](Self::cutoff) moves with it.
    /// On by default: the one place that decides what `ggp serve`, `think`, `match` and
    /// `tournament` play unless a spec says otherwise.
    pub heuristic: bool,
    /// With a heuristic learnt and a start clock: a trial ([`super::duel`]) decides how to
    /// use it. For three quarters of the start clock left, MCTS with playouts cut after
    /// [`cutoff`](Self::cutoff) moves and valued by the heuristic plays
    /// [`HEURISTIC_TRIAL_GAMES`] fast games against MCTS with playouts to the end and the
    /// heuristic as new nodes' prior ([`Plan::with_full_playouts`]), seats taking
    /// turns; playouts are cut only if that wins by a whole game net
    /// ([`HEURISTIC_TRIAL_MARGIN`]: playouts to the end are the safe way, cutting them a bet
    /// the trial must win clearly). A heuristic
    /// correlates with random games' outcomes, which is not the same as leading a search well
    /// when it cuts its playouts (in dots and boxes, taking boxes greedily is the classic way
    /// to lose). On by default.
    pub heuristic_trial: bool,
    /// With a heuristic: fact-group counts (pieces) are its candidate features (on by default;
    /// off, nothing is learnt).
    pub groups: bool,
    /// With a heuristic: moves a playout makes before its state is valued by the heuristic.
    pub cutoff: usize,
    /// With a heuristic: a new node's estimate counts as this many visits of its move.
    pub prior: u32,
    /// Playouts per round run side by side on an engine that plays many at once (the
    /// propnet's batch, [`StateMachine::playouts_from`]); 0 or 1: one iteration at a time.
    /// Uniform playouts only: with anti-decisive playouts, or on an engine that plays one
    /// at a time, iterations run one at a time. See [`batch`].
    pub batch: usize,
    /// With `batch`: playouts from each leaf of a round (leaf parallelism; 1: every playout
    /// from its own leaf).
    pub leaf: usize,
}

impl Default for MctsSettings {
    fn default() -> MctsSettings {
        MctsSettings {
            exploration: 0.4,
            memory_bytes: 512 << 20,
            max_playout_steps: 5000,
            anti: Anti::Auto,
            heuristic: true,
            heuristic_trial: true,
            groups: true,
            cutoff: 2,
            prior: 0,
            batch: 256,
            leaf: 8,
        }
    }
}

/// How playouts choose their moves in a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Playout {
    /// Uniformly random moves ([`UniformPlayout`]), batched where the engine can.
    Uniform,
    /// Decisive and anti-decisive moves ([`DecisivePlayout`]).
    AntiDecisive,
}

/// What a match is played with: [`MctsSettings`] as the start clock resolved them (see
/// [`MctsPlayer::start`]); before a start, [`Plan::unstarted`].
#[derive(Debug, Clone)]
pub struct Plan {
    /// The playout policy.
    pub playout: Playout,
    /// One heuristic per role when one was learnt for some role; `None`: goals only.
    pub heuristics: Option<Vec<Option<Heuristic>>>,
    /// With heuristics: moves a playout makes before the heuristic values its state
    /// (`usize::MAX`: playouts go to the end).
    pub cutoff: usize,
    /// With heuristics: visits a new node's estimate counts as.
    pub prior: u32,
    /// With heuristics: the tree keeps, beside each move's mean, an implicit minimax value
    /// (Lanctot et al. 2014): a new node's heuristic estimate, backed up as the mover's best
    /// child's, and selection weighs it by [`IMPLICIT_WEIGHT`]. Chosen where anti-decisive
    /// playouts play to the end.
    pub implicit: bool,
    /// Whether random games ended with different sums of goals (looked at only where the
    /// [`Rivalry`] depends on it).
    pub goal_sum_varies: bool,
}

impl Plan {
    /// The plan before any start clock: no heuristic, anti-decisive playouts only when asked
    /// for outright.
    pub fn unstarted(settings: &MctsSettings) -> Plan {
        Plan {
            playout: if settings.anti == Anti::On {
                Playout::AntiDecisive
            } else {
                Playout::Uniform
            },
            heuristics: None,
            cutoff: settings.cutoff,
            prior: settings.prior,
            implicit: false,
            goal_sum_varies: false,
        }
    }

    /// This plan with playouts to the end and the heuristics used as new nodes' prior (at
    /// least [`TRIAL_PRIOR`] visits) instead of valuing cut playouts.
    pub fn with_full_playouts(self) -> Plan {
        Plan {
            cutoff: usize::MAX,
            prior: self.prior.max(TRIAL_PRIOR),
            ..self
        }
    }

    /// Whether a heuristic is in use (learnt for some role).
    pub fn heuristic(&self) -> bool {
        self.heuristics
            .as_ref()
            .is_some_and(|h| h.iter().any(Option::is_some))
    }

    /// A playout policy for one search thread.
    fn playout_policy<M: StateMachine + 'static>(&self) -> Box<dyn PlayoutPolicy<M>> {
        match self.playout {
            Playout::AntiDecisive => Box::new(DecisivePlayout::new()),
            Playout::Uniform => Box::new(UniformPlayout::default()),
        }
    }

    /// An evaluation for one search thread: by the learnt heuristics when there are some.
    fn evaluation<M: StateMachine + 'static>(&self) -> Box<dyn Evaluation<M>> {
        match &self.heuristics {
            Some(h) if self.heuristic() => Box::new(HeuristicEvaluation::new(h.clone())),
            _ => Box::new(GoalEvaluation),
        }
    }
}

impl MctsSettings {
    /// The selection rule these settings ask for.
    pub fn selection(&self) -> Box<dyn Selection> {
        Box::new(Ucb1 {
            exploration: self.exploration,
        })
    }
}

/// How a start finds the match's [`Plan`].
enum Planning {
    /// Learns the heuristics and decides the rest at the start clock (the default).
    Analyse,
    /// Decides at the start clock with these heuristics instead of learning its own.
    Given(Vec<Option<Heuristic>>),
    /// Plays this plan (the heuristic trial's players).
    Fixed(Plan),
}

/// The replaceable parts one search thread runs with (see [`MctsSettings`] and [`Plan`]).
pub struct Policies<M: StateMachine> {
    /// Scores moves in the tree.
    pub select: Box<dyn Selection>,
    /// Plays past the tree.
    pub playout: Box<dyn PlayoutPolicy<M>>,
    /// Scores a playout's last state.
    pub eval: Box<dyn Evaluation<M>>,
}

/// What the last search did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MctsStats {
    /// Iterations completed (playouts, or value back-ups from settled nodes).
    pub iterations: u64,
    /// Iterations dropped because the engine failed.
    pub errors: u64,
    /// Nodes in all trees after the search.
    pub nodes: usize,
    /// Nodes kept from the previous search's trees.
    pub reused: usize,
    /// Threads searched.
    pub threads: usize,
    /// Wall-clock seconds of the search.
    pub seconds: f64,
    /// Whether the root's value is settled.
    pub root_settled: bool,
    /// The last engine failure met, if any.
    pub last_error: Option<MachineError>,
}

/// The MCTS player.
pub struct MctsPlayer<M: StateMachine> {
    config: SearchConfig,
    /// The settings as given (never changed).
    settings: MctsSettings,
    /// What the match is played with, from the last start.
    plan: Plan,
    /// How each start finds the plan.
    planning: Planning,
    role: usize,
    /// Machines for threads 1.. (thread 0 uses the caller's).
    forks: Vec<M>,
    forked: bool,
    trees: Vec<Tree<M::State, M::Move>>,
    rngs: Vec<Xoshiro256PlusPlus>,
    policies: Vec<Policies<M>>,
    stats: MctsStats,
}

impl<M: StateMachine> MctsPlayer<M> {
    /// A player with the default settings.
    pub fn new(config: SearchConfig) -> MctsPlayer<M> {
        MctsPlayer::with_settings(config, MctsSettings::default())
    }

    /// A player with explicit settings.
    pub fn with_settings(config: SearchConfig, settings: MctsSettings) -> MctsPlayer<M> {
        MctsPlayer {
            config,
            role: 0,
            forks: Vec::new(),
            forked: false,
            trees: Vec::new(),
            rngs: Vec::new(),
            policies: Vec::new(),
            stats: MctsStats::default(),
            plan: Plan::unstarted(&settings),
            planning: Planning::Analyse,
            settings,
        }
    }

    /// A player that plays every match with `plan` instead of the one its start would find
    /// (the heuristic trial's players share the match's heuristics).
    pub fn with_plan(config: SearchConfig, settings: MctsSettings, plan: Plan) -> MctsPlayer<M> {
        MctsPlayer {
            planning: Planning::Fixed(plan),
            ..MctsPlayer::with_settings(config, settings)
        }
    }

    /// A player whose starts use `heuristics` (one per role, with `settings.heuristic` on)
    /// instead of learning their own, and decide the rest of the plan as usual.
    pub fn with_heuristics(
        config: SearchConfig,
        settings: MctsSettings,
        heuristics: Vec<Option<Heuristic>>,
    ) -> MctsPlayer<M> {
        MctsPlayer {
            planning: Planning::Given(heuristics),
            ..MctsPlayer::with_settings(config, settings)
        }
    }

    /// Moves a playout makes: to the heuristic's cut-off when one is in use, else to the cap.
    fn playout_steps(&self) -> usize {
        if self.plan.heuristic() {
            self.plan.cutoff.min(self.settings.max_playout_steps)
        } else {
            self.settings.max_playout_steps
        }
    }

    /// Whether random games of a two-player game end with different sums of goals (for its
    /// [`Rivalry`]): at most [`GOAL_SUM_PLAYOUTS`] games in a twentieth of the start clock left,
    /// at most [`GOAL_SUM_PROBE`]; `false` for other games and when no game finished.
    fn goal_sum_varies(&self, machine: &mut M, deadline: Instant) -> bool {
        if !Rivalry::needs_goal_sums(machine) {
            return false;
        }
        let now = Instant::now();
        let until = now + (deadline.saturating_duration_since(now) / 20).min(GOAL_SUM_PROBE);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config.seed ^ 0x5355_4d53);
        let steps = self.settings.max_playout_steps;
        let found = probe(machine, &mut rng, until, GOAL_SUM_PLAYOUTS, steps);
        let (sums, reward) = if found.varying_sum {
            ("vary", "half its goal, half our loss")
        } else {
            ("do not vary", "its goal")
        };
        tracing::info!(
            "goal sums {sums} in {} random games: the opponent's reward is {reward}",
            found.playouts
        );
        found.varying_sum
    }

    /// The heuristics the settings ask for: given, or learnt (a quarter of the start clock
    /// left, at most [`MAX_LEARNING`]); `None` when none is asked for or none was learnt.
    fn learn_heuristics(
        &self,
        machine: &mut M,
        deadline: Instant,
    ) -> Result<Option<Vec<Option<Heuristic>>>, SearchError> {
        if !self.settings.heuristic {
            return Ok(None);
        }
        if let Planning::Given(given) = &self.planning {
            return Ok(Some(given.clone()).filter(|h| h.iter().any(Option::is_some)));
        }
        let now = Instant::now();
        let until = now + (deadline.saturating_duration_since(now) / 4).min(MAX_LEARNING);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config.seed ^ 0x4845_5552);
        let heuristics = heuristic::learn_roles_with(
            machine,
            &mut rng,
            until,
            MAX_LEARNING_GAMES,
            self.settings.groups,
        )?;
        let roles = machine.roles();
        for (r, h) in heuristics.iter().enumerate() {
            let features = h
                .as_ref()
                .map_or_else(|| "none".to_string(), |h| h.describe());
            tracing::info!("heuristic of {}: {features}", roles[r]);
        }
        Ok(Some(heuristics).filter(|h| h.iter().any(Option::is_some)))
    }

    /// With `anti=auto`: measures anti-decisive playouts to the end of the game from states
    /// all along random games, for a tenth of the start clock left, at most [`ANTI_PROBE`],
    /// and turns them on when they are worth it (at least [`ANTI_MIN_CHANGES`] choices a
    /// playout differ from the uniform ones) and affordable (at least [`ANTI_MIN_RATE`] a
    /// second). On, they play to the end, since a heuristic's cut-off after a few moves would
    /// leave them nothing to act on: a learnt heuristic is kept as the tree's implicit minimax
    /// values instead ([`Plan::implicit`]; measured in
    /// `docs/experiments/implicit-minimax.md`). Returns the plan so decided.
    fn decide_anti(
        &self,
        machine: &mut M,
        initial: &M::State,
        deadline: Instant,
        plan: Plan,
    ) -> Result<Plan, SearchError> {
        use rand::Rng;
        let started = Instant::now();
        let until = started + (deadline.saturating_duration_since(started) / 10).min(ANTI_PROBE);
        let steps = self.settings.max_playout_steps;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config.seed ^ 0x414e_5449);
        let mut policy = DecisivePlayout::new();
        let mut buffers = super::PlayoutBuffers::default();
        let mut game = Vec::new();
        let mut playouts = 0u64;
        let mut spent = std::time::Duration::ZERO;
        while Instant::now() < until {
            // A state from along a random game, so that the whole game is measured.
            game.clear();
            let mut state = initial.clone();
            while game.len() < steps && !machine.is_terminal(&state)? {
                let step = random_step(
                    machine,
                    &state,
                    &mut rng,
                    &mut buffers.joint,
                    &mut buffers.legal,
                )?;
                let Some(next) = step else {
                    break;
                };
                game.push(std::mem::replace(&mut state, next));
            }
            if game.is_empty() {
                break;
            }
            let from = &game[rng.random_range(0..game.len())];
            let t = Instant::now();
            match policy.playout(machine, from, &mut rng, until, steps) {
                Ok(_) => playouts += 1,
                Err(Halt::Deadline) => break,
                // Stuck where a role has no move (see `random_step`): dropped, as the search
                // drops such a playout.
                Err(Halt::Engine(MachineError::NoLegalMoves { .. })) => {}
                Err(Halt::Engine(e)) => return Err(e.into()),
            }
            spent += t.elapsed();
        }
        let rate = playouts as f64 / spent.as_secs_f64().max(1e-9);
        let (decisions, changed) = policy.decisions();
        let per_playout = changed as f64 / playouts.max(1) as f64;
        let on = rate >= ANTI_MIN_RATE && per_playout >= ANTI_MIN_CHANGES;
        tracing::info!(
            "anti-decisive playouts {}: {rate:.0} a second (at least {ANTI_MIN_RATE:.0} wanted); \
             {changed} of {decisions} choices in {playouts} playouts changed, \
             {per_playout:.2} a playout (at least {ANTI_MIN_CHANGES} wanted)",
            if on { "on" } else { "off" },
        );
        if !on {
            return Ok(Plan {
                playout: Playout::Uniform,
                ..plan
            });
        }
        if plan.heuristic() {
            tracing::info!(
                "heuristic kept as implicit minimax values: anti-decisive playouts play to the end"
            );
            return Ok(Plan {
                playout: Playout::AntiDecisive,
                cutoff: usize::MAX,
                prior: 0,
                implicit: true,
                ..plan
            });
        }
        Ok(Plan {
            playout: Playout::AntiDecisive,
            ..plan
        })
    }

    /// Whether anti-decisive playouts are in use (with `anti=auto`, what the start decided).
    pub fn anti(&self) -> bool {
        self.plan.playout == Playout::AntiDecisive
    }

    /// The moves after which a playout is cut and valued by the heuristic, when it is (a
    /// heuristic learnt, and not turned into a prior by the heuristic trial or into implicit
    /// minimax values beside anti-decisive playouts); `None` when playouts go to the end.
    pub fn playout_cutoff(&self) -> Option<usize> {
        let steps = self.playout_steps();
        (steps < self.settings.max_playout_steps).then_some(steps)
    }

    /// What the last search did.
    pub fn stats(&self) -> &MctsStats {
        &self.stats
    }

    /// The heuristics learnt at the start clock (one per role), if any is in use.
    pub fn heuristics(&self) -> Option<&[Option<Heuristic>]> {
        self.plan.heuristics.as_deref()
    }

    /// Nodes in the trees now.
    pub fn nodes(&self) -> usize {
        self.trees.iter().map(|t| t.len()).sum()
    }

    /// Estimated bytes the trees use now (at most [`MctsSettings::memory_bytes`]).
    pub fn memory(&self) -> usize {
        self.trees.iter().map(Tree::bytes).sum()
    }
}

impl<M: StateMachine + Send + 'static> MctsPlayer<M> {
    /// Makes the machines and generators for the threads, once per match.
    fn prepare(&mut self, machine: &M) {
        if self.forked {
            return;
        }
        self.forked = true;
        for _ in 1..self.config.threads.max(1) {
            match machine.fork() {
                Some(m) => self.forks.push(m),
                None => break,
            }
        }
        let threads = self.forks.len() + 1;
        let budget = self.settings.memory_bytes / threads;
        self.trees = (0..threads).map(|_| Tree::new(budget)).collect();
        self.rngs = (0..threads as u64)
            .map(|i| {
                Xoshiro256PlusPlus::seed_from_u64(
                    self.config.seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                )
            })
            .collect();
        self.policies = (0..threads)
            .map(|_| Policies {
                select: self.settings.selection(),
                playout: self.plan.playout_policy(),
                eval: self.plan.evaluation(),
            })
            .collect();
    }

    /// Searches from `state` until `deadline` (or the iteration limit, or a settled root).
    fn search(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.prepare(machine);
        let started = Instant::now();
        let mut reused = 0;
        for tree in &mut self.trees {
            // A kept root without moves is a node whose expansion failed: try again.
            if tree.reroot(state) && !tree.nodes[0].moves.is_empty() {
                reused += tree.len();
            } else {
                let root = Node::new(machine, state.clone())?;
                tree.reset(root);
            }
        }
        let ctx = Context {
            deadline,
            stop: AtomicBool::new(false),
            max_steps: self.playout_steps(),
            prior: if self.plan.heuristic() {
                self.plan.prior
            } else {
                0
            },
            implicit: if self.plan.heuristic() && self.plan.implicit {
                IMPLICIT_WEIGHT
            } else {
                0.0
            },
            progress: self.config.progress.clone(),
            batch: batch::round_size(&self.settings, &self.plan, &*machine),
            rivalry: Rivalry::of(&*machine, self.role, self.plan.goal_sum_varies),
        };
        let threads = self.rngs.len();
        let limit = self.config.max_iterations.unwrap_or(u64::MAX);
        let quota = |i: usize| {
            let (t, i) = (threads as u64, i as u64);
            if limit == u64::MAX {
                u64::MAX
            } else {
                limit / t + u64::from(i < limit % t)
            }
        };
        let machines = std::iter::once(machine).chain(self.forks.iter_mut());
        let hands = self
            .rngs
            .iter_mut()
            .zip(self.policies.iter_mut())
            .zip(machines)
            .map(|((rng, policies), machine)| Hand {
                machine,
                rng,
                policies,
            });
        let workers: Vec<Worker<'_, M>> = self
            .trees
            .iter_mut()
            .zip(hands)
            .enumerate()
            .map(|(i, (tree, hand))| Worker {
                tree,
                hand,
                quota: quota(i),
            })
            .collect();
        let counts = run_all(workers, &ctx);
        self.stats = MctsStats {
            iterations: counts.iter().map(|c| c.iterations).sum(),
            errors: counts.iter().map(|c| c.errors).sum(),
            nodes: self.nodes(),
            reused,
            threads,
            seconds: started.elapsed().as_secs_f64(),
            root_settled: self.trees.iter().any(Tree::root_settled),
            last_error: counts.into_iter().find_map(|c| c.last_error),
        };
        Ok(())
    }

    /// The heuristic trial ([`MctsSettings::heuristic_trial`]): for three quarters of the
    /// start clock left, MCTS with playouts cut and valued by the heuristic plays MCTS with
    /// playouts to the end and the heuristic as new nodes' prior ([`TRIAL_PRIOR`] visits);
    /// playouts are cut only if that wins by [`HEURISTIC_TRIAL_MARGIN`] games net. The games'
    /// expected length comes from random games (a tenth of the trial's time, at most
    /// [`HEURISTIC_TRIAL_PROBES`] of them). A player with an iteration limit gives its trial
    /// players the same limit.
    /// Returns `plan` (cut playouts) or `plan` with full playouts, as the trial decided.
    fn try_heuristic(
        &self,
        machine: &mut M,
        deadline: Instant,
        plan: Plan,
    ) -> Result<Plan, SearchError> {
        let now = Instant::now();
        let until = now + deadline.saturating_duration_since(now) * 3 / 4;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config.seed ^ 0x5452_4941);
        let found = probe(
            machine,
            &mut rng,
            now + until.saturating_duration_since(now) / 10,
            HEURISTIC_TRIAL_PROBES,
            self.settings.max_playout_steps,
        );
        if found.playouts == 0 {
            tracing::info!("heuristic values cut playouts: no random game ended, no trial");
            return Ok(plan);
        }
        let duel_plan = DuelPlan {
            iterations: self.config.max_iterations,
            ..DuelPlan::fitted(
                HEURISTIC_TRIAL_GAMES,
                HEURISTIC_TRIAL_PLIES,
                found.mean_length,
                until,
                MIN_HEURISTIC_TRIAL_MOVE,
                self.config.seed ^ 0x5452_4941,
            )
        };
        let full = plan.clone().with_full_playouts();
        let result = duel(machine, &duel_plan, |side, config| -> Box<dyn Player<M>> {
            let side_plan = match side {
                Side::A => plan.clone(),
                Side::B => full.clone(),
            };
            Box::new(MctsPlayer::with_plan(
                config,
                self.settings.clone(),
                side_plan,
            ))
        })?;
        let keep = result.net_wins() >= HEURISTIC_TRIAL_MARGIN;
        tracing::info!(
            "heuristic {}: cut playouts scored {:.2} (net {:+.2} games) against full playouts \
             with the heuristic as prior in {} trial games ({} finished, {} ms a move)",
            if keep {
                "values cut playouts"
            } else {
                "is a prior, playouts go to the end"
            },
            result.score,
            result.net_wins(),
            result.games,
            result.finished,
            duel_plan.slice.as_millis(),
        );
        Ok(if keep { plan } else { full })
    }

    /// The start-clock analysis: the match's [`Plan`] from the settings (heuristics learnt,
    /// anti-decisive playouts measured with `anti=auto`, the heuristic trial).
    fn analyse(
        &self,
        machine: &mut M,
        initial: &M::State,
        deadline: Instant,
    ) -> Result<Plan, SearchError> {
        let mut plan = Plan {
            goal_sum_varies: self.goal_sum_varies(machine, deadline),
            heuristics: self.learn_heuristics(machine, deadline)?,
            ..Plan::unstarted(&self.settings)
        };
        if self.settings.anti == Anti::Auto {
            plan = self.decide_anti(machine, initial, deadline, plan)?;
        }
        if self.settings.heuristic_trial
            && plan.heuristic()
            && !plan.implicit
            && machine.roles().len() > 1
        {
            plan = self.try_heuristic(machine, deadline, plan)?;
        }
        Ok(plan)
    }

    /// The move to play from the trees' roots.
    fn best(&self) -> Result<Choice<M::Move>, SearchError> {
        let role = self.role;
        let first = &self.trees[0].nodes[0];
        let moves = first.moves.get(role).ok_or(SearchError::NoMove)?;
        let merged = merge_root(&self.trees, role, moves);
        if let Some(tree) = self.trees.iter().find(|t| t.root_settled()) {
            // The root's value is known: play a move sure to give it. A win, the quickest the
            // tree shows; a loss to another's sure win, the slowest (a race lost on one board
            // may be won first on another). Else, or among as quick (slow) ones, the one whose
            // playouts scored best, which leaves a fallible opponent the most chances to go
            // wrong (a proven draw against a random player is often a win).
            let value = tree.nodes[0].low[role];
            let lengths: Vec<Option<i64>> = if value >= 1.0 {
                let quick = tree.root_win_lengths(role, WIN_LENGTH_NODES);
                quick
                    .into_iter()
                    .map(|n| n.map(|n| -i64::from(n)))
                    .collect()
            } else if value <= 0.0 {
                let slow = tree.root_loss_lengths(role, WIN_LENGTH_NODES);
                slow.into_iter().map(|n| n.map(i64::from)).collect()
            } else {
                Vec::new()
            };
            // Higher is better: minus the length of a win, the length of a loss.
            let rank = |i: usize| {
                tree.nodes[0]
                    .moves
                    .get(role)
                    .and_then(|own| own.iter().position(|m| *m == moves[i]))
                    .and_then(|k| lengths.get(k).copied().flatten())
                    .unwrap_or(i64::MIN)
            };
            let pick = (0..merged.len())
                .filter(|&i| merged[i].lower >= value)
                .max_by(|&i, &j| {
                    rank(i)
                        .cmp(&rank(j))
                        .then(merged[i].mean().total_cmp(&merged[j].mean()))
                        .then(merged[i].visits.cmp(&merged[j].visits))
                })
                .unwrap_or(0);
            return Ok(Choice {
                mv: moves[pick],
                iterations: self.stats.iterations,
                value: Some(value * 100.0),
                proven: true,
            });
        }
        let pick = pick_move(&merged);
        let s = &merged[pick];
        let value = if s.exact() || s.visits == 0 {
            Some(s.lower * 100.0).filter(|_| s.exact())
        } else {
            Some(s.mean() * 100.0)
        };
        Ok(Choice {
            mv: moves[pick],
            iterations: self.stats.iterations,
            value,
            proven: s.exact(),
        })
    }
}

impl<M: StateMachine + Send + 'static> Player<M> for MctsPlayer<M> {
    fn name(&self) -> String {
        "mcts".into()
    }

    fn hidden_settings(&self) -> Option<MctsSettings> {
        Some(self.settings.clone())
    }

    fn start(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.role = role;
        self.forked = false;
        self.forks.clear();
        self.trees.clear();
        self.plan = Plan::unstarted(&self.settings);
        let initial = machine.initial_state();
        if machine.is_terminal(&initial)? {
            return Ok(());
        }
        self.plan = match &self.planning {
            Planning::Fixed(plan) => plan.clone(),
            Planning::Analyse | Planning::Given(_) => self.analyse(machine, &initial, deadline)?,
        };
        self.search(machine, &initial, deadline)
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        if machine.is_terminal(state)? {
            return Err(SearchError::NoMove);
        }
        if machine.legal_moves(state, self.role)?.is_empty() {
            return Err(SearchError::NoMove);
        }
        self.search(machine, state, deadline)?;
        self.best()
    }
}

/// The index of the move to play: the move sure to give the most, if that is 100; else the
/// most visited move among those whose value is not known exactly and that can still match
/// the best sure value, unless that sure value (above 0) is at least the move's mean.
fn pick_move(moves: &[MoveSummary]) -> usize {
    let cmp = |a: (f64, f64), b: (f64, f64)| a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal);
    let sure = (0..moves.len())
        .max_by(|&a, &b| {
            let key = |i: usize| (moves[i].lower, moves[i].visits as f64);
            cmp(key(a), key(b))
        })
        .unwrap_or(0);
    let best_lower = moves.get(sure).map_or(0.0, |m| m.lower);
    if best_lower >= 1.0 {
        return sure;
    }
    let open = (0..moves.len())
        .filter(|&i| !moves[i].exact() && moves[i].upper >= best_lower)
        .max_by(|&a, &b| {
            let key = |i: usize| (moves[i].visits as f64, moves[i].mean());
            cmp(key(a), key(b))
        });
    match open {
        Some(o) if best_lower <= 0.0 || best_lower < moves[o].mean() => o,
        _ => sure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(visits: u64, mean: f64, bounds: Option<(f64, f64)>) -> MoveSummary {
        let (lower, upper) = bounds.unwrap_or((0.0, 1.0));
        MoveSummary {
            visits,
            sum: mean * visits as f64,
            lower,
            upper,
        }
    }

    #[test]
    fn a_guaranteed_win_is_picked_over_more_visits() {
        let moves = [summary(900, 0.7, None), summary(10, 0.9, Some((1.0, 1.0)))];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn a_settled_loss_is_avoided_even_if_most_visited() {
        let moves = [summary(900, 0.6, Some((0.0, 0.0))), summary(100, 0.4, None)];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn the_most_visited_open_move_is_picked() {
        let moves = [
            summary(10, 0.9, None),
            summary(500, 0.6, None),
            summary(40, 0.5, None),
        ];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn a_settled_draw_beats_an_open_move_with_a_lower_mean() {
        let moves = [summary(500, 0.3, None), summary(100, 0.5, Some((0.5, 0.5)))];
        assert_eq!(pick_move(&moves), 1);
    }

    #[test]
    fn joint_keys_round_trip() {
        let node: Node<u8, u8> = Node {
            state: 0,
            visits: 0,
            moves: vec![vec![1, 2, 3], vec![4], vec![5, 6]],
            stats: Vec::new(),
            children: Vec::new(),
            low: vec![0.0; 3].into(),
            high: vec![1.0; 3].into(),
            n_joint: 6,
            im: vec![0.5; 3].into(),
        };
        let key = node.key(&[2, 0, 1]);
        assert_eq!(key, 2 + 3);
        assert_eq!(node.index_in(key, 0), 2);
        assert_eq!(node.index_in(key, 1), 0);
        assert_eq!(node.index_in(key, 2), 1);
        assert_eq!(node.mover(), None);
    }
}
