//! The network: ground rules to gates, optimised and flattened for evaluation.
//!
//! Each ground rule becomes an AND of its body literals (a NOT in front of each negative one);
//! the rules with the same head feed an OR, which is the head's proposition. `(true f)` atoms
//! are base propositions and `(does r m)` atoms input propositions.
//!
//! Optimisation: every gate that depends on no base or input proposition is evaluated once
//! and becomes a constant (this computes static relations and the initial state, whose
//! facts are exactly the `init` atoms that hold); constants are folded through the gates,
//! one-input gates are bypassed, and whatever no `legal`, `goal`, `terminal` or `next`
//! proposition reads is dropped.
//!
//! Flattening numbers the nodes: the constants false and true, the bases, the inputs, and
//! the gates in topological order of their strongly connected components, first those that
//! do not depend on inputs (the state layer), then the rest (the move layer). A component
//! with more than one gate (from recursive rules) is a block evaluated from all-false to its
//! least fixpoint; it holds only AND and OR gates, since a stratified game never recurses
//! through negation (a NOT in a cycle is refused).

use hashbrown::HashMap;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::gdl::{GTerm, Term, TermPool};

use super::ground::{AtomId, Budget, Clock, GroundError, GroundProgram};

/// A node of the network while it is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    const FALSE: NodeId = NodeId(0);
    const TRUE: NodeId = NodeId(1);

    fn index(self) -> usize {
        self.0 as usize
    }
}

/// A move's number: an index into the net's table of move terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MoveId(pub u32);

#[derive(Clone, Debug)]
enum Node {
    Const(bool),
    Base,
    Input,
    And(Vec<NodeId>),
    Or(Vec<NodeId>),
    Not(NodeId),
}

impl Node {
    fn inputs(&self) -> &[NodeId] {
        match self {
            Node::And(v) | Node::Or(v) => v,
            Node::Not(x) => std::slice::from_ref(x),
            _ => &[],
        }
    }
}

/// The kind of a flattened gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    And,
    Or,
    Not,
}

/// A run of gates evaluated together.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    /// First gate.
    pub start: u32,
    /// End of the run (exclusive).
    pub end: u32,
    /// Whether the gates form a cycle, evaluated to a fixpoint.
    pub cyclic: bool,
}

/// Sizes of a net, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetStats {
    /// Base propositions (state bits).
    pub bases: usize,
    /// Input propositions.
    pub inputs: usize,
    /// Gates.
    pub gates: usize,
    /// Gate input edges.
    pub edges: usize,
    /// Gates in cyclic blocks.
    pub cyclic_gates: usize,
}

/// A flattened network and the tables that translate it to and from terms.
///
/// Node numbering: 0 is false, 1 is true, then `n_bases` bases, `n_inputs` inputs, then the
/// gates in evaluation order.
pub struct Net {
    pub(crate) pool: TermPool,
    pub(crate) roles: Vec<Term>,
    pub(crate) n_bases: usize,
    pub(crate) n_inputs: usize,
    pub(crate) kinds: Vec<Gate>,
    /// Gate `g`'s inputs are `ins[starts[g]..starts[g + 1]]`.
    pub(crate) starts: Vec<u32>,
    pub(crate) ins: Vec<u32>,
    pub(crate) state_blocks: Vec<Block>,
    pub(crate) move_blocks: Vec<Block>,
    /// For each base, the node of its `next` proposition.
    pub(crate) next: Vec<u32>,
    /// For each base, the fact.
    pub(crate) base_terms: Vec<GTerm>,
    /// For each move id, the move.
    pub(crate) moves: Vec<GTerm>,
    pub(crate) move_ids: HashMap<GTerm, MoveId>,
    /// Per role: the legal propositions and their moves.
    pub(crate) legal: Vec<Vec<(u32, MoveId)>>,
    /// Per role, per move id: the input node, or `u32::MAX`.
    pub(crate) input_of: Vec<Vec<u32>>,
    /// Per role: goal propositions and their values.
    pub(crate) goals: Vec<Vec<(u32, u8)>>,
    pub(crate) terminal: u32,
    /// The initial state's bits.
    pub(crate) initial: Vec<u64>,
}

impl Net {
    /// The node number of the first gate.
    pub(crate) fn first_gate(&self) -> usize {
        2 + self.n_bases + self.n_inputs
    }

    /// Total number of nodes.
    pub(crate) fn n_nodes(&self) -> usize {
        self.first_gate() + self.kinds.len()
    }

