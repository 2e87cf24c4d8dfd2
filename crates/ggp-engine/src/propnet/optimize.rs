//! Optimisation passes over the network while it is built.
//!
//! The network is a vector of [`Node`]s whose gates read literals (a node, possibly negated),
//! with a topological order of its strongly connected components computed once from the raw
//! network. Every pass only ever replaces a gate's input by an earlier node in that order (a
//! constant, a representative, or the inputs of an earlier gate), so the order stays valid
//! and each pass is one sweep:
//!
//! - [`evaluate_static`]: every gate that depends on no base or input proposition gets its
//!   value (least fixpoint for recursive components).
//! - [`simplify`]: constants folded, repeated inputs merged, `x` with `¬x` decided, one-input
//!   gates replaced by their input, identical gates (same kind, same inputs) merged.
//! - [`inline`]: a gate read by a single other gate, of the same kind (or of the dual kind
//!   through a negation, by De Morgan), is merged into its reader.
//! - [`live`]: what the outputs read.
//!
//! Gates in recursive components are folded but never replaced or merged, so that cycles
//! keep their shape.

use std::hash::BuildHasher;

use hashbrown::{HashMap, HashTable};

use super::ground::{Clock, GroundError, Phase};

/// A literal: a node, or its negation. Node 0 is the constant false, so [`Lit::TRUE`] is its
/// negation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Lit(pub u32);

impl Lit {
    pub const FALSE: Lit = Lit(0);
    pub const TRUE: Lit = Lit(1);

    /// The node itself.
    pub fn pos(node: usize) -> Lit {
        Lit((node as u32) << 1)
    }

    /// The node it reads.
    pub fn node(self) -> usize {
        (self.0 >> 1) as usize
    }

    /// Whether it is negated.
    pub fn neg(self) -> bool {
        self.0 & 1 == 1
    }

    /// The literal negated when `neg`.
    pub fn xor(self, neg: bool) -> Lit {
        Lit(self.0 ^ u32::from(neg))
    }

    /// A constant literal.
    pub fn constant(b: bool) -> Lit {
        if b { Lit::TRUE } else { Lit::FALSE }
    }
}

/// A node of the network under construction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// The constant false (node 0 only).
    False,
    /// A base proposition.
    Base,
    /// An input proposition.
    Input,
    /// True when all its inputs are.
    And(Vec<Lit>),
    /// True when one of its inputs is.
    Or(Vec<Lit>),
    /// Replaced by another node; only reachable through stale references.
    Gone,
}

impl Node {
    pub fn inputs(&self) -> &[Lit] {
        match self {
            Node::And(v) | Node::Or(v) => v,
            _ => &[],
        }
    }

    pub fn is_gate(&self) -> bool {
        matches!(self, Node::And(_) | Node::Or(_))
    }
}

/// The network being optimised.
pub(crate) struct Graph {
    pub nodes: Vec<Node>,
    /// The strongly connected components of the raw network, inputs first.
    pub order: Vec<Vec<u32>>,
    /// Whether each node's component is recursive (several nodes, or one reading itself).
    pub cyclic: Vec<bool>,
    /// What each node has been replaced by (itself if it stands).
    pub repl: Vec<Lit>,
}

impl Graph {
    /// Orders the network; an error if a recursive component reads itself through negation.
    pub fn new(nodes: Vec<Node>) -> Result<Graph, GroundError> {
        let order = components(&nodes, |_| true);
        let mut cyclic = vec![false; nodes.len()];
        let mut comp_of = vec![u32::MAX; nodes.len()];
        for (c, comp) in order.iter().enumerate() {
            for &x in comp {
                comp_of[x as usize] = c as u32;
            }
            let x0 = comp[0] as usize;
            let is_cyclic = comp.len() > 1 || nodes[x0].inputs().iter().any(|l| l.node() == x0);
            if !is_cyclic {
                continue;
            }
            for &x in comp {
                cyclic[x as usize] = true;
                let negated_inside = nodes[x as usize]
                    .inputs()
                    .iter()
                    .any(|l| l.neg() && comp_of[l.node()] == c as u32);
                if negated_inside {
                    return Err(GroundError::Unsupported("a cycle through negation".into()));
                }
            }
        }
        let repl = (0..nodes.len()).map(Lit::pos).collect();
        Ok(Graph {
            nodes,
            order,
            cyclic,
            repl,
        })
    }

    /// Adds a node (not recursive) and returns its number.
    pub fn push(&mut self, node: Node) -> usize {
        let x = self.nodes.len();
        self.nodes.push(node);
        self.cyclic.push(false);
        self.repl.push(Lit::pos(x));
        x
    }

