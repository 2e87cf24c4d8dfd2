//! Variables no positive literal binds, read as the reference referee reads them: ggp-base's
//! prover for GDL, the Dresden GameController for GDL-II.
//!
//! ggp-base's `ProverStateMachine` first runs `DistinctAndNotMover` over the rules: it moves each
//! `not` and `distinct` after the positive sentences that bind its variables, and a literal
//! whose variables no positive sentence binds finds no place and is **dropped** (as it is after
//! `DeORer` has multiplied disjunctions out, so a disjunct dropped so makes its `or` hold). Then
//! `AimaProver` answers top-down, unifying the rule's head with the query, so a head variable
//! that nothing in the body binds takes whatever value the caller passes. So:
//!
//! - **A `not` or `distinct` with a variable no positive literal binds** is dropped (an `or`
//!   holding one as a disjunct is dropped too: it holds).
//! - **Head variables** still unbound are bound by a domain: a literal `(r-argI@ggp t)` for each
//!   head argument `t` holding one, defined from the callers (for every body use of `r`, the
//!   term passed at that place, under the caller's other positive literals; a magic-sets reading
//!   of the query). `legal`, `goal` and `sees` are asked of each role, so their first argument's domain
//!   is `role` (also for their callees). A caller that does not bind the argument itself gives no domain: the rule stays
//!   unsafe and is refused.
//! - **The Dresden GameController** reads a body left to right with the head bound by the query,
//!   so there a `not` or `distinct` is not dropped: a head variable is bound as above, and one
//!   still unbound makes a negation hold when no instance does (a projection
//!   `(p-exists@ggp ?x..)` onto its bound variables) and a `distinct` fail. (A literal placed
//!   before the positive literal that binds its variable is read here as if placed after it,
//!   as everywhere else.)
//!
//! Checked against each referee's own traces (`tests/fixtures/reference/`).

use hashbrown::HashMap;

use super::Fresh;
use crate::gdl::{Atom, Literal, Rule, Sym, Term, validate};

/// A relation's argument place: name, arity, index.
type Place = (Sym, usize, usize);

/// `rules` with the variables no positive literal binds read as the module's doc says.
pub(super) fn bind_from_queries(
    rules: Vec<Rule>,
    referee: Referee,
    fresh: &mut Fresh,
) -> Vec<Rule> {
    let mut rules: Vec<Rule> = match referee {
        Referee::GgpBase => rules.into_iter().map(drop_unplaceable).collect(),
        Referee::Dresden => rules,
    };
    let domains = add_domain_literals(&mut rules, fresh);
    let mut made = Vec::new();
    for (&(rel, arity, index), &domain) in &domains {
        match domain_rules(&rules, (rel, arity, index), domain) {
            Some(defs) => made.extend(defs),
            // No domain: the rules keep no literal of it, and stay unsafe.
            None => rules
                .iter_mut()
                .for_each(|r| r.body.retain(|l| !is_atom_of(l, domain))),
        }
    }
    rules.extend(made);
    match referee {
        Referee::GgpBase => rules,
        Referee::Dresden => rules
            .into_iter()
            .flat_map(|r| evaluate_unbound(r, fresh))
            .collect(),
    }
}

/// Whose reading of the variables no positive literal binds: ggp-base's prover, the reference
/// for GDL, or the Dresden GameController, the reference for GDL-II.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Referee {
    GgpBase,
    Dresden,
}

/// The Dresden GameController's reading of `rule`, once its head variables are bound: a negated
/// sentence of a variable still unbound holds when no instance of it does (it reads a
/// projection onto its bound variables), and a `distinct` of one fails, so the rule never
/// holds. Nothing if it never holds; the projections it reads come first.
fn evaluate_unbound(rule: Rule, fresh: &mut Fresh) -> Vec<Rule> {
    let bound = bound_vars(&rule.body);
    let unbound = |l: &Literal| {
        let mut vars = Vec::new();
        l.vars_into(&mut vars);
        vars.iter().any(|v| !bound.contains(v))
    };
    let mut head_vars = Vec::new();
    rule.head.vars_into(&mut head_vars);
    if head_vars.iter().any(|v| !bound.contains(v)) || !rule.body.iter().any(unbound) {
        // Unsafe still (refused as written), or nothing to do.
        return vec![rule];
    }
    let mut out = Vec::new();
    let mut body = Vec::with_capacity(rule.body.len());
    for literal in &rule.body {
        match literal {
            Literal::Distinct(..) if unbound(literal) => return Vec::new(),
            Literal::Not(inner) if unbound(literal) => match &**inner {
                Literal::Atom(atom) => {
                    let mut kept = Vec::new();
                    atom.vars_into(&mut kept);
                    kept.retain(|v| bound.contains(v));
                    let args: Vec<Term> = kept.into_iter().map(Term::Var).collect();
                    let projection = fresh.sym(&format!("{}-exists", atom.rel));
                    out.push(Rule {
                        head: Atom {
                            rel: projection,
                            args: args.clone(),
                        },
                        body: vec![Literal::Atom(atom.clone())],
                        pos: rule.pos,
                    });
                    body.push(Literal::Not(Box::new(Literal::Atom(Atom {
                        rel: projection,
                        args,
                    }))));
                }
                // Left as it is: the rule stays unsafe and is refused.
                _ => body.push(literal.clone()),
            },
            _ => body.push(literal.clone()),
        }
    }
    out.push(Rule { body, ..rule });
    out
}

