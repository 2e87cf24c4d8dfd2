//! GDL rules to engine rules.
//!
//! Each `or` is multiplied out into separate rules, `(not (or a b))` becomes `(not a) (not b)`,
//! variables are numbered per rule, ground sub-terms are interned once, and each relation
//! name and arity gets a [`RelId`]. The relations' strata come from the GDL dependency graph,
//! each marked by what it depends on: nothing (evaluated once), `true` (once per state) or
//! `does` (once per joint move).

use hashbrown::HashMap;

use ggp_gdl::gdl::{Atom, DependencyGraph, Literal, Rule, RuleGraph, Sym, Term, TermPool};

use ggp_gdl::gdl::validate::KEYWORD_ARITIES;

use super::eval::{BodyLit, Pat, RelId, RuleSpec, Stratum};
use super::magic::{self, Demand};

/// Why a rule could not be turned into an engine rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// A negation of something other than a sentence or a disjunction of sentences.
    #[error("{pos}: cannot evaluate {literal}")]
    Unsupported {
        /// Where the rule is.
        pos: ggp_gdl::kif::Pos,
        /// The literal.
        literal: String,
    },
    /// A variable not bound by a positive literal.
    #[error("{pos}: unsafe rule: {var} is not bound by a positive literal in {rule}")]
    Unsafe {
        /// Where the rule is.
        pos: ggp_gdl::kif::Pos,
        /// The variable.
        var: String,
        /// The rule, after `or` is multiplied out.
        rule: String,
    },
    /// Multiplying out `or`s gave too many rules.
    #[error("{pos}: multiplying out `or` gives more than {limit} rules")]
    TooManyDisjuncts {
        /// Where the rule is.
        pos: ggp_gdl::kif::Pos,
        /// The limit.
        limit: usize,
    },
}

/// When a stratum must be evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// Once, for the whole game.
    Static,
    /// Once per state: depends on `true`.
    State,
    /// Once per joint move: depends on `does`.
    Action,
}

/// When a relation must be evaluated: per move if it depends on `does`, per state if on
/// `true`, else once.
pub(crate) fn layer_of(graph: &DependencyGraph, rel: Sym) -> Layer {
    if rel == Sym::DOES || graph.depends_on_any(rel, &[Sym::DOES]) {
        Layer::Action
    } else if rel == Sym::TRUE || graph.depends_on_any(rel, &[Sym::TRUE]) {
        Layer::State
    } else {
        Layer::Static
    }
}

/// A game lowered for the engine.
pub struct Lowered {
    /// The term store, holding every constant of the rules.
    pub pool: TermPool,
    /// Relation ids by name and arity.
    pub rels: HashMap<(Sym, usize), RelId>,
    /// Arity of each relation.
    pub arities: Vec<usize>,
    /// The rules.
    pub rules: Vec<RuleSpec>,
    /// The strata in dependency order, each with its layer.
    pub strata: Vec<(Stratum, Layer)>,
}

impl Lowered {
    /// The relation with this name and arity, if the rules mention it.
    pub fn rel(&self, name: Sym, arity: usize) -> Option<RelId> {
        self.rels.get(&(name, arity)).copied()
    }

