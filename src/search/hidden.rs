//! Playing without looking (GDL-II): a [`Belief`] over the states consistent with what our
//! role did and saw, and [`HiddenPlayer`], which searches over states drawn from it.
//!
//! The belief is a weighted set of states. Each turn it is advanced by every joint move in
//! which our move is the one we really played, the other roles' moves taken as uniformly
//! random (nature's are; for opponents it is our model), and a successor is kept only if it
//! gives us exactly the percepts we received. The weights are the probabilities of the other
//! roles' moves, so that the belief is the posterior under that model (in Monty Hall, the car
//! is behind the other closed door with weight 2/3, not 1/2). While a state has few joint
//! moves they are all tried; past [`MAX_JOINTS`], a sample of them. When the set grows past
//! its cap it is resampled by weight, as HyperPlay keeps a bag of sampled states; when
//! sampling has lost every consistent state, the belief is rebuilt from the start of the
//! match with the history of our moves and percepts.
//!
//! **Invariant:** nothing here reads the true state of the match: a belief is made from the
//! initial state, our own moves and our own percepts only.

use std::collections::HashMap;
use std::time::Instant;

use rand::Rng;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{Choice, SearchError, goal_or_zero};
use crate::gdl::Term;
use crate::machine::{MachineError, StateMachine};

/// Most joint moves of the other roles tried from one state in one update; past it, this
/// many are sampled.
pub const MAX_JOINTS: usize = 4096;

/// One turn as our role knows it: the move that was played for us and what we saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation<Mv> {
    /// Our move.
    pub mv: Mv,
    /// Our percepts, sorted, without repeats.
    pub percepts: Vec<Term>,
}

/// The states our role cannot tell apart from the true one, with their probabilities.
#[derive(Debug, Clone)]
pub struct Belief<S> {
    role: usize,
    cap: usize,
    states: Vec<(S, f64)>,
    /// The last state known for certain (the initial state, at first).
    root: S,
    /// Our moves and percepts since `root`, for rebuilding.
    history: Vec<(Term, Vec<Term>)>,
}

/// Why a belief could not follow the match.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BeliefError {
    /// The engine failed.
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// No state of the game is consistent with our moves and percepts.
    #[error("no state is consistent with our moves and percepts")]
    Inconsistent,
}

impl<S: Clone + Eq + std::hash::Hash> Belief<S> {
    /// The belief at the start of a match: the initial state, for role number `role`,
    /// keeping at most `cap` states.
    pub fn new<M: StateMachine<State = S>>(machine: &M, role: usize, cap: usize) -> Belief<S> {
        Belief::known(machine.initial_state(), role, cap)
    }

    /// The belief of a role that knows the state is `state`.
    pub fn known(state: S, role: usize, cap: usize) -> Belief<S> {
        Belief {
            role,
            cap: cap.max(1),
            states: vec![(state.clone(), 1.0)],
            root: state,
            history: Vec::new(),
        }
    }

    /// The most states kept.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The states and their probabilities (summing to 1).
    pub fn states(&self) -> &[(S, f64)] {
        &self.states
    }

    /// The role whose belief this is.
    pub fn role(&self) -> usize {
        self.role
    }

    /// A state drawn by probability.
    pub fn sample(&self, rng: &mut impl Rng) -> &S {
        let mut x: f64 = rng.random::<f64>();
        for (s, w) in &self.states {
            if x < *w {
                return s;
            }
            x -= w;
        }
        &self.states[self.states.len() - 1].0
    }

    /// Follows one turn: `mv` was played for us and we saw `percepts` (in any order). With a
    /// `deadline`, states not expanded by then are dropped (they are in no particular order,
    /// so the rest is a sample).
    ///
    /// # Errors
    /// The engine failed, or no state is consistent with what we saw (even after a rebuild
    /// from the last known state).
    pub fn update<M>(
        &mut self,
        machine: &mut M,
        mv: &Term,
        percepts: &[Term],
        deadline: Option<Instant>,
        rng: &mut impl Rng,
    ) -> Result<(), BeliefError>
    where
        M: StateMachine<State = S>,
    {
        let mut percepts = percepts.to_vec();
        percepts.sort();
        percepts.dedup();
        self.history.push((mv.clone(), percepts));
        let (mv, percepts) = self.history.last().expect("just pushed");
        let next = step(
            machine,
            &self.states,
            self.role,
            (mv, percepts),
            self.cap,
            deadline,
            rng,
        )?;
        if !next.is_empty() {
            self.states = next;
            return Ok(());
        }
        // Sampling lost every consistent state: rebuild from the root, keeping more.
        let mut states = vec![(self.root.clone(), 1.0)];
        let cap = self.cap.saturating_mul(4);
        for (mv, percepts) in &self.history {
            states = step(machine, &states, self.role, (mv, percepts), cap, None, rng)?;
            if states.is_empty() {
                return Err(BeliefError::Inconsistent);
            }
        }
        self.states = resample(states, self.cap, rng);
        Ok(())
    }
}

