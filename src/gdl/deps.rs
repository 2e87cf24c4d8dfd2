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

use super::{Literal, Rule, Sym};

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
        Literal::Or(ls) => ls
            .iter()
            .for_each(|l| literal_relations(l, negated, visit)),
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
            for e in self
                .graph
                .edges_directed(n, petgraph::Direction::Incoming)
            {
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
}
