//! Searching a factored game (`factor=on`): the moves of sub-games that cannot change the
//! outcome are pruned.
//!
//! The engine's [`Factoring`] (found on the ground rules, see [`crate::analysis::factor`])
//! splits the game into components whose dynamics read only their own facts and moves and
//! the shared ones. A move of a component that neither any goal nor the terminal condition
//! reads, and a free move (one that changes nothing), leaves every component that matters as
//! it would be had the role passed: such moves of a role are one move as far as the
//! outcome goes, *now*. Later they need not be: a sub-game's moves may run out and leave
//! the role only moves that matter (in `queens08lg` placing queens is idle, but a board
//! with no safe square leaves only `quit`, which loses). So [`Pruned`] prunes a role's
//! idle moves only in a state where one of its free moves is legal, and keeps that one as
//! the pass: a free move's legality reads shared facts only, so it does not depend on
//! which idle moves were played. Where the role has no free move, nothing is pruned. The
//! player searches that game. Random playouts are the engine's own (over every legal move): they
//! estimate the same values, at the engine's speed.
//!
//! [`FactoredPlayer`] wraps any player: where the engine has no factoring, or nothing to
//! prune, the player plays the game as it is.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use rand::Rng;

use super::{Choice, Player, PlayerSpec, SearchConfig, SearchError, new_unfactored_player};
use crate::analysis::Factoring;
use crate::gdl::Term;
use crate::machine::{MachineError, PlayoutBatch, PlayoutEnd, StateMachine};

/// A machine whose legal moves leave out, per role, all but the first of the moves that
/// cannot change the outcome.
pub struct Pruned<M: StateMachine> {
    inner: M,
    factoring: Arc<Factoring>,
    /// Per role, the moves that cannot change the outcome.
    idle: Arc<Vec<HashSet<M::Move>>>,
    /// Per role, the free moves (they change nothing).
    free: Arc<Vec<HashSet<M::Move>>>,
    /// A role kept to the moves of one component ([`Pruned::focused`]), and those moves.
    focus: Option<(usize, Arc<HashSet<M::Move>>)>,
}

impl<M: StateMachine> Pruned<M> {
    /// `inner` with the moves `factoring` finds idle pruned; `None` when there are none.
    pub fn new(inner: M, factoring: Arc<Factoring>) -> Option<Pruned<M>> {
        let pruned = Pruned::all(inner, factoring);
        if pruned.idle.iter().all(HashSet::is_empty) {
            return None;
        }
        Some(pruned)
    }

    /// `inner` with the idle moves pruned, if any.
    fn all(inner: M, factoring: Arc<Factoring>) -> Pruned<M> {
        let mut free: Vec<HashSet<M::Move>> = vec![HashSet::new(); inner.roles().len()];
        for (role, mv) in &factoring.free_moves {
            if let (Some(set), Some(m)) = (free.get_mut(*role), inner.find_move(mv)) {
                set.insert(m);
            }
        }
        let idle: Vec<HashSet<M::Move>> = factoring
            .idle_moves()
            .iter()
            .zip(&free)
            .map(|(moves, free)| {
                let set: HashSet<M::Move> =
                    moves.iter().filter_map(|mv| inner.find_move(mv)).collect();
                // Nothing to prune: one idle move is kept anyway, or no free move stands
                // for the others.
                if set.len() >= 2 && !free.is_empty() {
                    set
                } else {
                    HashSet::new()
                }
            })
            .collect();
        Pruned {
            inner,
            factoring,
            idle: Arc::new(idle),
            free: Arc::new(free),
            focus: None,
        }
    }

    /// `inner` with the idle moves pruned (if any) and role `role` kept to the moves of
    /// component `component` (and one idle move) wherever it has one of those.
    pub fn focused(
        inner: M,
        factoring: Arc<Factoring>,
        role: usize,
        component: usize,
    ) -> Pruned<M> {
        let moves: HashSet<M::Move> = factoring.components[component]
            .moves
            .iter()
            .filter(|(r, _)| *r == role)
            .filter_map(|(_, mv)| inner.find_move(mv))
            .collect();
        let mut pruned = Pruned::all(inner, factoring);
        pruned.focus = Some((role, Arc::new(moves)));
        pruned
    }

    /// How many moves of each role may be pruned.
    pub fn idle_moves(&self) -> Vec<usize> {
        self.idle.iter().map(HashSet::len).collect()
    }
}

impl<M: StateMachine> StateMachine for Pruned<M> {
    type State = M::State;
    type Move = M::Move;

    fn roles(&self) -> &[Term] {
        self.inner.roles()
    }

    fn initial_state(&self) -> M::State {
        self.inner.initial_state()
    }