    /// What a literal stands for now (replacements point to earlier nodes, so this ends).
    pub fn resolve(&self, l: Lit) -> Lit {
        let mut l = l;
        loop {
            let r = self.repl[l.node()];
            if r.node() == l.node() {
                return l;
            }
            l = r.xor(l.neg());
        }
    }
}

/// Replaces every gate that depends on no base or input by its constant value; returns which
/// nodes are dynamic.
pub(crate) fn evaluate_static(g: &mut Graph, clock: &Clock) -> Result<Vec<bool>, GroundError> {
    let n = g.nodes.len();
    let mut dynamic = vec![false; n];
    let mut values = vec![false; n];
    let lit_value = |values: &[bool], l: Lit| values[l.node()] ^ l.neg();
    for (c, comp) in g.order.iter().enumerate() {
        if c % 16384 == 16383 {
            clock.check(Phase::StaticLogic)?;
        }
        let is_dynamic = comp.iter().any(|&x| {
            let node = &g.nodes[x as usize];
            matches!(node, Node::Base | Node::Input)
                || node.inputs().iter().any(|l| dynamic[l.node()])
        });
        if is_dynamic {
            comp.iter().for_each(|&x| dynamic[x as usize] = true);
            continue;
        }
        // From all false up to the least fixpoint (one sweep if not recursive).
        loop {
            let mut changed = false;
            for &x in comp {
                let v = match &g.nodes[x as usize] {
                    Node::And(v) => v.iter().all(|&l| lit_value(&values, l)),
                    Node::Or(v) => v.iter().any(|&l| lit_value(&values, l)),
                    _ => false,
                };
                if v != values[x as usize] {
                    values[x as usize] = v;
                    changed = true;
                }
            }
            if !changed || !g.cyclic[comp[0] as usize] {
                break;
            }
        }
    }
    for x in 1..n {
        if !dynamic[x] {
            g.repl[x] = Lit::constant(values[x]);
            if g.nodes[x].is_gate() {
                g.nodes[x] = Node::Gone;
            }
        }
    }
    Ok(dynamic)
}

