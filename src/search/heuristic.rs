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
//! A candidate is kept when it varies and its Pearson correlation `r` with that goal over the
//! samples is significant: `|r| · sqrt(games) ≥` [`MIN_SIGMAS`] (states of one game are not
//! independent, so the games count, not the states). Random play hardly cares for material,
//! so the correlations are small (about 0.05 for the piece counts of breakthrough over 4,000
//! games) but their signs are right. With no kept feature, or too few samples, there is no
//! heuristic.
//!
//! **Value.** `50 + 50 · tanh(Σ r_i · z_i / Σ |r_i|)` on the 0..100 goal scale, where `z_i`
//! is the feature's standardised count and `r_i` its correlation: a weighted mean of the
//! standardised counts, so that being one standard deviation ahead on every kept feature is
//! worth about 88.

use std::time::Instant;

use rand::Rng;

use crate::gdl::{Sym, Term};
use crate::machine::{MachineError, StateMachine};

use super::{goal_or_zero, past};

/// The least significance of a kept feature's correlation, in standard errors
/// (`|r| · sqrt(games)`).
pub const MIN_SIGMAS: f64 = 3.0;
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

    /// The sum of the kept correlations' sizes (the divisor inside the `tanh`).
    fn weight(&self) -> f64 {
        self.features
            .iter()
            .map(|f| f.correlation.abs())
            .sum::<f64>()
            .max(1e-9)
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
        50.0 + 50.0 * (sum / self.weight()).tanh()
    }
}

/// The group a fact counts towards.
fn key_of(fact: &Term) -> Option<Key> {
    match fact {
        Term::Const(s) => Some((*s, None)),
        Term::App(f, args) => match args.last() {
            Some(Term::Const(c)) => Some((*f, Some(*c))),
            _ => Some((*f, None)),
        },
        Term::Var(_) => None,
    }
}

/// Counts a state's facts per group.
fn count(facts: &[Term]) -> hashbrown::HashMap<Key, u32> {
    let mut counts = hashbrown::HashMap::new();
    for key in facts.iter().filter_map(key_of) {
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// Every role's heuristic compiled into one weight per fact, for evaluating many states fast.
///
/// A heuristic's value is `50 + 50 · tanh(Σ r_i (x_i − mean_i) / (sd_i · R))`, linear inside
/// the `tanh` in the counts `x_i`; so each fact adds a fixed weight per role and the means
/// make a constant. The weight of a fact is found the first time a state holds it (from the
/// engine's fact ids, [`StateMachine::fact_ids_into`], and one call to `state_terms`), then
/// remembered. Engines without fact ids are evaluated with [`Heuristic::value`].
pub struct Evaluator {
    heuristics: Vec<Option<Heuristic>>,
    /// Per group, one weight per role.
    by_key: hashbrown::HashMap<Key, Box<[f64]>>,
    /// Per role, the constant inside the `tanh`.
    bias: Box<[f64]>,
    /// Per fact id, one weight per role, once known (empty: the fact counts for nothing).
    by_fact: Vec<Option<Box<[f64]>>>,
    ids: Vec<u32>,
    sums: Vec<f64>,
}

impl Evaluator {
    /// The evaluator of one heuristic per role (`None`: that role's value is always 50).
    pub fn new(heuristics: Vec<Option<Heuristic>>) -> Evaluator {
        let n = heuristics.len();
        let mut by_key: hashbrown::HashMap<Key, Box<[f64]>> = hashbrown::HashMap::new();
        let mut bias = vec![0.0; n].into_boxed_slice();
        for (r, h) in heuristics.iter().enumerate() {
            let Some(h) = h else { continue };
            let k = h.weight();
            for f in &h.features {
                let w = f.correlation / (f.sd * k);
                by_key
                    .entry(f.key)
                    .or_insert_with(|| vec![0.0; n].into_boxed_slice())[r] += w;
                bias[r] -= w * f.mean;
            }
        }
        Evaluator {
            heuristics,
            by_key,
            bias,
            by_fact: Vec::new(),
            ids: Vec::new(),
            sums: Vec::new(),
        }
    }

    /// Whether any role has a heuristic.
    pub fn any(&self) -> bool {
        self.heuristics.iter().any(Option::is_some)
    }

    /// Writes every role's estimated goal value of `state`, 0..1, into `out` (cleared first).
    pub fn values<M: StateMachine>(&mut self, machine: &M, state: &M::State, out: &mut Vec<f64>) {
        out.clear();
        if !machine.fact_ids_into(state, &mut self.ids) {
            out.extend(
                self.heuristics
                    .iter()
                    .map(|h| h.as_ref().map_or(0.5, |h| h.value(machine, state) / 100.0)),
            );
            return;
        }
        let unknown = self
            .ids
            .iter()
            .any(|&id| self.by_fact.get(id as usize).is_none_or(Option::is_none));
        if unknown {
            let terms = machine.state_terms(state);
            for (&id, term) in self.ids.iter().zip(&terms) {
                let i = id as usize;
                if self.by_fact.len() <= i {
                    self.by_fact.resize(i + 1, None);
                }
                let w = key_of(term)
                    .and_then(|k| self.by_key.get(&k).cloned())
                    .unwrap_or_default();
                self.by_fact[i] = Some(w);
            }
        }
        self.sums.clear();
        self.sums.extend_from_slice(&self.bias);
        for &id in &self.ids {
            if let Some(Some(w)) = self.by_fact.get(id as usize) {
                for (s, w) in self.sums.iter_mut().zip(w.iter()) {
                    *s += w;
                }
            }
        }
        for (r, h) in self.heuristics.iter().enumerate() {
            out.push(if h.is_some() {
                0.5 + 0.5 * self.sums[r].tanh()
            } else {
                0.5
            });
        }
    }
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
    let mut all = learn_roles(machine, rng, deadline, max_games)?;
    Ok(if role < all.len() {
        all.swap_remove(role)
    } else {
        None
    })
}

/// Learns one heuristic per role (each from its own final goal) from the same random games,
/// until `deadline` or `max_games` games.
///
/// # Errors
/// The engine failed.
pub fn learn_roles<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    deadline: Instant,
    max_games: usize,
) -> Result<Vec<Option<Heuristic>>, MachineError> {
    let n_roles = machine.roles().len();
    // Per sampled state: its counts and the index of its game's goals in `goals`.
    let mut states: Vec<(hashbrown::HashMap<Key, u32>, usize)> = Vec::new();
    let mut goals: Vec<Vec<f64>> = Vec::new();
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    let mut games = 0;
    'games: while games < max_games && !past(deadline) {
        let mut state = machine.initial_state();
        let mut seen = Vec::new();
        for _ in 0..MAX_GAME {
            if machine.is_terminal(&state)? {
                let values = (0..n_roles)
                    .map(|r| goal_or_zero(machine, &state, r).map(f64::from))
                    .collect::<Result<Vec<f64>, _>>()?;
                states.extend(seen.into_iter().map(|c| (c, goals.len())));
                goals.push(values);
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
    let out = (0..n_roles)
        .map(|r| {
            let samples: Vec<_> = states
                .iter()
                .map(|(c, g)| (c.clone(), goals[*g][r]))
                .collect();
            from_samples(&samples, games)
        })
        .collect();
    Ok(out)
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
        if correlation.abs() * (games as f64).sqrt() >= MIN_SIGMAS {
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
