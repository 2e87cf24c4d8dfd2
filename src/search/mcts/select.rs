//! The selection rule: how a role values one of its moves at a tree node.
//!
//! The tree decides which moves are worth considering (unvisited moves first, at random;
//! settled and hopeless children left out, see [`super::tree`]); a [`Selection`] only scores
//! a visited move from its statistics, and the tree takes the highest score. To try another
//! rule (UCB-tuned, a different constant, progressive bias), implement [`Selection`] and
//! return it from [`super::MctsSettings::selection`].
//!
//! [`Grave`] blends a move's mean with its AMAF mean ("all moves as first": the rewards of
//! the iterations in which the role played that move anywhere below the node) taken at the
//! closest node of the path with at least `ref` visits (Cazenave, "Generalized Rapid Action
//! Value Estimation", IJCAI 2015). The tree keeps AMAF statistics only when the rule asks for
//! them ([`Selection::amaf_ref`]); they come from the moves chosen in the tree (not those of
//! the playout, which the playout policy does not report; with the default heuristic cut-off
//! a playout is only two moves long).

/// What the tree knows about one move of one role at one node.
#[derive(Debug, Clone, Copy)]
pub struct MoveView {
    /// Times the move was chosen here (at least 1 when scored).
    pub visits: u32,
    /// Its mean reward for the role, 0..1 (its exact value when its child is settled).
    pub mean: f64,
    /// Times the node was visited.
    pub parent_visits: u32,
    /// With AMAF statistics: the move's AMAF visits and mean at the reference node.
    pub amaf: Option<(u32, f64)>,
}

/// Scores a visited move; the tree picks the highest.
pub trait Selection: Send {
    /// The move's score.
    fn score(&self, mv: &MoveView) -> f64;

    /// The visits a node needs for its AMAF statistics to be used below it, if the rule uses
    /// AMAF statistics (the tree keeps none otherwise).
    fn amaf_ref(&self) -> Option<u32> {
        None
    }
}

/// UCB1: `mean + c * sqrt(ln(parent visits) / visits)`.
#[derive(Debug, Clone, Copy)]
pub struct Ucb1 {
    /// The exploration constant `c`, on rewards scaled to 0..1.
    pub exploration: f64,
}

impl Selection for Ucb1 {
    fn score(&self, mv: &MoveView) -> f64 {
        let n = f64::from(mv.visits.max(1));
        let log_n = f64::from(mv.parent_visits.max(1)).ln();
        mv.mean + self.exploration * (log_n / n).sqrt()
    }
}

/// GRAVE: `(1 - β)·mean + β·amaf + c·sqrt(ln(parent visits) / visits)` with
/// `β = a / (a + n + bias·a·n)` (`n` the move's visits, `a` its AMAF visits at the reference
/// node); a move not yet visited scores its AMAF mean plus `c·sqrt(ln(parent visits))`.
#[derive(Debug, Clone, Copy)]
pub struct Grave {
    /// The exploration constant `c`, as [`Ucb1`]'s.
    pub exploration: f64,
    /// Visits a node needs to serve as the reference for the nodes below it.
    pub reference: u32,
    /// How fast β falls as the move's own visits grow.
    pub bias: f64,
}

impl Grave {
    /// Cazenave's bias (IJCAI 2015), the same for every game.
    pub const BIAS: f64 = 1e-5;
    /// Cazenave's reference threshold (IJCAI 2015), the same for every game.
    pub const REFERENCE: u32 = 50;
}

impl Selection for Grave {
    fn score(&self, mv: &MoveView) -> f64 {
        let n = f64::from(mv.visits);
        let log_n = f64::from(mv.parent_visits.max(1)).ln();
        let explore = self.exploration * (log_n / n.max(1.0)).sqrt();
        match mv.amaf {
            Some((a, amaf)) if a > 0 => {
                let a = f64::from(a);
                let beta = a / (a + n + self.bias * a * n);
                (1.0 - beta) * mv.mean + beta * amaf + explore
            }
            _ => mv.mean + explore,
        }
    }

    fn amaf_ref(&self) -> Option<u32> {
        Some(self.reference)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grave_trusts_amaf_early_and_the_move_later() {
        let g = Grave {
            exploration: 0.0,
            reference: 50,
            bias: Grave::BIAS,
        };
        let view = |visits, mean, amaf| MoveView {
            visits,
            mean,
            parent_visits: 1000,
            amaf: Some((1000, amaf)),
        };
        // Unvisited: the AMAF mean alone.
        assert_eq!(g.score(&view(0, 0.0, 0.7)), 0.7);
        // Few visits: mostly AMAF; many: mostly the move's own mean.
        assert!(g.score(&view(10, 0.2, 0.8)) > 0.7);
        assert!(g.score(&view(100_000, 0.2, 0.8)) < 0.3);
    }
}
