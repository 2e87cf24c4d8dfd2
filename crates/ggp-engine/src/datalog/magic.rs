//! Demand-driven evaluation by the magic-sets transformation, as a rewrite of GDL rules.
//!
//! Bottom-up evaluation materialises whole relations, even those a game only ever asks about
//! with bound arguments (`(not (threatened ?p ?x ?y ?u ?v))` with every variable known). The
//! rewrite gives each such call its own copy of the relation, "adorned" with which arguments
//! are bound (`threatened(bbbbb)`), guarded by a "magic" relation holding the bound arguments
//! actually asked for. Bottom-up evaluation of the rewritten program then computes only the
//! tuples a top-down prover would visit.
//!
//! The input is rules without `or` (see `lower::flatten`). Keyword relations are never adorned:
//! they are computed in full and act as the queries. Sideways information passes left to right
//! through the positive literals in written order; `not` and `distinct` bind nothing and come
//! after them, a negated call being adorned all-bound. A rewrite that would break stratified
//! negation or safety is abandoned, and the caller keeps the original program.
//!
//! Adorned and magic relation names contain parentheses, which no symbol read from a sheet can.

use hashbrown::{HashMap, HashSet};

use ggp_gdl::gdl::{Atom, DependencyGraph, Literal, Rule, RuleGraph, Sym, Term};

use super::lower::Layer;

/// Which relations the rewrite may adorn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demand {
    /// None: the original program.
    Off,
    /// Relations that depend on `true` or `does` (static relations are computed once anyway).
    Dynamic,
    /// Every derived relation, static ones too: for games whose static relations are too big.
    All,
}

type Key = (Sym, usize);

/// Which arguments of a call are bound, and the layer of the query that asks: demand from a
/// joint move's rules (`next`) is kept apart from a state's (`legal`, `goal`, `terminal`), so
/// that the latter never comes to depend on `does`, nor static relations on `true`.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Adornment {
    bound: Vec<bool>,
    context: Layer,
}

/// Rewrites `rules` (without `or`) for demand-driven evaluation.
///
/// Returns `None` when nothing would be adorned, or when the rewritten program would not be
/// stratified or safe.
pub fn rewrite(rules: &[Rule], demand: Demand) -> Option<Vec<Rule>> {
    if demand == Demand::Off {
        return None;
    }
    let mut by_head: HashMap<Key, Vec<usize>> = HashMap::new();
    for (i, r) in rules.iter().enumerate() {
        by_head
            .entry((r.head.rel, r.head.args.len()))
            .or_default()
            .push(i);
    }
    let graph = DependencyGraph::new(rules);
    let layer_of = |rel: Sym| super::lower::layer_of(&graph, rel);
    let layers: HashMap<Key, Layer> = by_head.keys().map(|&k| (k, layer_of(k.0))).collect();
    // With `Dynamic`, only the relations that bottom-up evaluation multiplies by a domain are
    // worth the magic relations' cost: those with a rule whose head variable is bound only by
    // static one-place relations (`(coordinate ?ignorex)`), or, for a relation of the state,
    // whose body is a cross product (`count` of chineseCheckers6: three cells each free, the
    // cube of the free cells), and the relations calling them.
    let floating: Vec<Sym> = rules
        .iter()
        .filter(|r| {
            has_floating_variable(r, &layers)
                || (layers[&(r.head.rel, r.head.args.len())] != Layer::Static && is_product(r))
        })
        .map(|r| r.head.rel)
        .collect();
    let wanted: HashSet<Sym> = by_head
        .keys()
        .map(|k| k.0)
        .filter(|&rel| floating.contains(&rel) || graph.depends_on_any(rel, &floating))
        .collect();
    let adornable: HashSet<Key> = by_head
        .iter()
        .filter(|(key, ids)| {
            !key.0.is_keyword()
                // A relation given only by facts is read as it is.
                && ids.iter().any(|&i| !rules[i].body.is_empty())
                && match demand {
                    Demand::All => true,
                    Demand::Dynamic => layers[*key] != Layer::Static && wanted.contains(&key.0),
                    Demand::Off => false,
                }
        })
        .map(|(key, _)| *key)
        .collect();
    let mut adornable = adornable;
    // Each failed attempt stops adorning at least one relation, so this ends.
    loop {
        if adornable.is_empty() {
            return None;
        }
        let (out, origin) = attempt(rules, &by_head, &layers, &adornable)?;
        if !out.iter().all(is_safe) {
            return None;
        }
        let refs: Vec<&Rule> = out.iter().collect();
        let rg = RuleGraph::new(&refs);
        let Some(j) = (0..out.len()).find(|&j| !rg.negated_in_cycle(j).is_empty()) else {
            return Some(out);
        };
        // Demand merged from different callers made a negation recursive. Stop adorning the
        // relations negated in the cycle or, if those are not adorned, every adorned relation
        // of the cycle.
        let mut culprits: Vec<Key> = rg
            .negated_in_cycle(j)
            .iter()
            .filter_map(|rel| origin.get(rel).copied())
            .collect();
        if culprits.is_empty() {
            culprits = rg
                .cycle_relations(j)
                .iter()
                .filter_map(|name| origin.get(&Sym::new(name)).copied())
                .collect();
        }
        if culprits.is_empty() {
            return None;
        }
        for key in culprits {
            adornable.remove(&key);
        }
    }
}