    fn legal_moves_into(
        &mut self,
        state: &M::State,
        role: usize,
        out: &mut Vec<M::Move>,
    ) -> Result<(), MachineError> {
        let start = out.len();
        self.inner.legal_moves_into(state, role, out)?;
        if let Some(idle) = self.idle.get(role).filter(|s| !s.is_empty())
            && let Some(pass) = out[start..]
                .iter()
                .copied()
                .find(|mv| self.free[role].contains(mv))
        {
            let mut kept = start;
            for i in start..out.len() {
                let mv = out[i];
                if mv == pass || !idle.contains(&mv) {
                    out[kept] = mv;
                    kept += 1;
                }
            }
            out.truncate(kept);
        }
        if let Some((focus_role, focus)) = &self.focus
            && *focus_role == role
        {
            let free = &self.free[role];
            let keep = |mv: &M::Move| focus.contains(mv) || free.contains(mv);
            if out[start..].iter().any(|mv| focus.contains(mv)) {
                let mut kept = start;
                for i in start..out.len() {
                    if keep(&out[i]) {
                        out[kept] = out[i];
                        kept += 1;
                    }
                }
                out.truncate(kept);
            }
        }
        Ok(())
    }

    fn is_terminal(&mut self, state: &M::State) -> Result<bool, MachineError> {
        self.inner.is_terminal(state)
    }

    fn goal_values(&mut self, state: &M::State, role: usize) -> Result<Vec<u8>, MachineError> {
        self.inner.goal_values(state, role)
    }

    fn next_state_unchecked(
        &mut self,
        state: &M::State,
        joint: &[M::Move],
    ) -> Result<M::State, MachineError> {
        self.inner.next_state_unchecked(state, joint)
    }

    fn move_term(&self, mv: M::Move) -> Term {
        self.inner.move_term(mv)
    }

    fn find_move(&self, term: &Term) -> Option<M::Move> {
        self.inner.find_move(term)
    }

    fn state_terms(&self, state: &M::State) -> Vec<Term> {
        self.inner.state_terms(state)
    }

    fn fact_ids_into(&self, state: &M::State, out: &mut Vec<u32>) -> bool {
        self.inner.fact_ids_into(state, out)
    }

    fn state_from_terms(&mut self, facts: &[Term]) -> Result<M::State, MachineError> {
        self.inner.state_from_terms(facts)
    }

    fn fork(&self) -> Option<Pruned<M>> {
        Some(Pruned {
            inner: self.inner.fork()?,
            factoring: Arc::clone(&self.factoring),
            idle: Arc::clone(&self.idle),
            free: Arc::clone(&self.free),
            focus: self.focus.clone(),
        })
    }

    fn factoring(&self) -> Option<Arc<Factoring>> {
        Some(Arc::clone(&self.factoring))
    }

    fn is_nature(&self, role: usize) -> bool {
        self.inner.is_nature(role)
    }

    fn playout(
        &mut self,
        state: &M::State,
        rng: &mut impl Rng,
        max_steps: usize,
    ) -> Result<(M::State, usize), MachineError> {
        self.inner.playout(state, rng, max_steps)
    }

    fn random_playouts(
        &mut self,
        state: &M::State,
        rng: &mut impl Rng,
        count: u64,
        max_steps: usize,
    ) -> Result<PlayoutBatch, MachineError> {
        self.inner.random_playouts(state, rng, count, max_steps)
    }

    fn parallel_playouts(&self) -> usize {
        self.inner.parallel_playouts()
    }

    fn playouts_from(
        &mut self,
        starts: &[M::State],
        rng: &mut impl Rng,
        max_steps: usize,
        deadline: Instant,
        out: &mut Vec<PlayoutEnd<M::State>>,
    ) -> Result<bool, MachineError> {
        self.inner
            .playouts_from(starts, rng, max_steps, deadline, out)
    }
}

/// The player inside a [`FactoredPlayer`]: on the game as it is, or on the pruned game.
enum Inner<M: StateMachine> {
    Plain(Box<dyn Player<M>>),
    Pruned {
        player: Box<dyn Player<Pruned<M>>>,
        machine: Pruned<M>,
    },
}

/// A player (any spec) that searches the pruned game when the engine's factoring allows.
pub struct FactoredPlayer<M: StateMachine> {
    spec: PlayerSpec,
    config: SearchConfig,
    inner: Inner<M>,
}

impl<M> FactoredPlayer<M>
where
    M: StateMachine + Send + 'static,
{
    /// The player `spec` names (without `factor`), on the pruned game once started.
    pub fn new(spec: PlayerSpec, config: SearchConfig) -> FactoredPlayer<M> {
        let inner = Inner::Plain(new_unfactored_player(&spec, &config));
        FactoredPlayer {
            spec,
            config,
            inner,
        }
    }

    /// Whether the player searches the pruned game (known once started).
    pub fn prunes(&self) -> bool {
        matches!(self.inner, Inner::Pruned { .. })
    }
}

