//! The `auto` player: probes the game at the start and plays alpha-beta or MCTS.
//!
//! **Puzzles first:** a deterministic single-player game (one role, no nature, no `sees`) is
//! played by the puzzle search ([`super::puzzle`], which falls back on MCTS until it finds a
//! solution), with or without a clock, unless `auto:puzzle=off` ([`AutoSettings::puzzle`]).
//!
//! **Turn-taking parts:** a game with simultaneous moves (the probe saw a state where two roles
//! chose) that is turn-taking games played at once ([`ggp_engine::analysis::turn_taking`], looked for in
//! random games for an eighth of the start clock at most, 3 s at most) is played by
//! [`PartsPlayer`], one part at a time.
//!
//! **Small simultaneous games solved:** a two-player game with simultaneous moves whose states
//! can all be solved in a third of the start clock (at most [`MAX_SOLVED_STATES`]) is solved
//! exactly ([`super::equilibrium`]) and played by an optimal mixed strategy where it is
//! constant-sum, by the moves iterated dominance leaves where it is not (the prisoner's
//! dilemma); a game with a stage that is neither gives up at that stage.
//!
//! **Simultaneous games proven in pure strategies:** in a two-player constant-sum game with
//! simultaneous moves, alpha-beta (which lets the other reply knowing our move) searches the
//! initial state for our role, then for the other's (a quarter of the start clock, then a
//! third of the rest). If we can be sure of what the other can hold us to, that is the game's
//! value, a move keeping it is as good as any mixed strategy, and alpha-beta plays
//! (biddingTicTacToe); if our search proves a win, likewise. MCTS otherwise. (A start-clock
//! rule: with a budget, below, nothing bounds the searches' time, and they are not run.)
//!
//! **With a start clock** (a match): the probe (a quarter of the start clock, at most 3 s, see
//! [`super::probe`]) tells whether the game is two-player, turn-taking and constant-sum. If not,
//! MCTS plays. If so, alpha-beta searches the initial state (half of the start clock left) and
//! plays the match if it proves the game's value; MCTS otherwise, the search that suits every
//! game, and MCTS's solver still finds the wins and losses near the end. (A trial of fast games
//! between the two at the start clock used to pick alpha-beta where it won; its picks lost to
//! Sancho, `docs/experiments/auto-trial.md`, and it was removed.) The choice and its reason are
//! logged (`INFO auto: ...`) and kept ([`AutoPlayer::reason`]).
//!
//! **With a budget instead of a clock** ([`LevelBudget`], the levels of `ggp play`, which have
//! no start clock): the probe runs by count ([`BUDGET_PROBE_PLAYOUTS`] playouts), and alpha-beta
//! (with the node limit) plays a two-player turn-taking constant-sum game in which material was
//! found, MCTS (with the playout limit) every other game. No time is measured, so the choice is
//! the same on every machine.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::StateMachine;

use super::alphabeta::{AlphaBetaPlayer, AlphaBetaSettings};
use super::equilibrium::{Equilibrium, EquilibriumPlayer, Unsolved};
use super::mcts::{MctsPlayer, MctsSettings};
use super::parts::PartsPlayer;
use super::probe::probe;
use super::puzzle::{self, PuzzlePlayer};
use super::{Choice, Player, SearchConfig, SearchError};

/// The longest probe.
const MAX_PROBE: Duration = Duration::from_secs(3);
/// The most probing playouts.
const MAX_PROBE_PLAYOUTS: u64 = 500;
/// The most states the exact solve of a simultaneous game keeps ([`super::equilibrium`]).
pub const MAX_SOLVED_STATES: usize = 2_000_000;
/// The probing playouts of a player with a [`LevelBudget`].
pub const BUDGET_PROBE_PLAYOUTS: u64 = 50;

/// Search limits instead of a clock: MCTS playouts or alpha-beta nodes per move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelBudget {
    /// Playouts per move when MCTS plays.
    pub playouts: u64,
    /// Nodes per move when alpha-beta plays.
    pub nodes: u64,
}

/// The options of `auto` besides its MCTS settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoSettings {
    /// Whether single-player games are played by the puzzle search (on by default).
    pub puzzle: bool,
}

impl Default for AutoSettings {
    fn default() -> AutoSettings {
        AutoSettings { puzzle: true }
    }
}

