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

use crate::search::goal_or_zero;
use crate::search::heuristic::{Evaluator, Heuristic, per_role};
use ggp_engine::machine::{MachineError, StateMachine};

/// How the tree reads the rewards of the roles other than ours: each other role that chooses
/// (nature aside) is searched as wanting, in the proportion `weight`, what we lose (`1 − ours`)
/// and, for the rest, its own goal. Our own reward, the move chosen and the value reported are
/// ours alone.
///
/// - Three or more roles: weight 1, the paranoid reading (Sturtevant and Korf's paranoid
///   search, here in the tree's rewards), so that a move is valued by what the others can do
///   to us together. Each role's own reward (max-n) lets a third role's indifference decide:
///   in 3pConnectFour a player whose opponent threatens to win at once, with the third role
///   to move in between and as well off either way, reads the threat as blocked half the
///   time, and does not block it itself (ggp-base's PlayerTester cases for that game).
/// - Two roles whose goals did not always sum alike in random games: weight ½, the opponent
///   read as wanting its own goal and our loss in equal parts. Its own goal alone lets it
///   pass a chance to hurt us that costs it nothing; our loss alone (paranoid) has it give up
///   its own score to hurt us, and loses us what its self-interest hands us (2pffa's cases).
/// - Two roles whose goals always summed alike: none, since the opponent's own goal already is
///   our loss.
///
/// Measured in `docs/experiments/paranoid.md`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rivalry {
    /// Our role.
    me: usize,
    /// The roles whose reward is read, one bit each.
    others: u64,
    /// How much of each such role's reward is our loss, 0..=1.
    weight: f64,
}

impl Rivalry {
    /// The reading for role `me` of the game `machine` plays (at most 64 roles):
    /// `goal_sum_varies` says whether random games of it ended with different sums of goals
    /// ([`Rivalry::needs_goal_sums`]).
    pub fn of<M: StateMachine>(machine: &M, me: usize, goal_sum_varies: bool) -> Option<Rivalry> {
        let n_roles = machine.roles().len();
        if n_roles > 64 || me >= n_roles {
            return None;
        }
        let weight = match players(machine) {
            3.. => 1.0,
            2 if goal_sum_varies => 0.5,
            _ => return None,
        };
        let others = (0..n_roles)
            .filter(|&r| r != me && !machine.is_nature(r))
            .fold(0u64, |bits, r| bits | 1 << r);
        Some(Rivalry { me, others, weight })
    }

    /// Whether the reading of `machine`'s game depends on its goal sums (two roles that
    /// choose).
    pub fn needs_goal_sums<M: StateMachine>(machine: &M) -> bool {
        players(machine) == 2
    }

    /// Rewrites `rewards` (one per role, 0..1) as this reading sees them.
    pub fn apply(self, rewards: &mut [f64]) {
        let Some(&mine) = rewards.get(self.me) else {
            return;
        };
        for (r, reward) in rewards.iter_mut().enumerate() {
            if self.others >> r & 1 == 1 {
                // Exactly `1 − ours` at weight 1.
                *reward = (1.0 - self.weight) * *reward + self.weight * (1.0 - mine);
            }
        }
    }
}

/// The number of roles that choose (nature aside).
fn players<M: StateMachine>(machine: &M) -> usize {
    (0..machine.roles().len())
        .filter(|&r| !machine.is_nature(r))
        .count()
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
    use super::Rivalry;
    use ggp_engine::propnet::{Budget, PropnetMachine};
    use ggp_gdl::gdl::Description;

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
        let p = Rivalry::of(&three, 1, false).expect("three roles");
        let mut rewards = vec![1.0, 0.25, 0.5];
        p.apply(&mut rewards);
        assert_eq!(rewards, vec![0.75, 0.25, 0.75]);
        // Nature is not an adversary, and does not count as one of the three.
        assert!(Rivalry::of(&machine("(role a) (role b) (role random)"), 0, false).is_none());
        let with_nature = machine("(role a) (role random) (role b) (role c)");
        let p = Rivalry::of(&with_nature, 0, true).expect("three players");
        let mut rewards = vec![0.5, 0.2, 0.9, 0.1];
        p.apply(&mut rewards);
        assert_eq!(rewards, vec![0.5, 0.2, 0.5, 0.5]);
    }

    #[test]
    fn a_two_role_opponent_wants_half_its_goal_half_our_loss_where_sums_vary() {
        let two = machine("(role a) (role b)");
        assert!(Rivalry::needs_goal_sums(&two));
        assert!(Rivalry::of(&two, 0, false).is_none());
        let r = Rivalry::of(&two, 0, true).expect("goal sums vary");
        let mut rewards = vec![0.25, 0.5];
        r.apply(&mut rewards);
        assert_eq!(rewards, vec![0.25, 0.625]);
        let with_nature = machine("(role a) (role random) (role b)");
        assert!(Rivalry::needs_goal_sums(&with_nature));
        let r = Rivalry::of(&with_nature, 2, true).expect("two players");
        let mut rewards = vec![0.5, 0.3, 1.0];
        r.apply(&mut rewards);
        assert_eq!(rewards, vec![0.25, 0.3, 1.0]);
        assert!(!Rivalry::needs_goal_sums(&machine(
            "(role a) (role b) (role c)"
        )));
    }
}