    /// Sizes of the net.
    pub fn stats(&self) -> NetStats {
        let cyclic_gates = self
            .state_blocks
            .iter()
            .chain(&self.move_blocks)
            .filter(|b| b.cyclic)
            .map(|b| (b.end - b.start) as usize)
            .sum();
        NetStats {
            bases: self.n_bases,
            inputs: self.n_inputs,
            gates: self.kinds.len(),
            edges: self.ins.len(),
            cyclic_gates,
        }
    }

    /// Builds the net of a ground program.
    ///
    /// # Errors
    /// The net outgrows the budget, or has a cycle through negation.
    pub(crate) fn build(
        prog: GroundProgram,
        roles: &[Term],
        budget: &Budget,
        clock: &Clock,
    ) -> Result<Net, GroundError> {
        Builder::new(prog, budget)?.finish(roles, budget, clock)
    }
}

struct Builder {
    prog: GroundProgram,
    nodes: Vec<Node>,
    /// The node of each atom.
    atom_node: Vec<NodeId>,
}

const NONE: NodeId = NodeId(u32::MAX);

impl Builder {
    fn new(prog: GroundProgram, budget: &Budget) -> Result<Builder, GroundError> {
        let mut b = Builder {
            nodes: vec![Node::Const(false), Node::Const(true)],
            atom_node: vec![NONE; prog.atoms.len()],
            prog,
        };
        for i in 0..b.prog.bases.len() {
            let a = b.prog.bases[i];
            b.atom_node[a.index()] = b.push(Node::Base);
        }
        for i in 0..b.prog.inputs.len() {
            let a = b.prog.inputs[i];
            b.atom_node[a.index()] = b.push(Node::Input);
        }
        for r in 0..b.prog.rules.len() {
            let rule = b.prog.rules[r];
            let head = b.node_of(rule.head);
            if !matches!(b.nodes[head.index()], Node::Or(_)) {
                return Err(GroundError::Unsupported(
                    "a rule concludes a `true` or `does` atom".into(),
                ));
            }
            let mut body = Vec::with_capacity((rule.end - rule.start) as usize);
            for l in rule.start..rule.end {
                let lit = b.prog.lits[l as usize];
                let n = b.node_of(lit.atom);
                body.push(if lit.positive {
                    n
                } else {
                    b.push(Node::Not(n))
                });
            }
            let conj = match body.len() {
                0 => NodeId::TRUE,
                1 => body[0],
                _ => b.push(Node::And(body)),
            };
            if let Node::Or(v) = &mut b.nodes[head.index()] {
                v.push(conj);
            }
            if b.nodes.len() > budget.max_gates {
                return Err(GroundError::Budget(format!(
                    "more than {} network nodes",
                    budget.max_gates
                )));
            }
        }
        Ok(b)
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// The node of an atom: its proposition, made on first use (an OR with no inputs yet).
    fn node_of(&mut self, atom: AtomId) -> NodeId {
        let n = self.atom_node[atom.index()];
        if n != NONE {
            return n;
        }
        let n = self.push(Node::Or(Vec::new()));
        self.atom_node[atom.index()] = n;
        n
    }

    /// The node of an atom, or false if no rule concludes it.
    fn signal(&self, atom: Option<AtomId>) -> NodeId {
        match atom {
            Some(a) if self.atom_node[a.index()] != NONE => self.atom_node[a.index()],
            _ => NodeId::FALSE,
        }
    }

    fn finish(
        mut self,
        roles: &[Term],
        budget: &Budget,
        clock: &Clock,
    ) -> Result<Net, GroundError> {
        let n = self.nodes.len();
        // 1. Evaluate everything that depends on no base or input.
        let order = components(&self.nodes, |_| true);
        clock.check("building the network")?;
        let mut dynamic = vec![false; n];
        let mut values = vec![false; n];
        values[1] = true;
        for comp in &order {
            let dyn_comp = comp.iter().any(|&x| {
                matches!(self.nodes[x.index()], Node::Base | Node::Input)
                    || self.nodes[x.index()]
                        .inputs()
                        .iter()
                        .any(|i| dynamic[i.index()])
            });
            if dyn_comp {
                comp.iter().for_each(|&x| dynamic[x.index()] = true);
                continue;
            }
            let cyclic = cyclic_without_negation(comp, &self.nodes)?;
            loop {
                let mut changed = false;
                for &x in comp {
                    let v = eval_node(&self.nodes[x.index()], &values, values[x.index()]);
                    if v != values[x.index()] {
                        values[x.index()] = v;
                        changed = true;
                    }
                }
                if !changed || !cyclic {
                    break;
                }
            }
        }
        // The initial state: the init atoms that hold.
        let k = self.prog.keywords;
        let n_bases = self.prog.bases.len();
        let mut base_index: HashMap<GTerm, usize> = HashMap::with_capacity(n_bases);
        let mut base_terms = Vec::with_capacity(n_bases);
        for (i, &a) in self.prog.bases.iter().enumerate() {
            let fact = self.prog.args(a)[0];
            base_index.insert(fact, i);
            base_terms.push(fact);
        }
        let mut initial = vec![0u64; n_bases.div_ceil(64)];
        for (a, &(rel, _)) in self.prog.atoms.iter().enumerate() {
            let node = self.atom_node[a];
            if rel != k.init || node == NONE {
                continue;
            }
            if dynamic[node.index()] {
                return Err(GroundError::Unsupported(
                    "init depends on true or does".into(),
                ));
            }
            if values[node.index()] {
                let fact = self.prog.args(AtomId(a as u32))[0];
                if let Some(&i) = base_index.get(&fact) {
                    initial[i / 64] |= 1 << (i % 64);
                }
            }
        }

        // 2. Fold constants and bypass one-input gates, in topological order.
        let mut repl: Vec<NodeId> = (0..n as u32).map(NodeId).collect();
        for (x, d) in dynamic.iter().enumerate() {
            if !d && x > 1 {
                repl[x] = if values[x] {
                    NodeId::TRUE
                } else {
                    NodeId::FALSE
                };
            }
        }
        for comp in &order {
            if !dynamic[comp[0].index()] {
                continue;
            }
            let cyclic = is_cyclic(comp, &self.nodes);
            for &x in comp {
                let node = std::mem::replace(&mut self.nodes[x.index()], Node::Const(false));
                let (new, alias) = simplify(node, &repl, &self.nodes, cyclic);
                self.nodes[x.index()] = new;
                if let Some(a) = alias {
                    repl[x.index()] = a;
                }
            }
        }
        clock.check("building the network")?;
        let resolve = |x: NodeId, repl: &[NodeId]| {
            let mut x = x;
            // Aliases point to earlier components, so this ends.
            while repl[x.index()] != x {
                x = repl[x.index()];
            }
            x
        };

        // 3. The outputs.
        let pool = &self.prog.pool;
        let role_ids: Vec<Option<GTerm>> = roles.iter().map(|r| pool.find(r)).collect();
        let mut moves: Vec<GTerm> = Vec::new();
        let mut move_ids: HashMap<GTerm, MoveId> = HashMap::new();
        let mut move_id = |m: GTerm, moves: &mut Vec<GTerm>| {
            *move_ids.entry(m).or_insert_with(|| {
                moves.push(m);
                MoveId(moves.len() as u32 - 1)
            })
        };
        let mut legal_raw: Vec<Vec<(NodeId, MoveId)>> = vec![Vec::new(); roles.len()];
        let mut goals_raw: Vec<Vec<(NodeId, u8)>> = vec![Vec::new(); roles.len()];
        let mut inputs_raw: Vec<(usize, MoveId, NodeId)> = Vec::new();
        let role_of = |t: GTerm| role_ids.iter().position(|r| *r == Some(t));
        for &a in &self.prog.inputs {
            let args = self.prog.args(a);
            if let Some(r) = role_of(args[0]) {
                let m = move_id(args[1], &mut moves);
                inputs_raw.push((r, m, self.atom_node[a.index()]));
            }
        }
        let mut terminal = NodeId::FALSE;
        for (a, &(rel, _)) in self.prog.atoms.iter().enumerate() {
            let node = self.atom_node[a];
            if node == NONE {
                continue;
            }
            let node = resolve(node, &repl);
            let args = self.prog.args(AtomId(a as u32));
            if rel == k.legal {
                if let Some(r) = role_of(args[0]) {
                    let m = move_id(args[1], &mut moves);
                    legal_raw[r].push((node, m));
                }
            } else if rel == k.goal {
                if let (Some(r), Some(v)) = (role_of(args[0]), goal_value(pool, args[1])) {
                    goals_raw[r].push((node, v));
                }
            } else if rel == k.terminal {
                terminal = node;
            }
        }
        let mut next_raw = Vec::with_capacity(n_bases);
        for &fact in &base_terms {
            let atom = pool
                .find_app(crate::gdl::Sym::NEXT, &[fact])
                .and_then(|t| self.prog.find(k.next, t));
            next_raw.push(resolve(self.signal(atom), &repl));
        }

        // 4. Keep what the outputs read.
        let mut live = vec![false; n];
        let mut stack: Vec<NodeId> = legal_raw
            .iter()
            .flatten()
            .map(|p| p.0)
            .chain(goals_raw.iter().flatten().map(|p| p.0))
            .chain(next_raw.iter().copied())
            .chain([terminal])
            .collect();
        while let Some(x) = stack.pop() {
            if live[x.index()] {
                continue;
            }
            live[x.index()] = true;
            for &i in self.nodes[x.index()].inputs() {
                stack.push(resolve(i, &repl));
            }
        }
        let is_gate = |node: &Node| matches!(node, Node::And(_) | Node::Or(_) | Node::Not(_));
        for (x, node) in self.nodes.iter_mut().enumerate() {
            if !live[x] {
                continue;
            }
            match node {
                Node::And(v) | Node::Or(v) => {
                    v.iter_mut().for_each(|i| *i = resolve(*i, &repl));
                }
                Node::Not(i) => *i = resolve(*i, &repl),
                _ => {}
            }
        }

        // 5. Flatten.
        let n_inputs = self.prog.inputs.len();
        let order = components(&self.nodes, |x| live[x] && is_gate(&self.nodes[x]));
        clock.check("building the network")?;
        let mut on_move = vec![false; n];
        for comp in &order {
            let m = comp.iter().any(|&x| {
                self.nodes[x.index()]
                    .inputs()
                    .iter()
                    .any(|i| on_move[i.index()] || matches!(self.nodes[i.index()], Node::Input))
            });
            comp.iter().for_each(|&x| on_move[x.index()] = m);
        }
        let mut number = vec![u32::MAX; n];
        number[0] = 0;
        number[1] = 1;
        let mut next_number = 2u32;
        for &a in self.prog.bases.iter().chain(&self.prog.inputs) {
            number[self.atom_node[a.index()].index()] = next_number;
            next_number += 1;
        }
        let first_gate = next_number;
        let mut kinds = Vec::new();
        let mut starts = vec![0u32];
        let mut ins = Vec::new();
        let mut state_blocks: Vec<Block> = Vec::new();
        let mut move_blocks: Vec<Block> = Vec::new();
        let mut gate_order: Vec<(bool, &Vec<NodeId>)> = Vec::new();
        for layer in [false, true] {
            for comp in &order {
                if on_move[comp[0].index()] == layer {
                    gate_order.push((layer, comp));
                }
            }
        }
        for &(_, comp) in &gate_order {
            for &x in comp.iter() {
                number[x.index()] = next_number;
                next_number += 1;
            }
        }
        for (layer, comp) in gate_order {
            let cyclic = cyclic_without_negation(comp, &self.nodes)?;
            let start = kinds.len() as u32;
            for &x in comp.iter() {
                let (kind, inputs) = match &self.nodes[x.index()] {
                    Node::And(v) => (Gate::And, v.as_slice()),
                    Node::Or(v) => (Gate::Or, v.as_slice()),
                    Node::Not(i) => (Gate::Not, std::slice::from_ref(i)),
                    _ => unreachable!("only gates are ordered"),
                };
                kinds.push(kind);
                ins.extend(inputs.iter().map(|i| number[i.index()]));
                starts.push(ins.len() as u32);
            }
            let end = kinds.len() as u32;
            let blocks = if layer {
                &mut move_blocks
            } else {
                &mut state_blocks
            };
            match blocks.last_mut() {
                Some(b) if !b.cyclic && !cyclic && b.end == start => b.end = end,
                _ => blocks.push(Block { start, end, cyclic }),
            }
        }
        if ins.contains(&u32::MAX) || kinds.len() > budget.max_gates {
            return Err(GroundError::Unsupported(
                "a gate reads a dropped node".into(),
            ));
        }
        debug_assert_eq!(first_gate as usize, 2 + n_bases + n_inputs);
        let num = |x: NodeId| number[x.index()];
        let mut input_of = vec![vec![u32::MAX; moves.len()]; roles.len()];
        for (r, m, node) in inputs_raw {
            input_of[r][m.0 as usize] = num(node);
        }
        let legal = legal_raw
            .into_iter()
            .map(|v| v.into_iter().map(|(x, m)| (num(x), m)).collect())
            .collect();
        let goals = goals_raw
            .into_iter()
            .map(|v| v.into_iter().map(|(x, g)| (num(x), g)).collect())
            .collect();
        let next = next_raw.into_iter().map(num).collect();
        let terminal = num(terminal);
        Ok(Net {
            pool: std::mem::take(&mut self.prog.pool),
            roles: roles.to_vec(),
            n_bases,
            n_inputs,
            kinds,
            starts,
            ins,
            state_blocks,
            move_blocks,
            next,
            base_terms,
            moves,
            move_ids,
            legal,
            input_of,
            goals,
            terminal,
            initial,
        })
    }
}

/// A goal value: an integer constant from 0 to 100.
fn goal_value(pool: &TermPool, t: GTerm) -> Option<u8> {
    if !pool.args(t).is_empty() || pool.is_nullary(t) {
        return None;
    }
    pool.functor(t)
        .name()
        .parse::<u8>()
        .ok()
        .filter(|&v| v <= 100)
}

/// A node's value from its inputs' values (`own` for nodes without inputs).
fn eval_node(node: &Node, values: &[bool], own: bool) -> bool {
    match node {
        Node::Const(b) => *b,
        Node::Base | Node::Input => own,
        Node::And(v) => v.iter().all(|i| values[i.index()]),
        Node::Or(v) => v.iter().any(|i| values[i.index()]),
        Node::Not(i) => !values[i.index()],
    }
}

/// A gate after constant folding: the new node, and what it may be replaced by (a constant,
/// or its single input when it is not part of a cycle).
fn simplify(node: Node, repl: &[NodeId], nodes: &[Node], cyclic: bool) -> (Node, Option<NodeId>) {
    let constant = |b: bool| {
        let id = if b { NodeId::TRUE } else { NodeId::FALSE };
        (Node::Const(b), Some(id))
    };
    match node {
        Node::And(v) => fold(v, true, repl, cyclic),
        Node::Or(v) => fold(v, false, repl, cyclic),
        Node::Not(i) => {
            let i = repl[i.index()];
            match i {
                NodeId::FALSE => constant(true),
                NodeId::TRUE => constant(false),
                _ => match &nodes[i.index()] {
                    Node::Not(j) if !cyclic => (Node::Const(false), Some(*j)),
                    _ => (Node::Not(i), None),
                },
            }
        }
        other => (other, None),
    }
}

/// Folds an AND (`is_and`) or OR: an absorbing constant input decides it, neutral ones are
/// dropped, repeated inputs merged.
fn fold(v: Vec<NodeId>, is_and: bool, repl: &[NodeId], cyclic: bool) -> (Node, Option<NodeId>) {
    let (absorbing, neutral) = if is_and {
        (NodeId::FALSE, NodeId::TRUE)
    } else {
        (NodeId::TRUE, NodeId::FALSE)
    };
    let constant = |b: bool| {
        let id = if b { NodeId::TRUE } else { NodeId::FALSE };
        (Node::Const(b), Some(id))
    };
    let mut out = Vec::with_capacity(v.len());
    for i in v {
        let i = repl[i.index()];
        if i == absorbing {
            return constant(!is_and);
        }
        if i != neutral {
            out.push(i);
        }
    }
    out.sort_unstable();
    out.dedup();
    match out.len() {
        0 => constant(is_and),
        1 if !cyclic => (Node::Const(false), Some(out[0])),
        _ if is_and => (Node::And(out), None),
        _ => (Node::Or(out), None),
    }
}

/// Whether a component is a cycle: several nodes, or one that reads itself.
/// Whether a component is a cycle; an error if the cycle passes through a NOT gate, which a
/// stratified game never produces.
fn cyclic_without_negation(comp: &[NodeId], nodes: &[Node]) -> Result<bool, GroundError> {
    let cyclic = is_cyclic(comp, nodes);
    if cyclic
        && comp
            .iter()
            .any(|x| matches!(nodes[x.index()], Node::Not(_)))
    {
        return Err(GroundError::Unsupported("a cycle through negation".into()));
    }
    Ok(cyclic)
}

fn is_cyclic(comp: &[NodeId], nodes: &[Node]) -> bool {
    comp.len() > 1 || nodes[comp[0].index()].inputs().contains(&comp[0])
}

/// The strongly connected components of the nodes `keep` selects (edges from a gate's inputs
/// to the gate), in topological order.
fn components(nodes: &[Node], keep: impl Fn(usize) -> bool) -> Vec<Vec<NodeId>> {
    let mut graph: DiGraph<u32, ()> = DiGraph::new();
    let mut index = vec![NodeIndex::end(); nodes.len()];
    for (x, slot) in index.iter_mut().enumerate() {
        if keep(x) {
            *slot = graph.add_node(x as u32);
        }
    }
    for (x, node) in nodes.iter().enumerate() {
        if index[x] == NodeIndex::end() {
            continue;
        }
        for i in node.inputs() {
            if index[i.index()] != NodeIndex::end() {
                graph.add_edge(index[i.index()], index[x], ());
            }
        }
    }
    let mut comps = petgraph::algo::tarjan_scc(&graph);
    comps.reverse();
    comps
        .into_iter()
        .map(|c| c.into_iter().map(|i| NodeId(graph[i])).collect())
        .collect()
}