    /// Per relation (by index), whether one of `roots` depends on it through the rules,
    /// positively or negatively (the roots themselves included): the relations that must be
    /// evaluated for the roots to be right.
    pub fn needed_by(&self, roots: impl IntoIterator<Item = RelId>) -> Vec<bool> {
        let mut needed = vec![false; self.arities.len()];
        for root in roots {
            needed[root.0 as usize] = true;
        }
        loop {
            let mut changed = false;
            for rule in &self.rules {
                if !needed[rule.head_rel.0 as usize] {
                    continue;
                }
                for lit in &rule.body {
                    if let BodyLit::Pos(r, _) | BodyLit::Neg(r, _) = lit
                        && !needed[r.0 as usize]
                    {
                        needed[r.0 as usize] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                return needed;
            }
        }
    }
}

/// The most rules one GDL rule may multiply out to.
const MAX_EXPANSION: usize = 100_000;

/// A literal of a rule without `or`.
#[derive(Clone)]
enum Flat {
    Pos(Atom),
    Neg(Atom),
    Distinct(Term, Term),
}

/// Lowers `rules`, which should have passed validation, as they are (without the demand
/// rewrite of [`lower_with`]).
///
/// # Errors
/// A literal the engine cannot evaluate, an unsafe rule, or an `or` that multiplies out too far.
pub fn lower(rules: &[Rule]) -> Result<Lowered, LowerError> {
    lower_plain(rules)
}

/// Lowers `rules` after the magic-sets rewrite of the relations `demand` selects. When the
/// rewrite does not apply (nothing to adorn, or it would break stratification or safety) or
/// its result cannot be lowered, the original rules are lowered.
///
/// # Errors
/// As [`lower`].
pub fn lower_with(rules: &[Rule], demand: Demand) -> Result<Lowered, LowerError> {
    if demand != Demand::Off
        && let Some(rewritten) = magic::rewrite(&flatten(rules)?, demand)
        && let Ok(lowered) = lower_plain(&rewritten)
    {
        return Ok(lowered);
    }
    lower_plain(rules)
}

/// The rules with every `or` multiplied out, `(not (or a b))` as `(not a) (not b)`.
///
/// # Errors
/// A literal the engine cannot evaluate, or an `or` that multiplies out too far.
pub fn flatten(rules: &[Rule]) -> Result<Vec<Rule>, LowerError> {
    let mut out = Vec::new();
    for rule in rules {
        for body in expand(rule)? {
            out.push(Rule {
                head: rule.head.clone(),
                body: body.iter().map(flat_literal).collect(),
                pos: rule.pos,
            });
        }
    }
    Ok(out)
}

fn lower_plain(rules: &[Rule]) -> Result<Lowered, LowerError> {
    let mut lowered = Lowered {
        pool: TermPool::default(),
        rels: HashMap::new(),
        arities: Vec::new(),
        rules: Vec::new(),
        strata: Vec::new(),
    };
    // Keyword relations exist even if no rule mentions them.
    for (name, arity) in KEYWORD_ARITIES {
        rel_id(&mut lowered, name, arity);
    }
    // `origin[i]` is the GDL rule that engine rule `i` comes from.
    let mut origin = Vec::new();
    for (k, rule) in rules.iter().enumerate() {
        for body in expand(rule)? {
            let spec = lower_rule(&mut lowered, rule, &body)?;
            origin.push(k);
            lowered.rules.push(spec);
        }
    }
    let graph = DependencyGraph::new(rules);
    let layer_of = |rel: Sym| layer_of(&graph, rel);
    let refs: Vec<&Rule> = rules.iter().collect();
    let mut engine_rules_of: Vec<Vec<usize>> = vec![Vec::new(); rules.len()];
    for (i, &k) in origin.iter().enumerate() {
        engine_rules_of[k].push(i);
    }
    for component in RuleGraph::new(&refs).components() {
        let layer = component
            .iter()
            .map(|&k| layer_of(rules[k].head.rel))
            .max()
            .unwrap_or(Layer::Static);
        let rule_ids: Vec<usize> = component
            .iter()
            .flat_map(|&k| engine_rules_of[k].iter().copied())
            .collect();
        let mut rels: Vec<RelId> = rule_ids
            .iter()
            .map(|&i| lowered.rules[i].head_rel)
            .collect();
        rels.sort();
        rels.dedup();
        lowered.strata.push((
            Stratum {
                rels,
                rules: rule_ids,
            },
            layer,
        ));
    }
    Ok(lowered)
}

fn rel_id(lowered: &mut Lowered, name: Sym, arity: usize) -> RelId {
    let next = RelId(lowered.arities.len() as u32);
    let id = *lowered.rels.entry((name, arity)).or_insert(next);
    if id == next {
        lowered.arities.push(arity);
    }
    id
}

/// The bodies a rule multiplies out to, one per choice of disjunct in each `or`.
fn expand(rule: &Rule) -> Result<Vec<Vec<Flat>>, LowerError> {
    let mut bodies: Vec<Vec<Flat>> = vec![Vec::new()];
    for literal in &rule.body {
        let options = alternatives(rule, literal)?;
        let mut next = Vec::with_capacity(bodies.len() * options.len());
        for body in &bodies {
            for option in &options {
                let mut b = body.clone();
                b.extend(option.iter().cloned());
                next.push(b);
            }
        }
        if next.len() > MAX_EXPANSION {
            return Err(LowerError::TooManyDisjuncts {
                pos: rule.pos,
                limit: MAX_EXPANSION,
            });
        }
        bodies = next;
    }
    Ok(bodies)
}

/// The alternatives a literal stands for, each a conjunction.
fn alternatives(rule: &Rule, literal: &Literal) -> Result<Vec<Vec<Flat>>, LowerError> {
    let unsupported = || LowerError::Unsupported {
        pos: rule.pos,
        literal: literal.to_string(),
    };
    Ok(match literal {
        Literal::Atom(a) => vec![vec![Flat::Pos(a.clone())]],
        Literal::Distinct(s, t) => vec![vec![Flat::Distinct(s.clone(), t.clone())]],
        Literal::Or(ls) => {
            let mut out = Vec::new();
            for l in ls {
                out.extend(alternatives(rule, l)?);
            }
            out
        }
        Literal::Not(inner) => match inner.as_ref() {
            Literal::Atom(a) => vec![vec![Flat::Neg(a.clone())]],
            // De Morgan: not (a or b) is (not a) and (not b).
            Literal::Or(ls) => {
                let mut conj = Vec::new();
                for l in ls {
                    let Literal::Atom(a) = l else {
                        return Err(unsupported());
                    };
                    conj.push(Flat::Neg(a.clone()));
                }
                vec![conj]
            }
            _ => return Err(unsupported()),
        },
    })
}

fn lower_rule(lowered: &mut Lowered, rule: &Rule, body: &[Flat]) -> Result<RuleSpec, LowerError> {
    let mut vars: Vec<Sym> = Vec::new();
    let mut positive: Vec<Sym> = Vec::new();
    for l in body {
        if let Flat::Pos(a) = l {
            a.vars_into(&mut positive);
        }
    }
    let mut needed = Vec::new();
    rule.head.vars_into(&mut needed);
    for l in body {
        match l {
            Flat::Neg(a) => a.vars_into(&mut needed),
            Flat::Distinct(s, t) => {
                s.vars_into(&mut needed);
                t.vars_into(&mut needed);
            }
            Flat::Pos(_) => {}
        }
    }
    if let Some(v) = needed.iter().find(|v| !positive.contains(v)) {
        let printed = Rule {
            head: rule.head.clone(),
            body: body.iter().map(flat_literal).collect(),
            pos: rule.pos,
        };
        return Err(LowerError::Unsafe {
            pos: rule.pos,
            var: v.to_string(),
            rule: printed.to_string(),
        });
    }
    let head_rel = rel_id(lowered, rule.head.rel, rule.head.args.len());
    let head = pats(lowered, &rule.head.args, &mut vars);
    let mut lits = Vec::new();
    for l in body {
        lits.push(match l {
            Flat::Pos(a) => BodyLit::Pos(
                rel_id(lowered, a.rel, a.args.len()),
                pats(lowered, &a.args, &mut vars),
            ),
            Flat::Neg(a) => BodyLit::Neg(
                rel_id(lowered, a.rel, a.args.len()),
                pats(lowered, &a.args, &mut vars),
            ),
            Flat::Distinct(s, t) => {
                BodyLit::Distinct(pat(lowered, s, &mut vars), pat(lowered, t, &mut vars))
            }
        });
    }
    Ok(RuleSpec {
        head_rel,
        head,
        body: lits,
        n_vars: vars.len(),
    })
}

fn flat_literal(l: &Flat) -> Literal {
    match l {
        Flat::Pos(a) => Literal::Atom(a.clone()),
        Flat::Neg(a) => Literal::Not(Box::new(Literal::Atom(a.clone()))),
        Flat::Distinct(s, t) => Literal::Distinct(s.clone(), t.clone()),
    }
}

fn pats(lowered: &mut Lowered, terms: &[Term], vars: &mut Vec<Sym>) -> Vec<Pat> {
    terms.iter().map(|t| pat(lowered, t, vars)).collect()
}

fn pat(lowered: &mut Lowered, term: &Term, vars: &mut Vec<Sym>) -> Pat {
    if let Some(g) = lowered.pool.intern(term) {
        return Pat::Const(g);
    }
    match term {
        Term::Var(v) => {
            let slot = vars.iter().position(|x| x == v).unwrap_or_else(|| {
                vars.push(*v);
                vars.len() - 1
            });
            Pat::Var(slot as u16)
        }
        Term::App(f, args) => Pat::App(*f, args.iter().map(|a| pat(lowered, a, vars)).collect()),
        Term::Const(_) => unreachable!("constants are ground"),
    }
}