/// `rule` without the `not` and `distinct` literals (or the disjunctions holding one) whose
/// variables its positive literals do not bind.
fn drop_unplaceable(rule: Rule) -> Rule {
    let bound = bound_vars(&rule.body);
    let placeable = |l: &Literal| match l {
        Literal::Not(_) | Literal::Distinct(..) => {
            let mut vars = Vec::new();
            l.vars_into(&mut vars);
            vars.iter().all(|v| bound.contains(v))
        }
        Literal::Atom(_) | Literal::Or(_) => true,
    };
    let keep = |l: &Literal| match l {
        Literal::Or(ls) => ls.iter().all(placeable),
        other => placeable(other),
    };
    if rule.body.iter().all(keep) {
        return rule;
    }
    let body = rule.body.iter().filter(|l| keep(l)).cloned().collect();
    Rule { body, ..rule }
}

/// Adds, at the front of each rule whose head holds a variable its body does not bind, a domain
/// literal for each head argument holding one; returns the domains made, by place.
fn add_domain_literals(rules: &mut [Rule], fresh: &mut Fresh) -> HashMap<Place, Sym> {
    let mut domains: HashMap<Place, Sym> = HashMap::new();
    // A rule may have lost its whole body above; a fact holding a variable is refused before.
    for rule in rules.iter_mut() {
        let mut bound = bound_vars(&rule.body);
        let mut added = Vec::new();
        for (index, arg) in rule.head.args.iter().enumerate() {
            let mut vars = Vec::new();
            arg.vars_into(&mut vars);
            if vars.iter().all(|v| bound.contains(v)) {
                continue;
            }
            let domain = match rule.head.rel {
                Sym::LEGAL | Sym::GOAL | Sym::SEES if index == 0 => Sym::ROLE,
                rel if validate::keyword_arity(rel).is_some() => continue,
                rel => {
                    let place = (rel, rule.head.args.len(), index);
                    *domains
                        .entry(place)
                        .or_insert_with(|| fresh.sym(&format!("{rel}-arg{}", index + 1)))
                }
            };
            added.push(Literal::Atom(Atom {
                rel: domain,
                args: vec![arg.clone()],
            }));
            // What the domain binds is bound for the places after it (`(legal ?p ?p)`).
            bound.extend(vars);
        }
        if !added.is_empty() {
            added.append(&mut rule.body);
            rule.body = added;
        }
    }
    domains
}

/// The rules defining `domain`, the values passed at `place` by every body use of its
/// relation; `None` if some use passes a value its rule does not bind.
fn domain_rules(rules: &[Rule], place: Place, domain: Sym) -> Option<Vec<Rule>> {
    let (rel, arity, index) = place;
    let mut out = Vec::new();
    for rule in rules {
        for (k, literal) in rule.body.iter().enumerate() {
            let mut uses = Vec::new();
            validate::literal_atoms(literal, &mut |a| {
                if a.rel == rel && a.args.len() == arity {
                    uses.push(a.args[index].clone());
                }
            });
            if uses.is_empty() {
                continue;
            }
            let mut others: Vec<Literal> = rule
                .body
                .iter()
                .enumerate()
                .filter(|&(j, l)| j != k && binds_safely(l))
                .map(|(_, l)| l.clone())
                .collect();
            // A caller asked of each role (`legal`, `goal`, `sees`) has its role from the query.
            if matches!(rule.head.rel, Sym::LEGAL | Sym::GOAL | Sym::SEES)
                && let Some(asked) = rule.head.args.first()
            {
                others.push(Literal::Atom(Atom {
                    rel: Sym::ROLE,
                    args: vec![asked.clone()],
                }));
            }
            let bound = bound_vars(&others);
            for arg in uses {
                let mut vars = Vec::new();
                arg.vars_into(&mut vars);
                if !vars.iter().all(|v| bound.contains(v)) {
                    return None;
                }
                let body = if vars.is_empty() {
                    Vec::new()
                } else {
                    others.clone()
                };
                out.push(Rule {
                    head: Atom {
                        rel: domain,
                        args: vec![arg],
                    },
                    body,
                    pos: rule.pos,
                });
            }
        }
    }
    Some(out)
}

