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

/// The paranoid reading of a game of three or more roles (Sturtevant and Korf's paranoid
/// search, here in the tree's rewards): every other role that chooses is searched as if it
/// wanted what we lose, its reward `1 − ours` in place of its own goal, so that a move is
/// valued by what the others can do to us together. Each role's own reward (max-n) lets a
/// third role's indifference decide: in 3pConnectFour a player whose opponent threatens to win
/// at once, with the third role to move in between and as well off either way, reads the
/// threat as blocked half the time, and does not block it itself (ggp-base's PlayerTester
/// cases for that game). Nature's reward is left as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paranoid {
    /// Our role.
    me: usize,
    /// The roles whose reward is turned into `1 − ours`, one bit each.
    adversaries: u64,
}

impl Paranoid {
    /// The paranoid reading for role `me` of the game `machine` plays, if it has three or
    /// more roles that choose (nature aside), at most 64.
    pub fn of<M: StateMachine>(machine: &M, me: usize) -> Option<Paranoid> {
        let n_roles = machine.roles().len();
        let players = (0..n_roles).filter(|&r| !machine.is_nature(r)).count();
        if players < 3 || n_roles > 64 || me >= n_roles {
            return None;
        }
        let adversaries = (0..n_roles)
            .filter(|&r| r != me && !machine.is_nature(r))
            .fold(0u64, |bits, r| bits | 1 << r);
        Some(Paranoid { me, adversaries })
    }

    /// Rewrites `rewards` (one per role, 0..1) as the paranoid reading sees them.
    pub fn apply(self, rewards: &mut [f64]) {
        let Some(&mine) = rewards.get(self.me) else {
            return;
        };
        for (r, reward) in rewards.iter_mut().enumerate() {
            if self.adversaries >> r & 1 == 1 {
                *reward = 1.0 - mine;
            }
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::Paranoid;
    use crate::gdl::Description;
    use crate::propnet::{Budget, PropnetMachine};

    fn machine(roles: &str) -> PropnetMachine {
        let text = format!(
            "{roles} (<= (legal ?r go) (role ?r)) (<= (goal ?r 50) (role ?r)) (<= terminal (true done)) (<= (next done) (role ?r))"
        );
        let d = Description::from_text(&text).unwrap();
        PropnetMachine::new(&d, &Budget::default()).unwrap()
    }

    #[test]
    fn the_paranoid_reading_gives_the_others_what_we_lose() {
        let three = machine("(role a) (role b) (role c)");
        let p = Paranoid::of(&three, 1).expect("three roles");
        let mut rewards = vec![1.0, 0.25, 0.5];
        p.apply(&mut rewards);
        assert_eq!(rewards, vec![0.75, 0.25, 0.75]);
        assert!(Paranoid::of(&machine("(role a) (role b)"), 0).is_none());
        // Nature is not an adversary, and does not count as one of the three.
        assert!(Paranoid::of(&machine("(role a) (role b) (role random)"), 0).is_none());
        let with_nature = machine("(role a) (role random) (role b) (role c)");
        let p = Paranoid::of(&with_nature, 0).expect("three players");
        let mut rewards = vec![0.5, 0.2, 0.9, 0.1];
        p.apply(&mut rewards);
        assert_eq!(rewards, vec![0.5, 0.2, 0.5, 0.5]);
    }
}
