//! The propnet as a [`StateMachine`]: states are bitsets over base propositions, evaluated by
//! differential propagation.
//!
//! The machine keeps the network's counters for one loaded state and one set of inputs (one
//! joint move). Loading another state flips only the bases that differ; setting a joint move
//! flips only the inputs that differ. Each flip is pushed on a stack; popping it adds one to
//! or takes one from the counter of every node it links to, and a node whose counter crosses
//! its threshold is pushed in turn, until nothing changes. Links to output nodes keep the
//! per-role sets of legal moves up to date, mark the bases whose `next` may have changed, and
//! schedule recursive blocks for re-evaluation. So terminal and goals are read off one node,
//! legal moves off a set, and the next state is the loaded one with the marked bases
//! re-read.
//!
//! Legal moves, goals and terminal never depend on inputs (the net refuses games where they
//! do), so inputs stay set until the next joint move replaces them.
//!
//! The topology is shared ([`Arc`]) between clones; each clone has its own counters, so a
//! search can give each thread a clone.

use std::sync::Arc;

use rand::Rng;

use crate::gdl::{Description, Term};
use crate::machine::{MachineError, StateMachine};

use super::ground::{Budget, Clock, GroundError, ground_with_clock};
use super::net::{MoveId, NO_NODE, Net, TRUE_COUNT};

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
    rt: Runtime,
}

/// The mutable part of a machine: counters and the sets derived from them.
#[derive(Clone)]
struct Runtime {
    /// One counter per node below the output nodes; a node is true when the top bit is set.
    counts: Vec<u32>,
    /// The loaded state's bits (the bases' values).
    cur: Vec<u64>,
    /// Pending flips, `node << 1 | new value`.
    stack: Vec<u32>,
    /// Bases whose `next` may differ from their value; `is_dirty` marks them.
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    /// Per role, the legal entries that hold, in no order; `legal_pos` is each entry's place
    /// in its role's set, or [`NO_NODE`].
    legal_set: Vec<Vec<u32>>,
    legal_pos: Vec<u32>,
    /// Blocks waiting for re-evaluation.
    block_dirty: Vec<bool>,
    pending_blocks: Vec<u32>,
    block_old: Vec<u32>,
    /// Per role, the input node set by the current joint move, or [`NO_NODE`].
    inputs_on: Vec<u32>,
}

impl Runtime {
    fn new(net: &Net) -> Runtime {
        let mut rt = Runtime {
            counts: net.init_counts.clone(),
            cur: net.initial.clone(),
            stack: Vec::with_capacity(1024),
            dirty: Vec::new(),
            is_dirty: vec![false; net.n_bases],
            legal_set: vec![Vec::new(); net.roles.len()],
            legal_pos: vec![NO_NODE; net.legal.len()],
            block_dirty: vec![false; net.blocks.len()],
            pending_blocks: Vec::new(),
            block_old: Vec::new(),
            inputs_on: vec![NO_NODE; net.roles.len()],
        };
        for (k, e) in net.legal.iter().enumerate() {
            rt.update_legal(net, k);
            debug_assert_eq!(rt.legal_pos[k] != NO_NODE, Net::lit_value(&rt.counts, e.lit));
        }
        for i in 0..net.n_bases {
            rt.mark_dirty(i);
        }
        rt
    }

    #[inline]
    fn base(&self, i: usize) -> bool {
        self.cur[i / 64] >> (i % 64) & 1 == 1
    }

