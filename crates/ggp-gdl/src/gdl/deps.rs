//! The dependency graph between relations, built with petgraph.
//!
//! There is an edge from each relation in a rule body to the relation in its head, marked
//! negative when the body literal sits under a `not`. Its strongly connected components, in
//! topological order, are the strata of bottom-up evaluation; a negative edge inside a
//! component means the program is not stratified.

use hashbrown::HashMap;
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use super::{Atom, Literal, Rule, Sym, Term};

/// Relations and which depend on which.
pub struct DependencyGraph {
    graph: DiGraph<Sym, bool>,
    nodes: HashMap<Sym, NodeIndex>,
}

/// Calls `visit(relation, negated)` for every sentence inside a body literal.
pub fn literal_relations(literal: &Literal, negated: bool, visit: &mut impl FnMut(Sym, bool)) {
    match literal {
        Literal::Atom(a) => visit(a.rel, negated),
        Literal::Not(inner) => literal_relations(inner, !negated, visit),
        Literal::Distinct(..) => {}
        Literal::Or(ls) => ls.iter().for_each(|l| literal_relations(l, negated, visit)),
    }
}

impl DependencyGraph {
    /// Builds the graph of `rules`. Every relation that appears anywhere is a node.
    pub fn new(rules: &[Rule]) -> DependencyGraph {
        let mut dg = DependencyGraph {
            graph: DiGraph::new(),
            nodes: HashMap::new(),
        };
        for rule in rules {
            let head = dg.node(rule.head.rel);
            for literal in &rule.body {
                literal_relations(literal, false, &mut |rel, negated| {
                    let body = dg.node(rel);
                    dg.graph.add_edge(body, head, negated);
                });
            }
        }
        dg
    }

    fn node(&mut self, rel: Sym) -> NodeIndex {
        *self
            .nodes
            .entry(rel)
            .or_insert_with(|| self.graph.add_node(rel))
    }

    /// The strongly connected components, each relation's dependencies before it.
    pub fn strata(&self) -> Vec<Vec<Sym>> {
        // tarjan_scc yields components in reverse topological order.
        let mut sccs = tarjan_scc(&self.graph);
        sccs.reverse();
        sccs.into_iter()
            .map(|c| c.into_iter().map(|n| self.graph[n]).collect())
            .collect()
    }

    /// For each relation, the index of its stratum in [`strata`](Self::strata).
    pub fn stratum_of(&self) -> HashMap<Sym, usize> {
        let mut out = HashMap::new();
        for (i, scc) in self.strata().into_iter().enumerate() {
            for rel in scc {
                out.insert(rel, i);
            }
        }
        out
    }

    /// Each negative edge whose two ends are in one component: `(body relation, head relation)`.
    pub fn negative_cycles(&self) -> Vec<(Sym, Sym)> {
        let stratum = self.stratum_of();
        self.graph
            .edge_references()
            .filter(|e| *e.weight())
            .map(|e| (self.graph[e.source()], self.graph[e.target()]))
            .filter(|(a, b)| stratum[a] == stratum[b])
            .collect()
    }

    /// Every relation that `rel` depends on, directly or not (not including `rel` itself unless
    /// it is recursive).
    pub fn ancestors(&self, rel: Sym) -> Vec<Sym> {
        let Some(&start) = self.nodes.get(&rel) else {
            return Vec::new();
        };
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack = vec![start];
        let mut out = Vec::new();
        while let Some(n) = stack.pop() {
            for e in self.graph.edges_directed(n, petgraph::Direction::Incoming) {
                let s = e.source();
                if !seen[s.index()] {
                    seen[s.index()] = true;
                    out.push(self.graph[s]);
                    stack.push(s);
                }
            }
        }
        out
    }

    /// Whether `rel` depends, directly or not, on any of `targets`.
    pub fn depends_on_any(&self, rel: Sym, targets: &[Sym]) -> bool {
        self.ancestors(rel).iter().any(|a| targets.contains(a))
    }
}

/// Dependencies between rules: an edge from rule `i` to rule `j` when a body sentence of `j`
/// could match the head of `i`, marked negative when that sentence is under a `not`.
///
/// This is finer than [`DependencyGraph`]: `(<= (goal r 100) (not (goal r 0)))` negates one
/// form of `goal` to define another, which is stratified once arguments are considered. Its
/// components, in topological order, are the strata the engine evaluates.
pub struct RuleGraph<'a> {
    rules: &'a [&'a Rule],
    /// The negative edges, `(i, j, relation of the negated sentence)`.
    negative: Vec<(usize, usize, Sym)>,
    /// Each rule's strongly connected component, numbered in topological order.
    component: Vec<usize>,
    n_components: usize,
}

