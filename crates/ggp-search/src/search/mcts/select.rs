//! The selection rule: how a role values one of its moves at a tree node.
//!
//! The tree decides which moves are worth considering (unvisited moves first, at random;
//! settled and hopeless children left out, see [`super::tree`]); a [`Selection`] only scores
//! a visited move from its statistics, and the tree takes the highest score. To try another
//! rule (UCB-tuned, a different constant, progressive bias), implement [`Selection`] and
//! return it from [`super::MctsSettings::selection`].
//!
//! GRAVE (AMAF statistics blended into the score) was tried and removed: see
//! `docs/experiments/grave.md`.

/// What the tree knows about one move of one role at one node.
#[derive(Debug, Clone, Copy)]
pub struct MoveView {
    /// Times the move was chosen here (at least 1 when scored).
    pub visits: u32,
    /// Its mean reward for the role, 0..1 (its exact value when its child is settled).
    pub mean: f64,
    /// Times the node was visited.
    pub parent_visits: u32,
}

/// Scores a visited move; the tree picks the highest.
pub trait Selection: Send {
    /// The move's score.
    fn score(&self, mv: &MoveView) -> f64;
}

/// UCB1: `mean + c * sqrt(ln(parent visits) / visits)`; the one formula of both searches
/// (this tree's, and the information-set search's in `search::hidden`).
#[derive(Debug, Clone, Copy)]
pub struct Ucb1 {
    /// The exploration constant `c`, on rewards scaled to 0..1.
    pub exploration: f64,
}

impl Ucb1 {
    /// The value of a move of mean reward `mean` (0..1) chosen `visits` times out of
    /// `parent_visits` (each counted as at least 1).
    pub fn value(&self, mean: f64, visits: u64, parent_visits: u64) -> f64 {
        let n = visits.max(1) as f64;
        let log_n = (parent_visits.max(1) as f64).ln();
        mean + self.exploration * (log_n / n).sqrt()
    }
}

impl Selection for Ucb1 {
    fn score(&self, mv: &MoveView) -> f64 {
        self.value(mv.mean, u64::from(mv.visits), u64::from(mv.parent_visits))
    }
}