/// Folds, merges and bypasses gates, in one sweep in topological order.
pub(crate) fn simplify(g: &mut Graph, clock: &Clock) -> Result<(), GroundError> {
    // Hash-consing: the gates seen so far, by a hash of their kind and inputs; equal keys are
    // compared against the gates themselves.
    let hasher = hashbrown::DefaultHashBuilder::default();
    let key_hash = |is_and: bool, ins: &[Lit]| hasher.hash_one((is_and, ins));
    let mut seen: HashTable<u32> = HashTable::new();
    for c in 0..g.order.len() {
        if c % 16384 == 16383 {
            clock.check(Phase::Simplifying)?;
        }
        for i in 0..g.order[c].len() {
            let x = g.order[c][i] as usize;
            let (is_and, ins) = match std::mem::replace(&mut g.nodes[x], Node::Gone) {
                Node::And(v) => (true, v),
                Node::Or(v) => (false, v),
                other => {
                    g.nodes[x] = other;
                    continue;
                }
            };
            let mut ins = ins;
            for l in ins.iter_mut() {
                *l = g.resolve(*l);
            }
            let cyclic = g.cyclic[x];
            match fold(is_and, ins) {
                Folded::Const(b) if !cyclic => g.repl[x] = Lit::constant(b),
                Folded::One(l) if !cyclic => g.repl[x] = l,
                Folded::Const(b) => {
                    // A recursive gate keeps its place; a constant one reads the constant.
                    g.nodes[x] = Node::Or(vec![Lit::constant(b)]);
                }
                Folded::One(l) => g.nodes[x] = Node::Or(vec![l]),
                Folded::Gate(ins) if cyclic => {
                    g.nodes[x] = if is_and {
                        Node::And(ins)
                    } else {
                        Node::Or(ins)
                    };
                }
                Folded::Gate(ins) => {
                    // An identical earlier gate takes this one's place.
                    let h = key_hash(is_and, &ins);
                    let nodes = &g.nodes;
                    let same = |&y: &u32| match &nodes[y as usize] {
                        Node::And(v) => is_and && *v == ins,
                        Node::Or(v) => !is_and && *v == ins,
                        _ => false,
                    };
                    if let Some(&y) = seen.find(h, same) {
                        g.repl[x] = Lit::pos(y as usize);
                    } else {
                        g.nodes[x] = if is_and {
                            Node::And(ins)
                        } else {
                            Node::Or(ins)
                        };
                        let nodes = &g.nodes;
                        seen.insert_unique(h, x as u32, |&y| match &nodes[y as usize] {
                            Node::And(v) => key_hash(true, v),
                            Node::Or(v) => key_hash(false, v),
                            _ => 0,
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

enum Folded {
    Const(bool),
    One(Lit),
    Gate(Vec<Lit>),
}

/// Folds an AND (`is_and`) or OR over resolved literals.
fn fold(is_and: bool, mut ins: Vec<Lit>) -> Folded {
    // AND: false absorbs, true is neutral; OR the reverse.
    let absorbing = Lit::constant(!is_and);
    let neutral = Lit::constant(is_and);
    if ins.contains(&absorbing) {
        return Folded::Const(!is_and);
    }
    ins.retain(|&l| l != neutral);
    ins.sort_unstable();
    ins.dedup();
    // x and ¬x are adjacent after sorting.
    if ins.windows(2).any(|w| w[0].node() == w[1].node()) {
        return Folded::Const(!is_and);
    }
    match ins.len() {
        0 => Folded::Const(is_and),
        1 => Folded::One(ins[0]),
        _ => Folded::Gate(ins),
    }
}

/// Marks what `roots` read, following gates' inputs.
pub(crate) fn live(g: &Graph, roots: impl IntoIterator<Item = Lit>) -> Vec<bool> {
    let mut live = vec![false; g.nodes.len()];
    let mut stack: Vec<usize> = roots.into_iter().map(|l| l.node()).collect();
    while let Some(x) = stack.pop() {
        if live[x] {
            continue;
        }
        live[x] = true;
        stack.extend(g.nodes[x].inputs().iter().map(|l| l.node()));
    }
    live
}

/// Merges each gate read only once (by a gate, not by an output) into its reader when the
/// kinds match: `AND(a, AND(b, c))` is `AND(a, b, c)` and `AND(a, ¬OR(b, c))` is
/// `AND(a, ¬b, ¬c)`; likewise for OR. `roots` are the outputs, which count as readers.
pub(crate) fn inline(g: &mut Graph, roots: &[Lit], clock: &Clock) -> Result<(), GroundError> {
    let live = live(g, roots.iter().copied());
    let mut readers = vec![0u32; g.nodes.len()];
    for (x, node) in g.nodes.iter().enumerate() {
        if live[x] {
            for l in node.inputs() {
                readers[l.node()] += 1;
            }
        }
    }
    for l in roots {
        readers[l.node()] += 1;
    }
    let mut merged: Vec<Lit> = Vec::new();
    for c in 0..g.order.len() {
        if c % 16384 == 16383 {
            clock.check(Phase::Inlining)?;
        }
        for i in 0..g.order[c].len() {
            let x = g.order[c][i] as usize;
            if !live[x] || g.cyclic[x] || !g.nodes[x].is_gate() {
                continue;
            }
            let is_and = matches!(g.nodes[x], Node::And(_));
            let can_inline = |l: &Lit, nodes: &[Node], readers: &[u32]| {
                let y = l.node();
                if readers[y] != 1 || g.cyclic[y] {
                    return false;
                }
                match &nodes[y] {
                    Node::And(_) => is_and != l.neg(),
                    Node::Or(_) => is_and == l.neg(),
                    _ => false,
                }
            };
            if !g.nodes[x]
                .inputs()
                .iter()
                .any(|l| can_inline(l, &g.nodes, &readers))
            {
                continue;
            }
            merged.clear();
            for &l in g.nodes[x].inputs() {
                if can_inline(&l, &g.nodes, &readers) {
                    merged.extend(g.nodes[l.node()].inputs().iter().map(|m| m.xor(l.neg())));
                } else {
                    merged.push(l);
                }
            }
            let ins = g.nodes[x].inputs().to_vec();
            for l in ins {
                if can_inline(&l, &g.nodes, &readers) {
                    readers[l.node()] = 0;
                    g.nodes[l.node()] = Node::Gone;
                }
            }
            let ins = merged.clone();
            g.nodes[x] = if is_and {
                Node::And(ins)
            } else {
                Node::Or(ins)
            };
        }
    }
    Ok(())
}

/// Most products of one OR that [`factor`] looks at; larger ORs are left alone.
const MAX_FACTOR_PRODUCTS: usize = 4096;

/// Factors common literals out of ORs of ANDs: `OR(AND(a, x), AND(a, y), z)` becomes
/// `OR(AND(a, OR(x, y)), z)`, repeatedly, taking each time the literal shared by the most
/// products. Only ANDs read by nothing but the OR are taken apart. A rule such as
/// `(<= (next (cell ?c b)) (true (cell ?c b)) (does ?p (mark ?d)) (distinct ?c ?d))` grounds to
/// one AND per cell and move; factored, each cell reads one OR of the moves, so a move
/// touches one gate per cell instead of one per cell and move, and a cell one gate instead of
/// one per move.
pub(crate) fn factor(g: &mut Graph, roots: &[Lit], clock: &Clock) -> Result<(), GroundError> {
    let live = live(g, roots.iter().copied());
    let mut readers = vec![0u32; g.nodes.len()];
    for (x, node) in g.nodes.iter().enumerate() {
        if live[x] {
            for l in node.inputs() {
                readers[l.node()] += 1;
            }
        }
    }
    for l in roots {
        readers[l.node()] += 1;
    }
    let old_order = std::mem::take(&mut g.order);
    let mut order = Vec::with_capacity(old_order.len());
    // Products looked at since the clock was last checked.
    let mut work = 0usize;
    for comp in old_order {
        if work > 1 << 16 {
            work = 0;
            clock.check(Phase::Factoring)?;
        }
        work += 1;
        let x = comp[0] as usize;
        if comp.len() == 1 && live[x] && !g.cyclic[x] && matches!(g.nodes[x], Node::Or(_)) {
            work += g.nodes[x].inputs().len() * 16;
            let mut created = Vec::new();
            factor_or(g, x, &readers, &mut created);
            order.extend(created.into_iter().map(|y| vec![y as u32]));
        }
        order.push(comp);
    }
    g.order = order;
    Ok(())
}

/// A product of a sum being factored: its literals, and the literal that already stands for
/// it if it is unchanged.
struct Product {
    lits: Vec<Lit>,
    orig: Option<Lit>,
}

/// Most factoring rounds for one OR.
const MAX_FACTOR_ROUNDS: usize = 256;

/// Factors OR gate `x` in place; new gates are appended to `created` in dependency order.
fn factor_or(g: &mut Graph, x: usize, readers: &[u32], created: &mut Vec<usize>) {
    let ins = g.nodes[x].inputs().to_vec();
    if ins.len() < 2 || ins.len() > MAX_FACTOR_PRODUCTS {
        return;
    }
    // An AND read only here is a product to take apart; anything else is a product of one.
    let splittable = |l: Lit, g: &Graph| {
        let y = l.node();
        !l.neg()
            && y < readers.len()
            && readers[y] == 1
            && !g.cyclic[y]
            && matches!(g.nodes[y], Node::And(_))
    };
    let mut products: Vec<Product> = ins
        .iter()
        .map(|&l| Product {
            lits: if splittable(l, g) {
                g.nodes[l.node()].inputs().to_vec()
            } else {
                vec![l]
            },
            orig: Some(l),
        })
        .collect();
    if !factor_sum(g, &mut products, created) {
        return;
    }
    let rest: Vec<Lit> = products
        .into_iter()
        .map(|p| match p.orig {
            Some(l) => l,
            None => product_lit(g, p.lits, created),
        })
        .collect();
    // The ANDs taken apart are no longer read.
    for &l in &ins {
        if splittable(l, g) && !rest.contains(&l) {
            g.nodes[l.node()] = Node::Gone;
        }
    }
    g.nodes[x] = Node::Or(rest);
}

/// Factors a sum of products in place: while a literal occurs in two products or more, the
/// products with the literal `m` that occurs most are replaced by one, `AND(m, OR(rest...))`,
/// whose inner OR is factored in turn. Returns whether anything changed.
fn factor_sum(g: &mut Graph, products: &mut Vec<Product>, created: &mut Vec<usize>) -> bool {
    let mut counts: HashMap<Lit, u32> = HashMap::new();
    let mut changed = false;
    for _ in 0..MAX_FACTOR_ROUNDS {
        counts.clear();
        for p in products.iter().filter(|p| p.lits.len() > 1) {
            for &l in &p.lits {
                *counts.entry(l).or_insert(0) += 1;
            }
        }
        // The most frequent literal; the smallest on ties, so that results are reproducible.
        let best = counts
            .iter()
            .filter(|&(_, &n)| n >= 2)
            .max_by_key(|&(&l, &n)| (n, std::cmp::Reverse(l)))
            .map(|(&l, _)| l);
        let Some(m) = best else {
            break;
        };
        changed = true;
        let (with, without): (Vec<Product>, Vec<Product>) = std::mem::take(products)
            .into_iter()
            .partition(|p| p.lits.len() > 1 && p.lits.contains(&m));
        *products = without;
        let mut inner: Vec<Product> = with
            .into_iter()
            .map(|p| Product {
                lits: p.lits.into_iter().filter(|&l| l != m).collect(),
                orig: None,
            })
            .collect();
        factor_sum(g, &mut inner, created);
        let inner_ins: Vec<Lit> = inner
            .into_iter()
            .map(|p| match p.orig {
                Some(l) => l,
                None => product_lit(g, p.lits, created),
            })
            .collect();
        let inner = g.push(Node::Or(inner_ins));
        created.push(inner);
        products.push(Product {
            lits: vec![m, Lit::pos(inner)],
            orig: None,
        });
    }
    changed
}

/// A product as a literal: itself if it has one literal, else a fresh AND.
fn product_lit(g: &mut Graph, p: Vec<Lit>, created: &mut Vec<usize>) -> Lit {
    if p.len() == 1 {
        return p[0];
    }
    let y = g.push(Node::And(p));
    created.push(y);
    Lit::pos(y)
}

/// The strongly connected components of the nodes `keep` selects (edges from a gate's inputs
/// to the gate), in topological order: inputs first.
///
/// Tarjan's algorithm, iterative, run along the edges backwards (from a gate to its inputs),
/// which needs no successor lists: a component is then found after every component it reads.
pub(crate) fn components(nodes: &[Node], keep: impl Fn(usize) -> bool) -> Vec<Vec<u32>> {
    const UNVISITED: u32 = u32::MAX;
    let n = nodes.len();
    let mut index = vec![UNVISITED; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<u32> = Vec::new();
    // (node, position of the next input to visit)
    let mut calls: Vec<(u32, u32)> = Vec::new();
    let mut next_index = 0u32;
    let mut out = Vec::new();
    for root in 0..n {
        if !keep(root) || index[root] != UNVISITED {
            continue;
        }
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root as u32);
        on_stack[root] = true;
        calls.push((root as u32, 0));
        while let Some(&(v, i)) = calls.last() {
            let v = v as usize;
            let ins = nodes[v].inputs();
            if let Some(l) = ins.get(i as usize) {
                calls.last_mut().expect("a call").1 += 1;
                let w = l.node();
                if !keep(w) {
                    continue;
                }
                if index[w] == UNVISITED {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w as u32);
                    on_stack[w] = true;
                    calls.push((w as u32, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(u, _)) = calls.last() {
                low[u as usize] = low[u as usize].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("the component's nodes");
                    on_stack[w as usize] = false;
                    comp.push(w);
                    if w as usize == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propnet::Budget;

    fn clock() -> Clock {
        Clock::new(&Budget::default())
    }

    #[test]
    fn folding_and_merging() {
        // 1, 2: bases; 3 = AND(1, 2); 4 = AND(2, 1); 5 = OR(3, FALSE); 6 = AND(1, ¬1).
        let nodes = vec![
            Node::False,
            Node::Base,
            Node::Base,
            Node::And(vec![Lit::pos(1), Lit::pos(2)]),
            Node::And(vec![Lit::pos(2), Lit::pos(1)]),
            Node::Or(vec![Lit::pos(3), Lit::FALSE]),
            Node::And(vec![Lit::pos(1), Lit::pos(1).xor(true)]),
        ];
        let mut g = Graph::new(nodes).unwrap();
        evaluate_static(&mut g, &clock()).unwrap();
        simplify(&mut g, &clock()).unwrap();
        assert_eq!(g.resolve(Lit::pos(4)), Lit::pos(3));
        assert_eq!(g.resolve(Lit::pos(5)), Lit::pos(3));
        assert_eq!(g.resolve(Lit::pos(6)), Lit::FALSE);
    }

    #[test]
    fn de_morgan_inlining() {
        // 4 = OR(1, 2); 5 = AND(3, ¬4)  becomes  AND(3, ¬1, ¬2).
        let nodes = vec![
            Node::False,
            Node::Base,
            Node::Base,
            Node::Base,
            Node::Or(vec![Lit::pos(1), Lit::pos(2)]),
            Node::And(vec![Lit::pos(3), Lit::pos(4).xor(true)]),
        ];
        let mut g = Graph::new(nodes).unwrap();
        inline(&mut g, &[Lit::pos(5)], &clock()).unwrap();
        let mut ins = g.nodes[5].inputs().to_vec();
        ins.sort();
        assert_eq!(ins, [Lit(3), Lit(5), Lit(6)]);
        assert_eq!(g.nodes[4], Node::Gone);
    }

    #[test]
    fn negative_cycle_refused() {
        let nodes = vec![
            Node::False,
            Node::Base,
            Node::And(vec![Lit::pos(1), Lit::pos(3).xor(true)]),
            Node::Or(vec![Lit::pos(2)]),
        ];
        assert!(Graph::new(nodes).is_err());
    }
}
