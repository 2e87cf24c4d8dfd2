//! A state evaluation learnt at the start clock, for any game: counts of facts grouped by
//! their shape, kept only where they correlate with the outcome of random games.
//!
//! **Candidates.** A state's true facts are grouped by functor and, when the last argument is
//! a constant, by that constant too: `(cell 3 4 wq)` counts towards `(cell _ _ wq)` (a piece
//! count on a board), `(control white)` towards `(control white)`. Each group's count is a
//! candidate feature, found from the states themselves, never from a game's name.
//!
//! **Keeping.** Random games are played from the initial state (until the time given or a
//! game count); every state met is sampled with the game's final goal value for our role.
//! A candidate is kept when its Pearson correlation with that goal over the samples is at
//! least [`MIN_CORRELATION`] in size and it varies; the rest are dropped. With no kept
//! feature, or too few samples, there is no heuristic.
//!
//! **Value.** `50 + 50 · tanh(Σ r_i · z_i / k)` on the 0..100 goal scale, where `z_i` is
//! the feature's standardised count, `r_i` its correlation and `k` the number kept.

use std::time::Instant;

use rand::Rng;

use crate::gdl::{Sym, Term};
use crate::machine::{MachineError, StateMachine};

use super::{goal_or_zero, past};

/// The least correlation (in size) for a feature to be kept.
pub const MIN_CORRELATION: f64 = 0.1;
/// The fewest sampled states (and games) to learn from.
const MIN_SAMPLES: usize = 50;
const MIN_GAMES: usize = 10;
/// A random game longer than this is cut, and not sampled.
const MAX_GAME: usize = 1000;

/// A group of facts: functor and last constant argument.
type Key = (Sym, Option<Sym>);

/// One kept feature.
#[derive(Debug, Clone)]
pub struct Feature {
    key: Key,
    mean: f64,
    sd: f64,
    /// The correlation with our final goal.
    pub correlation: f64,
}

impl Feature {
    /// The group counted, e.g. `(cell _ white)`: functor and last constant argument.
    pub fn group(&self) -> String {
        match self.key.1 {
            Some(last) => format!("({} _ {last})", self.key.0),
            None => format!("({})", self.key.0),
        }
    }
}

/// A learnt evaluation for one role.
#[derive(Debug, Clone)]
pub struct Heuristic {
    features: Vec<Feature>,
}

impl Heuristic {
    /// The kept features.
    pub fn features(&self) -> &[Feature] {
        &self.features
    }

    /// The estimated goal value of `state` for the role, 0 to 100.
    pub fn value<M: StateMachine>(&self, machine: &M, state: &M::State) -> f64 {
        let counts = count(&machine.state_terms(state));
        let sum: f64 = self
            .features
            .iter()
            .map(|f| {
                let x = counts.get(&f.key).copied().unwrap_or(0) as f64;
                f.correlation * (x - f.mean) / f.sd
            })
            .sum();
        50.0 + 50.0 * (sum / self.features.len().max(1) as f64).tanh()
    }
}

/// Counts a state's facts per group.
fn count(facts: &[Term]) -> hashbrown::HashMap<Key, u32> {
    let mut counts = hashbrown::HashMap::new();
    for fact in facts {
        let key = match fact {
            Term::Const(s) => (*s, None),
            Term::App(f, args) => match args.last() {
                Some(Term::Const(c)) => (*f, Some(*c)),
                _ => (*f, None),
            },
            Term::Var(_) => continue,
        };
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// Learns a heuristic for `role` from random games until `deadline` or `max_games` games.
/// `None` when too little was seen or nothing correlates.
///
/// # Errors
/// The engine failed.
pub fn learn<M: StateMachine>(
    machine: &mut M,
    role: usize,
    rng: &mut impl Rng,
    deadline: Instant,
    max_games: usize,
) -> Result<Option<Heuristic>, MachineError> {
    let mut samples: Vec<(hashbrown::HashMap<Key, u32>, f64)> = Vec::new();
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    let mut games = 0;
    'games: while games < max_games && !past(deadline) {
        let mut state = machine.initial_state();
        let mut seen = Vec::new();
        for _ in 0..MAX_GAME {
            if machine.is_terminal(&state)? {
                let goal = f64::from(goal_or_zero(machine, &state, role)?);
                samples.extend(seen.into_iter().map(|c| (c, goal)));
                games += 1;
                continue 'games;
            }
            if past(deadline) {
                break 'games;
            }
            seen.push(count(&machine.state_terms(&state)));
            machine.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
            state = machine.next_state_unchecked(&state, &joint)?;
        }
        games += 1;
    }
    Ok(from_samples(&samples, games))
}

/// The heuristic the samples support (see the module documentation).
fn from_samples(
    samples: &[(hashbrown::HashMap<Key, u32>, f64)],
    games: usize,
) -> Option<Heuristic> {
    if samples.len() < MIN_SAMPLES || games < MIN_GAMES {
        return None;
    }
    let n = samples.len() as f64;
    let mut keys: Vec<Key> = samples
        .iter()
        .flat_map(|(c, _)| c.keys().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let goal_mean = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let goal_sd = (samples
        .iter()
        .map(|s| (s.1 - goal_mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    if goal_sd == 0.0 {
        return None;
    }
    let mut features = Vec::new();
    for key in keys {
        let x =
            |s: &(hashbrown::HashMap<Key, u32>, f64)| s.0.get(&key).copied().unwrap_or(0) as f64;
        let mean = samples.iter().map(x).sum::<f64>() / n;
        let sd = (samples.iter().map(|s| (x(s) - mean).powi(2)).sum::<f64>() / n).sqrt();
        if sd < 1e-9 {
            continue;
        }
        let cov = samples
            .iter()
            .map(|s| (x(s) - mean) * (s.1 - goal_mean))
            .sum::<f64>()
            / n;
        let correlation = cov / (sd * goal_sd);
        if correlation.abs() >= MIN_CORRELATION {
            features.push(Feature {
                key,
                mean,
                sd,
                correlation,
            });
        }
    }
    (!features.is_empty()).then_some(Heuristic { features })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(n: u32) -> Sym {
        let text = format!("s{n}");
        crate::gdl::parse_term(&text)
            .ok()
            .and_then(|t| match t {
                Term::Const(s) => Some(s),
                _ => None,
            })
            .expect("a constant")
    }

    #[test]
    fn a_feature_that_does_not_correlate_is_dropped() {
        let (pieces, noise) = ((sym(1), Some(sym(2))), (sym(3), None));
        let samples: Vec<_> = (0..400)
            .map(|i| {
                // Our pieces decide the goal; the other count varies independently of it.
                let ours = (i % 5) as u32;
                let goal = if ours >= 3 { 100.0 } else { 0.0 };
                let counts =
                    hashbrown::HashMap::from([(pieces, ours), (noise, (i / 5 % 5) as u32)]);
                (counts, goal)
            })
            .collect();
        let h = from_samples(&samples, 40).expect("the piece count correlates");
        assert_eq!(h.features().len(), 1);
        assert_eq!(h.features()[0].key, pieces);
        assert!(h.features()[0].correlation > 0.5);
        // Too few games: nothing learnt.
        assert!(from_samples(&samples, 3).is_none());
    }
}