/// The variables the positive literals of `body` bind (an `or` binds what all its disjuncts do).
fn bound_vars(body: &[Literal]) -> Vec<Sym> {
    let mut out = Vec::new();
    for literal in body {
        bound_by(literal, &mut out);
    }
    out
}

fn bound_by(literal: &Literal, out: &mut Vec<Sym>) {
    validate::bound_by(literal, &|_| true, out);
}

/// Whether `literal` binds without help: a sentence, or a disjunction each of whose disjuncts
/// binds all of its variables.
fn binds_safely(literal: &Literal) -> bool {
    match literal {
        Literal::Atom(_) => true,
        Literal::Or(_) => {
            let mut all = Vec::new();
            literal.vars_into(&mut all);
            let mut bound = Vec::new();
            bound_by(literal, &mut bound);
            all.iter().all(|v| bound.contains(v))
        }
        Literal::Not(_) | Literal::Distinct(..) => false,
    }
}

fn is_atom_of(literal: &Literal, rel: Sym) -> bool {
    matches!(literal, Literal::Atom(a) if a.rel == rel)
}

#[cfg(test)]
mod tests {
    use super::super::tests::rewritten;
    use super::*;

    fn pass(rules: Vec<Rule>) -> Vec<Rule> {
        let mut fresh = Fresh::new(&rules);
        bind_from_queries(rules, Referee::GgpBase, &mut fresh)
    }

    fn dresden(rules: Vec<Rule>) -> Vec<Rule> {
        let mut fresh = Fresh::new(&rules);
        bind_from_queries(rules, Referee::Dresden, &mut fresh)
    }

    #[test]
    fn the_dresden_reading_binds_the_head_first_and_evaluates_the_rest() {
        assert_eq!(
            rewritten(
                "(<= (legal ?p noop) (distinct ?p random) (true pregame))
                 (<= (open ?x) (row ?x) (not (true (cell ?x ?y b))))
                 (<= (a ?x) (p ?x) (distinct ?x ?y))",
                dresden
            ),
            [
                "(<= (legal ?p noop) (role ?p) (distinct ?p random) (true pregame))",
                "(<= (true-exists@ggp ?x) (true (cell ?x ?y b)))",
                "(<= (open ?x) (row ?x) (not (true-exists@ggp ?x)))",
            ]
        );
    }

    #[test]
    fn a_head_variable_takes_its_callers_values() {
        let out = rewritten(
            "(<= (free ?c) (not (true (occupied ?c))))
             (<= (legal ?r (put ?c)) (true (control ?r)) (cell ?c) (free ?c))
             (<= (next (safe ?c)) (true (near ?c)) (free ?c))
             (<= (legal ?r noop) (not (true (control ?r))))",
            pass,
        );
        assert_eq!(
            out,
            [
                "(<= (free ?c) (free-arg1@ggp ?c))",
                "(<= (legal ?r (put ?c)) (true (control ?r)) (cell ?c) (free ?c))",
                "(<= (next (safe ?c)) (true (near ?c)) (free ?c))",
                "(<= (legal ?r noop) (role ?r))",
                // A caller asked per role has its role from the query.
                "(<= (free-arg1@ggp ?c) (true (control ?r)) (cell ?c) (role ?r))",
                "(<= (free-arg1@ggp ?c) (true (near ?c)))",
            ]
        );
    }

    #[test]
    fn a_role_the_query_binds_binds_it_everywhere_in_the_head() {
        assert_eq!(
            rewritten("(<= (legal ?p ?p) (cell 1 1))", pass),
            ["(<= (legal ?p ?p) (role ?p) (cell 1 1))"]
        );
    }

    #[test]
    fn a_caller_that_binds_nothing_leaves_the_rule_unsafe() {
        let text = "(<= (free ?c) (not (true (occupied ?c)))) (<= (any ?c) (free ?c))";
        assert_eq!(
            rewritten(text, pass),
            ["(free ?c)", "(<= (any ?c) (free ?c))"]
        );
    }

    #[test]
    fn a_negation_or_distinct_that_nothing_binds_is_dropped() {
        assert_eq!(
            rewritten(
                "(<= (open ?x) (row ?x) (not (true (cell ?x ?y x))))
                 (<= (a ?x) (p ?x) (distinct ?x ?y) (not (q ?x)))
                 (<= b (p ?x) (or (true s) (not (true ?z))))
                 (<= c (p ?x) (or (true s) (not (true ?x))))",
                pass
            ),
            [
                "(<= (open ?x) (row ?x))",
                "(<= (a ?x) (p ?x) (not (q ?x)))",
                "(<= b (p ?x))",
                "(<= c (p ?x) (or (true s) (not (true ?x))))",
            ]
        );
    }
}