/// The search chosen for the match.
enum Chosen<M: StateMachine> {
    AlphaBeta(AlphaBetaPlayer<M>),
    Mcts(MctsPlayer<M>),
    Puzzle(Box<PuzzlePlayer<M>>),
    Parts(PartsPlayer<M>),
    Equilibrium(EquilibriumPlayer<M>),
}

/// The `auto` player.
pub struct AutoPlayer<M: StateMachine> {
    config: SearchConfig,
    mcts: MctsSettings,
    budget: Option<LevelBudget>,
    chosen: Option<Chosen<M>>,
    /// Our role, from the last start.
    role: usize,
    reason: String,
    auto: AutoSettings,
}

impl<M: StateMachine + Send + 'static> AutoPlayer<M> {
    /// A player that decides by the clock (probe and searches at the start clock).
    pub fn new(config: SearchConfig, mcts: MctsSettings, auto: AutoSettings) -> AutoPlayer<M> {
        AutoPlayer {
            config,
            mcts,
            budget: None,
            chosen: None,
            role: 0,
            reason: String::new(),
            auto,
        }
    }

    /// A player with search limits per move instead of a clock (see [`LevelBudget`]).
    pub fn with_budget(config: SearchConfig, budget: LevelBudget) -> AutoPlayer<M> {
        AutoPlayer {
            budget: Some(budget),
            ..AutoPlayer::new(config, MctsSettings::default(), AutoSettings::default())
        }
    }

    /// Plays the game with the puzzle search if it is a puzzle and that is on; whether it did.
    fn start_puzzle(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<bool, SearchError> {
        if !self.auto.puzzle || puzzle::check(machine).is_err() {
            return Ok(false);
        }
        let mut player = PuzzlePlayer::new(
            self.config_with(self.budget.map(|b| b.playouts)),
            self.mcts.clone(),
        );
        if let Some(b) = self.budget {
            player.set_expansions(Some(b.nodes));
        }
        player.start(machine, role, deadline)?;
        self.decide(
            Chosen::Puzzle(Box::new(player)),
            "single-player deterministic game",
        );
        Ok(true)
    }

    /// Plays the game part by part if it has turn-taking parts ([`super::parts`], looked for
    /// until `until`); whether it does.
    fn start_parts(
        &mut self,
        machine: &mut M,
        role: usize,
        until: Instant,
        deadline: Instant,
    ) -> Result<bool, SearchError> {
        let config = self.config_with(self.budget.map(|b| b.playouts));
        let Some(mut parts) = PartsPlayer::find(machine, &config, &self.mcts, until)? else {
            return Ok(false);
        };
        parts.start(machine, role, deadline)?;
        let why = format!(
            "simultaneous moves in {} turn-taking parts, each searched alone",
            parts.parts()
        );
        self.decide(Chosen::Parts(parts), &why);
        Ok(true)
    }

    /// Plays the equilibrium if the game (two-player) is solved exactly before `until`
    /// ([`super::equilibrium`]); whether it is.
    fn start_equilibrium(
        &mut self,
        machine: &mut M,
        role: usize,
        until: Instant,
    ) -> Result<bool, SearchError> {
        if machine.is_gdl2() || machine.roles().len() != 2 {
            return Ok(false);
        }
        let started = Instant::now();
        let initial = machine.initial_state();
        let table = match Equilibrium::solve(machine, &initial, until, MAX_SOLVED_STATES) {
            Ok(table) => table,
            Err(Unsolved::Machine(e)) => return Err(e.into()),
            Err(why) => {
                tracing::info!("auto: the exact solve gave up: {why}");
                return Ok(false);
            }
        };
        let why = format!(
            "simultaneous moves, solved exactly ({} states in {:.1} s, value {:.1})",
            table.states(),
            started.elapsed().as_secs_f64(),
            table.value(&initial, role).unwrap_or(f64::NAN),
        );
        let mut player = EquilibriumPlayer::new(&self.config, table);
        player.start(machine, role, until)?;
        self.decide(Chosen::Equilibrium(player), &why);
        Ok(true)
    }

    /// Plays alpha-beta if its searches of the initial state, one for each role, prove the
    /// game's value in pure strategies (a two-player constant-sum game with simultaneous moves,
    /// goals summing to `sum`); whether it does. Alpha-beta picks our move and then lets the
    /// other pick its reply knowing it, so its proven value is one we can be sure of whatever
    /// the other does; the other's, searched the same way, is what it can hold us to. Where
    /// they meet (biddingTicTacToe: 50 and 50), a move that keeps our sure value is as good as
    /// any mixed strategy, and alpha-beta plays it at every turn. Our search gets a quarter of
    /// the clock to `deadline`, the other's a third of the rest.
    fn start_proof(
        &mut self,
        machine: &mut M,
        role: usize,
        sum: u32,
        deadline: Instant,
    ) -> Result<bool, SearchError> {
        if machine.is_gdl2() {
            return Ok(false);
        }
        let share = |part: u32| {
            let now = Instant::now();
            now + deadline.saturating_duration_since(now) / part
        };
        let mut ours = self.prover();
        ours.start(machine, role, share(4))?;
        let Some(sure) = ours.stats().proven_value() else {
            tracing::info!("auto: alpha-beta did not prove our value in a quarter of the clock");
            return Ok(false);
        };
        let why = if sure >= 100.0 {
            format!("its search proved a win ({sure:.0}) with simultaneous moves")
        } else {
            let mut theirs = self.prover();
            theirs.start(machine, 1 - role, share(3))?;
            let held = theirs.stats().proven_value().map(|v| f64::from(sum) - v);
            if held.is_none_or(|held| (held - sure).abs() > 1e-6) {
                tracing::info!(
                    "auto: alpha-beta proved {sure:.0} for us, the other's search {}",
                    held.map_or("did not finish".into(), |h| format!("holds us to {h:.0}"))
                );
                return Ok(false);
            }
            format!("its searches proved the game's value ({sure:.0}) in pure strategies")
        };
        self.decide(Chosen::AlphaBeta(ours), &why);
        Ok(true)
    }

    /// The alpha-beta player that proves a simultaneous game's value ([`Self::start_proof`]):
    /// no material or heuristic to learn, the clock all for the search.
    fn prover(&self) -> AlphaBetaPlayer<M> {
        let settings = AlphaBetaSettings {
            heuristic: false,
            material: false,
            ..AlphaBetaSettings::default()
        };
        AlphaBetaPlayer::with_settings(self.config.clone(), settings)
    }

    /// Why the search was chosen (empty before the start).
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The configuration of the chosen search: the budget's limit when there is one.
    fn config_with(&self, limit: Option<u64>) -> SearchConfig {
        SearchConfig {
            max_iterations: limit.or(self.config.max_iterations),
            ..self.config.clone()
        }
    }

    /// The MCTS player `auto` plays (with the budget's limit, if any).
    fn mcts_player(&self) -> MctsPlayer<M> {
        let config = self.config_with(self.budget.map(|b| b.playouts));
        MctsPlayer::with_settings(config, self.mcts.clone())
    }

    /// The alpha-beta player `auto` plays (with the budget's limit, if any): its heuristic and
    /// candidate features are MCTS's.
    fn alphabeta_player(&self) -> AlphaBetaPlayer<M> {
        let settings = AlphaBetaSettings {
            heuristic: self.mcts.heuristic,
            groups: self.mcts.groups,
            ..AlphaBetaSettings::default()
        };
        AlphaBetaPlayer::with_settings(self.config_with(self.budget.map(|b| b.nodes)), settings)
    }

    /// Chooses by the budget: alpha-beta where it qualifies and finds material.
    fn start_budgeted(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config.seed);
        let far = Instant::now() + Duration::from_secs(3600);
        let found = probe(machine, &mut rng, far, BUDGET_PROBE_PLAYOUTS, 10_000);
        let qualifies = found.alternating_zero_sum();
        let simultaneous = found.simultaneous_states > 0;
        if simultaneous && self.start_parts(machine, role, far, deadline)? {
            return Ok(());
        }
        if qualifies {
            let mut alphabeta = self.alphabeta_player();
            alphabeta.start(machine, role, deadline)?;
            if alphabeta.material().is_some() {
                self.decide(
                    Chosen::AlphaBeta(alphabeta),
                    "two-player turn-taking constant-sum with material",
                );
                return Ok(());
            }
        }
        let mut mcts = self.mcts_player();
        mcts.start(machine, role, deadline)?;
        let why = if qualifies {
            "no material found"
        } else {
            "not two-player turn-taking constant-sum"
        };
        self.decide(Chosen::Mcts(mcts), why);
        Ok(())
    }

    fn decide(&mut self, chosen: Chosen<M>, reason: &str) {
        let name = match chosen {
            Chosen::AlphaBeta(_) => "alphabeta",
            Chosen::Mcts(_) => "mcts",
            Chosen::Puzzle(_) => "puzzle",
            Chosen::Parts(_) => "parts",
            Chosen::Equilibrium(_) => "equilibrium",
        };
        self.reason = format!("{name}: {reason}");
        tracing::info!("auto: {}", self.reason);
        self.chosen = Some(chosen);
    }
}

