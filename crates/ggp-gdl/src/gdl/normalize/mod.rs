//! Plain GDL for the constructs outside the specification that the reference referees play
//! (ggp-base's prover for GDL, the Dresden GameController for GDL-II), so that every engine
//! gives them the reference's meaning. The validator warns about each of them; [`plain`] rewrites them, in this order:
//!
//! 0. A `base` or `input` fact with variables, or rule with a variable no positive literal
//!    binds: dropped ([`is_unread_schema`]).
//! 1. `(not (distinct s t))`, equality to the prover ([`equality`]).
//! 2. `true` or `does` with a wrong number of arguments: no state fact or move unifies with it,
//!    so it never holds ([`never_holding`]).
//! 3. `sees` in a rule body: to the prover it is the relation the `sees` rules define. Body uses
//!    read a copy of those rules under a fresh name ([`sees_in_bodies`]), so that the engines'
//!    own `sees` (the percepts, taken with the moves) stays apart.
//! 4. Variables no positive literal binds: bound from the query where the referee binds them,
//!    the rest read as ggp-base's prover reads them in GDL and as the Dresden GameController
//!    does in GDL-II, the reference referee of each ([`domains`]).
//! 5. `legal`, `goal` or `terminal` reading `does`: the prover asks them with no moves, so
//!    `does` never holds there ([`moves`]).
//!
//! Nothing is needed for a function or relation used with several arities (the engines key
//! terms by functor and arguments and relations by name and arity), for `base` or `input` with
//! another arity than the keyword's (ordinary relations then), or for a `not` inside a term (an
//! ordinary function symbol).
//!
//! Relations made up here get names no sheet can clash with ([`Fresh`]); every rule made keeps the
//! position of the rule it comes from, so a later diagnostic still points into the sheet.

mod domains;
mod equality;
mod moves;

use hashbrown::HashSet;

use super::{Atom, Literal, Rule, Sym, Term, validate};

pub use equality::equalities;

/// `rules` with every construct of the module's list rewritten into plain GDL.
pub fn plain(rules: Vec<Rule>) -> Vec<Rule> {
    let mut fresh = Fresh::new(&rules);
    let rules: Vec<Rule> = rules.into_iter().filter(|r| !is_unread_schema(r)).collect();
    let rules = equalities(rules);
    let rules = never_holding(rules);
    let rules = sees_in_bodies(rules, &mut fresh);
    let referee = if validate::gdl2_features(&rules).is_empty() {
        domains::Referee::GgpBase
    } else {
        domains::Referee::Dresden
    };
    let rules = domains::bind_from_queries(rules, referee, &mut fresh);
    moves::without_moves(rules, &mut fresh)
}

/// Whether `rule` is a `base` or `input` rule that cannot be evaluated as written: a fact with
/// variables (a schema, as some GDL-II sheets write them) or a rule with a variable no positive
/// literal binds (a typo: `(<= (input ?r (disband ?t4)) ... (tlt ?t3 t4))`). Neither referee
/// reads `base` or `input` to play (ggp-base's prover and the Dresden GameController ask only
/// `role`, `init`, `legal`, `next`, `terminal`, `goal` and `sees`), nor do our engines, so such
/// a rule is dropped (pass 0) where it would otherwise refuse the game.
pub fn is_unread_schema(rule: &Rule) -> bool {
    ((rule.head.rel == Sym::BASE && rule.head.args.len() == 1)
        || (rule.head.rel == Sym::INPUT && rule.head.args.len() == 2))
        && !validate::is_safe(rule)
}

/// Whether `atom` is `true` or `does` with another number of arguments than the keyword's.
pub fn never_holds(atom: &Atom) -> bool {
    (atom.rel == Sym::TRUE && atom.args.len() != 1)
        || (atom.rel == Sym::DOES && atom.args.len() != 2)
}

/// Pass 2: a positive `true` or `does` of the wrong arity drops its rule; a negated one is
/// dropped.
fn never_holding(rules: Vec<Rule>) -> Vec<Rule> {
    rules
        .into_iter()
        .filter_map(|rule| {
            rewrite_body(rule, &mut |a| {
                if never_holds(a) {
                    Fate::False
                } else {
                    Fate::Keep
                }
            })
        })
        .collect()
}

/// Pass 3: each body use of `sees` reads a copy of the `sees` rules under a fresh name.
fn sees_in_bodies(rules: Vec<Rule>, fresh: &mut Fresh) -> Vec<Rule> {
    let is_sees = |a: &Atom| a.rel == Sym::SEES && a.args.len() == 2;
    let mut read = false;
    for literal in rules.iter().flat_map(|r| &r.body) {
        validate::literal_atoms(literal, &mut |a| read |= is_sees(a));
    }
    if !read {
        return rules;
    }
    let copy = fresh.sym("sees");
    let mut rules: Vec<Rule> = rules
        .into_iter()
        .filter_map(|rule| {
            rewrite_body(rule, &mut |a| {
                if is_sees(a) {
                    Fate::Rename(copy)
                } else {
                    Fate::Keep
                }
            })
        })
        .collect();
    let copies: Vec<Rule> = rules
        .iter()
        .filter(|r| is_sees(&r.head))
        .map(|r| Rule {
            head: Atom {
                rel: copy,
                args: r.head.args.clone(),
            },
            ..r.clone()
        })
        .collect();
    rules.extend(copies);
    rules
}