    #[inline]
    fn mark_dirty(&mut self, i: usize) {
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(i as u32);
        }
    }

    /// Brings legal entry `k`'s membership in its role's set in line with its literal.
    #[inline]
    fn update_legal(&mut self, net: &Net, k: usize) {
        let e = &net.legal[k];
        let v = Net::lit_value(&self.counts, e.lit);
        let pos = self.legal_pos[k];
        let set = &mut self.legal_set[e.role as usize];
        if v && pos == NO_NODE {
            self.legal_pos[k] = set.len() as u32;
            set.push(k as u32);
        } else if !v && pos != NO_NODE {
            let last = set.pop().expect("a member");
            if last as usize != k {
                set[pos as usize] = last;
                self.legal_pos[last as usize] = pos;
            }
            self.legal_pos[k] = NO_NODE;
        }
    }

    /// Sets leaf `node` (a base or input) to `v` and queues the change.
    #[inline]
    fn set_leaf(&mut self, node: u32, v: bool) {
        self.counts[node as usize] = if v { TRUE_COUNT } else { 0 };
        self.stack.push(node << 1 | u32::from(v));
    }

    /// Flips base `i` and queues the change.
    #[inline]
    fn flip_base(&mut self, i: usize) {
        self.cur[i / 64] ^= 1 << (i % 64);
        let v = self.base(i);
        self.set_leaf(Net::base_node(i), v);
    }

    /// Propagates queued changes until nothing changes.
    fn propagate(&mut self, net: &Net) {
        let first_legal = net.first_legal;
        loop {
            while let Some(ev) = self.stack.pop() {
                let node = (ev >> 1) as usize;
                let v = ev & 1;
                let (s, e) = (net.out_start[node] as usize, net.out_start[node + 1] as usize);
                for &t in &net.outs[s..e] {
                    let target = t >> 1;
                    if target >= first_legal {
                        self.output_changed(net, node, target);
                        continue;
                    }
                    // +1 when the literal turns true, -1 when it turns false.
                    let lit = v ^ (t & 1);
                    let old = self.counts[target as usize];
                    let new = old.wrapping_add(lit * 2).wrapping_sub(1);
                    self.counts[target as usize] = new;
                    if (old ^ new) & TRUE_COUNT != 0 {
                        self.stack.push(target << 1 | new >> 31);
                    }
                }
            }
            match self.pending_blocks.pop() {
                Some(b) => self.reevaluate_block(net, b as usize),
                None => break,
            }
        }
    }

    /// A link from `source` to output node `target` fired.
    #[cold]
    fn output_changed(&mut self, net: &Net, _source: usize, target: u32) {
        if target < net.first_next {
            self.update_legal(net, (target - net.first_legal) as usize);
        } else if target < net.first_block {
            self.mark_dirty((target - net.first_next) as usize);
        } else {
            let b = (target - net.first_block) as usize;
            if !self.block_dirty[b] {
                self.block_dirty[b] = true;
                self.pending_blocks.push(b as u32);
            }
        }
    }

    /// Re-evaluates a block and queues its gates that changed.
    fn reevaluate_block(&mut self, net: &Net, b: usize) {
        self.block_dirty[b] = false;
        let (start, end) = net.blocks[b];
        let range = start as usize..end as usize;
        self.block_old.clear();
        self.block_old.extend_from_slice(&self.counts[range.clone()]);
        net.eval_block(&mut self.counts, b);
        for (x, &old) in range.zip(&self.block_old) {
            let new = self.counts[x];
            if new != old {
                self.stack.push((x as u32) << 1 | new >> 31);
            }
        }
    }

    /// Loads a state: flips the bases that differ and propagates.
    fn load(&mut self, net: &Net, state: &[u64]) -> Result<(), MachineError> {
        if state.len() != self.cur.len() {
            return Err(MachineError::Engine(
                "a state from another propnet machine".into(),
            ));
        }
        for w in 0..state.len() {
            let mut diff = self.cur[w] ^ state[w];
            while diff != 0 {
                let i = w * 64 + diff.trailing_zeros() as usize;
                diff &= diff - 1;
                self.flip_base(i);
                self.mark_dirty(i);
            }
        }
        self.propagate(net);
        Ok(())
    }

    /// Sets role `role`'s input to `node` (or none), queueing the changes.
    #[inline]
    fn set_input(&mut self, role: usize, node: u32) {
        let old = self.inputs_on[role];
        if old == node {
            return;
        }
        if old != NO_NODE {
            self.set_leaf(old, false);
        }
        if node != NO_NODE {
            self.set_leaf(node, true);
        }
        self.inputs_on[role] = node;
    }

    /// Whether base `i`'s `next` holds.
    #[inline]
    fn next_value(&self, net: &Net, i: usize) -> bool {
        Net::lit_value(&self.counts, net.next[i])
    }

    /// The next state's bits into `out`, leaving the loaded state as it is.
    fn next_bits(&mut self, net: &Net, out: &mut [u64]) {
        out.copy_from_slice(&self.cur);
        let mut k = 0;
        while k < self.dirty.len() {
            let i = self.dirty[k] as usize;
            if self.next_value(net, i) == self.base(i) {
                self.is_dirty[i] = false;
                self.dirty.swap_remove(k);
            } else {
                out[i / 64] ^= 1 << (i % 64);
                k += 1;
            }
        }
    }

    /// Moves to the next state in place and propagates.
    fn advance(&mut self, net: &Net) {
        // Every `next` is read before any base changes (a `next` may read a base directly).
        let mut n = 0;
        for k in 0..self.dirty.len() {
            let i = self.dirty[k] as usize;
            self.is_dirty[i] = false;
            if self.next_value(net, i) != self.base(i) {
                self.dirty[n] = i as u32;
                n += 1;
            }
        }
        for k in 0..n {
            let i = self.dirty[k] as usize;
            self.flip_base(i);
        }
        self.dirty.clear();
        self.propagate(net);
    }
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
        let rt = Runtime::new(&net);
        PropnetMachine { net, rt }
    }

    /// The network.
    pub fn net(&self) -> &Arc<Net> {
        &self.net
    }

    fn load(&mut self, state: &PropnetState) -> Result<(), MachineError> {
        self.rt.load(&self.net, &state.0)
    }

    fn current_state(&self) -> PropnetState {
        PropnetState(self.rt.cur.clone().into_boxed_slice())
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
        if let Some(set) = self.rt.legal_set.get(role) {
            let start = out.len();
            out.extend(set.iter().map(|&k| self.net.legal[k as usize].mv));
            out[start..].sort_unstable();
        }
        Ok(())
    }

    fn is_terminal(&mut self, state: &PropnetState) -> Result<bool, MachineError> {
        self.load(state)?;
        Ok(Net::lit_value(&self.rt.counts, self.net.terminal))
    }

    fn goal_values(&mut self, state: &PropnetState, role: usize) -> Result<Vec<u8>, MachineError> {
        self.load(state)?;
        let mut values: Vec<u8> = self
            .net
            .goals
            .get(role)
            .map(|g| {
                g.iter()
                    .filter(|&&(l, _)| Net::lit_value(&self.rt.counts, l))
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
            let node = net.input_of[role]
                .get(mv.0 as usize)
                .copied()
                .unwrap_or(NO_NODE);
            self.rt.set_input(role, node);
        }
        self.rt.propagate(net);
        let mut bits = vec![0u64; self.rt.cur.len()].into_boxed_slice();
        self.rt.next_bits(net, &mut bits);
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

    fn state_terms(&self, state: &PropnetState) -> Vec<Term> {
        (0..self.net.n_bases.min(state.0.len() * 64))
            .filter(|&i| state.get(i))
            .map(|i| self.net.pool.term(self.net.base_terms[i]))
            .collect()
    }

    /// Random playouts in place: moves are drawn from the legal sets, the inputs set, and the
    /// bases whose `next` changed flipped, with no state built until the end.
    fn playout(
        &mut self,
        state: &PropnetState,
        rng: &mut impl Rng,
        max_steps: usize,
    ) -> Result<(PropnetState, usize), MachineError> {
        self.load(state)?;
        let net = &*self.net;
        let rt = &mut self.rt;
        for steps in 0..max_steps {
            if Net::lit_value(&rt.counts, net.terminal) {
                return Ok((PropnetState(rt.cur.clone().into_boxed_slice()), steps));
            }
            for role in 0..net.roles.len() {
                let set = &rt.legal_set[role];
                let k = match set.len() {
                    0 => {
                        return Err(MachineError::NoLegalMoves {
                            role: net.roles[role].to_string(),
                        });
                    }
                    1 => set[0],
                    n => set[rng.random_range(0..n)],
                };
                let input = net.legal[k as usize].input;
                rt.set_input(role, input);
            }
            rt.propagate(net);
            rt.advance(net);
        }
        Ok((self.current_state(), max_steps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    const TICTACTOE: &str = include_str!("../../rules/ticTacToe.kif");
    const CONNECT_FOUR: &str = include_str!("../../rules/connectFour.kif");

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

    /// Every counter, legal set and dirty mark agrees with an evaluation from scratch.
    fn assert_consistent(m: &PropnetMachine) {
        let net = &*m.net;
        let rt = &m.rt;
        let mut expect = rt.counts.clone();
        net.recount(&mut expect);
        assert_eq!(expect, rt.counts, "counters differ from a full evaluation");
        for (k, e) in net.legal.iter().enumerate() {
            let v = Net::lit_value(&rt.counts, e.lit);
            assert_eq!(v, rt.legal_pos[k] != NO_NODE, "legal entry {k}");
            if v {
                let pos = rt.legal_pos[k] as usize;
                assert_eq!(rt.legal_set[e.role as usize][pos], k as u32);
            }
        }
        for i in 0..net.n_bases {
            if !rt.is_dirty[i] {
                assert_eq!(rt.next_value(net, i), rt.base(i), "base {i} not marked");
            }
        }
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
            assert_consistent(&m);
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
        assert_consistent(&m);
    }

    #[test]
    fn propagation_matches_full_evaluation() {
        for text in [TICTACTOE, CONNECT_FOUR] {
            let mut m = machine(text);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
            let s0 = m.initial_state();
            for _ in 0..20 {
                let (end, _) = m.playout(&s0, &mut rng, 1000).unwrap();
                assert_consistent(&m);
                assert!(m.is_terminal(&end).unwrap());
                assert_eq!(m.goals(&end).unwrap().len(), 2);
                // Step by step through the trait, with a state reloaded now and then.
                let mut s = s0.clone();
                let mut joint = Vec::new();
                let mut scratch = Vec::new();
                let mut steps = 0;
                while !m.is_terminal(&s).unwrap() {
                    m.random_joint_move_into(&s, &mut rng, &mut joint, &mut scratch)
                        .unwrap();
                    let t = m.next_state_unchecked(&s, &joint).unwrap();
                    assert_consistent(&m);
                    if steps % 3 == 0 {
                        assert!(!m.legal_moves(&s0, 0).unwrap().is_empty());
                    }
                    s = t;
                    steps += 1;
                }
                assert_consistent(&m);
            }
        }
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
        assert!(m.net().stats().cyclic_gates > 0);
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
        assert_consistent(&m);
        // Back to the start: the cycle must shrink back and grow again.
        let moves = m.legal_moves(&s0, 0).unwrap();
        assert_eq!(moves.len(), 6);
        assert_consistent(&m);
    }
}
#[cfg(test)]
mod debug_tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;
    #[test]
    fn dbg_playout() {
        let d = Description::from_text(include_str!("../../rules/ticTacToe.kif")).unwrap();
        let mut m = PropnetMachine::new(&d, &Budget::default()).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let s0 = m.initial_state();
        for p in 0..20 {
            let mut m2 = m.clone();
            m.load(&s0).unwrap();
            let mut s = s0.clone();
            for step in 0..20 {
                if m.is_terminal(&s).unwrap() { break; }
                let mut joint = vec![];
                for role in 0..2 {
                    let set = &m.rt.legal_set[role];
                    let k = set[rng.random_range(0..set.len())];
                    joint.push(m.net.legal[k as usize].mv);
                    let input = m.net.legal[k as usize].input;
                    m.rt.set_input(role, input);
                }
                let net = m.net.clone();
                m.rt.propagate(&net);
                m.rt.advance(&net);
                let expect = m2.next_state_unchecked(&s, &joint).unwrap();
                let got = m.current_state();
                if expect != got {
                    panic!("playout {p} step {step}: joint {:?}\nexpect {:?}\ngot {:?}", joint.iter().map(|&x| m.move_term(x).to_string()).collect::<Vec<_>>(), m.state_terms(&expect).iter().map(|t| t.to_string()).collect::<Vec<_>>(), m.state_terms(&got).iter().map(|t| t.to_string()).collect::<Vec<_>>());
                }
                s = got;
            }
        }
    }
}
