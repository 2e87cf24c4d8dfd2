//! The endgame solver: an exact alpha-beta search beside MCTS that proves the value of the
//! states near a game's end and plays the proof.
//!
//! Random playouts judge an endgame badly when it is decided by counting (dots and boxes'
//! chains, a race to a row): MCTS's value can sit near 50 until the loss is certain, while a
//! full-width search of the few moves left proves the result in a fraction of a second. So,
//! before each MCTS move in a two-player, turn-taking, constant-sum game (where alpha-beta is
//! exact minimax, see [`super::alphabeta`]), `auto` with `endgame=on` gives an alpha-beta
//! search **without an evaluation** (no playouts, no material, no heuristic: a state at the
//! depth limit is worth 50, unproven) [`ENDGAME_SHARE`] of the move's time. Only a *proven*
//! result is used: a proven value above 0 (a win, or the best a perfect opponent allows) is
//! played at once; a proven loss, or no proof, leaves the move to MCTS, which has the rest of
//! the time (against a fallible opponent, MCTS's choice among lost moves keeps the most hope).
//! The solver keeps its transposition table from move to move, so a proof found once is
//! found again at once on the next move.

use std::time::Instant;

use crate::machine::StateMachine;

use super::alphabeta::{AlphaBetaPlayer, AlphaBetaSettings, AlphaBetaStats};
use super::{Choice, Player, SearchConfig, SearchError};

/// The share of each move's time the solver gets before MCTS.
pub const ENDGAME_SHARE: f64 = 0.25;

/// The endgame solver of one match (see the module documentation).
pub struct Endgame<M: StateMachine> {
    solver: AlphaBetaPlayer<M>,
    role: usize,
}

impl<M: StateMachine + Send> Endgame<M> {
    /// A solver for a match played with `config` (its node limit, when there is one, bounds
    /// each attempt, so that a budgeted test is the same on every machine).
    pub fn new(config: SearchConfig) -> Endgame<M> {
        let settings = AlphaBetaSettings {
            leaf_playouts: 0,
            heuristic: false,
            material: false,
            mobility: false,
            ponder: false,
            ..AlphaBetaSettings::default()
        };
        Endgame {
            solver: AlphaBetaPlayer::with_settings(config, settings),
            role: 0,
        }
    }

    /// What the last attempt's search did.
    pub fn stats(&self) -> &AlphaBetaStats {
        self.solver.stats()
    }

    /// Starts the solver for `role` (it searches nothing at the start).
    ///
    /// # Errors
    /// The engine failed.
    pub fn start(&mut self, machine: &mut M, role: usize) -> Result<(), SearchError> {
        self.role = role;
        self.solver.start(machine, role, Instant::now())
    }

    /// Tries to prove the value of `state` within [`ENDGAME_SHARE`] of the time to
    /// `deadline`: the move to play when the proof gives us more than 0, else `None` (and
    /// nothing is tried when we have a single legal move).
    ///
    /// # Errors
    /// The engine failed.
    pub fn attempt(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Option<Choice<M::Move>>, SearchError> {
        if machine.legal_moves(state, self.role)?.len() < 2 {
            return Ok(None);
        }
        let now = Instant::now();
        let until = now
            + deadline
                .saturating_duration_since(now)
                .mul_f64(ENDGAME_SHARE);
        let choice = self.solver.choose(machine, state, until)?;
        let proven_gain = choice.proven && choice.value.is_some_and(|v| v > 0.0);
        if proven_gain {
            tracing::info!(
                value = choice.value.map(|v| format!("{v:.1}")).unwrap_or_default(),
                depth = self.solver.stats().depth,
                "endgame: proven, playing {}",
                machine.move_term(choice.mv)
            );
        }
        Ok(proven_gain.then_some(choice))
    }
}
