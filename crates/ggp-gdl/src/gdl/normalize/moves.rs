//! `legal`, `goal` and `terminal` that read `does`, through any chain of relations. The
//! reference prover asks them of the state alone, with no `does` facts, so there `does` never
//! holds. Their rules are rewritten as they read then: a positive `does` drops its rule, a
//! negated one is dropped, and each relation on the way to `does` is read from a copy of its
//! rules rewritten the same way, under a fresh name. The moves' own relations (`next`, `sees`)
//! keep the originals, which they read with the moves, as the prover does.
//!
//! One difference remains, in sheets nobody writes: a `next` rule reading `legal`, `goal` or
//! `terminal` sees their move-free reading here, where the prover would pass the moves down.

use hashbrown::{HashMap, HashSet};

use super::{Fate, Fresh, rewrite_body};
use crate::gdl::{Atom, Literal, Rule, Sym};

/// A relation: its name and arity.
type Rel = (Sym, usize);

/// The relations the referee asks of the state alone.
const ASKED_OF_THE_STATE: [Rel; 3] = [(Sym::LEGAL, 2), (Sym::GOAL, 2), (Sym::TERMINAL, 0)];

/// `rules` with `legal`, `goal` and `terminal` read with no moves, as the module's doc says.
pub(super) fn without_moves(rules: Vec<Rule>, fresh: &mut Fresh) -> Vec<Rule> {
    let reads_moves = reading_moves(&rules);
    if !ASKED_OF_THE_STATE.iter().any(|r| reads_moves.contains(r)) {
        return rules;
    }
    // The move-free copies made so far, and those whose rules are still to copy.
    let mut copies: HashMap<Rel, Sym> = HashMap::new();
    let mut to_copy: Vec<Rel> = Vec::new();
    let mut fate = |a: &Atom, copies: &mut HashMap<Rel, Sym>, to_copy: &mut Vec<Rel>| {
        let rel = (a.rel, a.args.len());
        if a.rel == Sym::DOES {
            Fate::False
        } else if reads_moves.contains(&rel) {
            let name = *copies.entry(rel).or_insert_with(|| {
                to_copy.push(rel);
                fresh.sym(&format!("{}-without-moves", a.rel))
            });
            Fate::Rename(name)
        } else {
            Fate::Keep
        }
    };
    let mut out = Vec::with_capacity(rules.len());
    for rule in &rules {
        let rel = (rule.head.rel, rule.head.args.len());
        if ASKED_OF_THE_STATE.contains(&rel) && reads_moves.contains(&rel) {
            let rewritten = rewrite_body(rule.clone(), &mut |a| fate(a, &mut copies, &mut to_copy));
            out.extend(rewritten);
        } else {
            out.push(rule.clone());
        }
    }
    // Each relation is queued once, when its copy is named.
    while let Some(rel) = to_copy.pop() {
        let name = copies[&rel];
        for rule in rules
            .iter()
            .filter(|r| (r.head.rel, r.head.args.len()) == rel)
        {
            let mut copy = rule.clone();
            copy.head.rel = name;
            let rewritten = rewrite_body(copy, &mut |a| fate(a, &mut copies, &mut to_copy));
            out.extend(rewritten);
        }
    }
    out
}

/// The relations whose rules read `does`, directly or through other relations.
fn reading_moves(rules: &[Rule]) -> HashSet<Rel> {
    let mut found: HashSet<Rel> = HashSet::new();
    loop {
        let before = found.len();
        for rule in rules {
            let rel = (rule.head.rel, rule.head.args.len());
            if !found.contains(&rel) && rule.body.iter().any(|l| reads(l, &found)) {
                found.insert(rel);
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// Whether `literal` holds `does` or a sentence of a relation in `found`.
fn reads(literal: &Literal, found: &HashSet<Rel>) -> bool {
    match literal {
        Literal::Atom(a) => a.rel == Sym::DOES || found.contains(&(a.rel, a.args.len())),
        Literal::Not(inner) => reads(inner, found),
        Literal::Distinct(..) => false,
        Literal::Or(ls) => ls.iter().any(|l| reads(l, found)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::rewritten;
    use super::*;

    fn pass(rules: Vec<Rule>) -> Vec<Rule> {
        let mut fresh = Fresh::new(&rules);
        without_moves(rules, &mut fresh)
    }

    #[test]
    fn terminal_reads_a_move_free_copy() {
        let out = rewritten(
            "(<= (moving ?s) (does ?r (push ?s)))
             (<= (moving ?s) (true (rolling ?s)) (not (does sheep stop)))
             (<= (next (rolling ?s)) (moving ?s))
             (<= terminal (not (moving sheep)))
             (<= (goal ?r 100) (role ?r) (does ?r win))
             (<= (legal ?r wait) (role ?r) (or (does ?r x) (true (turn ?r))))",
            pass,
        );
        assert_eq!(
            out,
            [
                "(<= (moving ?s) (does ?r (push ?s)))",
                "(<= (moving ?s) (true (rolling ?s)) (not (does sheep stop)))",
                "(<= (next (rolling ?s)) (moving ?s))",
                "(<= terminal (not (moving-without-moves@ggp sheep)))",
                "(<= (legal ?r wait) (role ?r) (or (true (turn ?r))))",
                "(<= (moving-without-moves@ggp ?s) (true (rolling ?s)))",
            ]
        );
    }

    #[test]
    fn games_that_keep_moves_out_are_untouched() {
        let text = "(<= (next (p ?x)) (does r ?x)) (<= terminal (true (p a)))";
        assert_eq!(
            rewritten(text, pass),
            [
                "(<= (next (p ?x)) (does r ?x))",
                "(<= terminal (true (p a)))"
            ]
        );
    }
}
