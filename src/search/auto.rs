//! The `auto` player: probes the game at the start and plays alpha-beta or MCTS.
//!
//! The rule: if the probe (a quarter of the start clock, at most 3 s, see [`super::probe`])
//! finds the game two-player, turn-taking and constant-sum, alpha-beta searches the initial
//! state with half of the start clock left; if it proves the game's value there, alpha-beta
//! plays the match (it plays perfectly from then on, its table already full). Otherwise MCTS
//! plays, using the rest of the start clock for its first search: with a general evaluation
//! function a depth-limited alpha-beta is weaker than MCTS, and MCTS's solver still finds the
//! wins and losses near the end.

use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::machine::StateMachine;

use super::alphabeta::AlphaBetaPlayer;
use super::mcts::{MctsPlayer, MctsSettings};
use super::probe::{GameProbe, probe};
use super::{Choice, Player, SearchConfig, SearchError};

/// The longest probe.
const MAX_PROBE: Duration = Duration::from_secs(3);
/// The most probing playouts.
const MAX_PROBE_PLAYOUTS: u64 = 500;

/// The search chosen for the match.
enum Chosen<M: StateMachine> {
    AlphaBeta(AlphaBetaPlayer<M>),
    Mcts(MctsPlayer<M>),
}

/// The `auto` player.
pub(super) struct AutoPlayer<M: StateMachine> {
    config: SearchConfig,
    mcts: MctsSettings,
    chosen: Option<Chosen<M>>,
    probe: Option<GameProbe>,
}

impl<M: StateMachine> AutoPlayer<M> {
    pub(super) fn new(config: SearchConfig, mcts: MctsSettings) -> AutoPlayer<M> {
        AutoPlayer {
            config,
            mcts,
            chosen: None,
            probe: None,
        }
    }
}

impl<M: StateMachine + Send + 'static> Player<M> for AutoPlayer<M> {
    fn name(&self) -> String {
        match &self.chosen {
            None => "auto".into(),
            Some(Chosen::AlphaBeta(_)) => "auto:alphabeta".into(),
            Some(Chosen::Mcts(_)) => "auto:mcts".into(),
        }
    }

    fn start(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
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
        self.probe = Some(found);
        if qualifies {
            let now = Instant::now();
            let half = now + deadline.saturating_duration_since(now) / 2;
            let mut alphabeta = AlphaBetaPlayer::new(self.config.clone());
            alphabeta.start(machine, role, half)?;
            if alphabeta.stats().proven {
                self.chosen = Some(Chosen::AlphaBeta(alphabeta));
                return Ok(());
            }
        }
        let mut mcts = MctsPlayer::with_settings(self.config.clone(), self.mcts.clone());
        mcts.start(machine, role, deadline)?;
        self.chosen = Some(Chosen::Mcts(mcts));
        Ok(())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        if self.chosen.is_none() {
            // Not started: MCTS, which suits every game, for role 0.
            let mut mcts = MctsPlayer::with_settings(self.config.clone(), self.mcts.clone());
            mcts.start(machine, 0, Instant::now())?;
            self.chosen = Some(Chosen::Mcts(mcts));
        }
        match self.chosen.as_mut() {
            Some(Chosen::AlphaBeta(p)) => p.choose(machine, state, deadline),
            Some(Chosen::Mcts(p)) => p.choose(machine, state, deadline),
            None => Err(SearchError::NoMove),
        }
    }
}
