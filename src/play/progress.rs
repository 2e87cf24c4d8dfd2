//! How far a computer's search has got, readable from another thread while it thinks.
//!
//! [`Counted`] wraps an engine and counts the terminal states it is asked about and finds
//! terminal: each playout of a Monte Carlo search ends in one (as does each visit of a
//! settled node), so the count is the search's playouts so far. The count lives in an
//! [`Arc<AtomicU64>`] shared with the engine's forks (the search's other threads), so a
//! page or a progress line reads it without waiting for the search. The wrapper forwards
//! every method, the engines' fast paths included, so the search runs at the same speed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;

use crate::gdl::Term;
use crate::machine::{MachineError, PlayoutEnd, StateMachine};

/// An engine that counts the terminal states it finds (a clone shares the count).
#[derive(Clone)]
pub struct Counted<M> {
    inner: M,
    terminals: Arc<AtomicU64>,
}

impl<M> Counted<M> {
    /// Wraps `inner`, counting from 0.
    pub fn new(inner: M) -> Counted<M> {
        Counted {
            inner,
            terminals: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The counter, shared with every fork.
    pub fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.terminals)
    }
}

/// Reads a counter.
pub fn read(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

impl<M: StateMachine> StateMachine for Counted<M> {
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
        self.inner.legal_moves_into(state, role, out)
    }

    fn is_terminal(&mut self, state: &M::State) -> Result<bool, MachineError> {
        let terminal = self.inner.is_terminal(state)?;
        if terminal {
            self.terminals.fetch_add(1, Ordering::Relaxed);
        }
        Ok(terminal)
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

    fn has_percepts(&self) -> bool {
        self.inner.has_percepts()
    }

    fn percepts_into(
        &mut self,
        state: &M::State,
        joint: &[M::Move],
        role: usize,
        out: &mut Vec<Term>,
    ) -> Result<(), MachineError> {
        self.inner.percepts_into(state, joint, role, out)
    }

    fn is_nature(&self, role: usize) -> bool {
        self.inner.is_nature(role)
    }

    fn factoring(&self) -> Option<Arc<crate::analysis::Factoring>> {
        self.inner.factoring()
    }

    fn fork(&self) -> Option<Counted<M>> {
        Some(Counted {
            inner: self.inner.fork()?,
            terminals: Arc::clone(&self.terminals),
        })
    }

    fn legal_moves(&mut self, state: &M::State, role: usize) -> Result<Vec<M::Move>, MachineError> {
        self.inner.legal_moves(state, role)
    }

    fn goal(&mut self, state: &M::State, role: usize) -> Result<u8, MachineError> {
        self.inner.goal(state, role)
    }

    fn goals(&mut self, state: &M::State) -> Result<Vec<u8>, MachineError> {
        self.inner.goals(state)
    }

    fn next_state(
        &mut self,
        state: &M::State,
        joint: &[M::Move],
    ) -> Result<M::State, MachineError> {
        self.inner.next_state(state, joint)
    }

    fn random_joint_move_into(
        &mut self,
        state: &M::State,
        rng: &mut impl Rng,
        joint: &mut Vec<M::Move>,
        scratch: &mut Vec<M::Move>,
    ) -> Result<(), MachineError> {
        self.inner
            .random_joint_move_into(state, rng, joint, scratch)
    }

    fn playout(
        &mut self,
        state: &M::State,
        rng: &mut impl Rng,
        max_steps: usize,
    ) -> Result<(M::State, usize), MachineError> {
        let (last, steps) = self.inner.playout(state, rng, max_steps)?;
        if steps < max_steps {
            self.terminals.fetch_add(1, Ordering::Relaxed);
        }
        Ok((last, steps))
    }

    fn parallel_playouts(&self) -> usize {
        self.inner.parallel_playouts()
    }

    fn playouts_from(
        &mut self,
        starts: &[M::State],
        rng: &mut impl Rng,
        max_steps: usize,
        deadline: std::time::Instant,
        out: &mut Vec<PlayoutEnd<M::State>>,
    ) -> Result<bool, MachineError> {
        let done = self
            .inner
            .playouts_from(starts, rng, max_steps, deadline, out)?;
        let ended = out
            .iter()
            .filter(|e| matches!(e, PlayoutEnd::Goals(_)))
            .count();
        self.terminals.fetch_add(ended as u64, Ordering::Relaxed);
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datalog::DatalogMachine;
    use crate::gdl::Description;

    #[test]
    fn counts_terminal_states_across_forks() {
        let sheet = "(role a) (init s0) (<= (legal a go) (true s0)) (<= (next s1) (does a go)) \
                     (<= terminal (true s1)) (<= (goal a 100) (true s1)) (<= (goal a 0) (true s0))";
        let description = Description::from_text(sheet).unwrap();
        let mut machine = Counted::new(DatalogMachine::new(&description).unwrap());
        let counter = machine.counter();
        let start = machine.initial_state();
        assert!(!machine.is_terminal(&start).unwrap());
        assert_eq!(read(&counter), 0);
        let go = machine.legal_moves(&start, 0).unwrap();
        let end = machine.next_state(&start, &go).unwrap();
        assert!(machine.is_terminal(&end).unwrap());
        let mut rng = rand::rng();
        machine.playout(&start, &mut rng, 10).unwrap();
        assert_eq!(read(&counter), 2);
        if let Some(mut fork) = machine.fork() {
            fork.is_terminal(&end).unwrap();
            assert_eq!(read(&counter), 3);
        }
    }

    /// The wrapper passes GDL-II through: percepts and nature (the web page's view of a
    /// GDL-II game is built from them).
    #[test]
    fn passes_percepts_and_nature_through() {
        let sheet = "(role p) (role random) (init s0) (<= (legal p go) (true s0)) \
                     (<= (legal random (coin h)) (true s0)) (<= (legal random (coin t)) (true s0)) \
                     (<= (next s1) (does p go)) (<= (sees p (saw ?c)) (does random (coin ?c))) \
                     (<= terminal (true s1)) (<= (goal p 100) (true s1)) (<= (goal p 0) (true s0)) \
                     (<= (goal random 0) (role random))";
        let description = Description::from_text(sheet).unwrap();
        let mut machine = Counted::new(DatalogMachine::new(&description).unwrap());
        assert!(machine.has_percepts() && machine.is_gdl2() && machine.is_nature(1));
        let start = machine.initial_state();
        let joint = vec![
            machine.legal_moves(&start, 0).unwrap()[0],
            machine.legal_moves(&start, 1).unwrap()[0],
        ];
        let seen = machine.percepts(&start, &joint, 0).unwrap();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].to_string().starts_with("(saw "), "{seen:?}");
    }
}