impl<M> FactoredPlayer<M>
where
    M: StateMachine + Send + 'static,
{
    fn start_plain(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        let mut player = new_unfactored_player(&self.spec, &self.config);
        player.start(machine, role, deadline)?;
        self.inner = Inner::Plain(player);
        Ok(())
    }

    /// A one-role game whose goal reads several components our moves change: the player
    /// searches the whole (pruned) game and each component alone for an equal share of the
    /// start clock, and keeps the search whose first move promises most (the whole game
    /// unless a component alone promises strictly more).
    fn start_focused(
        &mut self,
        machine: &mut M,
        factoring: &Arc<Factoring>,
        whole: M,
        role: usize,
        focuses: &[usize],
        deadline: Instant,
    ) -> Result<(), SearchError> {
        let state = machine.initial_state();
        let share = deadline
            .saturating_duration_since(Instant::now())
            .div_f64((focuses.len() + 1) as f64);
        let mut best: Option<Trial<M>> = None;
        let candidates = std::iter::once(None).chain(focuses.iter().copied().map(Some));
        for (i, focus) in candidates.enumerate() {
            let base = if i == 0 { whole.fork() } else { machine.fork() };
            let Some(base) = base else { break };
            let mut pruned = match focus {
                None => Pruned::all(base, Arc::clone(factoring)),
                Some(c) => Pruned::focused(base, Arc::clone(factoring), role, c),
            };
            let until = (Instant::now() + share).min(deadline);
            let mut player: Box<dyn Player<Pruned<M>>> =
                new_unfactored_player(&self.spec, &self.config);
            player.start(&mut pruned, role, until)?;
            let value = match player.choose(&mut pruned, &state, until) {
                Ok(choice) => choice.value.unwrap_or(-1.0),
                Err(SearchError::NoMove) => -1.0,
                Err(e) => return Err(e),
            };
            tracing::debug!(?focus, value, "factor: trial of a component alone");
            if best.as_ref().is_none_or(|b| value > b.value) {
                best = Some(Trial {
                    value,
                    player,
                    machine: pruned,
                    focus,
                });
            }
        }
        let Some(best) = best else {
            return self.start_plain(machine, role, deadline);
        };
        tracing::info!(
            "factor: {} (value {:.1})",
            best.focus.map_or("the whole game".to_string(), |c| format!(
                "component {} alone",
                c + 1
            )),
            best.value
        );
        self.inner = Inner::Pruned {
            player: best.player,
            machine: best.machine,
        };
        Ok(())
    }
}

/// One search tried at the start clock by [`FactoredPlayer::start_focused`].
struct Trial<M: StateMachine> {
    value: f64,
    player: Box<dyn Player<Pruned<M>>>,
    machine: Pruned<M>,
    focus: Option<usize>,
}

/// The components a one-role game's player tries alone: those the goal or terminal reads
/// that hold moves of ours, when there are two to [`MOST_FOCUSES`]; none otherwise.
fn focus_candidates(factoring: &Factoring, n_roles: usize, role: usize) -> Vec<usize> {
    if n_roles != 1 {
        return Vec::new();
    }
    let ours: Vec<usize> = factoring
        .relevant()
        .into_iter()
        .filter(|&c| {
            factoring.components[c]
                .moves
                .iter()
                .any(|(r, _)| *r == role)
        })
        .collect();
    if (2..=MOST_FOCUSES).contains(&ours.len()) {
        ours
    } else {
        Vec::new()
    }
}

/// The most components of a one-role game tried one at a time at the start clock.
const MOST_FOCUSES: usize = 4;

