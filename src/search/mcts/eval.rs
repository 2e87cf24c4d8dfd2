//! The evaluation: the reward vector an iteration backs up from the state its playout ended
//! in.
//!
//! The default, [`GoalEvaluation`], reads every role's goal value (0 when the rules give none)
//! scaled to 0..1. An [`Evaluation`] may instead estimate rewards for a state that is not
//! terminal (a playout cut off early by a heuristic). Each search thread has its own. To try
//! another, implement the trait and return it from [`super::MctsSettings::evaluation`].
//! Terminal tree nodes are always valued by their goals (the solver needs exact values).
//!
//! [`HeuristicEvaluation`] values a terminal state by its goals and any other state (a
//! playout cut after [`super::MctsSettings::cutoff`] moves) by the heuristics learnt at the
//! start clock ([`crate::search::heuristic`]); it also gives the estimate a new tree node
//! starts with ([`super::MctsSettings::prior`]).

use crate::machine::{MachineError, StateMachine};
use crate::search::goal_or_zero;
use crate::search::heuristic::{Evaluator, Heuristic, per_role};

/// Scores the last state of a playout.
pub trait Evaluation<M: StateMachine>: Send {
    /// Writes one reward per role, 0..1, into `out` (cleared first).
    ///
    /// # Errors
    /// The engine failed.
    fn evaluate(
        &mut self,
        machine: &mut M,
        state: &M::State,
        out: &mut Vec<f64>,
    ) -> Result<(), MachineError>;

    /// Writes one reward per role, 0..1, into `out` (cleared first) for a state a playout was
    /// cut in at its step limit (so not terminal); the default is
    /// [`evaluate`](Self::evaluate).
    ///
    /// # Errors
    /// The engine failed.
    fn evaluate_cut(
        &mut self,
        machine: &mut M,
        state: &M::State,
        out: &mut Vec<f64>,
    ) -> Result<(), MachineError> {
        self.evaluate(machine, state, out)
    }

    /// Writes an estimate of every role's reward in a state that is not terminal, 0..1, into
    /// `out`, for a new tree node to start with; `false` (the default) when there is none.
    fn estimate(&mut self, machine: &mut M, state: &M::State, out: &mut Vec<f64>) -> bool {
        let _ = (machine, state, out);
        false
    }
}

/// Every role's goal value, 0..1.
#[derive(Debug, Clone, Copy, Default)]
pub struct GoalEvaluation;

impl<M: StateMachine> Evaluation<M> for GoalEvaluation {
    fn evaluate(
        &mut self,
        machine: &mut M,
        state: &M::State,
        out: &mut Vec<f64>,
    ) -> Result<(), MachineError> {
        per_role(machine, out, |m, r| {
            Ok(f64::from(goal_or_zero(m, state, r)?) / 100.0)
        })
    }
}

/// Goals in a terminal state, the learnt heuristics elsewhere.
pub struct HeuristicEvaluation {
    evaluator: Evaluator,
}

impl HeuristicEvaluation {
    /// The evaluation by one heuristic per role (`None`: 50 for that role).
    pub fn new(heuristics: Vec<Option<Heuristic>>) -> HeuristicEvaluation {
        HeuristicEvaluation {
            evaluator: Evaluator::new(heuristics),
        }
    }
}

impl<M: StateMachine> Evaluation<M> for HeuristicEvaluation {
    fn evaluate(
        &mut self,
        machine: &mut M,
        state: &M::State,
        out: &mut Vec<f64>,
    ) -> Result<(), MachineError> {
        if machine.is_terminal(state)? {
            return GoalEvaluation.evaluate(machine, state, out);
        }
        self.evaluator.values(machine, state, out)
    }

    fn evaluate_cut(
        &mut self,
        machine: &mut M,
        state: &M::State,
        out: &mut Vec<f64>,
    ) -> Result<(), MachineError> {
        self.evaluator.values(machine, state, out)
    }

    fn estimate(&mut self, machine: &mut M, state: &M::State, out: &mut Vec<f64>) -> bool {
        self.evaluator.values(machine, state, out).is_ok()
    }
}