/// The successors of `states` consistent with our move `mv` and our `percepts` (sorted),
/// weighted and resampled down to `cap`; empty if none is.
fn step<M: StateMachine>(
    machine: &mut M,
    states: &[(M::State, f64)],
    role: usize,
    (mv, percepts): (&Term, &[Term]),
    cap: usize,
    deadline: Option<Instant>,
    rng: &mut impl Rng,
) -> Result<Vec<(M::State, f64)>, BeliefError> {
    let roles = machine.roles().len();
    let mut next = Weighted::default();
    let mut seen = Vec::new();
    let mut legal: Vec<Vec<M::Move>> = vec![Vec::new(); roles];
    let mut joint = Vec::with_capacity(roles);
    for (state, weight) in states {
        if deadline.is_some_and(|d| Instant::now() >= d) && !next.states.is_empty() {
            break;
        }
        if machine.is_terminal(state)? {
            continue;
        }
        let mut combos = 1usize;
        let mut ok = true;
        for (r, moves) in legal.iter_mut().enumerate() {
            moves.clear();
            if r == role {
                match our_move(machine, state, role, mv)? {
                    Some(our) => moves.push(our),
                    None => {
                        ok = false;
                        break;
                    }
                }
            } else {
                machine.legal_moves_into(state, r, moves)?;
                if moves.is_empty() {
                    ok = false;
                    break;
                }
            }
            combos = combos.saturating_mul(moves.len());
        }
        if !ok {
            continue;
        }
        let tries = combos.min(MAX_JOINTS);
        let each = weight / tries as f64;
        for t in 0..tries {
            joint.clear();
            // All joint moves in order while there are few; else a random sample.
            let mut k = t;
            for moves in &legal {
                let i = if combos <= MAX_JOINTS {
                    let i = k % moves.len();
                    k /= moves.len();
                    i
                } else {
                    rng.random_range(0..moves.len())
                };
                joint.push(moves[i]);
            }
            seen.clear();
            machine.percepts_into(state, &joint, role, &mut seen)?;
            if seen.as_slice() != percepts {
                continue;
            }
            let successor = machine.next_state_unchecked(state, &joint)?;
            next.add(successor, each);
        }
    }
    Ok(resample(next.states, cap, rng))
}

/// Our legal move in `state` that `mv` names (ignoring case, for referees that change it),
/// if it is legal there.
fn our_move<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    role: usize,
    mv: &Term,
) -> Result<Option<M::Move>, MachineError> {
    let legal = machine.legal_moves(state, role)?;
    if let Some(&m) = legal.iter().find(|&&m| machine.move_term(m) == *mv) {
        return Ok(Some(m));
    }
    let wanted = mv.to_string();
    Ok(legal.into_iter().find(|&m| {
        machine
            .move_term(m)
            .to_string()
            .eq_ignore_ascii_case(&wanted)
    }))
}

/// Weighted states in the order they were first added (so that a belief depends only on
/// what was observed, never on a hasher's seed).
struct Weighted<S> {
    states: Vec<(S, f64)>,
    index: HashMap<S, usize>,
}