impl<'a> RuleGraph<'a> {
    /// Builds the graph of `rules` and its components.
    pub fn new(rules: &'a [&'a Rule]) -> RuleGraph<'a> {
        let mut graph = DiGraph::<(), ()>::new();
        let nodes: Vec<NodeIndex> = rules.iter().map(|_| graph.add_node(())).collect();
        let mut by_head: HashMap<(Sym, usize), Vec<usize>> = HashMap::new();
        for (i, rule) in rules.iter().enumerate() {
            by_head
                .entry((rule.head.rel, rule.head.args.len()))
                .or_default()
                .push(i);
        }
        let mut negative = Vec::new();
        for (j, rule) in rules.iter().enumerate() {
            for literal in &rule.body {
                signed_atoms(literal, false, &mut |atom, negated| {
                    let Some(heads) = by_head.get(&(atom.rel, atom.args.len())) else {
                        return;
                    };
                    for &i in heads {
                        if atoms_may_match(&rules[i].head, atom) {
                            graph.add_edge(nodes[i], nodes[j], ());
                            if negated {
                                negative.push((i, j, atom.rel));
                            }
                        }
                    }
                });
            }
        }
        let mut component = vec![0; rules.len()];
        // tarjan_scc yields components in reverse topological order.
        let sccs = tarjan_scc(&graph);
        let n_components = sccs.len();
        for (c, scc) in sccs.into_iter().rev().enumerate() {
            for n in scc {
                component[n.index()] = c;
            }
        }
        RuleGraph {
            rules,
            negative,
            component,
            n_components,
        }
    }

    /// The rules (as indices) of each component, dependencies first.
    pub fn components(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.n_components];
        for (i, &c) in self.component.iter().enumerate() {
            out[c].push(i);
        }
        out
    }

    /// The relations that rule `j` negates within its own cycle, without repeats.
    pub fn negated_in_cycle(&self, j: usize) -> Vec<Sym> {
        let mut out = Vec::new();
        for &(i, k, rel) in &self.negative {
            if k == j && self.component[i] == self.component[j] && !out.contains(&rel) {
                out.push(rel);
            }
        }
        out
    }

    /// The head relations of the rules in rule `j`'s cycle, sorted, without repeats.
    pub fn cycle_relations(&self, j: usize) -> Vec<&'static str> {
        let mut out: Vec<&str> = (0..self.rules.len())
            .filter(|&i| self.component[i] == self.component[j])
            .map(|i| self.rules[i].head.rel.name())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Calls `visit(atom, negated)` for every sentence in a body literal.
fn signed_atoms<'a>(literal: &'a Literal, negated: bool, visit: &mut impl FnMut(&'a Atom, bool)) {
    match literal {
        Literal::Atom(a) => visit(a, negated),
        Literal::Not(inner) => signed_atoms(inner, !negated, visit),
        Literal::Distinct(..) => {}
        Literal::Or(ls) => ls.iter().for_each(|l| signed_atoms(l, negated, visit)),
    }
}

/// Whether two sentences could have a common instance, taking each variable as matching
/// anything (so a few sentences that cannot unify still match, which only adds dependencies).
pub fn atoms_may_match(a: &Atom, b: &Atom) -> bool {
    a.rel == b.rel
        && a.args.len() == b.args.len()
        && a.args
            .iter()
            .zip(&b.args)
            .all(|(s, t)| terms_may_match(s, t))
}

/// Whether two terms could have a common instance, taking each variable as matching anything.
fn terms_may_match(s: &Term, t: &Term) -> bool {
    match (s, t) {
        (Term::Var(_), _) | (_, Term::Var(_)) => true,
        (Term::Const(a), Term::Const(b)) => a == b,
        (Term::App(f, xs), Term::App(g, ys)) => {
            f == g && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| terms_may_match(x, y))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdl::parse_rules;

    #[test]
    fn strata_and_negative_cycles() {
        let rules = parse_rules(
            "(<= (p ?x) (q ?x)) (<= (q ?x) (r ?x) (not (s ?x))) (<= (q ?x) (p ?x)) (<= (s ?x) (t ?x))",
        )
        .unwrap();
        let dg = DependencyGraph::new(&rules);
        let st = dg.stratum_of();
        let p = Sym::new("p");
        let q = Sym::new("q");
        let s = Sym::new("s");
        assert_eq!(st[&p], st[&q]);
        assert!(st[&s] < st[&q]);
        assert!(dg.negative_cycles().is_empty());
        assert!(dg.depends_on_any(p, &[Sym::new("t")]));

        let bad = parse_rules("(<= (p ?x) (r ?x) (not (q ?x))) (<= (q ?x) (p ?x))").unwrap();
        assert_eq!(DependencyGraph::new(&bad).negative_cycles(), vec![(q, p)]);
    }

    #[test]
    fn rules_negating_another_form_of_their_relation_are_ordered() {
        let rules =
            parse_rules("(<= (goal r 100) (not (goal r 0))) (<= (goal r 0) (true x))").unwrap();
        let refs: Vec<&Rule> = rules.iter().collect();
        let rg = RuleGraph::new(&refs);
        assert_eq!(rg.components(), vec![vec![1], vec![0]]);
        assert!(rg.negated_in_cycle(0).is_empty());
    }
}