impl<M: StateMachine + Send + 'static> Player<M> for AutoPlayer<M> {
    fn name(&self) -> String {
        match &self.chosen {
            None => "auto".into(),
            Some(Chosen::AlphaBeta(_)) => "auto:alphabeta".into(),
            Some(Chosen::Mcts(_)) => "auto:mcts".into(),
            Some(Chosen::Puzzle(_)) => "auto:puzzle".into(),
            Some(Chosen::Parts(_)) => "auto:parts".into(),
            Some(Chosen::Equilibrium(_)) => "auto:equilibrium".into(),
        }
    }

    fn hidden_settings(&self) -> Option<MctsSettings> {
        Some(self.mcts.clone())
    }

    fn work(&self) -> super::Work {
        match &self.chosen {
            Some(Chosen::AlphaBeta(p)) => p.work(),
            Some(Chosen::Mcts(p)) => p.work(),
            Some(Chosen::Puzzle(p)) => p.work(),
            Some(Chosen::Parts(p)) => p.work(),
            Some(Chosen::Equilibrium(p)) => p.work(),
            None => super::Work::default(),
        }
    }

    fn start(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.role = role;
        self.chosen = None;
        if self.start_puzzle(machine, role, deadline)? {
            return Ok(());
        }
        if self.budget.is_some() {
            return self.start_budgeted(machine, role, deadline);
        }
        let now = Instant::now();
        let left = deadline.saturating_duration_since(now);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(self.config.seed);
        let found = probe(
            machine,
            &mut rng,
            now + (left / 4).min(MAX_PROBE),
            MAX_PROBE_PLAYOUTS,
            10_000,
        );
        let qualifies = found.alternating_zero_sum();
        let two_player_sum = found.two_player_sum();
        let simultaneous = found.simultaneous_states > 0;
        let now = Instant::now();
        let until = now + (deadline.saturating_duration_since(now) / 8).min(MAX_PROBE);
        if simultaneous && self.start_parts(machine, role, until, deadline)? {
            return Ok(());
        }
        if simultaneous {
            let now = Instant::now();
            let third = now + deadline.saturating_duration_since(now) / 3;
            if self.start_equilibrium(machine, role, third)? {
                return Ok(());
            }
        }
        let proof_tried = two_player_sum.filter(|_| simultaneous);
        if let Some(sum) = proof_tried
            && self.start_proof(machine, role, sum, deadline)?
        {
            return Ok(());
        }
        if !qualifies {
            let mut mcts = self.mcts_player();
            mcts.start(machine, role, deadline)?;
            let why = if proof_tried.is_some() {
                "simultaneous moves, not solved, the value not proven in pure strategies"
            } else {
                "not two-player turn-taking constant-sum"
            };
            self.decide(Chosen::Mcts(mcts), why);
            return Ok(());
        }
        let now = Instant::now();
        let half = now + deadline.saturating_duration_since(now) / 2;
        let mut alphabeta = self.alphabeta_player();
        alphabeta.start(machine, role, half)?;
        if alphabeta.stats().proven {
            self.decide(
                Chosen::AlphaBeta(alphabeta),
                "its search proved the game's value",
            );
            return Ok(());
        }
        let mut mcts = self.mcts_player();
        mcts.start(machine, role, deadline)?;
        self.decide(
            Chosen::Mcts(mcts),
            "alpha-beta did not prove the game's value at the start clock",
        );
        Ok(())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        if self.chosen.is_none() {
            // Not started, or the start failed: MCTS, which suits every game, for our role
            // (role 0 if there was no start).
            let mut mcts = self.mcts_player();
            mcts.start(machine, self.role, Instant::now())?;
            self.chosen = Some(Chosen::Mcts(mcts));
        }
        match self.chosen.as_mut() {
            Some(Chosen::AlphaBeta(p)) => p.choose(machine, state, deadline),
            Some(Chosen::Mcts(p)) => p.choose(machine, state, deadline),
            Some(Chosen::Puzzle(p)) => p.choose(machine, state, deadline),
            Some(Chosen::Parts(p)) => p.choose(machine, state, deadline),
            Some(Chosen::Equilibrium(p)) => p.choose(machine, state, deadline),
            None => Err(SearchError::NoMove),
        }
    }
}