impl<S> Default for Weighted<S> {
    fn default() -> Self {
        Weighted {
            states: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<S: Clone + Eq + std::hash::Hash> Weighted<S> {
    fn add(&mut self, state: S, weight: f64) {
        match self.index.get(&state) {
            Some(&i) => self.states[i].1 += weight,
            None => {
                self.index.insert(state.clone(), self.states.len());
                self.states.push((state, weight));
            }
        }
    }
}

/// Normalises the weights and, past `cap` states, keeps `cap` drawn by weight (systematic
/// resampling), each with its share of the draws.
fn resample<S: Clone + Eq + std::hash::Hash>(
    mut states: Vec<(S, f64)>,
    cap: usize,
    rng: &mut impl Rng,
) -> Vec<(S, f64)> {
    let total: f64 = states.iter().map(|(_, w)| w).sum();
    if states.is_empty() || total <= 0.0 {
        return Vec::new();
    }
    if states.len() > cap {
        let step = total / cap as f64;
        let mut at = rng.random::<f64>() * step;
        let mut kept = Weighted::default();
        let mut acc = 0.0;
        for (s, w) in &states {
            acc += w;
            while at < acc {
                kept.add(s.clone(), step);
                at += step;
            }
        }
        states = kept.states;
    }
    let total: f64 = states.iter().map(|(_, w)| w).sum();
    for (_, w) in &mut states {
        *w /= total;
    }
    states
}

/// A player for games with hidden information: for each of our legal moves, random
/// playouts from states drawn from the belief (with our move first), and the move with the
/// best mean goal. Our legal moves are read in a state of the belief: in a GDL-II game they
/// never depend on what we cannot see.
pub struct HiddenPlayer {
    rng: Xoshiro256PlusPlus,
    max_iterations: Option<u64>,
}

impl HiddenPlayer {
    /// A player seeded with `seed`; `max_iterations` bounds the playouts of one choice.
    pub fn new(seed: u64, max_iterations: Option<u64>) -> HiddenPlayer {
        HiddenPlayer {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            max_iterations,
        }
    }

    /// Our legal moves in the belief.
    ///
    /// # Errors
    /// The engine failed.
    pub fn legal<M: StateMachine>(
        machine: &mut M,
        belief: &Belief<M::State>,
    ) -> Result<Vec<M::Move>, MachineError> {
        match belief.states().first() {
            Some((s, _)) => machine.legal_moves(s, belief.role()),
            None => Ok(Vec::new()),
        }
    }

    /// Chooses a move by `deadline`.
    ///
    /// # Errors
    /// We have no legal move, or the engine failed on every playout.
    pub fn choose<M: StateMachine>(
        &mut self,
        machine: &mut M,
        belief: &Belief<M::State>,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        let role = belief.role();
        let moves = Self::legal(machine, belief)?;
        if moves.is_empty() {
            return Err(SearchError::NoMove);
        }
        let mut sums = vec![0.0f64; moves.len()];
        let mut counts = vec![0u64; moves.len()];
        let mut iterations = 0u64;
        let (mut joint, mut scratch) = (Vec::new(), Vec::new());
        'search: while Instant::now() < deadline
            && self.max_iterations.is_none_or(|n| iterations < n)
        {
            for (i, &mv) in moves.iter().enumerate() {
                let state = belief.sample(&mut self.rng).clone();
                let result = (|| -> Result<u8, MachineError> {
                    machine.random_joint_move_into(
                        &state,
                        &mut self.rng,
                        &mut joint,
                        &mut scratch,
                    )?;
                    joint[role] = mv;
                    let next = machine.next_state_unchecked(&state, &joint)?;
                    let mut s = next;
                    for _ in 0..10_000 {
                        if machine.is_terminal(&s)? {
                            break;
                        }
                        machine.random_joint_move_into(
                            &s,
                            &mut self.rng,
                            &mut joint,
                            &mut scratch,
                        )?;
                        s = machine.next_state_unchecked(&s, &joint)?;
                    }
                    goal_or_zero(machine, &s, role)
                })();
                iterations += 1;
                if let Ok(g) = result {
                    sums[i] += f64::from(g);
                    counts[i] += 1;
                }
                if Instant::now() >= deadline {
                    break 'search;
                }
            }
        }
        let mean = |i: usize| {
            if counts[i] == 0 {
                -1.0
            } else {
                sums[i] / counts[i] as f64
            }
        };
        let best = (0..moves.len())
            .max_by(|&a, &b| mean(a).total_cmp(&mean(b)))
            .expect("moves is not empty");
        Ok(Choice {
            mv: moves[best],
            iterations,
            value: (counts[best] > 0).then(|| mean(best)),
            proven: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datalog::DatalogMachine;
    use crate::gdl::{Description, parse_term};

    /// Monty Hall as published (../shared/games/gdl2/montyhall.kif).
    const MONTY: &str = "(role candidate) (role random)
        (init (closed 1)) (init (closed 2)) (init (closed 3)) (init (step 1))
        (<= (legal random (hide_car ?d)) (true (step 1)) (true (closed ?d)))
        (<= (legal random (open_door ?d)) (true (step 2)) (true (closed ?d))
            (not (true (car ?d))) (not (true (chosen ?d))))
        (<= (legal random noop) (true (step 3)))
        (<= (legal candidate (choose ?d)) (true (step 1)) (true (closed ?d)))
        (<= (legal candidate noop) (true (step 2)))
        (<= (legal candidate switch) (true (step 3)))
        (<= (legal candidate noop) (true (step 3)))
        (<= (sees candidate (does candidate ?m)) (does candidate ?m))
        (<= (sees candidate (open_door ?d)) (does random (open_door ?d)))
        (<= (next (car ?d)) (does random (hide_car ?d)))
        (<= (next (car ?d)) (true (car ?d)))
        (<= (next (closed ?d)) (true (closed ?d)) (not (does random (open_door ?d))))
        (<= (next (chosen ?d)) (next_chosen ?d))
        (<= (next_chosen ?d) (does candidate (choose ?d)))
        (<= (next_chosen ?d) (true (chosen ?d)) (not (does candidate switch)))
        (<= (next_chosen ?d) (does candidate switch) (true (closed ?d)) (not (true (chosen ?d))))
        (<= (next (step 2)) (true (step 1))) (<= (next (step 3)) (true (step 2)))
        (<= (next (step 4)) (true (step 3)))
        (<= (sees candidate (car ?d)) (true (step 3)) (true (car ?d)) (next_chosen ?d))
        (<= terminal (true (step 4)))
        (goal random 100)
        (<= (goal candidate 100) (true (chosen ?d)) (true (car ?d)))
        (<= (goal candidate 0) (true (chosen ?d)) (not (true (car ?d))))";

    fn machine() -> DatalogMachine {
        DatalogMachine::new(&Description::from_text(MONTY).unwrap()).unwrap()
    }

    fn t(text: &str) -> Term {
        parse_term(text).unwrap()
    }

    /// Plays the true match where the car is behind `car`, the candidate chooses door 1 and
    /// the host opens `open`; returns the candidate's belief, built from its own moves and
    /// the percepts the rules give it in the true states only.
    fn belief_after(
        m: &mut DatalogMachine,
        car: &str,
        open: &str,
    ) -> Belief<crate::datalog::DatalogState> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut belief = Belief::new(m, 0, 100);
        let mut state = m.initial_state();
        for (ours, nature) in [
            ("(choose 1)", format!("(hide_car {car})")),
            ("noop", format!("(open_door {open})")),
        ] {
            m.legal_moves(&state, 0).unwrap();
            m.legal_moves(&state, 1).unwrap();
            let joint = [
                m.find_move(&t(ours)).unwrap(),
                m.find_move(&t(&nature)).unwrap(),
            ];
            let percepts = m.percepts(&state, &joint, 0).unwrap();
            state = m.next_state(&state, &joint).unwrap();
            belief
                .update(m, &t(ours), &percepts, None, &mut rng)
                .unwrap();
        }
        belief
    }

    #[test]
    fn the_belief_is_the_posterior() {
        let mut m = machine();
        let belief = belief_after(&mut m, "2", "3");
        // Car behind 1 (the host chose door 3 of two) or 2 (the host had to): 1/3 and 2/3.
        let mut weights: Vec<(String, f64)> = belief
            .states()
            .iter()
            .map(|(s, w)| {
                let car = m
                    .state_terms(s)
                    .into_iter()
                    .find(|f| f.to_string().starts_with("(car"))
                    .unwrap();
                (car.to_string(), *w)
            })
            .collect();
        weights.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(weights.len(), 2);
        assert_eq!(weights[0].0, "(car 1)");
        assert!((weights[0].1 - 1.0 / 3.0).abs() < 1e-9, "{weights:?}");
        assert!((weights[1].1 - 2.0 / 3.0).abs() < 1e-9, "{weights:?}");
    }

    #[test]
    fn choices_do_not_depend_on_hidden_facts() {
        let mut m = machine();
        // The same moves and percepts for the candidate; the car is behind door 1 in one
        // match and behind door 2 in the other.
        let a = belief_after(&mut m, "1", "3");
        let b = belief_after(&mut m, "2", "3");
        let far = Instant::now() + std::time::Duration::from_secs(60);
        let mut switches = 0;
        for seed in 0..20 {
            let mut pa = HiddenPlayer::new(seed, Some(60));
            let mut pb = HiddenPlayer::new(seed, Some(60));
            let ca = pa.choose(&mut m, &a, far).unwrap();
            let cb = pb.choose(&mut m, &b, far).unwrap();
            assert_eq!(ca.mv, cb.mv, "seed {seed}");
            assert_eq!(ca.value, cb.value, "seed {seed}");
            if m.move_term(ca.mv) == t("switch") {
                switches += 1;
            }
        }
        // Switching wins two times in three: the player switches nearly always.
        assert!(switches >= 18, "switched {switches} times in 20");
    }
}
