//! The `auto` player: probes the game at the start and plays alpha-beta or MCTS.
//!
//! **Puzzles first:** a deterministic single-player game (one role, no nature, no `sees`) is
//! played by the puzzle search ([`super::puzzle`], which falls back on MCTS until it finds a
//! solution), with or without a clock, unless `auto:puzzle=off` ([`AutoSettings::puzzle`]).
//!
//! **Turn-taking parts:** a game with simultaneous moves (the probe saw a state where two roles
//! chose) that is turn-taking games played at once ([`crate::analysis::parts`], looked for in
//! random games for an eighth of the start clock at most, 3 s at most) is played by
//! [`PartsPlayer`], one part at a time.
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
//! MCTS plays. If so, a **trial** decides: within half of the start clock left, alpha-beta and
//! MCTS, built by the constructors that build the match's player ([`AutoPlayer::alphabeta`],
//! [`AutoPlayer::mcts`]; alpha-beta with the material it finds, see
//! [`super::heuristic::find_material`]), play [`TRIAL_GAMES`] fast games against each other ([`super::duel`]) from the
//! initial state, seats alternating, each move given the same short time; a game not over
//! after [`TRIAL_PLIES`] plies, or when the trial's time is up, counts as a draw. Alpha-beta
//! plays the match if it scored more than half and values its leaves by an evaluation
//! (material or a learnt heuristic: with random playouts as leaves it is a weaker MCTS, and a
//! trial at a short slice a move does not tell how it does at the match's clock), or if its
//! search of the initial state (the rest of the start clock, half of it) proves the game's
//! value; MCTS otherwise, the search that suits every
//! game, and MCTS's solver still finds the wins and losses near the end. The choice and its
//! reason are logged (`INFO auto: ...`) and kept ([`AutoPlayer::reason`]).
//!
//! **With a budget instead of a clock** ([`LevelBudget`], the levels of `ggp play`, which have
//! no start clock): the probe runs by count ([`BUDGET_PROBE_PLAYOUTS`] playouts), and alpha-beta
//! (with the node limit) plays a two-player turn-taking constant-sum game in which material was
//! found, MCTS (with the playout limit) every other game. No time is measured, so the choice is
//! the same on every machine.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::machine::StateMachine;

use super::alphabeta::{AlphaBetaPlayer, AlphaBetaSettings};
use super::duel::{DuelPlan, Side, duel};
use super::mcts::{MctsPlayer, MctsSettings};
use super::parts::PartsPlayer;
use super::probe::{GameProbe, probe};
use super::puzzle::{self, PuzzlePlayer};
use super::{Choice, Player, SearchConfig, SearchError};

/// The longest probe.
const MAX_PROBE: Duration = Duration::from_secs(3);
/// The most probing playouts.
const MAX_PROBE_PLAYOUTS: u64 = 500;
/// The probing playouts of a player with a [`LevelBudget`].
pub const BUDGET_PROBE_PLAYOUTS: u64 = 50;
/// The trial's games (seats alternating).
pub const TRIAL_GAMES: usize = 2;
/// A trial game longer than this is a draw.
pub const TRIAL_PLIES: usize = 200;
/// The shortest think time of a trial move.
const MIN_TRIAL_MOVE: Duration = Duration::from_millis(2);

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
    /// Whether the trial decides (on by default); off, alpha-beta plays only when its search
    /// of the initial state proves the game's value (the rule before the trial).
    pub trial: bool,
    /// Whether single-player games are played by the puzzle search (on by default).
    pub puzzle: bool,
}

impl Default for AutoSettings {
    fn default() -> AutoSettings {
        AutoSettings {
            trial: true,
            puzzle: true,
        }
    }
}

/// The search chosen for the match.
enum Chosen<M: StateMachine> {
    AlphaBeta(AlphaBetaPlayer<M>),
    Mcts(MctsPlayer<M>),
    Puzzle(Box<PuzzlePlayer<M>>),
    Parts(PartsPlayer<M>),
}

/// The `auto` player.
pub struct AutoPlayer<M: StateMachine> {
    config: SearchConfig,
    mcts: MctsSettings,
    budget: Option<LevelBudget>,
    chosen: Option<Chosen<M>>,
    /// Our role, from the last start.
    role: usize,
    probe: Option<GameProbe>,
    reason: String,
    auto: AutoSettings,
}

