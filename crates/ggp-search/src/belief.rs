//! Knowing without looking (GDL-II): a [`Belief`] over the states consistent with what our
//! role did and saw. The player server's tracker and worker, `ggp play` and the
//! information-set search (`search::hidden`, which searches over states drawn from it) all
//! follow one.
//!
//! The belief is a weighted set of states (a particle filter). Each turn every state is
//! advanced by joint moves in which our move is the one we really played, the other roles'
//! moves taken as uniformly random (nature's are; for opponents it is our model), and a
//! successor is kept only if it gives us exactly the percepts we received. The weights are
//! the probabilities of the other roles' moves, so that the belief is the posterior under that
//! model (in Monty Hall, the car is behind the other closed door with weight 2/3, not 1/2).
//! A state with few joint moves has them all tried (exact); past that, joint moves are tried
//! in a random order without repeats until enough consistent ones are found or a bounded
//! number of tries is spent, and each consistent successor carries the estimated share of its
//! parent's weight. When the
//! set grows past its cap it is resampled by weight, as HyperPlay keeps a bag of sampled
//! states. Each state keeps the joint moves that led to it (shared by prefix). When every
//! state dies (resampling keeps few histories of the early steps, and a later percept can rule
//! out all of them), the belief is rebuilt by repairing those histories: the near misses are
//! kept as far as they fit and one earlier step is changed (see [`Belief::update`]). Where
//! that finds nothing in half the time left, a depth-first search over whole histories from
//! the root (HyperPlay's backtracking, [`Backtrack`]) takes the rest: it is complete (it finds
//! a consistent history whenever one exists, given time, and knows when none does), and it is
//! kept from update to update, so that it goes on where it stopped and extends first the
//! history it last found.
//!
//! **Time:** an update never enumerates without bound. Given a deadline, states are expanded
//! in random order until it passes (those left are dropped: the rest is a sample); past it,
//! only until one consistent successor is known, and never past a hard stop half as far again.
//! A belief that could not find a consistent state by then is *lost*: it keeps going with
//! successors that ignore the percepts, and tries the rebuild again at the next update from
//! those histories (so the search carries over from turn to turn). Our moves are those legal
//! in every state of the belief ([`Belief::our_moves`]): with a lost belief, in every guess
//! where the guesses agree.
//!
//! **Invariant:** nothing here reads the true state of the match: a belief is made from the
//! initial state, our own moves and our own percepts only.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use rand::seq::SliceRandom;

use ggp_engine::machine::{MachineError, StateMachine};
use ggp_gdl::gdl::Term;

/// A state with at most this many joint moves (ours fixed) has them all tried.
const EXACT_MAX: usize = 256;
/// Most joint moves tried from one state with more, and most remembered in one update.
const MAX_TRIES: usize = 4096;
/// Most joint moves tried from one state when looking for one that fits (a rebuild).
const FIT_TRIES: usize = 1024;
/// Most states kept while rebuilding a belief (a smaller bag, rebuilt faster).
const REBUILD_CAP: usize = 256;
/// Histories wanted when rebuilding a belief without a deadline (a few alike, not one: one
/// history alone would tell a role everything), and the most looked for.
const REBUILD_BOUNDED: usize = 16;
const REBUILD_ATTEMPTS: usize = 4 * REBUILD_BOUNDED;
/// Histories in a row ending in a state already found after which a rebuild without a deadline
/// stops: the consistent states are likely few, and found.
const REBUILD_REPEATS: usize = 1;
/// Alternatives tried per earlier step when one changed step should make a later one fit.
const SWAP_TRIES: usize = 8;
/// Most states whose legal moves are compared for our moves (see [`Belief::our_moves`]).
const LEGAL_CHECKED: usize = 64;

/// One turn as our role knows it: the move that was played for us and what we saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation<Mv> {
    /// Our move.
    pub mv: Mv,
    /// Our percepts, sorted, without repeats.
    pub percepts: Vec<Term>,
}

/// The states our role cannot tell apart from the true one, with their probabilities; `Mv` is
/// the engine's move.
#[derive(Debug, Clone)]
pub struct Belief<S, Mv> {
    role: usize,
    cap: usize,
    states: Vec<(S, f64)>,
    /// Per state, a history of joint moves from `root` that leads to it (one that fits every
    /// percept, unless the belief is lost): what a rebuild repairs when every state dies.
    paths: Vec<Path<Mv>>,
    /// The last state known for certain (the initial state, at first).
    root: S,
    /// Our moves and percepts since `root`, for rebuilding.
    history: Vec<(Term, Vec<Term>)>,
    /// Whether `states` are a guess that ignores some percepts (see the module doc).
    lost: bool,
    /// The complete search over histories, where it stopped (see [`Backtrack`]).
    backtrack: Backtrack<S, Mv>,
    /// Joint moves checked against percepts by the updates so far.
    checked: u64,
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

/// When an update should stop expanding states: `soft`, once something consistent is known;
/// `hard`, whatever it has.
#[derive(Debug, Clone, Copy)]
struct Budget {
    soft: Option<Instant>,
    hard: Option<Instant>,
}

impl Budget {
    fn new(deadline: Option<Instant>) -> Budget {
        let now = Instant::now();
        Budget {
            soft: deadline,
            hard: deadline
                .map(|d| d + (d.saturating_duration_since(now) / 2).max(Duration::from_millis(20))),
        }
    }

    /// Whether to stop, `found` being whether a consistent successor is known.
    /// The first half of what is left of this budget (unbounded stays unbounded).
    fn first_half(&self) -> Budget {
        let now = Instant::now();
        let half = |at: Option<Instant>| at.map(|t| now + t.saturating_duration_since(now) / 2);
        Budget {
            soft: half(self.soft),
            hard: half(self.hard),
        }
    }

    fn over(&self, found: bool) -> bool {
        let now = Instant::now();
        self.hard.is_some_and(|h| now >= h) || (found && self.soft.is_some_and(|s| now >= s))
    }
}

impl<S: Clone + Eq + std::hash::Hash, Mv: Copy + Eq + std::hash::Hash> Belief<S, Mv> {
    /// The belief at the start of a match: the initial state, for role number `role`,
    /// keeping at most `cap` states.
    pub fn new<M: StateMachine<State = S, Move = Mv>>(
        machine: &M,
        role: usize,
        cap: usize,
    ) -> Belief<S, Mv> {
        Belief::known(machine.initial_state(), role, cap)
    }