/// One rewrite adorning only `adornable` relations: the rules and, for each adorned or magic
/// relation, the relation it stands for. `None` if nothing is adorned.
fn attempt(
    rules: &[Rule],
    by_head: &HashMap<Key, Vec<usize>>,
    layers: &HashMap<Key, Layer>,
    adornable: &HashSet<Key>,
) -> Option<(Vec<Rule>, HashMap<Sym, Key>)> {
    let mut rw = Rewriter {
        adornable,
        layers,
        seen: HashSet::new(),
        queue: Vec::new(),
        out: Vec::new(),
        out_set: HashSet::new(),
        origin: HashMap::new(),
    };
    // Every relation that cannot be adorned keeps its rules; they are the queries.
    let mut roots: Vec<Key> = by_head
        .keys()
        .filter(|k| !adornable.contains(*k))
        .copied()
        .collect();
    roots.sort_by_key(|k| (k.0.index(), k.1));
    for key in roots {
        rw.enqueue(key, None);
    }
    while let Some((key, adornment)) = rw.queue.pop() {
        for &i in by_head.get(&key).map(Vec::as_slice).unwrap_or(&[]) {
            rw.rule(&rules[i], adornment.as_ref());
        }
    }
    if rw.origin.is_empty() {
        return None;
    }
    Some((rw.out, rw.origin))
}

/// Whether a head variable of `rule` occurs in the body only in static one-place relations.
fn has_floating_variable(rule: &Rule, layers: &HashMap<Key, Layer>) -> bool {
    let mut head_vars = Vec::new();
    rule.head.vars_into(&mut head_vars);
    head_vars.iter().any(|v| {
        let mut only_domains = true;
        let mut any = false;
        for l in &rule.body {
            let Literal::Atom(a) = l else { continue };
            let mut vars = Vec::new();
            a.vars_into(&mut vars);
            if !vars.contains(v) {
                continue;
            }
            any = true;
            let key = (a.rel, a.args.len());
            let domain = a.args.len() == 1
                && !a.rel.is_keyword()
                && layers.get(&key).is_some_and(|&l| l == Layer::Static);
            only_domains &= domain;
        }
        any && only_domains
    })
}

/// Whether the body of `rule` joins two or more positive literals that each bind a head
/// variable found in no other literal: its rows are the product of theirs.
fn is_product(rule: &Rule) -> bool {
    let atoms: Vec<Vec<Sym>> = rule
        .body
        .iter()
        .filter_map(|l| match l {
            Literal::Atom(a) => {
                let mut vars = Vec::new();
                a.vars_into(&mut vars);
                Some(vars)
            }
            _ => None,
        })
        .collect();
    let mut head_vars = Vec::new();
    rule.head.vars_into(&mut head_vars);
    let private = |vars: &Vec<Sym>| {
        vars.iter().any(|v| {
            head_vars.contains(v) && atoms.iter().filter(|other| other.contains(v)).count() == 1
        })
    };
    atoms.iter().filter(|vars| private(vars)).count() >= 2
}

/// The name of `rel` adorned with `ad`, e.g. `threatened(bbffb)` (the demand of a state), or
/// `threatened(bbffb move)` (of a joint move).
fn adorned_name(rel: Sym, ad: &Adornment) -> Sym {
    Sym::new(&format!("{rel}({})", pattern(ad)))
}

