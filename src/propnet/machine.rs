//! The propnet as a [`StateMachine`]: states are bitsets over base propositions.
//!
//! The machine keeps one value per node in a preallocated buffer. Loading a state writes its
//! bits into the base nodes and evaluates the state layer (everything that does not read an
//! input); legal moves, goals and terminal are then read off their nodes. A joint move sets
//! its input nodes, evaluates the move layer, reads each base's `next` node into the new
//! state and clears the inputs again. The last loaded state is remembered, so asking for
//! terminal, legal moves and goals of one state evaluates the state layer once.
//!
//! The topology is shared ([`Arc`]) between clones; each clone has its own buffers, so a
//! search can give each thread a clone.

use std::sync::Arc;

use crate::gdl::{Description, Term};
use crate::machine::{MachineError, StateMachine};

use super::ground::{Budget, Clock, GroundError, ground_with_clock};
use super::net::{Block, Gate, MoveId, Net};

/// A state: one bit per base proposition.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PropnetState(Box<[u64]>);

impl PropnetState {
    /// The bits, 64 base propositions a word.
    pub fn words(&self) -> &[u64] {
        &self.0
    }

    fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
}

/// A game run by a propositional network.
#[derive(Clone)]
pub struct PropnetMachine {
    net: Arc<Net>,
    /// One value per node (0 or 1).
    values: Vec<u8>,
    /// The state whose values the state layer holds.
    loaded: Option<PropnetState>,
    /// Input nodes switched on by the current joint move.
    set_inputs: Vec<u32>,
}

impl PropnetMachine {
    /// Grounds the game and builds its network within `budget`.
    ///
    /// # Errors
    /// The rules cannot be lowered, the game exceeds the budget, or the network cannot
    /// represent it; callers fall back to the Datalog engine.
    pub fn new(description: &Description, budget: &Budget) -> Result<PropnetMachine, GroundError> {
        let clock = Clock::new(budget);
        let prog = ground_with_clock(description, budget, &clock)?;
        let net = Net::build(prog, description.roles(), budget, &clock)?;
        Ok(PropnetMachine::from_net(Arc::new(net)))
    }

    /// A machine over an already built net.
    pub fn from_net(net: Arc<Net>) -> PropnetMachine {
        let mut values = vec![0u8; net.n_nodes()];
        values[1] = 1;
        PropnetMachine {
            net,
            values,
            loaded: None,
            set_inputs: Vec::new(),
        }
    }

    /// The network.
    pub fn net(&self) -> &Arc<Net> {
        &self.net
    }

    fn load(&mut self, state: &PropnetState) -> Result<(), MachineError> {
        if self.loaded.as_ref() == Some(state) {
            return Ok(());
        }
        let net = &*self.net;
        if state.0.len() != net.n_bases.div_ceil(64) {
            return Err(MachineError::Engine(
                "a state from another propnet machine".into(),
            ));
        }
        for i in 0..net.n_bases {
            self.values[2 + i] = u8::from(state.get(i));
        }
        run(net, &net.state_blocks, &mut self.values);
        match &mut self.loaded {
            Some(s) => s.0.copy_from_slice(&state.0),
            None => self.loaded = Some(state.clone()),
        }
        Ok(())
    }
}

