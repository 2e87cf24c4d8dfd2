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

/// The share of a simultaneous node's samples spread evenly over a role's moves, whatever
/// their regrets (regret matching's exploration, γ).
pub(super) const REGRET_EXPLORATION: f64 = 0.1;

/// What regret matching keeps for one move of one role at a simultaneous node.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Regret {
    /// The cumulative regret of not having played this move, estimated from samples.
    pub(super) regret: f64,
    /// The sum of the move's probability in the strategies played here (the average
    /// strategy, unnormalised).
    pub(super) strategy: f64,
}

/// Regret matching (Hart and Mas-Colell) for one role at a simultaneous node, as in
/// Lanctot, Lisý and Winands, "Monte Carlo Tree Search in Simultaneous Move Games with
/// Applications to Goofspiel" (2013): each move in proportion to its positive regret (all alike
/// while none is positive), mixed with [`REGRET_EXPLORATION`]. Samples a move with `x`, uniform
/// in 0..1, adds the strategy to the average strategy, and returns the move and the
/// probability it was sampled with.
pub(super) fn regret_matching(regrets: &mut [Regret], x: f64) -> (usize, f64) {
    let k = regrets.len() as f64;
    let positive: f64 = regrets.iter().map(|g| g.regret.max(0.0)).sum();
    let mut chosen = None;
    let mut cumulative = 0.0;
    for (i, g) in regrets.iter_mut().enumerate() {
        let p = if positive > 0.0 {
            g.regret.max(0.0) / positive
        } else {
            1.0 / k
        };
        g.strategy += p;
        let sampled = (1.0 - REGRET_EXPLORATION) * p + REGRET_EXPLORATION / k;
        cumulative += sampled;
        if chosen.is_none() && x < cumulative {
            chosen = Some((i, sampled));
        }
    }
    chosen.unwrap_or_else(|| {
        // Rounding left `x` past the last cumulative sum: the last move.
        let last = regrets.len() - 1;
        let p = regrets[last].regret.max(0.0) / positive.max(f64::MIN_POSITIVE);
        let p = if positive > 0.0 { p } else { 1.0 / k };
        (
            last,
            (1.0 - REGRET_EXPLORATION) * p + REGRET_EXPLORATION / k,
        )
    })
}

/// The regret update after a sample: the move `chosen`, sampled with probability `chance`,
/// earned `reward`; every move's regret grows by its importance-weighted estimate (the
/// reward over the chance for the chosen move, nothing for the others) less the reward.
pub(super) fn add_regret(regrets: &mut [Regret], chosen: usize, chance: f64, reward: f64) {
    for (i, g) in regrets.iter_mut().enumerate() {
        let estimate = if i == chosen { reward / chance } else { 0.0 };
        g.regret += estimate - reward;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regret_matching_is_even_without_regret_and_follows_positive_regret() {
        let mut regrets = vec![Regret::default(); 4];
        // No positive regret: every move alike.
        let (i, chance) = regret_matching(&mut regrets, 0.6);
        assert_eq!(i, 2);
        assert!((chance - 0.25).abs() < 1e-12);
        assert!(regrets.iter().all(|g| (g.strategy - 0.25).abs() < 1e-12));
        // Only move 3 has positive regret: it gets all but the exploration.
        regrets[1].regret = -2.0;
        regrets[3].regret = 1.5;
        let (i, chance) = regret_matching(&mut regrets, 0.99);
        assert_eq!(i, 3);
        assert!((chance - (0.9 + 0.1 / 4.0)).abs() < 1e-12);
        assert!((regrets[3].strategy - 1.25).abs() < 1e-12);
        // Moves without positive regret are sampled only by exploration.
        let (i, chance) = regret_matching(&mut regrets, 0.01);
        assert_eq!(i, 0);
        assert!((chance - 0.025).abs() < 1e-12);
    }

    #[test]
    fn a_sample_raises_the_regret_of_the_moves_that_did_better() {
        let mut regrets = vec![Regret::default(); 2];
        // Move 0, sampled with chance 0.5, earned 0.2: its estimate 0.4 is above the
        // reward, move 1's (nothing seen) below it.
        add_regret(&mut regrets, 0, 0.5, 0.2);
        assert!((regrets[0].regret - 0.2).abs() < 1e-12);
        assert!((regrets[1].regret + 0.2).abs() < 1e-12);
    }
}