/// The name of the magic relation of `rel` adorned with `ad`.
fn magic_name(rel: Sym, ad: &Adornment) -> Sym {
    Sym::new(&format!("magic({rel}({}))", pattern(ad)))
}

fn pattern(ad: &Adornment) -> String {
    let mut out: String = ad
        .bound
        .iter()
        .map(|&b| if b { 'b' } else { 'f' })
        .collect();
    match ad.context {
        Layer::Static => out.push_str(" static"),
        Layer::State => {}
        Layer::Action => out.push_str(" move"),
    }
    out
}

/// The magic atom for a call: the bound arguments only.
fn magic_atom(rel: Sym, ad: &Adornment, args: &[Term]) -> Atom {
    Atom {
        rel: magic_name(rel, ad),
        args: args
            .iter()
            .zip(&ad.bound)
            .filter(|(_, b)| **b)
            .map(|(t, _)| t.clone())
            .collect(),
    }
}

fn term_bound(term: &Term, bound: &[Sym]) -> bool {
    match term {
        Term::Const(_) => true,
        Term::Var(v) => bound.contains(v),
        Term::App(_, args) => args.iter().all(|a| term_bound(a, bound)),
    }
}

fn literal_bound(literal: &Literal, bound: &[Sym]) -> bool {
    let mut vars = Vec::new();
    literal.vars_into(&mut vars);
    vars.iter().all(|v| bound.contains(v))
}

/// Every variable of the head, of a negated literal and of a `distinct` occurs in a positive
/// literal (the rule `lower` enforces).
fn is_safe(rule: &Rule) -> bool {
    let mut positive = Vec::new();
    let mut needed = Vec::new();
    rule.head.vars_into(&mut needed);
    for l in &rule.body {
        match l {
            Literal::Atom(a) => a.vars_into(&mut positive),
            other => other.vars_into(&mut needed),
        }
    }
    needed.iter().all(|v| positive.contains(v))
}

struct Rewriter<'a> {
    adornable: &'a HashSet<Key>,
    layers: &'a HashMap<Key, Layer>,
    seen: HashSet<(Key, Option<Adornment>)>,
    queue: Vec<(Key, Option<Adornment>)>,
    out: Vec<Rule>,
    out_set: HashSet<(Atom, Vec<Literal>)>,
    origin: HashMap<Sym, Key>,
}