impl<M> Player<M> for FactoredPlayer<M>
where
    M: StateMachine + Send + 'static,
{
    fn name(&self) -> String {
        format!("{}+factor", self.spec)
    }

    fn start(
        &mut self,
        machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        let Some(factoring) = machine.factoring() else {
            return self.start_plain(machine, role, deadline);
        };
        let focuses = focus_candidates(&factoring, machine.roles().len(), role);
        if !focuses.is_empty()
            && let Some(whole) = machine.fork()
        {
            return self.start_focused(machine, &factoring, whole, role, &focuses, deadline);
        }
        match machine.fork().and_then(|m| Pruned::new(m, factoring)) {
            Some(mut pruned) => {
                let mut player: Box<dyn Player<Pruned<M>>> =
                    new_unfactored_player(&self.spec, &self.config);
                player.start(&mut pruned, role, deadline)?;
                self.inner = Inner::Pruned {
                    player,
                    machine: pruned,
                };
                Ok(())
            }
            None => self.start_plain(machine, role, deadline),
        }
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        match &mut self.inner {
            Inner::Plain(player) => player.choose(machine, state, deadline),
            Inner::Pruned { player, machine } => player.choose(machine, state, deadline),
        }
    }

    fn searches(&self) -> bool {
        match &self.inner {
            Inner::Plain(player) => player.searches(),
            Inner::Pruned { player, .. } => player.searches(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdl::Description;
    use crate::propnet::{Budget, PropnetMachine};

    /// Two switches; the goal reads only `a`; `wait` changes nothing.
    const TWO_SWITCHES: &str = "
        (role p)
        (init (step 0))
        (<= (next (step 1)) (true (step 0)))
        (<= (next (step 2)) (true (step 1)))
        (legal p flipa) (legal p flipb) (legal p flipb2) (legal p wait)
        (<= (next a) (does p flipa) (not (true a)))
        (<= (next a) (true a) (not (does p flipa)))
        (<= (next b) (does p flipb) (not (true b)))
        (<= (next b) (does p flipb2) (not (true b)))
        (<= (next b) (true b) (not (does p flipb)) (not (does p flipb2)))
        (<= terminal (true (step 2)))
        (<= (goal p 100) (true a))
        (<= (goal p 0) (not (true a)))
    ";

    fn machine(text: &str) -> PropnetMachine {
        let d = Description::from_text(text).expect("a valid sheet");
        PropnetMachine::new(&d, &Budget::default()).expect("grounds")
    }

    fn names<M: StateMachine>(m: &M, moves: &[M::Move]) -> Vec<String> {
        let mut v: Vec<String> = moves
            .iter()
            .map(|&mv| m.move_term(mv).to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn idle_moves_are_pruned_to_one() {
        let m = machine(TWO_SWITCHES);
        let f = m.factoring().expect("the propnet factors");
        let mut pruned = Pruned::new(m.fork().unwrap(), f).expect("something to prune");
        assert_eq!(pruned.idle_moves(), [3]);
        let s = pruned.initial_state();
        let moves = pruned.legal_moves(&s, 0).unwrap();
        // flipa, and wait standing for flipb and flipb2.
        assert_eq!(names(&pruned, &moves), ["flipa", "wait"]);
        let mut plain = m;
        assert_eq!(plain.legal_moves(&s, 0).unwrap().len(), 4);
    }

    #[test]
    fn a_focus_keeps_one_component_where_it_can() {
        // The goal reads both switches; focused on `a`'s component, only flipa and the
        // free move wait stay legal.
        let text = TWO_SWITCHES
            .replace(
                "(<= (goal p 100) (true a))",
                "(<= (goal p 100) (true a) (true b))",
            )
            .replace(
                "(<= (goal p 0) (not (true a)))",
                "(<= (goal p 0) (not (true b)))",
            );
        let m = machine(&text);
        let f = m.factoring().unwrap();
        let a = f
            .components
            .iter()
            .position(|c| c.facts.iter().any(|t| t.to_string() == "a"))
            .unwrap();
        assert_eq!(focus_candidates(&f, 1, 0).len(), 2);
        assert_eq!(focus_candidates(&f, 2, 0), Vec::<usize>::new());
        let mut focused = Pruned::focused(m.fork().unwrap(), Arc::clone(&f), 0, a);
        let s = focused.initial_state();
        let moves = focused.legal_moves(&s, 0).unwrap();
        assert_eq!(names(&focused, &moves), ["flipa", "wait"]);
        let mut whole = Pruned::all(m.fork().unwrap(), f);
        assert_eq!(whole.legal_moves(&s, 0).unwrap().len(), 4);
    }

    #[test]
    fn nothing_to_prune_gives_no_pruned_machine() {
        let m = machine(
            &TWO_SWITCHES
                .replace(
                    "(<= (goal p 100) (true a))",
                    "(<= (goal p 100) (true a) (true b))",
                )
                .replace("(legal p wait)", ""),
        );
        let f = m.factoring().unwrap();
        assert!(Pruned::new(m.fork().unwrap(), f).is_none());
    }

    #[test]
    fn a_factored_player_finds_the_move_that_counts() {
        // With three moves idle, flat Monte Carlo on the pruned game must pick flipa
        // (the only move to 100 at the last step) every time.
        let text = TWO_SWITCHES
            .replace("(<= (next (step 2)) (true (step 1)))", "")
            .replace("(true (step 2))", "(true (step 1))");
        let mut m = machine(&text);
        let spec: PlayerSpec = "flat:factor=on".parse().unwrap();
        let config = SearchConfig {
            max_iterations: Some(200),
            ..SearchConfig::default()
        };
        let mut player = spec.build::<PropnetMachine>(&config);
        let far = Instant::now() + std::time::Duration::from_secs(60);
        player.start(&mut m, 0, far).unwrap();
        let s = m.initial_state();
        let choice = player.choose(&mut m, &s, far).unwrap();
        assert_eq!(m.move_term(choice.mv).to_string(), "flipa");
        assert!(player.name().ends_with("+factor"));
    }
}
