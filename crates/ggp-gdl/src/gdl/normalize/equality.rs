//! `(not (distinct s t))`: it holds when s and t are the same term. As ggp-base's `GdlCleaner`
//! does, a rule holding it is specialised by the most general unifier of s and t and the literal
//! dropped; a rule whose s and t cannot unify never holds and is dropped. A disjunction holding
//! such a literal is multiplied out first.

use hashbrown::HashMap;

use crate::gdl::{Atom, Literal, Rule, Sym, Term};

/// The most rules one rule may multiply out to; past it the rule is kept as it is (the engines
/// then report the literal they cannot evaluate).
const MAX_EXPANSION: usize = 10_000;

/// `rules` with every `(not (distinct s t))` rewritten as described in the module's doc.
pub fn equalities(rules: Vec<Rule>) -> Vec<Rule> {
    if !rules.iter().any(|r| r.body.iter().any(holds_equality)) {
        return rules;
    }
    let mut out = Vec::with_capacity(rules.len());
    for rule in rules {
        if !rule.body.iter().any(holds_equality) {
            out.push(rule);
            continue;
        }
        let Some(bodies) = bodies(&rule.body) else {
            out.push(rule);
            continue;
        };
        for body in bodies {
            out.extend(specialise(&rule, body));
        }
    }
    out
}

/// Whether `literal` is `(not (distinct s t))` or a disjunction holding one.
fn holds_equality(literal: &Literal) -> bool {
    match literal {
        Literal::Not(inner) => matches!(**inner, Literal::Distinct(..)),
        Literal::Or(ls) => ls.iter().any(holds_equality),
        Literal::Atom(_) | Literal::Distinct(..) => false,
    }
}

/// The bodies `body` multiplies out to when each disjunction holding an equality is split into
/// its disjuncts; `None` past [`MAX_EXPANSION`].
fn bodies(body: &[Literal]) -> Option<Vec<Vec<Literal>>> {
    let mut out: Vec<Vec<Literal>> = vec![Vec::new()];
    for literal in body {
        let options = alternatives(literal);
        if out.len().saturating_mul(options.len()) > MAX_EXPANSION {
            return None;
        }
        out = out
            .iter()
            .flat_map(|b| {
                options.iter().map(move |o| {
                    let mut b = b.clone();
                    b.extend(o.iter().cloned());
                    b
                })
            })
            .collect();
    }
    Some(out)
}

/// The conjunctions `literal` stands for: one per disjunct of a disjunction holding an equality,
/// else the literal itself.
fn alternatives(literal: &Literal) -> Vec<Vec<Literal>> {
    match literal {
        Literal::Or(ls) if holds_equality(literal) => ls.iter().flat_map(alternatives).collect(),
        _ => vec![vec![literal.clone()]],
    }
}

/// `rule`'s head with `body`, its equalities solved and dropped; `None` if they cannot hold.
fn specialise(rule: &Rule, body: Vec<Literal>) -> Option<Rule> {
    let mut subst = Subst::default();
    let mut rest = Vec::with_capacity(body.len());
    for literal in body {
        match literal {
            Literal::Not(inner) => match *inner {
                Literal::Distinct(s, t) => {
                    if !subst.unify(&s, &t) {
                        return None;
                    }
                }
                other => rest.push(Literal::Not(Box::new(other))),
            },
            other => rest.push(other),
        }
    }
    Some(Rule {
        head: subst.atom(&rule.head),
        body: rest.iter().map(|l| subst.literal(l)).collect(),
        pos: rule.pos,
    })
}

/// A substitution of terms for variables, built by unification (a variable's binding may
/// hold variables bound later; [`Subst::term`] resolves them).
#[derive(Default)]
pub(super) struct Subst(HashMap<Sym, Term>);

impl Subst {
    /// `t` with its bound variables followed, at its top only.
    fn walk<'a>(&'a self, mut t: &'a Term) -> &'a Term {
        while let Term::Var(v) = t
            && let Some(bound) = self.0.get(v)
        {
            t = bound;
        }
        t
    }