    /// The belief of a role that knows the state is `state`.
    pub fn known(state: S, role: usize, cap: usize) -> Belief<S, Mv> {
        Belief {
            role,
            cap: cap.max(1),
            states: vec![(state.clone(), 1.0)],
            paths: vec![None],
            backtrack: Backtrack::new(state.clone()),
            root: state,
            history: Vec::new(),
            lost: false,
            checked: 0,
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

    /// How many joint moves the updates so far have checked against our percepts: the work
    /// they did, whatever the engine's speed.
    pub fn checked(&self) -> u64 {
        self.checked
    }

    /// Whether the states are a guess: no state consistent with every percept was found in
    /// the time given (the next update tries again).
    pub fn is_lost(&self) -> bool {
        self.lost
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

    /// The facts true in every state of the belief: what our role knows of the state (with a
    /// sampled belief, what it knows as far as the sample tells), sorted.
    pub fn known_facts<M: StateMachine<State = S, Move = Mv>>(&self, machine: &M) -> Vec<Term> {
        let mut states = self.states.iter();
        let Some((first, _)) = states.next() else {
            return Vec::new();
        };
        let mut known = machine.state_terms(first);
        known.sort();
        known.dedup();
        for (s, _) in states {
            let facts: std::collections::HashSet<Term> =
                machine.state_terms(s).into_iter().collect();
            known.retain(|f| facts.contains(f));
            if known.is_empty() {
                break;
            }
        }
        known
    }

    /// Follows one turn: `mv` was played for us and we saw `percepts` (in any order). With a
    /// `deadline`, the update stops as the module doc says and never fails for want of time;
    /// without one, it does a bounded amount of work, the same whatever the machine's load (a
    /// rebuild gathers a few histories, not one).
    ///
    /// # Errors
    /// The engine failed, or (without a deadline) no state consistent with what we saw was
    /// found, even after rebuilding from the last known state.
    pub fn update<M>(
        &mut self,
        machine: &mut M,
        mv: &Term,
        percepts: &[Term],
        deadline: Option<Instant>,
        rng: &mut impl Rng,
    ) -> Result<(), BeliefError>
    where
        M: StateMachine<State = S, Move = Mv>,
    {
        let budget = Budget::new(deadline);
        let mut percepts = percepts.to_vec();
        percepts.sort();
        percepts.dedup();
        self.history.push((mv.clone(), percepts));
        let (mv, percepts) = self.history.last().expect("just pushed");
        if !self.lost {
            let next = step(
                machine,
                (&self.states, &self.paths),
                self.role,
                (mv, percepts),
                self.cap,
                (&budget, &mut self.checked),
                rng,
            )?;
            if !next.states.is_empty() {
                (self.states, self.paths) = resample(next, self.cap, rng);
                return Ok(());
            }
        }
        let mv = mv.clone();
        // Repairing near misses first, in half of what is left; then the backtracking search,
        // which is complete, to the end.
        let mut fit = Fit::new(machine.roles().len());
        let mut rebuilt = self.rebuild(machine, &mut fit, &budget.first_half(), rng)?;
        if rebuilt.is_none() {
            rebuilt = self.backtrack(machine, &mut fit, &budget, rng)?;
        }
        self.checked += fit.checked;
        if let Some(found) = rebuilt {
            (self.states, self.paths) = resample(found, self.cap, rng);
            self.lost = false;
            return Ok(());
        }
        if deadline.is_none() || self.backtrack.exhausted {
            return Err(BeliefError::Inconsistent);
        }
        let guess = blind_step(machine, (&self.states, &self.paths), self.role, &mv, rng)?;
        if !guess.states.is_empty() {
            (self.states, self.paths) = resample(guess, usize::MAX, rng);
        }
        self.lost = true;
        Ok(())
    }

    /// Our moves by what we know: those legal in every state of the belief that is not over
    /// (of the first [`LEGAL_CHECKED`]), so that a move is legal in the true state whenever
    /// the belief holds it; if no move is legal in all of them (a lost belief's guesses
    /// disagree), those legal in the most. If every state is over, the moves legal in them
    /// (empty only if there are none).
    ///
    /// # Errors
    /// The engine failed.
    pub fn our_moves<M: StateMachine<State = S, Move = Mv>>(
        &self,
        machine: &mut M,
    ) -> Result<Vec<Mv>, MachineError> {
        let mut counts: Vec<(Mv, usize)> = Vec::new();
        let mut index: HashMap<Mv, usize> = HashMap::new();
        let mut checked = 0;
        let mut legal = Vec::new();
        // When we are asked for a move the game is not over, so states where it is are wrong;
        // but if every state is (a small sample can be), their legal moves are the best guess.
        let mut over = Vec::with_capacity(self.states.len());
        for (s, _) in &self.states {
            over.push(machine.is_terminal(s)?);
        }
        let all_over = over.iter().all(|&o| o);
        for ((s, _), &over) in self.states.iter().zip(&over) {
            if checked == LEGAL_CHECKED {
                break;
            }
            if over && !all_over {
                continue;
            }
            checked += 1;
            legal.clear();
            machine.legal_moves_into(s, self.role, &mut legal)?;
            for &m in &legal {
                match index.get(&m) {
                    Some(&i) => counts[i].1 += 1,
                    None => {
                        index.insert(m, counts.len());
                        counts.push((m, 1));
                    }
                }
            }
        }
        let most = counts.iter().map(|&(_, n)| n).max().unwrap_or(0);
        Ok(counts
            .into_iter()
            .filter(|&(_, n)| n == most)
            .map(|(m, _)| m)
            .collect())
    }

    /// States at the end of histories consistent with ours, or `None` if none was found within
    /// the budget (or, without a deadline, a bounded search).
    ///
    /// Filtering forward again would meet the same dead end (every state drawn holds a hidden
    /// fact that a later percept rules out), so the rebuild repairs whole histories instead.
    /// It starts from the histories of the states that just died (each fits every percept but
    /// the last: a near miss, carried over from turn to turn while the belief is lost), keeps
    /// their joint moves as long as they fit, and where a step does not fit it changes the
    /// joint move of one earlier step, replaying the later ones unchanged (in a card deal: the
    /// card we were just dealt had gone to another hand; give that hand a card still in the
    /// pool instead), or else of an earlier step drawn at random, replaying the later ones
    /// where they still fit (a local search over histories, in the spirit of HyperPlay's
    /// backtracking). Each history found gives one state.
    fn rebuild<M: StateMachine<State = S, Move = Mv>>(
        &self,
        machine: &mut M,
        fit: &mut Fit<Mv>,
        budget: &Budget,
        rng: &mut impl Rng,
    ) -> Result<Option<Weighted<S, Mv>>, BeliefError> {
        let mut found = Weighted::default();
        let mut dead: Vec<Vec<Vec<Mv>>> = self.paths.iter().map(joints_of).collect();
        dead.shuffle(rng);
        if dead.is_empty() {
            dead.push(Vec::new());
        }
        // Without a deadline: this many changes of an earlier step in all.
        let mut repairs_left = 64 * (self.history.len() + 1);
        let mut start = Instant::now();
        let mut spent = Duration::ZERO;
        let mut attempt = 0;
        // Histories in a row that ended in a state already found.
        let mut repeats = 0;
        while found.states.len() < REBUILD_CAP {
            let seed = &dead[attempt % dead.len()];
            attempt += 1;
            let before = repairs_left;
            match self.find_history(machine, fit, seed, budget, &mut repairs_left, rng)? {
                Some((state, joints)) => {
                    let had = found.states.len();
                    found.add(state, 1.0, path_of(&joints));
                    repeats = if found.states.len() == had {
                        repeats + 1
                    } else {
                        0
                    };
                }
                // This history could not be repaired in its share of the search: the next,
                // while there is time (or, without a deadline, repairs that get spent).
                None => {
                    let more = match budget.hard {
                        Some(h) => Instant::now() < h,
                        None => repairs_left > 0 && repairs_left < before,
                    };
                    if more {
                        continue;
                    }
                    break;
                }
            }
            // Another history only while there is time for one more like the last; without a
            // deadline, up to [`REBUILD_BOUNDED`] (the same bag however loaded the machine is), or
            // until histories keep ending in states already found (there are few).
            spent = spent.max(start.elapsed());
            start = Instant::now();
            let over = match budget.soft {
                Some(s) => start + spent >= s,
                None => {
                    found.states.len() >= REBUILD_BOUNDED
                        || attempt >= REBUILD_ATTEMPTS
                        || repeats >= REBUILD_REPEATS
                }
            };
            if over {
                break;
            }
        }
        if found.states.is_empty() {
            return Ok(None);
        }
        Ok(Some(found))
    }

    /// States at the end of histories consistent with ours found by the backtracking search
    /// (the first, and while the soft budget lasts, more on a copy of the search); `None` if it
    /// found none by the hard stop (or, without a deadline, [`BACKTRACK_BOUNDED`] checks), or
    /// none exists (it is exhausted).
    fn backtrack<M: StateMachine<State = S, Move = Mv>>(
        &mut self,
        machine: &mut M,
        fit: &mut Fit<Mv>,
        budget: &Budget,
        rng: &mut impl Rng,
    ) -> Result<Option<Weighted<S, Mv>>, BeliefError> {
        if self.backtrack.fresh()
            && let Some(near_miss) = self.paths.first()
        {
            self.backtrack.seed = joints_of(near_miss);
        }
        let limit = fit.checked + BACKTRACK_BOUNDED;
        let by = |at: Option<Instant>| {
            move |checked: u64| match at {
                Some(t) => Instant::now() >= t,
                None => checked >= limit,
            }
        };
        let history = &self.history;
        let Some(state) =
            self.backtrack
                .search(machine, self.role, history, fit, &mut by(budget.hard), rng)?
        else {
            return Ok(None);
        };
        let mut found = Weighted::default();
        found.add(state, 1.0, path_of(&self.backtrack.joints()));
        // The search itself stays on the history found, for the next update to extend.
        let mut more = self.backtrack.clone();
        let mut soft = by(budget.soft);
        while found.states.len() < BACKTRACK_MODELS && !soft(fit.checked) {
            more.skip_top();
            match more.search(machine, self.role, history, fit, &mut soft, rng)? {
                Some(state) => found.add(state, 1.0, path_of(&more.joints())),
                None => break,
            }
        }
        Ok(Some(found))
    }

    /// One state at the end of a history consistent with ours and its joint moves (see
    /// [`Belief::rebuild`]), starting from the joint moves of `seed` as far as they fit; `None`
    /// when the budget, `repairs_left` or this history's share of them ran out first.
    fn find_history<M: StateMachine<State = S, Move = Mv>>(
        &self,
        machine: &mut M,
        fit: &mut Fit<Mv>,
        seed: &[Vec<Mv>],
        budget: &Budget,
        repairs_left: &mut usize,
        rng: &mut impl Rng,
    ) -> Result<Option<(S, Joints<Mv>)>, BeliefError> {
        let mut states = vec![self.root.clone()];
        let mut joints: Vec<Vec<M::Move>> = Vec::new();
        // Whether the history is still `seed`'s, and the repairs this one may spend.
        let mut following = true;
        let mut share = 4 * (self.history.len() + 1);
        while joints.len() < self.history.len() {
            if budget.hard.is_some_and(|h| Instant::now() >= h) {
                return Ok(None);
            }
            let i = joints.len();
            let (mv, percepts) = &self.history[i];
            if following
                && let Some(joint) = seed.get(i)
                && let Some(next) =
                    fit.replay(machine, &states[i], self.role, (mv, percepts), joint)?
            {
                joints.push(joint.clone());
                states.push(next);
                continue;
            }
            following = false;
            if let Some((joint, next)) =
                fit.random(machine, &states[i], self.role, (mv, percepts), None, rng)?
            {
                joints.push(joint);
                states.push(next);
                continue;
            }
            // Nothing fits at step i. First, one earlier step changed, the later ones kept as
            // they were.
            if i > 0 && self.swap_one(machine, &mut states, &mut joints, fit, budget, rng)? {
                continue;
            }
            // Else change an earlier step drawn at random and replay the later ones.
            if i == 0 || *repairs_left == 0 || share == 0 {
                return Ok(None);
            }
            *repairs_left -= 1;
            share -= 1;
            let k = rng.random_range(0..i);
            let old: Vec<Vec<M::Move>> = joints.drain(k..).collect();
            states.truncate(k + 1);
            let (mv, percepts) = &self.history[k];
            let Some((joint, next)) = fit.random(
                machine,
                &states[k],
                self.role,
                (mv, percepts),
                Some(&old[0]),
                rng,
            )?
            else {
                joints.extend(old.into_iter().take(1));
                let replay = machine.next_state_unchecked(&states[k], &joints[k])?;
                states.push(replay);
                continue;
            };
            joints.push(joint);
            states.push(next);
            for joint in old.into_iter().skip(1) {
                let j = joints.len();
                let (mv, percepts) = &self.history[j];
                match fit.replay(machine, &states[j], self.role, (mv, percepts), &joint)? {
                    Some(next) => {
                        joints.push(joint);
                        states.push(next);
                    }
                    None => break,
                }
            }
        }
        let state = states.pop().expect("the root at least");
        Ok(Some((state, joints)))
    }

    /// Tries to make step `i = joints.len()` fit by changing the joint move of one earlier
    /// step (latest first, a few alternatives each) and replaying the later ones unchanged;
    /// on success `states` and `joints` are extended past step `i` and `true` is returned.
    fn swap_one<M: StateMachine<State = S, Move = Mv>>(
        &self,
        machine: &mut M,
        states: &mut Vec<S>,
        joints: &mut Vec<Vec<M::Move>>,
        fit: &mut Fit<M::Move>,
        budget: &Budget,
        rng: &mut impl Rng,
    ) -> Result<bool, BeliefError> {
        let i = joints.len();
        for k in (0..i).rev() {
            for _ in 0..SWAP_TRIES {
                if budget.hard.is_some_and(|h| Instant::now() >= h) {
                    return Ok(false);
                }
                let (mv, percepts) = &self.history[k];
                let Some((joint, next)) = fit.random(
                    machine,
                    &states[k],
                    self.role,
                    (mv, percepts),
                    Some(&joints[k]),
                    rng,
                )?
                else {
                    break;
                };
                let mut trial = vec![next];
                let mut ok = true;
                for (j, old) in joints.iter().enumerate().take(i).skip(k + 1) {
                    let (mv, percepts) = &self.history[j];
                    let from = trial.last().expect("not empty").clone();
                    match fit.replay(machine, &from, self.role, (mv, percepts), old)? {
                        Some(s) => trial.push(s),
                        None => {
                            ok = false;
                            break;
                        }
                    }
                }
                if !ok {
                    continue;
                }
                let (mv, percepts) = &self.history[i];
                let from = trial.last().expect("not empty").clone();
                if let Some((last, end)) =
                    fit.random(machine, &from, self.role, (mv, percepts), None, rng)?
                {
                    states.truncate(k + 1);
                    states.extend(trial);
                    states.push(end);
                    joints[k] = joint;
                    joints.push(last);
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

/// Most joint moves a backtracking search checks in one update without a deadline.
const BACKTRACK_BOUNDED: u64 = 200_000;
/// Histories gathered by a backtracking search for one update (the first, and siblings).
const BACKTRACK_MODELS: usize = REBUILD_BOUNDED;

/// A depth-first search over whole histories from the belief's root, one frame per step:
/// HyperPlay's backtracking. At each step the joint moves (ours fixed to the one we played)
/// are tried in a random order without repeats; one that gives us the percepts of that step
/// opens the next frame, and a frame with none left is dropped, its parent trying its next.
/// It is complete: a history consistent with every percept is found whenever one exists, in
/// time, and when the root runs out none exists. It is kept from update to update, so the
/// search goes on where it stopped; a history it found stays on top, so that the next update
/// extends it first (a subtree dropped could not reach the last step, so it cannot reach a
/// later one either).
#[derive(Debug, Clone)]
struct Backtrack<S, Mv> {
    frames: Vec<Frame<S, Mv>>,
    /// Joint moves of a near-miss history, tried first while the search follows them.
    seed: Vec<Vec<Mv>>,
    /// Every history from the root was tried: none fits.
    exhausted: bool,
}

/// One step of a [`Backtrack`]: the state, and once the step's move is known, its joint
/// moves.
#[derive(Debug, Clone)]
struct Frame<S, Mv> {
    state: S,
    moves: Option<FrameMoves<Mv>>,
    /// Whether the history to here is the seed's.
    on_seed: bool,
}

#[derive(Debug, Clone)]
struct FrameMoves<Mv> {
    legal: Vec<Vec<Mv>>,
    order: Order,
    /// Joint moves of `order` tried so far.
    next: usize,
    /// The seed's joint move, tried before the order (and skipped in it).
    first: Option<Vec<Mv>>,
    /// Whether `first` was tried, and whether the joint move last drawn was it.
    first_tried: bool,
    took_first: bool,
}

impl<Mv: Copy + Eq> FrameMoves<Mv> {
    /// The next joint move to try into `joint`, and whether it is the seed's; `None` when
    /// all were tried.
    fn next_joint(&mut self, joint: &mut Vec<Mv>) -> Option<bool> {
        if !self.first_tried
            && let Some(first) = &self.first
        {
            joint.clone_from(first);
            self.first_tried = true;
            self.took_first = true;
            return Some(true);
        }
        self.took_first = false;
        while self.next < self.order.count {
            self.order.joint(&self.legal, self.next, joint);
            self.next += 1;
            if self.first.as_ref() != Some(joint) {
                return Some(false);
            }
        }
        None
    }

    /// The joint move last drawn (the one that opened the frame above).
    fn last(&self) -> Vec<Mv> {
        if self.took_first {
            return self.first.clone().expect("taken");
        }
        let mut joint = Vec::new();
        self.order.joint(&self.legal, self.next - 1, &mut joint);
        joint
    }
}

impl<S: Clone, Mv: Copy + Eq> Backtrack<S, Mv> {
    fn new(root: S) -> Backtrack<S, Mv> {
        Backtrack {
            frames: vec![Frame {
                state: root,
                moves: None,
                on_seed: true,
            }],
            seed: Vec::new(),
            exhausted: false,
        }
    }

    /// Whether the search has not left the root yet (a seed can still be given).
    fn fresh(&self) -> bool {
        self.frames.len() == 1 && self.frames[0].moves.is_none()
    }

    /// The joint moves of the history on the stack, root first.
    fn joints(&self) -> Vec<Vec<Mv>> {
        self.frames[..self.frames.len() - 1]
            .iter()
            .map(|f| f.moves.as_ref().expect("a frame with one above").last())
            .collect()
    }

    /// Searches on until the top frame is at the end of `history` (its state is returned),
    /// `stop` says so (given the joint moves checked so far), or no history is left
    /// (`exhausted`).
    fn search<M: StateMachine<State = S, Move = Mv>>(
        &mut self,
        machine: &mut M,
        role: usize,
        history: &[(Term, Vec<Term>)],
        fit: &mut Fit<Mv>,
        stop: &mut impl FnMut(u64) -> bool,
        rng: &mut impl Rng,
    ) -> Result<Option<S>, BeliefError> {
        let mut joint = Vec::new();
        let mut iterations = 0u64;
        while !self.exhausted {
            let depth = self.frames.len() - 1;
            if depth == history.len() {
                return Ok(Some(self.frames[depth].state.clone()));
            }
            iterations += 1;
            if iterations.is_multiple_of(32) && stop(fit.checked) {
                return Ok(None);
            }
            let top = self.frames.last_mut().expect("the root at least");
            if top.moves.is_none() {
                let (mv, _) = &history[depth];
                let mut legal = vec![Vec::new(); machine.roles().len()];
                let count = if machine.is_terminal(&top.state)? {
                    0
                } else {
                    joint_moves_with_ours(machine, &top.state, role, mv, &mut legal)?.unwrap_or(0)
                };
                let mut order = Order::new(&legal, rng);
                order.count = count;
                let first = if top.on_seed {
                    self.seed.get(depth).cloned()
                } else {
                    None
                };
                let first = first
                    .filter(|j| count > 0 && j.iter().zip(&legal).all(|(m, ms)| ms.contains(m)));
                top.moves = Some(FrameMoves {
                    legal,
                    order,
                    next: 0,
                    first,
                    first_tried: false,
                    took_first: false,
                });
            }
            let moves = top.moves.as_mut().expect("just set");
            let Some(seeded) = moves.next_joint(&mut joint) else {
                self.frames.pop();
                if self.frames.is_empty() {
                    self.exhausted = true;
                }
                continue;
            };
            let on_seed = top.on_seed && seeded;
            fit.checked += 1;
            machine.percepts_into(&top.state, &joint, role, &mut fit.seen)?;
            if fit.seen.as_slice() != history[depth].1.as_slice() {
                continue;
            }
            let state = machine.next_state_unchecked(&top.state, &joint)?;
            self.frames.push(Frame {
                state,
                moves: None,
                on_seed,
            });
        }
        Ok(None)
    }

    /// Drops the top frame (a history already found), so that the search looks for another.
    fn skip_top(&mut self) {
        if self.frames.len() > 1 {
            self.frames.pop();
        }
    }
}

/// A joint move that fits what we saw, and the state it leads to.
type Fitted<Mv, S> = (Vec<Mv>, S);

/// The joint moves of per-role move lists, numbered 0..count, visited in a random order
/// without repeats: the `t`-th is number `(first + t * stride) mod count`, the stride prime to
/// the count.
#[derive(Debug, Clone)]
struct Order {
    count: usize,
    first: usize,
    stride: usize,
}

impl Order {
    fn new<Mv>(legal: &[Vec<Mv>], rng: &mut impl Rng) -> Order {
        let count = legal
            .iter()
            .fold(1usize, |n, ms| n.saturating_mul(ms.len()))
            .max(1);
        // A prime that does not divide the count is prime to it.
        let stride = [7919, 104_729, 1_299_709, 15_485_863]
            .into_iter()
            .find(|p| count % p != 0)
            .unwrap_or(1);
        Order {
            count,
            first: rng.random_range(0..count),
            stride,
        }
    }

    /// Joint move number `t` of the order, into `joint`.
    fn joint<Mv: Copy>(&self, legal: &[Vec<Mv>], t: usize, joint: &mut Vec<Mv>) {
        let step = (t as u128 * self.stride as u128 % self.count as u128) as usize;
        let mut rest = ((self.first as u128 + step as u128) % self.count as u128) as usize;
        joint.clear();
        for moves in legal {
            joint.push(moves[rest % moves.len()]);
            rest /= moves.len();
        }
    }
}

/// Scratch space for finding joint moves that fit what we saw.
struct Fit<Mv> {
    legal: Vec<Vec<Mv>>,
    seen: Vec<Term>,
    /// Joint moves checked against percepts.
    checked: u64,
}

impl<Mv: Copy + Eq> Fit<Mv> {
    fn new(roles: usize) -> Fit<Mv> {
        Fit {
            legal: vec![Vec::new(); roles],
            seen: Vec::new(),
            checked: 0,
        }
    }

    /// A random joint move from `state` with our move `mv` that gives us `percepts`, other
    /// than `not`, and the state it leads to; `None` if none was found (all are tried when
    /// there are few, else a few hundred drawn).
    fn random<M: StateMachine<Move = Mv>>(
        &mut self,
        machine: &mut M,
        state: &M::State,
        role: usize,
        (mv, percepts): (&Term, &[Term]),
        not: Option<&Vec<Mv>>,
        rng: &mut impl Rng,
    ) -> Result<Option<Fitted<Mv, M::State>>, BeliefError> {
        if machine.is_terminal(state)? {
            return Ok(None);
        }
        for (r, moves) in self.legal.iter_mut().enumerate() {
            moves.clear();
            if r == role {
                match our_move(machine, state, role, mv)? {
                    Some(our) => moves.push(our),
                    None => return Ok(None),
                }
            } else {
                machine.legal_moves_into(state, r, moves)?;
                if moves.is_empty() {
                    return Ok(None);
                }
            }
        }
        // In a random order without repeats: all of them when there are few, else the first
        // [`FIT_TRIES`].
        let order = Order::new(&self.legal, rng);
        let mut joint = Vec::with_capacity(self.legal.len());
        for t in 0..order.count.min(FIT_TRIES) {
            order.joint(&self.legal, t, &mut joint);
            if not == Some(&joint) {
                continue;
            }
            self.checked += 1;
            machine.percepts_into(state, &joint, role, &mut self.seen)?;
            if self.seen.as_slice() == percepts {
                let next = machine.next_state_unchecked(state, &joint)?;
                return Ok(Some((joint, next)));
            }
        }
        Ok(None)
    }

    /// The state after `joint` from `state`, if it is legal there, our move is `mv` and it
    /// gives us `percepts`.
    fn replay<M: StateMachine<Move = Mv>>(
        &mut self,
        machine: &mut M,
        state: &M::State,
        role: usize,
        (mv, percepts): (&Term, &[Term]),
        joint: &[Mv],
    ) -> Result<Option<M::State>, BeliefError> {
        if machine.is_terminal(state)? || our_move(machine, state, role, mv)? != Some(joint[role]) {
            return Ok(None);
        }
        for (r, &m) in joint.iter().enumerate() {
            self.legal[r].clear();
            machine.legal_moves_into(state, r, &mut self.legal[r])?;
            if !self.legal[r].contains(&m) {
                return Ok(None);
            }
        }
        self.checked += 1;
        machine.percepts_into(state, joint, role, &mut self.seen)?;
        if self.seen.as_slice() != percepts {
            return Ok(None);
        }
        Ok(Some(machine.next_state_unchecked(state, joint)?))
    }
}

/// The successors of `states` (reached by `paths`) consistent with our move `mv` and our
/// `percepts` (sorted), weighted, enough to refill a bag of `cap`; empty if none was found.
///
/// Each consistent joint move found carries its probability under the model (its parent's
/// weight over the parent's number of joint moves). A state with at most [`EXACT_MAX`] joint
/// moves has them all tried; past that, joint moves found consistent from earlier states of
/// this update are tried first (in a card deal, most of them fit the other states too), then
/// random ones, until enough are found or [`MAX_TRIES`] are spent.
fn step<M: StateMachine>(
    machine: &mut M,
    (states, paths): Bag<'_, M::State, M::Move>,
    role: usize,
    (mv, percepts): (&Term, &[Term]),
    cap: usize,
    (budget, checked): (&Budget, &mut u64),
    rng: &mut impl Rng,
) -> Result<Weighted<M::State, M::Move>, BeliefError> {
    let roles = machine.roles().len();
    let mut next = Weighted::default();
    let mut legal: Vec<Vec<M::Move>> = vec![Vec::new(); roles];
    let mut search = StepSearch {
        role,
        percepts,
        budget,
        // Enough consistent successors per state to refill the bag.
        wanted: cap.div_ceil(states.len().max(1)).max(1),
        seen: Vec::new(),
        joint: Vec::with_capacity(roles),
        remembered: Vec::new(),
        known: HashSet::new(),
        found: HashSet::new(),
        all_tries: 0,
        all_found: 0,
        checked: 0,
    };
    let mut order: Vec<usize> = (0..states.len()).collect();
    order.shuffle(rng);
    for i in order {
        if budget.over(!next.states.is_empty()) {
            break;
        }
        let (state, weight) = &states[i];
        if machine.is_terminal(state)? {
            continue;
        }
        let Some(combos) = joint_moves_with_ours(machine, state, role, mv, &mut legal)? else {
            continue;
        };
        let parent = Parent {
            state,
            path: &paths[i],
            each: weight / combos as f64,
            combos,
        };
        search.successors(machine, &parent, &legal, &mut next, rng)?;
    }
    *checked += search.checked;
    Ok(next)
}

/// Every role's legal moves in `state` into `legal`, ours being only the move `mv` names, and
/// the number of joint moves they make; `None` when a role has none (or `mv` is not ours
/// there).
fn joint_moves_with_ours<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    role: usize,
    mv: &Term,
    legal: &mut [Vec<M::Move>],
) -> Result<Option<usize>, BeliefError> {
    let mut combos = 1usize;
    for (r, moves) in legal.iter_mut().enumerate() {
        moves.clear();
        if r == role {
            match our_move(machine, state, role, mv)? {
                Some(our) => moves.push(our),
                None => return Ok(None),
            }
        } else {
            machine.legal_moves_into(state, r, moves)?;
            if moves.is_empty() {
                return Ok(None);
            }
        }
        combos = combos.saturating_mul(moves.len());
    }
    Ok(Some(combos))
}

/// A state of the belief being stepped: where it came from, the weight each of its joint
/// moves carries, and how many joint moves it has.
struct Parent<'a, S, Mv> {
    state: &'a S,
    path: &'a Path<Mv>,
    each: f64,
    combos: usize,
}

/// One step's search for consistent successors, over all the belief's states: what it is
/// looking for, and what it learns from state to state.
struct StepSearch<'a, Mv> {
    role: usize,
    percepts: &'a [Term],
    budget: &'a Budget,
    /// Consistent successors wanted per state.
    wanted: usize,
    seen: Vec<Term>,
    joint: Vec<Mv>,
    /// Joint moves that fitted an earlier state, tried first in the next ones.
    remembered: Vec<Vec<Mv>>,
    known: HashSet<Vec<Mv>>,
    /// The consistent joint moves of the current state.
    found: HashSet<Vec<Mv>>,
    /// Tries spent in states that had a consistent joint move, and the consistent joint moves
    /// found, over the whole update, for judging a state dead (the tries of dead states left
    /// out: they would raise the limit for the next dead one, and so on).
    all_tries: usize,
    all_found: usize,
    /// Percepts computed.
    checked: u64,
}

impl<Mv: Copy + Eq + std::hash::Hash> StepSearch<'_, Mv> {
    /// Adds to `next` the successors of `parent` that give us our percepts: every joint move
    /// when there are at most [`EXACT_MAX`], else remembered ones first, then random ones
    /// without repeats, until [`StepSearch::wanted`] are found or the state is given up.
    fn successors<M: StateMachine<Move = Mv>>(
        &mut self,
        machine: &mut M,
        parent: &Parent<'_, M::State, Mv>,
        legal: &[Vec<Mv>],
        next: &mut Weighted<M::State, Mv>,
        rng: &mut impl Rng,
    ) -> Result<(), BeliefError> {
        self.found.clear();
        let exact = parent.combos <= EXACT_MAX;
        let mut draw = Draw {
            order: Order::new(legal, rng),
            drawn: 0,
            k: 0,
            tries: 0,
            limit: MAX_TRIES,
        };
        self.remembered.shuffle(rng);
        let mut hits = 0;
        loop {
            let more = if exact {
                self.all_joint_moves(&mut draw, legal, parent.combos)
            } else {
                match self.sampled_joint_move(&mut draw, legal) {
                    Some(true) => true,
                    Some(false) => continue,
                    None => false,
                }
            };
            if !more {
                break;
            }
            draw.tries += 1;
            if draw.tries.is_multiple_of(16)
                && self
                    .budget
                    .over(!self.found.is_empty() || !next.states.is_empty())
            {
                break;
            }
            if !self.fits(machine, parent.state)? {
                continue;
            }
            self.all_found += 1;
            hits += 1;
            next.add(
                machine.next_state_unchecked(parent.state, &self.joint)?,
                parent.each,
                extend(parent.path, &self.joint),
            );
            if !exact {
                self.found.insert(self.joint.clone());
                if self.remembered.len() < MAX_TRIES && self.known.insert(self.joint.clone()) {
                    self.remembered.push(self.joint.clone());
                }
            }
        }
        if hits > 0 {
            self.all_tries += draw.tries;
        }
        Ok(())
    }

    /// The next of all `combos` joint moves into `self.joint`; false when all were tried.
    fn all_joint_moves(&mut self, draw: &mut Draw, legal: &[Vec<Mv>], combos: usize) -> bool {
        if draw.k == combos {
            return false;
        }
        draw.order.joint(legal, draw.k, &mut self.joint);
        draw.k += 1;
        true
    }

    /// The next sampled joint move into `self.joint`: `Some(true)` to try it, `Some(false)`
    /// to skip it (a remembered one not legal here, a random one already found), `None` when
    /// the state is done. Once no remembered joint move fits, a state is given up after four
    /// times the tries a consistent joint move has cost so far in this update (or a few
    /// hundred before any was found): it likely has none (in a card deal, the card we were
    /// dealt is in another hand there).
    fn sampled_joint_move(&mut self, draw: &mut Draw, legal: &[Vec<Mv>]) -> Option<bool> {
        if self.found.len() >= self.wanted
            || draw.tries >= draw.limit
            || draw.drawn == draw.order.count
        {
            return None;
        }
        if draw.k == self.remembered.len() && self.found.is_empty() && draw.limit == MAX_TRIES {
            draw.limit = if self.all_found > 0 {
                draw.tries + (4 * self.all_tries.div_ceil(self.all_found)).max(EXACT_MAX)
            } else {
                draw.tries + 2 * EXACT_MAX
            };
        }
        if draw.k < self.remembered.len() {
            // A joint move that fitted another state, if it is legal here.
            let candidate = &self.remembered[draw.k];
            draw.k += 1;
            if !candidate.iter().zip(legal).all(|(m, ms)| ms.contains(m)) {
                return Some(false);
            }
            self.joint.clone_from(candidate);
            return Some(true);
        }
        // The others in a random order, without repeats.
        draw.order.joint(legal, draw.drawn, &mut self.joint);
        draw.drawn += 1;
        Some(!self.found.contains(&self.joint))
    }

    /// Whether `self.joint` in `state` gives us our percepts.
    fn fits<M: StateMachine<Move = Mv>>(
        &mut self,
        machine: &mut M,
        state: &M::State,
    ) -> Result<bool, BeliefError> {
        self.seen.clear();
        self.checked += 1;
        machine.percepts_into(state, &self.joint, self.role, &mut self.seen)?;
        Ok(self.seen.as_slice() == self.percepts)
    }
}

/// Where the joint moves of one state stand: the random order, how far it and the
/// remembered (or exact) list have got, the tries spent and the state's limit.
struct Draw {
    order: Order,
    drawn: usize,
    k: usize,
    tries: usize,
    limit: usize,
}

/// One successor per state, by a random joint move with our move `mv` (or any of ours if it
/// is not legal there), whatever the percepts: the guess of a lost belief.
fn blind_step<M: StateMachine>(
    machine: &mut M,
    (states, paths): Bag<'_, M::State, M::Move>,
    role: usize,
    mv: &Term,
    rng: &mut impl Rng,
) -> Result<Weighted<M::State, M::Move>, BeliefError> {
    let mut next = Weighted::default();
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    for ((state, weight), path) in states.iter().zip(paths) {
        if machine.is_terminal(state)? {
            continue;
        }
        if machine
            .random_joint_move_into(state, rng, &mut joint, &mut scratch)
            .is_err()
        {
            continue;
        }
        if let Some(our) = our_move(machine, state, role, mv)? {
            joint[role] = our;
        }
        next.add(
            machine.next_state_unchecked(state, &joint)?,
            *weight,
            extend(path, &joint),
        );
    }
    Ok(next)
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
    Ok(ggp_engine::machine::move_ignoring_case(machine, mv, &legal))
}

/// Joint moves, one per step, the first first.
type Joints<Mv> = Vec<Vec<Mv>>;

/// A belief's states and their paths.
type Bag<'a, S, Mv> = (&'a [(S, f64)], &'a [Path<Mv>]);

/// A history of joint moves from a belief's root, its last step first; prefixes are shared.
type Path<Mv> = Option<Arc<Link<Mv>>>;

/// One step of a [`Path`].
#[derive(Debug)]
struct Link<Mv> {
    joint: Vec<Mv>,
    before: Path<Mv>,
}

/// `path` followed by `joint`.
fn extend<Mv: Copy>(path: &Path<Mv>, joint: &[Mv]) -> Path<Mv> {
    Some(Arc::new(Link {
        joint: joint.to_vec(),
        before: path.clone(),
    }))
}

/// The path of `joints` (root first).
fn path_of<Mv: Copy>(joints: &[Vec<Mv>]) -> Path<Mv> {
    joints.iter().fold(None, |path, joint| extend(&path, joint))
}

/// The joint moves of `path`, root first.
fn joints_of<Mv: Copy>(path: &Path<Mv>) -> Vec<Vec<Mv>> {
    let mut joints = Vec::new();
    let mut at = path;
    while let Some(link) = at {
        joints.push(link.joint.clone());
        at = &link.before;
    }
    joints.reverse();
    joints
}

/// Weighted states in the order they were first added (so that a belief depends only on
/// what was observed, never on a hasher's seed), each with the first path found to it.
struct Weighted<S, Mv> {
    states: Vec<(S, f64)>,
    paths: Vec<Path<Mv>>,
    index: HashMap<S, usize>,
}

impl<S, Mv> Default for Weighted<S, Mv> {
    fn default() -> Self {
        Weighted {
            states: Vec::new(),
            paths: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<S: Clone + Eq + std::hash::Hash, Mv> Weighted<S, Mv> {
    fn add(&mut self, state: S, weight: f64, path: Path<Mv>) {
        match self.index.get(&state) {
            Some(&i) => self.states[i].1 += weight,
            None => {
                self.index.insert(state.clone(), self.states.len());
                self.states.push((state, weight));
                self.paths.push(path);
            }
        }
    }
}

/// The states of `weighted` and their paths, the weights normalised; past `cap` states,
/// `cap` drawn by weight (systematic resampling), each with its share of the draws.
fn resample<S: Clone + Eq + std::hash::Hash, Mv>(
    weighted: Weighted<S, Mv>,
    cap: usize,
    rng: &mut impl Rng,
) -> (Vec<(S, f64)>, Vec<Path<Mv>>) {
    let Weighted {
        mut states,
        mut paths,
        ..
    } = weighted;
    let total: f64 = states.iter().map(|(_, w)| w).sum();
    if states.is_empty() || total <= 0.0 {
        return (Vec::new(), Vec::new());
    }
    if states.len() > cap {
        let step = total / cap as f64;
        let mut at = rng.random::<f64>() * step;
        let mut kept = Weighted::default();
        let mut acc = 0.0;
        for ((s, w), path) in states.iter().zip(&paths) {
            acc += w;
            while at < acc {
                kept.add(s.clone(), step, path.clone());
                at += step;
            }
        }
        states = kept.states;
        paths = kept.paths;
    }
    let total: f64 = states.iter().map(|(_, w)| w).sum();
    for (_, w) in &mut states {
        *w /= total;
    }
    (states, paths)
}

#[cfg(test)]
pub(crate) mod tests {
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;
    use ggp_engine::datalog::DatalogMachine;
    use ggp_gdl::gdl::{Description, parse_term};

    /// Monty Hall as published (../shared/games/gdl2/montyhall.kif).
    pub(crate) const MONTY: &str = "(role candidate) (role random)
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

    pub(crate) fn machine() -> DatalogMachine {
        DatalogMachine::new(&Description::from_text(MONTY).unwrap()).unwrap()
    }

    pub(crate) fn t(text: &str) -> Term {
        parse_term(text).unwrap()
    }

    /// Plays the true match where the car is behind `car`, the candidate chooses door 1 and
    /// the host opens `open`; returns the candidate's belief, built from its own moves and
    /// the percepts the rules give it in the true states only.
    pub(crate) fn belief_after(
        m: &mut DatalogMachine,
        car: &str,
        open: &str,
    ) -> Belief<ggp_engine::datalog::DatalogState, <DatalogMachine as StateMachine>::Move> {
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

    /// Dominup dealt at random: 18 steps in which nature has up to 1,260 moves and we see
    /// only our own tile. A bag of 64 states sampled forward dies out as the deal ends (the
    /// tile we are dealt has gone to the other hand in every state drawn, its history shared
    /// by all). The belief must follow every step without getting lost, know our hand at
    /// each, be the true state once every tile is dealt (so every history it keeps is made
    /// of legal joint moves), and do it with bounded work: without a deadline the work is
    /// deterministic, so the bound is counted in joint moves checked, not in time.
    #[test]
    fn follows_a_random_deal() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../rules/dominup.kif");
        let text = std::fs::read_to_string(path).unwrap();
        let mut m = DatalogMachine::new(&Description::from_text(&text).unwrap()).unwrap();
        let hand = |facts: Vec<Term>| -> Vec<Term> {
            facts
                .into_iter()
                .filter(|f| f.to_string().starts_with("(hand one"))
                .collect()
        };
        for seed in 1..=3 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut belief = Belief::new(&m, 0, 64);
            let mut state = m.initial_state();
            let (mut joint, mut scratch) = (Vec::new(), Vec::new());
            for step in 0..19 {
                m.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch)
                    .unwrap();
                let percepts = m.percepts(&state, &joint, 0).unwrap();
                let mv = m.move_term(joint[0]);
                state = m.next_state(&state, &joint).unwrap();
                let before = belief.checked();
                belief
                    .update(&mut m, &mv, &percepts, None, &mut rng)
                    .unwrap();
                assert!(!belief.is_lost(), "seed {seed}, step {step}");
                let checked = belief.checked() - before;
                assert!(checked < 500_000, "seed {seed}, step {step}: {checked}");
                let ours = hand(m.state_terms(&state));
                for (s, _) in belief.states() {
                    assert_eq!(hand(m.state_terms(s)), ours, "seed {seed}, step {step}");
                    // Once every tile is dealt, the state is known: only a history of legal
                    // joint moves gives it (a repair that replayed an illegal one did not).
                    if step >= 17 {
                        assert_eq!(s, &state, "seed {seed}, step {step}");
                    }
                }
            }
            // 18 tiles, less the 7|7 if we held it and opened with it.
            let ours = hand(m.state_terms(&state));
            assert!((17..=18).contains(&ours.len()), "{ours:?}");
        }
    }

    /// Our blind breakthrough (a GDL-II test sheet with its Dresden trace).
    const BLIND_RACE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/reference/blind_race.kif"
    );

    /// blind_race ([`BLIND_RACE`]): the opponent's moves are never
    /// seen, an advance into an unseen pawn fails, a capture is legal only where an unseen
    /// pawn stands. With a bag of 2 states, the sampled histories die again and again. The
    /// belief must follow every step of random matches in both seats without getting lost.
    /// (Without a deadline the repairs of near misses alone manage it here; the backtracking
    /// search is tested on its own below.)
    #[test]
    fn follows_a_blind_race() {
        let text = std::fs::read_to_string(BLIND_RACE).unwrap();
        let mut m = DatalogMachine::new(&Description::from_text(&text).unwrap()).unwrap();
        for seed in 1..=30 {
            for role in 0..2 {
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                let mut belief = Belief::new(&m, role, 1);
                let mut state = m.initial_state();
                let (mut joint, mut scratch) = (Vec::new(), Vec::new());
                let mut step = 0;
                while !m.is_terminal(&state).unwrap() {
                    let ours = belief.our_moves(&mut m).unwrap();
                    let legal = m.legal_moves(&state, role).unwrap();
                    assert!(!ours.is_empty(), "seed {seed}, role {role}, step {step}");
                    // A sample of two states may both hold an unseen pawn where the true
                    // state has none (a capture legal in both), but not only such moves.
                    assert!(
                        ours.iter().any(|mv| legal.contains(mv)),
                        "seed {seed}, role {role}, step {step}"
                    );
                    m.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch)
                        .unwrap();
                    let playable: Vec<_> = ours.iter().filter(|mv| legal.contains(mv)).collect();
                    joint[role] = *playable[rng.random_range(0..playable.len())];
                    let percepts = m.percepts(&state, &joint, role).unwrap();
                    let mv = m.move_term(joint[role]);
                    state = m.next_state(&state, &joint).unwrap();
                    belief
                        .update(&mut m, &mv, &percepts, None, &mut rng)
                        .unwrap_or_else(|e| panic!("seed {seed}, role {role}, step {step}: {e}"));
                    assert!(!belief.is_lost(), "seed {seed}, role {role}, step {step}");
                    step += 1;
                }
            }
        }
    }

    /// The backtracking search alone, from the root of blind_race with no seed: it finds a
    /// history that gives every percept of a random match (checked by replaying its joint
    /// moves), extends it when the match goes on, and runs out, rather than guessing, when a
    /// percept no history gives is added.
    #[test]
    fn backtracking_finds_a_history_or_proves_there_is_none() {
        let text = std::fs::read_to_string(BLIND_RACE).unwrap();
        let mut m = DatalogMachine::new(&Description::from_text(&text).unwrap()).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let role = 1;
        let mut history = Vec::new();
        let mut state = m.initial_state();
        let (mut joint, mut scratch) = (Vec::new(), Vec::new());
        let mut search = Backtrack::new(state.clone());
        let mut fit = Fit::new(2);
        let mut unlimited = |_: u64| false;
        while !m.is_terminal(&state).unwrap() && history.len() < 24 {
            m.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch)
                .unwrap();
            let percepts = m.percepts(&state, &joint, role).unwrap();
            history.push((m.move_term(joint[role]), percepts));
            state = m.next_state(&state, &joint).unwrap();
            let found = search
                .search(&mut m, role, &history, &mut fit, &mut unlimited, &mut rng)
                .unwrap()
                .expect("the true history fits");
            // Replayed, the history found gives our moves and percepts at every step.
            let mut s = m.initial_state();
            for (joint, (mv, percepts)) in search.joints().iter().zip(&history) {
                assert_eq!(&m.move_term(joint[role]), mv);
                assert_eq!(&m.percepts(&s, joint, role).unwrap(), percepts);
                s = m.next_state(&s, joint).unwrap();
            }
            assert_eq!(s, found);
        }
        assert!(history.len() > 10, "{} steps", history.len());
        // After the first four steps, a pawn lost on a square off the board: no history
        // gives it, and the search says so once it has tried every history of five steps.
        let mut impossible = history[..4].to_vec();
        let (mv, _) = history[4].clone();
        impossible.push((mv, vec![t("(lost 9 9)"), t("(turn white)")]));
        let mut search = Backtrack::new(m.initial_state());
        let found = search
            .search(
                &mut m,
                role,
                &impossible,
                &mut fit,
                &mut unlimited,
                &mut rng,
            )
            .unwrap();
        assert!(found.is_none() && search.exhausted);
    }
}
