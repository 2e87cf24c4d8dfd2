//! Searching a factored game (`factor=on`): the moves of sub-games that cannot change the
//! outcome are pruned.
//!
//! The engine's [`Factoring`] (found on the ground rules, see [`crate::analysis::factor`])
//! splits the game into components whose dynamics read only their own facts and moves and
//! the shared ones. A move of a component that neither any goal nor the terminal condition
//! reads, and a free move (one that changes nothing), leaves every component that matters as
//! it would be had the role passed: all such moves of a role are one move as far as the
//! outcome goes. [`Pruned`] lists, of a role's legal moves, the ones that matter and the
//! first of the others (the role may need to pass, or have nothing else), and the player
//! searches that game. Random playouts are the engine's own (over every legal move): they
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
}

impl<M: StateMachine> Pruned<M> {
    /// `inner` with the moves `factoring` finds idle pruned; `None` when there are none.
    pub fn new(inner: M, factoring: Arc<Factoring>) -> Option<Pruned<M>> {
        let idle: Vec<HashSet<M::Move>> = factoring
            .idle_moves()
            .iter()
            .map(|moves| {
                let set: HashSet<M::Move> =
                    moves.iter().filter_map(|mv| inner.find_move(mv)).collect();
                // One idle move is kept anyway: nothing to prune.
                if set.len() >= 2 { set } else { HashSet::new() }
            })
            .collect();
        if idle.iter().all(HashSet::is_empty) {
            return None;
        }
        Some(Pruned {
            inner,
            factoring,
            idle: Arc::new(idle),
        })
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
        let Some(idle) = self.idle.get(role).filter(|s| !s.is_empty()) else {
            return Ok(());
        };
        let mut passed = false;
        let mut kept = start;
        for i in start..out.len() {
            let mv = out[i];
            let is_idle = idle.contains(&mv);
            if !is_idle || !passed {
                passed |= is_idle;
                out[kept] = mv;
                kept += 1;
            }
        }
        out.truncate(kept);
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
        let pruned = machine
            .factoring()
            .and_then(|f| Pruned::new(machine.fork()?, f));
        self.inner = match pruned {
            Some(mut machine) => {
                let mut player: Box<dyn Player<Pruned<M>>> =
                    new_unfactored_player(&self.spec, &self.config);
                player.start(&mut machine, role, deadline)?;
                Inner::Pruned { player, machine }
            }
            None => {
                let mut player = new_unfactored_player(&self.spec, &self.config);
                player.start(machine, role, deadline)?;
                Inner::Plain(player)
            }
        };
        Ok(())
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
        // flipa, and one of flipb, flipb2 and wait (the first in the engine's order).
        assert_eq!(moves.len(), 2, "{:?}", names(&pruned, &moves));
        assert!(names(&pruned, &moves).contains(&"flipa".to_string()));
        let mut plain = m;
        assert_eq!(plain.legal_moves(&s, 0).unwrap().len(), 4);
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