    /// Whether variable `v` occurs in `t` under the substitution.
    fn occurs(&self, v: Sym, t: &Term) -> bool {
        match self.walk(t) {
            Term::Var(w) => *w == v,
            Term::Const(_) => false,
            Term::App(_, args) => args.iter().any(|a| self.occurs(v, a)),
        }
    }

    /// Extends the substitution so that `s` and `t` become the same term; false if they
    /// cannot.
    pub(super) fn unify(&mut self, s: &Term, t: &Term) -> bool {
        let (s, t) = (self.walk(s).clone(), self.walk(t).clone());
        match (&s, &t) {
            (Term::Var(a), Term::Var(b)) if a == b => true,
            (Term::Var(v), other) | (other, Term::Var(v)) => {
                if self.occurs(*v, other) {
                    return false;
                }
                self.0.insert(*v, other.clone());
                true
            }
            (Term::Const(a), Term::Const(b)) => a == b,
            (Term::App(f, xs), Term::App(g, ys)) => {
                f == g && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| self.unify(x, y))
            }
            _ => false,
        }
    }

    /// `t` with the substitution applied throughout.
    pub(super) fn term(&self, t: &Term) -> Term {
        match self.walk(t) {
            Term::App(f, args) => Term::App(*f, args.iter().map(|a| self.term(a)).collect()),
            other => other.clone(),
        }
    }

    fn atom(&self, a: &Atom) -> Atom {
        Atom {
            rel: a.rel,
            args: a.args.iter().map(|t| self.term(t)).collect(),
        }
    }

    fn literal(&self, l: &Literal) -> Literal {
        match l {
            Literal::Atom(a) => Literal::Atom(self.atom(a)),
            Literal::Not(inner) => Literal::Not(Box::new(self.literal(inner))),
            Literal::Distinct(s, t) => Literal::Distinct(self.term(s), self.term(t)),
            Literal::Or(ls) => Literal::Or(ls.iter().map(|l| self.literal(l)).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdl::parse_rules;

    fn rewritten(text: &str) -> Vec<String> {
        equalities(parse_rules(text).unwrap())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn an_equality_specialises_its_rule() {
        assert_eq!(
            rewritten("(<= (b ?x) (c ?y) (d ?x) (not (distinct ?x ?y)))"),
            ["(<= (b ?y) (c ?y) (d ?y))"]
        );
        assert_eq!(
            rewritten("(<= (d 3) (c ?y) (not (distinct 3 ?y)))"),
            ["(<= (d 3) (c 3))"]
        );
        assert_eq!(
            rewritten("(<= (p ?x ?z) (q ?x (f ?z)) (r ?y) (not (distinct (f ?y) ?x)))"),
            ["(<= (p (f ?y) ?z) (q (f ?y) (f ?z)) (r ?y))"]
        );
        // A ground equality that holds is dropped; one that cannot hold drops the rule.
        assert_eq!(rewritten("(<= a (not (distinct p p)))"), ["a"]);
        assert_eq!(
            rewritten("(<= z (not (distinct p q)))"),
            Vec::<String>::new()
        );
        // No unifier binds a variable to a term holding it.
        assert_eq!(
            rewritten("(<= z (q ?x) (not (distinct ?x (f ?x))))"),
            Vec::<String>::new()
        );
        // `(f)` and `f` differ, as everywhere else.
        assert_eq!(
            rewritten("(<= z (not (distinct (f) f)))"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_disjunction_holding_an_equality_is_multiplied_out() {
        assert_eq!(
            rewritten("(<= (p ?x) (q ?x ?y) (or (r ?x) (not (distinct ?x ?y))))"),
            ["(<= (p ?x) (q ?x ?y) (r ?x))", "(<= (p ?y) (q ?y ?y))"]
        );
    }

    #[test]
    fn other_rules_are_untouched() {
        let text = "(<= (p ?x) (q ?x) (not (r ?x)) (distinct ?x a) (or (s ?x) (t ?x)))";
        assert_eq!(rewritten(text), [parse_rules(text).unwrap()[0].to_string()]);
    }
}