/// Evaluates blocks of gates in order.
fn run(net: &Net, blocks: &[Block], values: &mut [u8]) {
    let first = net.first_gate();
    for b in blocks {
        let (start, end) = (b.start as usize, b.end as usize);
        if !b.cyclic {
            for g in start..end {
                values[first + g] = eval(net, g, values);
            }
            continue;
        }
        // A positive cycle: from all false up to the least fixpoint.
        values[first + start..first + end].fill(0);
        loop {
            let mut changed = false;
            for g in start..end {
                let v = eval(net, g, values);
                if v != values[first + g] {
                    values[first + g] = v;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
}

#[inline]
fn eval(net: &Net, g: usize, values: &[u8]) -> u8 {
    let ins = &net.ins[net.starts[g] as usize..net.starts[g + 1] as usize];
    match net.kinds[g] {
        Gate::And => u8::from(ins.iter().all(|&i| values[i as usize] != 0)),
        Gate::Or => u8::from(ins.iter().any(|&i| values[i as usize] != 0)),
        Gate::Not => u8::from(ins.first().is_some_and(|&i| values[i as usize] == 0)),
    }
}

impl StateMachine for PropnetMachine {
    type State = PropnetState;
    type Move = MoveId;

    fn fork(&self) -> Option<PropnetMachine> {
        Some(self.clone())
    }

    fn roles(&self) -> &[Term] {
        &self.net.roles
    }

    fn initial_state(&self) -> PropnetState {
        PropnetState(self.net.initial.clone().into_boxed_slice())
    }

    fn legal_moves_into(
        &mut self,
        state: &PropnetState,
        role: usize,
        out: &mut Vec<MoveId>,
    ) -> Result<(), MachineError> {
        self.load(state)?;
        if let Some(legal) = self.net.legal.get(role) {
            out.extend(
                legal
                    .iter()
                    .filter(|&&(node, _)| self.values[node as usize] != 0)
                    .map(|&(_, m)| m),
            );
        }
        Ok(())
    }

    fn is_terminal(&mut self, state: &PropnetState) -> Result<bool, MachineError> {
        self.load(state)?;
        Ok(self.values[self.net.terminal as usize] != 0)
    }

    fn goal_values(&mut self, state: &PropnetState, role: usize) -> Result<Vec<u8>, MachineError> {
        self.load(state)?;
        let mut values: Vec<u8> = self
            .net
            .goals
            .get(role)
            .map(|g| {
                g.iter()
                    .filter(|&&(node, _)| self.values[node as usize] != 0)
                    .map(|&(_, v)| v)
                    .collect()
            })
            .unwrap_or_default();
        values.sort_unstable();
        values.dedup();
        Ok(values)
    }

    fn next_state_unchecked(
        &mut self,
        state: &PropnetState,
        joint: &[MoveId],
    ) -> Result<PropnetState, MachineError> {
        let n_roles = self.net.roles.len();
        if joint.len() != n_roles {
            return Err(MachineError::JointMoveSize {
                expected: n_roles,
                found: joint.len(),
            });
        }
        self.load(state)?;
        let net = &*self.net;
        for (role, mv) in joint.iter().enumerate() {
            let node = net
                .input_of
                .get(role)
                .and_then(|v| v.get(mv.0 as usize))
                .copied()
                .unwrap_or(u32::MAX);
            if node != u32::MAX {
                self.values[node as usize] = 1;
                self.set_inputs.push(node);
            }
        }
        run(net, &net.move_blocks, &mut self.values);
        let mut bits = vec![0u64; net.n_bases.div_ceil(64)].into_boxed_slice();
        for (i, &node) in net.next.iter().enumerate() {
            if self.values[node as usize] != 0 {
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        for node in self.set_inputs.drain(..) {
            self.values[node as usize] = 0;
        }
        Ok(PropnetState(bits))
    }

    fn move_term(&self, mv: MoveId) -> Term {
        match self.net.moves.get(mv.0 as usize) {
            Some(&t) => self.net.pool.term(t),
            None => Term::Const(crate::gdl::Sym::new("?unknown-move")),
        }
    }

    fn find_move(&self, term: &Term) -> Option<MoveId> {
        let t = self.net.pool.find(term)?;
        self.net.move_ids.get(&t).copied()
    }

    fn fact_ids_into(&self, state: &PropnetState, out: &mut Vec<u32>) -> bool {
        out.clear();
        for (w, &word) in state.0.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                if i < self.net.n_bases {
                    out.push(i as u32);
                }
                bits &= bits - 1;
            }
        }
        true
    }

    fn state_from_terms(&mut self, facts: &[Term]) -> Result<PropnetState, MachineError> {
        let net = &*self.net;
        let mut bits = vec![0u64; net.n_bases.div_ceil(64)].into_boxed_slice();
        for fact in facts {
            let unknown = || MachineError::UnknownFact {
                fact: fact.to_string(),
            };
            let id = net.pool.find(fact).ok_or_else(unknown)?;
            let i = net
                .base_terms
                .iter()
                .position(|&t| t == id)
                .ok_or_else(unknown)?;
            bits[i / 64] |= 1 << (i % 64);
        }
        Ok(PropnetState(bits))
    }

    fn state_terms(&self, state: &PropnetState) -> Vec<Term> {
        (0..self.net.n_bases.min(state.0.len() * 64))
            .filter(|&i| state.get(i))
            .map(|i| self.net.pool.term(self.net.base_terms[i]))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICTACTOE: &str = include_str!("../../rules/ticTacToe.kif");

    fn machine(text: &str) -> PropnetMachine {
        let description = Description::from_text(text).unwrap();
        PropnetMachine::new(&description, &Budget::default()).unwrap()
    }

    fn printed(m: &PropnetMachine, moves: &[MoveId]) -> Vec<String> {
        let mut v: Vec<String> = moves.iter().map(|&t| m.move_term(t).to_string()).collect();
        v.sort();
        v
    }

    fn mv(m: &PropnetMachine, text: &str) -> MoveId {
        m.find_move(&crate::gdl::parse_term(text).unwrap()).unwrap()
    }

    #[test]
    fn tictactoe_game() {
        let mut m = machine(TICTACTOE);
        let s0 = m.initial_state();
        assert_eq!(m.state_terms(&s0).len(), 10);
        assert!(!m.is_terminal(&s0).unwrap());
        assert_eq!(m.legal_moves(&s0, 0).unwrap().len(), 9);
        let o = m.legal_moves(&s0, 1).unwrap();
        assert_eq!(printed(&m, &o), ["noop"]);
        let noop = o[0];
        // x plays the first column, o the second; x wins.
        let mut s = s0.clone();
        let script = [
            ["(mark 1 1)", "noop"],
            ["noop", "(mark 1 2)"],
            ["(mark 2 1)", "noop"],
            ["noop", "(mark 2 2)"],
        ];
        for [a, b] in script {
            let joint = [
                if a == "noop" { noop } else { mv(&m, a) },
                if b == "noop" { noop } else { mv(&m, b) },
            ];
            s = m.next_state(&s, &joint).unwrap();
            assert!(!m.is_terminal(&s).unwrap());
        }
        assert_eq!(m.legal_moves(&s, 0).unwrap().len(), 5);
        assert!(m.next_state(&s, &[mv(&m, "(mark 1 1)"), noop]).is_err());
        let s = m.next_state(&s, &[mv(&m, "(mark 3 1)"), noop]).unwrap();
        assert!(m.is_terminal(&s).unwrap());
        assert_eq!(m.goals(&s).unwrap(), [100, 0]);
        let facts: Vec<String> = m.state_terms(&s).iter().map(|t| t.to_string()).collect();
        assert!(facts.contains(&"(cell 3 1 x)".to_string()));
        assert!(facts.contains(&"(control o)".to_string()));
        // The initial state is unchanged and still answers.
        assert_eq!(m.legal_moves(&s0, 0).unwrap().len(), 9);
        // A state rebuilt from its facts; a fact that is no base proposition is refused.
        let facts = m.state_terms(&s);
        assert_eq!(m.state_from_terms(&facts).unwrap(), s);
        let never = crate::gdl::parse_term("(cell 4 4 x)").unwrap();
        assert!(matches!(
            m.state_from_terms(&[never]),
            Err(MachineError::UnknownFact { .. })
        ));
    }

    #[test]
    fn recursion_reaches_its_fixpoint() {
        // From the corpus's nim-recursive1.kif: a self-recursive rule over a cyclic relation,
        // here depending on the state so that the cycle is evaluated per state.
        let text = "(role a) (init (p 1)) (init (e 1 2)) (init (e 2 3)) (init (e 3 1))
            (<= (next (e ?x ?y)) (true (e ?x ?y)))
            (<= (reach ?x ?y) (true (e ?x ?y)))
            (<= (reach ?x ?z) (reach ?x ?y) (reach ?y ?z))
            (<= (legal a (go ?y)) (true (p ?x)) (reach ?x ?y))
            (<= (legal a (cut ?x ?y)) (true (e ?x ?y)))
            (<= (next (p ?y)) (does a (go ?y)))
            (<= (next (p ?x)) (does a (cut ?y ?z)) (true (p ?x)))
            (<= (next (e ?x ?y)) (does a (go ?z)) (true (e ?x ?y)))
            (<= terminal (true (p 3)) (not (true (e 3 1))))
            (goal a 100)";
        let text = text.replace(
            "(<= (next (e ?x ?y)) (true (e ?x ?y)))",
            "(<= (next (e ?x ?y)) (true (e ?x ?y)) (does a (cut ?u ?v)) (distinct (e ?x ?y) (e ?u ?v)))",
        );
        let mut m = machine(&text);
        let s0 = m.initial_state();
        let moves = m.legal_moves(&s0, 0).unwrap();
        assert_eq!(
            printed(&m, &moves),
            [
                "(cut 1 2)",
                "(cut 2 3)",
                "(cut 3 1)",
                "(go 1)",
                "(go 2)",
                "(go 3)"
            ]
        );
        // Cutting 2 -> 3 leaves 3 -> 1 -> 2: from 1 only 2 is reachable.
        let s1 = m.next_state(&s0, &[mv(&m, "(cut 2 3)")]).unwrap();
        let moves = m.legal_moves(&s1, 0).unwrap();
        assert_eq!(printed(&m, &moves), ["(cut 1 2)", "(cut 3 1)", "(go 2)"]);
    }
}