impl Rewriter<'_> {
    fn enqueue(&mut self, key: Key, adornment: Option<Adornment>) {
        if self.seen.insert((key, adornment.clone())) {
            self.queue.push((key, adornment));
        }
    }

    fn emit(&mut self, rule: Rule) {
        if self.out_set.insert((rule.head.clone(), rule.body.clone())) {
            self.out.push(rule);
        }
    }

    /// Rewrites one rule of a relation called with `adornment` (`None`: unadorned).
    fn rule(&mut self, rule: &Rule, adornment: Option<&Adornment>) {
        let mut bound: Vec<Sym> = Vec::new();
        let mut body: Vec<Literal> = Vec::new();
        let (head, context) = match adornment {
            Some(ad) => {
                for (arg, &b) in rule.head.args.iter().zip(&ad.bound) {
                    if b {
                        arg.vars_into(&mut bound);
                    }
                }
                body.push(Literal::Atom(magic_atom(
                    rule.head.rel,
                    ad,
                    &rule.head.args,
                )));
                let head = Atom {
                    rel: adorned_name(rule.head.rel, ad),
                    args: rule.head.args.clone(),
                };
                (head, ad.context)
            }
            None => {
                let key = (rule.head.rel, rule.head.args.len());
                (rule.head.clone(), self.layers[&key])
            }
        };
        let filters: Vec<&Literal> = rule
            .body
            .iter()
            .filter(|l| matches!(l, Literal::Distinct(..)))
            .collect();
        let mut later: Vec<&Literal> = Vec::new();
        for literal in &rule.body {
            let Literal::Atom(a) = literal else {
                later.push(literal);
                continue;
            };
            let call = self.call(a, context, &bound, &body, &filters, rule);
            body.push(Literal::Atom(call));
            a.vars_into(&mut bound);
        }
        let positives = body.clone();
        for literal in later {
            match literal {
                Literal::Not(inner) => match inner.as_ref() {
                    Literal::Atom(a) => {
                        let call = self.call(a, context, &bound, &positives, &filters, rule);
                        body.push(Literal::Not(Box::new(Literal::Atom(call))));
                    }
                    other => body.push(Literal::Not(Box::new(other.clone()))),
                },
                other => body.push(other.clone()),
            }
        }
        self.emit(Rule {
            head,
            body,
            pos: rule.pos,
        });
    }

    /// The atom to call for `a` with `bound` variables known, after the literals `prefix`;
    /// emits the magic rule for an adorned call.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        a: &Atom,
        context: Layer,
        bound: &[Sym],
        prefix: &[Literal],
        filters: &[&Literal],
        rule: &Rule,
    ) -> Atom {
        let key = (a.rel, a.args.len());
        if !self.adornable.contains(&key) {
            return a.clone();
        }
        let adornment = Adornment {
            bound: a.args.iter().map(|t| term_bound(t, bound)).collect(),
            context,
        };
        if !adornment.bound.iter().any(|&b| b) {
            self.enqueue(key, None);
            return a.clone();
        }
        self.origin.insert(adorned_name(a.rel, &adornment), key);
        self.origin.insert(magic_name(a.rel, &adornment), key);
        let mut body = prefix.to_vec();
        // A `distinct` whose variables are known filters the demand, too.
        body.extend(
            filters
                .iter()
                .filter(|l| literal_bound(l, bound))
                .map(|l| (*l).clone()),
        );
        self.emit(Rule {
            head: magic_atom(a.rel, &adornment, &a.args),
            body,
            pos: rule.pos,
        });
        let call = Atom {
            rel: adorned_name(a.rel, &adornment),
            args: a.args.clone(),
        };
        self.enqueue(key, Some(adornment));
        call
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datalog::machine::DatalogMachine;
    use crate::machine::StateMachine;
    use ggp_gdl::gdl::{Description, parse_rules};

    fn printed(rules: &[Rule]) -> Vec<String> {
        let mut v: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn adorns_bound_calls_of_state_relations() {
        let rules = parse_rules(
            "(role a) (coord 1) (coord 2)
             (<= (hit ?x ?ig) (true (at ?x)) (coord ?ig) (distinct ?x ?ig))
             (<= (legal a (go ?x ?y)) (true (at ?x)) (coord ?y) (not (hit ?y ?x)))",
        )
        .unwrap();
        let out = rewrite(&rules, Demand::Dynamic).unwrap();
        assert_eq!(
            printed(&out),
            [
                "(<= (hit(bb) ?x ?ig) (magic(hit(bb)) ?x ?ig) (true (at ?x)) (coord ?ig) (distinct ?x ?ig))",
                "(<= (legal a (go ?x ?y)) (true (at ?x)) (coord ?y) (not (hit(bb) ?y ?x)))",
                "(<= (magic(hit(bb)) ?y ?x) (true (at ?x)) (coord ?y))",
                "(coord 1)",
                "(coord 2)",
                "(role a)",
            ]
        );
        // Static relations are adorned only when asked to.
        assert!(rewrite(&rules, Demand::Off).is_none());
    }

    #[test]
    fn recursive_relation_with_a_bound_argument() {
        let rules = parse_rules(
            "(<= (reach ?x ?y) (edge ?x ?y)) (<= (reach ?x ?z) (edge ?x ?y) (reach ?y ?z))
             (edge 1 2) (edge 2 3) (edge 7 8)
             (<= terminal (reach 1 3))",
        )
        .unwrap();
        let out = rewrite(&rules, Demand::All).unwrap();
        assert_eq!(
            printed(&out),
            [
                "(<= (magic(reach(bb static)) ?y ?z) (magic(reach(bb static)) ?x ?z) (edge ?x ?y))",
                "(<= (reach(bb static) ?x ?y) (magic(reach(bb static)) ?x ?y) (edge ?x ?y))",
                "(<= (reach(bb static) ?x ?z) (magic(reach(bb static)) ?x ?z) (edge ?x ?y) (reach(bb static) ?y ?z))",
                "(<= terminal (reach(bb static) 1 3))",
                "(edge 1 2)",
                "(edge 2 3)",
                "(edge 7 8)",
                "(magic(reach(bb static)) 1 3)",
            ]
        );
    }

    #[test]
    fn adorns_a_cross_product_called_with_bound_arguments() {
        let rules = parse_rules(
            "(role a) (role b)
             (<= (devoid ?x ?p) (true (cell ?x ?q)) (role ?q) (distinct ?q ?p) (role ?p))
             (<= (count ?x ?y ?p 0) (devoid ?x ?p) (devoid ?y ?p))
             (<= (count ?x ?y ?p 100) (true (cell ?x ?p)) (true (cell ?y ?p)))
             (<= (goal a ?v) (count c1 c2 a ?v))",
        )
        .unwrap();
        let out = printed(&rewrite(&rules, Demand::Dynamic).unwrap());
        assert!(
            out.contains(&"(<= (goal a ?v) (count(bbbf) c1 c2 a ?v))".to_string()),
            "{out:?}"
        );
        assert!(
            out.contains(&"(magic(count(bbbf)) c1 c2 a)".to_string()),
            "{out:?}"
        );
    }

    /// A game whose answers must not change under the rewrite, whatever is adorned.
    const GAME: &str = "(role a) (role b) (init (at 1)) (init (turn a))
        (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5)
        (<= (num ?x) (succ ?x ?y)) (num 5)
        (<= (ahead ?x ?y) (succ ?x ?y)) (<= (ahead ?x ?z) (succ ?x ?y) (ahead ?y ?z))
        (<= (blocked ?x ?ig) (true (wall ?x)) (num ?ig))
        (<= (free ?x ?ig) (num ?x) (num ?ig) (not (blocked ?x ?ig)))
        (<= (legal ?r (step ?y)) (true (turn ?r)) (true (at ?x)) (ahead ?x ?y) (free ?y ?x))
        (<= (legal ?r wall) (true (turn ?r)) (true (at ?x)) (succ ?x ?y) (not (true (wall ?y))))
        (<= (legal ?r noop) (role ?r) (not (true (turn ?r))))
        (<= (next (at ?y)) (does ?r (step ?y)))
        (<= (next (at ?x)) (true (at ?x)) (not (moved)))
        (<= moved (does ?r (step ?y)))
        (<= (next (wall ?y)) (does ?r wall) (true (at ?x)) (succ ?x ?y))
        (<= (next (wall ?y)) (true (wall ?y)))
        (<= (next (turn b)) (true (turn a))) (<= (next (turn a)) (true (turn b)))
        (<= terminal (true (at 5)))
        (<= (goal ?r 100) (role ?r) (true (at 5))) (<= (goal ?r 0) (role ?r) (not (true (at 5))))";

    fn answers(demand: Demand) -> Vec<String> {
        let description = Description::from_text(GAME).unwrap();
        let mut m = DatalogMachine::with_demand(&description, Default::default(), demand).unwrap();
        let mut out = Vec::new();
        let mut state = m.initial_state();
        for step in 0..8 {
            let mut terms: Vec<String> = m
                .state_terms(&state)
                .iter()
                .map(|t| t.to_string())
                .collect();
            terms.sort();
            out.push(format!(
                "{step}: {terms:?} terminal {}",
                m.is_terminal(&state).unwrap()
            ));
            if m.is_terminal(&state).unwrap() {
                break;
            }
            let mut joint = Vec::new();
            for role in 0..2 {
                let mut moves: Vec<String> = m
                    .legal_moves(&state, role)
                    .unwrap()
                    .iter()
                    .map(|&mv| m.move_term(mv).to_string())
                    .collect();
                moves.sort();
                out.push(format!("  {role}: {moves:?}"));
                // The last move in sorted order, found again by its term.
                let term = ggp_gdl::gdl::parse_term(moves.last().unwrap()).unwrap();
                joint.push(m.find_move(&term).unwrap());
            }
            state = m.next_state(&state, &joint).unwrap();
        }
        out
    }

    #[test]
    fn machine_answers_do_not_change() {
        let rules = Description::from_text(GAME).unwrap().rules().to_vec();
        assert!(rewrite(&rules, Demand::Dynamic).is_some());
        assert!(rewrite(&rules, Demand::All).is_some());
        let plain = answers(Demand::Off);
        assert!(plain.len() > 4, "{plain:?}");
        assert_eq!(answers(Demand::Dynamic), plain);
        assert_eq!(answers(Demand::All), plain);
    }
}
