//! The evaluation: the reward vector an iteration backs up from the state its playout ended
//! in.
//!
//! The default, [`GoalEvaluation`], reads every role's goal value (0 when the rules give none)
//! scaled to 0..1. An [`Evaluation`] may instead estimate rewards for a state that is not
//! terminal (a playout cut off early by a heuristic). Each search thread has its own. To try
//! another, implement the trait and return it from [`super::MctsSettings::evaluation`].
//! Terminal tree nodes are always valued by their goals (the solver needs exact values).

use crate::machine::{MachineError, StateMachine};
use crate::search::goal_or_zero;

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
        out.clear();
        for r in 0..machine.roles().len() {
            out.push(f64::from(goal_or_zero(machine, state, r)?) / 100.0);
        }
        Ok(())
    }
}