impl<M: StateMachine + Send + 'static> AutoPlayer<M> {
    /// A player that decides by the clock (probe and trial at the start clock).
    pub fn new(config: SearchConfig, mcts: MctsSettings, auto: AutoSettings) -> AutoPlayer<M> {
        AutoPlayer {
            config,
            mcts,
            budget: None,
            chosen: None,
            role: 0,
            probe: None,
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

    /// The MCTS player `auto` plays with `config`: the match's (with the budget's limit) and
    /// the trial's are both built here. The trial's (`in_trial`) leaves out the heuristic
    /// trial, which would spend the one short slice its start is given on games of its own.
    pub fn mcts(&self, config: SearchConfig, in_trial: bool) -> MctsPlayer<M> {
        let settings = MctsSettings {
            heuristic_trial: self.mcts.heuristic_trial && !in_trial,
            ..self.mcts.clone()
        };
        MctsPlayer::with_settings(config, settings)
    }

    /// The alpha-beta player `auto` plays with `config`: its heuristic and candidate
    /// features are MCTS's; the match's (with the budget's limit) and the trial's are both
    /// built here.
    pub fn alphabeta(&self, config: SearchConfig) -> AlphaBetaPlayer<M> {
        let settings = AlphaBetaSettings {
            heuristic: self.mcts.heuristic,
            groups: self.mcts.groups,
            ..AlphaBetaSettings::default()
        };
        AlphaBetaPlayer::with_settings(config, settings)
    }

    fn mcts_player(&self) -> MctsPlayer<M> {
        self.mcts(self.config_with(self.budget.map(|b| b.playouts)), false)
    }

    fn alphabeta_player(&self) -> AlphaBetaPlayer<M> {
        self.alphabeta(self.config_with(self.budget.map(|b| b.nodes)))
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
        self.probe = Some(found);
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
        };
        self.reason = format!("{name}: {reason}");
        tracing::info!("auto: {}", self.reason);
        self.chosen = Some(chosen);
    }

    /// The trial (see the module documentation): alpha-beta's score against MCTS, 0 to 1, and
    /// the games played, both players built as the match's are.
    fn trial(&self, machine: &mut M, until: Instant) -> Result<(f64, usize), SearchError> {
        let expected = self
            .probe
            .as_ref()
            .map_or(TRIAL_PLIES as f64, |p| p.mean_length);
        let plan = DuelPlan::fitted(
            TRIAL_GAMES,
            TRIAL_PLIES,
            expected,
            until,
            MIN_TRIAL_MOVE,
            self.config.seed,
        );
        let result = duel(machine, &plan, |side, config| -> Box<dyn Player<M>> {
            match side {
                Side::A => Box::new(self.alphabeta(config)),
                Side::B => Box::new(self.mcts(config, true)),
            }
        })?;
        Ok((result.score, result.games))
    }
}

/// The choice after the trial: alpha-beta (`true`) or MCTS, and why. Alpha-beta when its start
/// search proved the game's value, or when it scored more than half in the trial and values its
/// leaves by an evaluation (material or a learnt heuristic). With random playouts as leaves it
/// is a weaker MCTS whose trial wins at a short slice a move do not carry over to the match's
/// clock (gomoku_15x15: 2 of 2 in the trial at 86 ms a move, then a blind move at every 4 s
/// turn, lost to Sancho).
fn after_trial(proven: bool, evaluates: bool, score: f64, games: usize) -> (bool, String) {
    if proven {
        let why =
            format!("its search proved the game's value ({games} trial games scored {score:.2})");
        return (true, why);
    }
    if score > 0.5 && evaluates {
        return (
            true,
            format!("it scored {score:.2} against MCTS in {games} trial games"),
        );
    }
    let mut why = format!("alpha-beta scored {score:.2} against it in {games} trial games");
    if score > 0.5 {
        why.push_str(", but has no evaluation (no material, no heuristic learnt)");
    }
    (false, why)
}

impl<M: StateMachine + Send + 'static> Player<M> for AutoPlayer<M> {
    fn name(&self) -> String {
        match &self.chosen {
            None => "auto".into(),
            Some(Chosen::AlphaBeta(_)) => "auto:alphabeta".into(),
            Some(Chosen::Mcts(_)) => "auto:mcts".into(),
            Some(Chosen::Puzzle(_)) => "auto:puzzle".into(),
            Some(Chosen::Parts(_)) => "auto:parts".into(),
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
        self.probe = Some(found);
        let now = Instant::now();
        let until = now + (deadline.saturating_duration_since(now) / 8).min(MAX_PROBE);
        if simultaneous && self.start_parts(machine, role, until, deadline)? {
            return Ok(());
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
                "simultaneous moves, the value not proven in pure strategies"
            } else {
                "not two-player turn-taking constant-sum"
            };
            self.decide(Chosen::Mcts(mcts), why);
            return Ok(());
        }
        let now = Instant::now();
        let half = now + deadline.saturating_duration_since(now) / 2;
        let (score, games) = if self.auto.trial {
            self.trial(machine, half)?
        } else {
            (0.5, 0)
        };
        let now = Instant::now();
        let half = now + deadline.saturating_duration_since(now) / 2;
        let mut alphabeta = self.alphabeta_player();
        alphabeta.start(machine, role, half)?;
        let (pick_alphabeta, why) = after_trial(
            alphabeta.stats().proven,
            alphabeta.evaluates(),
            score,
            games,
        );
        if pick_alphabeta {
            self.decide(Chosen::AlphaBeta(alphabeta), &why);
            return Ok(());
        }
        let mut mcts = self.mcts_player();
        mcts.start(machine, role, deadline)?;
        self.decide(Chosen::Mcts(mcts), &why);
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
            None => Err(SearchError::NoMove),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_beta_needs_an_evaluation_or_a_proof_to_be_chosen() {
        assert!(after_trial(true, false, 0.0, 2).0);
        assert!(after_trial(false, true, 1.0, 2).0);
        let (chosen, why) = after_trial(false, false, 1.0, 2);
        assert!(!chosen);
        assert!(why.contains("no evaluation"), "{why}");
        let (chosen, why) = after_trial(false, true, 0.5, 2);
        assert!(!chosen);
        assert!(!why.contains("no evaluation"), "{why}");
    }
}