/// What becomes of a positive sentence of a body under a rewrite.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fate {
    /// It stays as it is.
    Keep,
    /// It never holds.
    False,
    /// It is read from another relation of the same arguments.
    Rename(Sym),
}

/// What a literal simplifies to once its sentences have met their fate.
enum Simplified {
    True,
    False,
    Literal(Literal),
}

/// `rule` with each body sentence given its fate by `fate`, literals that always hold dropped;
/// `None` if a literal of the body can never hold.
fn rewrite_body(rule: Rule, fate: &mut impl FnMut(&Atom) -> Fate) -> Option<Rule> {
    let mut body = Vec::with_capacity(rule.body.len());
    for literal in rule.body {
        match simplify(literal, fate) {
            Simplified::True => {}
            Simplified::False => return None,
            Simplified::Literal(l) => body.push(l),
        }
    }
    Some(Rule { body, ..rule })
}

fn simplify(literal: Literal, fate: &mut impl FnMut(&Atom) -> Fate) -> Simplified {
    match literal {
        Literal::Atom(a) => match fate(&a) {
            Fate::Keep => Simplified::Literal(Literal::Atom(a)),
            Fate::False => Simplified::False,
            Fate::Rename(rel) => Simplified::Literal(Literal::Atom(Atom { rel, ..a })),
        },
        Literal::Not(inner) => match simplify(*inner, fate) {
            Simplified::True => Simplified::False,
            Simplified::False => Simplified::True,
            Simplified::Literal(l) => Simplified::Literal(Literal::Not(Box::new(l))),
        },
        Literal::Distinct(..) => Simplified::Literal(literal),
        Literal::Or(ls) => {
            let mut kept = Vec::with_capacity(ls.len());
            for l in ls {
                match simplify(l, fate) {
                    Simplified::True => return Simplified::True,
                    Simplified::False => {}
                    Simplified::Literal(l) => kept.push(l),
                }
            }
            if kept.is_empty() {
                Simplified::False
            } else {
                Simplified::Literal(Literal::Or(kept))
            }
        }
    }
}

/// Names for relations made up by the rewrites: `BASE@ggp`, primed until no symbol of the
/// sheet and no name given before has that spelling. A KIF symbol may hold `@`, so the check
/// is what keeps them apart, not the spelling.
struct Fresh {
    taken: HashSet<Sym>,
}

impl Fresh {
    fn new(rules: &[Rule]) -> Fresh {
        let mut taken = HashSet::new();
        for rule in rules {
            taken.extend(validate::rule_atoms(rule).iter().map(|a| a.rel));
            for term in validate::rule_terms(rule) {
                validate::subterms(term, &mut |t| match t {
                    Term::Const(s) | Term::Var(s) | Term::App(s, _) => {
                        taken.insert(*s);
                    }
                });
            }
        }
        Fresh { taken }
    }

    /// A symbol spelt after `base` that no sheet symbol and no earlier fresh one has.
    fn sym(&mut self, base: &str) -> Sym {
        let mut name = format!("{base}@ggp");
        loop {
            let sym = Sym::new(&name);
            if self.taken.insert(sym) {
                return sym;
            }
            name.push('\'');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdl::parse_rules;

    pub(super) fn rewritten(text: &str, pass: fn(Vec<Rule>) -> Vec<Rule>) -> Vec<String> {
        pass(parse_rules(text).unwrap())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn true_and_does_of_another_arity_never_hold() {
        assert_eq!(
            rewritten(
                "(<= (next wrong) (does g (guess ?n)) (not (true secret ?n)))
                 (<= (next right) (true secret ?n) (does g (guess ?n)))
                 (<= p (or (does a) (true q)))",
                never_holding
            ),
            [
                "(<= (next wrong) (does g (guess ?n)))",
                "(<= p (or (true q)))"
            ]
        );
    }

    #[test]
    fn sees_in_a_body_reads_a_copy_of_the_sees_rules() {
        let out = rewritten(
            "(<= (sees r hit) (true (at ?x)) (does r (shoot ?x)))
             (<= (goal r 100) (sees r hit))
             (<= terminal (not (sees r hit)))",
            |rules| {
                let mut fresh = Fresh::new(&rules);
                sees_in_bodies(rules, &mut fresh)
            },
        );
        assert_eq!(
            out,
            [
                "(<= (sees r hit) (true (at ?x)) (does r (shoot ?x)))",
                "(<= (goal r 100) (sees@ggp r hit))",
                "(<= terminal (not (sees@ggp r hit)))",
                "(<= (sees@ggp r hit) (true (at ?x)) (does r (shoot ?x)))",
            ]
        );
    }

    #[test]
    fn fresh_names_avoid_the_sheet_s_symbols() {
        let rules = parse_rules("(<= (p sees@ggp) (q ?x))").unwrap();
        let mut fresh = Fresh::new(&rules);
        assert_eq!(fresh.sym("sees").to_string(), "sees@ggp'");
        assert_eq!(fresh.sym("sees").to_string(), "sees@ggp''");
    }
}
