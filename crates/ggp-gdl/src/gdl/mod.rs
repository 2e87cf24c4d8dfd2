//! GDL programs: terms, literals and rules over interned symbols, read from KIF.
//!
//! [`parse_rules`] turns KIF text into [`Rule`]s, failing only when the text cannot be read as
//! sentences at all. Whether those rules form a valid game is [`validate`]'s job, which reports
//! every problem at once; [`Description::new`] is the one checked step from rules to a game.

mod deps;
pub mod normalize;
mod pool;
mod symbol;
pub mod validate;

use std::fmt;

pub use deps::{DependencyGraph, RuleGraph, atoms_may_match, literal_relations};
pub use pool::{GTerm, TermPool};
pub use symbol::Sym;
pub use validate::{Diagnostic, Severity, Verdict};

use crate::kif::{self, Pos, Sexp};

/// A term: a constant, a variable or a function applied to terms.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    /// A constant, e.g. `b` or `100`.
    Const(Sym),
    /// A variable, e.g. `?x` (the symbol keeps the `?`).
    Var(Sym),
    /// A function term, e.g. `(cell 1 1 b)`.
    App(Sym, Vec<Term>),
}

impl Term {
    /// Whether the term holds no variable.
    pub fn is_ground(&self) -> bool {
        match self {
            Term::Const(_) => true,
            Term::Var(_) => false,
            Term::App(_, args) => args.iter().all(Term::is_ground),
        }
    }

    /// Adds the variables of this term to `out`, in order of appearance, without repeats.
    pub fn vars_into(&self, out: &mut Vec<Sym>) {
        match self {
            Term::Const(_) => {}
            Term::Var(v) => {
                if !out.contains(v) {
                    out.push(*v);
                }
            }
            Term::App(_, args) => args.iter().for_each(|a| a.vars_into(out)),
        }
    }

    /// The functor and arity of this term (a constant has arity 0).
    pub fn functor(&self) -> Option<(Sym, usize)> {
        match self {
            Term::Const(s) => Some((*s, 0)),
            Term::Var(_) => None,
            Term::App(f, args) => Some((*f, args.len())),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Const(s) | Term::Var(s) => write!(f, "{s}"),
            Term::App(name, args) => {
                write!(f, "({name}")?;
                for a in args {
                    write!(f, " {a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl fmt::Debug for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A sentence: a relation applied to arguments, e.g. `(legal ?r (mark ?x ?y))` or `terminal`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Atom {
    /// The relation.
    pub rel: Sym,
    /// The arguments.
    pub args: Vec<Term>,
}

impl Atom {
    /// Adds the variables of this atom to `out`, without repeats.
    pub fn vars_into(&self, out: &mut Vec<Sym>) {
        self.args.iter().for_each(|a| a.vars_into(out));
    }
}

impl fmt::Display for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.args.is_empty() {
            return write!(f, "{}", self.rel);
        }
        write!(f, "({}", self.rel)?;
        for a in &self.args {
            write!(f, " {a}")?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for Atom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A literal in a rule body.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Literal {
    /// A positive sentence.
    Atom(Atom),
    /// `(not L)`. Valid GDL only negates a sentence; the validator reports other forms.
    Not(Box<Literal>),
    /// `(distinct s t)`.
    Distinct(Term, Term),
    /// `(or L1 ... Ln)`; `(or)` is false.
    Or(Vec<Literal>),
}

impl Literal {
    /// Adds the variables of this literal to `out`, without repeats.
    pub fn vars_into(&self, out: &mut Vec<Sym>) {
        match self {
            Literal::Atom(a) => a.vars_into(out),
            Literal::Not(l) => l.vars_into(out),
            Literal::Distinct(s, t) => {
                s.vars_into(out);
                t.vars_into(out);
            }
            Literal::Or(ls) => ls.iter().for_each(|l| l.vars_into(out)),
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Atom(a) => write!(f, "{a}"),
            Literal::Not(l) => write!(f, "(not {l})"),
            Literal::Distinct(s, t) => write!(f, "(distinct {s} {t})"),
            Literal::Or(ls) => {
                f.write_str("(or")?;
                for l in ls {
                    write!(f, " {l}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl fmt::Debug for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A rule `(<= head body...)`; a fact is a rule with an empty body.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The conclusion.
    pub head: Atom,
    /// The conditions, all of which must hold.
    pub body: Vec<Literal>,
    /// Where the rule starts in the sheet.
    pub pos: Pos,
}

impl Rule {
    /// The variables of the rule, head first, without repeats.
    pub fn vars(&self) -> Vec<Sym> {
        let mut out = Vec::new();
        self.head.vars_into(&mut out);
        self.body.iter().for_each(|l| l.vars_into(&mut out));
        out
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.body.is_empty() {
            return write!(f, "{}", self.head);
        }
        write!(f, "(<= {}", self.head)?;
        for l in &self.body {
            write!(f, " {l}")?;
        }
        f.write_str(")")
    }
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a text could not be read as GDL sentences.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The brackets do not balance.
    #[error(transparent)]
    Syntax(#[from] kif::ParseError),
    /// The brackets balance, but an expression is not a sentence, rule or term.
    #[error("{pos}: {message}")]
    Shape {
        /// Where the expression starts.
        pos: Pos,
        /// What is wrong with it.
        message: String,
    },
}

impl ReadError {
    /// Where the problem is.
    pub fn pos(&self) -> Pos {
        match self {
            ReadError::Syntax(e) => e.pos,
            ReadError::Shape { pos, .. } => *pos,
        }
    }
}

fn shape(pos: Pos, message: impl Into<String>) -> ReadError {
    ReadError::Shape {
        pos,
        message: message.into(),
    }
}

/// Reads KIF text as a list of GDL rules and facts.
///
/// # Errors
/// A syntax error, or an expression that is not a sentence or rule (a list that does not start
/// with a symbol, a variable where a sentence must be, a rule without a head).
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, ReadError> {
    kif::parse(text)?.iter().map(rule_from_sexp).collect()
}

/// Reads one expression as a rule or fact.
///
/// # Errors
/// As [`parse_rules`].
pub fn rule_from_sexp(sexp: &Sexp) -> Result<Rule, ReadError> {
    if let Sexp::List { items, pos } = sexp
        && let Some(Sexp::Atom { text, .. }) = items.first()
        && Sym::new(text) == Sym::IMPLIES
    {
        let head = items
            .get(1)
            .ok_or_else(|| shape(*pos, "a rule `(<= ...)` needs a head"))?;
        let head = atom_from_sexp(head)?;
        let body = items[2..]
            .iter()
            .map(literal_from_sexp)
            .collect::<Result<_, _>>()?;
        return Ok(Rule {
            head,
            body,
            pos: *pos,
        });
    }
    Ok(Rule {
        head: atom_from_sexp(sexp)?,
        body: Vec::new(),
        pos: sexp.pos(),
    })
}

/// Reads one expression as a sentence.
///
/// A sentence written `(p)`, a name in parentheses with no argument, is a relation of its own,
/// named `(p)`, apart from the bare `p`: the reference prover (ggp-base) keeps the two apart, so
/// `(<= (p) ...)` does not make `p` hold (`ggp check` warns where a sheet writes both). The
/// name prints back as `(p)`. Reserved words are read the same either way.
///
/// # Errors
/// A variable or list head where a relation name must be.
pub fn atom_from_sexp(sexp: &Sexp) -> Result<Atom, ReadError> {
    match sexp {
        Sexp::Atom { text, pos } => {
            if text.starts_with('?') {
                return Err(shape(
                    *pos,
                    format!("expected a sentence, found the variable {text}"),
                ));
            }
            Ok(Atom {
                rel: Sym::new(text),
                args: Vec::new(),
            })
        }
        Sexp::List { items, pos } => {
            let Some(first) = items.first() else {
                return Err(shape(*pos, "expected a sentence, found ()"));
            };
            let Sexp::Atom { text, .. } = first else {
                return Err(shape(*pos, "expected a relation name, found a list"));
            };
            if text.starts_with('?') {
                return Err(shape(
                    *pos,
                    format!("expected a relation name, found the variable {text}"),
                ));
            }
            let args: Vec<Term> = items[1..]
                .iter()
                .map(term_from_sexp)
                .collect::<Result<_, _>>()?;
            let rel = match Sym::new(text) {
                rel if args.is_empty() && !rel.is_keyword() => Sym::new(&format!("({text})")),
                rel => rel,
            };
            Ok(Atom { rel, args })
        }
    }
}

/// Reads one expression as a body literal.
///
/// # Errors
/// As [`atom_from_sexp`], or a `not` or `distinct` with the wrong number of arguments.
pub fn literal_from_sexp(sexp: &Sexp) -> Result<Literal, ReadError> {
    if let Sexp::List { items, pos } = sexp
        && let Some(Sexp::Atom { text, .. }) = items.first()
    {
        let sym = Sym::new(text);
        if sym == Sym::NOT {
            if items.len() != 2 {
                return Err(shape(
                    *pos,
                    format!("`not` takes one literal, found {}", items.len() - 1),
                ));
            }
            return Ok(Literal::Not(Box::new(literal_from_sexp(&items[1])?)));
        }
        if sym == Sym::DISTINCT && items.len() == 3 {
            return Ok(Literal::Distinct(
                term_from_sexp(&items[1])?,
                term_from_sexp(&items[2])?,
            ));
        }
        if sym == Sym::OR {
            let ls = items[1..]
                .iter()
                .map(literal_from_sexp)
                .collect::<Result<_, _>>()?;
            return Ok(Literal::Or(ls));
        }
    }
    Ok(Literal::Atom(atom_from_sexp(sexp)?))
}

/// Reads one expression as a term.
///
/// # Errors
/// A list that does not start with a symbol. A zero-argument function `(f)` stays a function
/// term, different from the constant `f`, as in the established reasoners.
pub fn term_from_sexp(sexp: &Sexp) -> Result<Term, ReadError> {
    match sexp {
        Sexp::Atom { text, .. } => {
            let sym = Sym::new(text);
            Ok(if text.starts_with('?') {
                Term::Var(sym)
            } else {
                Term::Const(sym)
            })
        }
        Sexp::List { items, pos } => {
            let Some(Sexp::Atom { text, .. }) = items.first() else {
                return Err(shape(
                    *pos,
                    "expected a function name at the start of a term",
                ));
            };
            if text.starts_with('?') {
                return Err(shape(
                    *pos,
                    format!("expected a function name, found the variable {text}"),
                ));
            }
            let args: Vec<Term> = items[1..]
                .iter()
                .map(term_from_sexp)
                .collect::<Result<_, _>>()?;
            Ok(Term::App(Sym::new(text), args))
        }
    }
}

/// Reads a ground term from text, e.g. a move from a match message or a trace.
///
/// # Errors
/// A syntax error, not exactly one expression, or a malformed term.
pub fn parse_term(text: &str) -> Result<Term, ReadError> {
    term_from_sexp(&kif::parse_one(text)?)
}

/// Reads a state written as its list of facts, `( (cell 1 1 x) (control red) open )`, as match
/// records and the protocol write one.
///
/// # Errors
/// A syntax error, not exactly one expression, or one that is not a list of ground terms.
pub fn parse_state(text: &str) -> Result<Vec<Term>, ReadError> {
    match kif::parse_one(text)? {
        Sexp::List { items, .. } => items
            .iter()
            .map(|item| {
                let fact = term_from_sexp(item)?;
                if fact.is_ground() {
                    Ok(fact)
                } else {
                    Err(shape(
                        item.pos(),
                        format!("a state's facts are ground, not {fact}"),
                    ))
                }
            })
            .collect(),
        other => Err(shape(
            other.pos(),
            "a state is a list of facts, `( (f a) (g b) ... )`",
        )),
    }
}

/// Whether `role` is the GDL-II nature role `random` (matched ignoring case, as keywords are).
pub fn is_nature_role(role: &Term) -> bool {
    matches!(role, Term::Const(s) if *s == Sym::RANDOM)
}

/// `rules` as a game that starts in `state`: every rule concluding `init` left out and
/// `(init f)` added for each fact `f`. This is how a position is posed as a game of its own
/// (ggp-base's PlayerTester starts its test games so): a player then analyses it at the start
/// clock as it would any game.
pub fn starting_in(rules: Vec<Rule>, state: &[Term]) -> Vec<Rule> {
    let mut out: Vec<Rule> = rules
        .into_iter()
        .filter(|r| r.head.rel != Sym::INIT)
        .collect();
    out.extend(state.iter().map(|fact| Rule {
        head: Atom {
            rel: Sym::INIT,
            args: vec![fact.clone()],
        },
        body: Vec::new(),
        pos: Pos::default(),
    }));
    out
}

/// [`parse_rules`], a syntax or shape error as the one diagnostic.
fn parse_rules_diagnosed(text: &str) -> Result<Vec<Rule>, Vec<Diagnostic>> {
    parse_rules(text).map_err(|e| vec![Diagnostic::from_read_error(&e)])
}

/// A validated game: its rules, its roles, and any warnings the validator gave.
#[derive(Clone, Debug)]
pub struct Description {
    rules: Vec<Rule>,
    roles: Vec<Term>,
    warnings: Vec<Diagnostic>,
}

impl Description {
    /// Validates `rules` as a game, then rewrites what the reference prover plays outside the
    /// specification into plain GDL ([`normalize`]), so that every engine plays it alike.
    ///
    /// # Errors
    /// Every error-level diagnostic the validator finds; warnings are kept on success.
    pub fn new(rules: Vec<Rule>) -> Result<Description, Vec<Diagnostic>> {
        let (diagnostics, rules) = validate::validate_and_normalize(rules);
        if diagnostics.iter().any(|d| d.severity == Severity::Error) {
            return Err(diagnostics);
        }
        let roles = rules
            .iter()
            .filter(|r| r.head.rel == Sym::ROLE && r.body.is_empty() && r.head.args.len() == 1)
            .map(|r| r.head.args[0].clone())
            .collect();
        Ok(Description {
            rules,
            roles,
            warnings: diagnostics,
        })
    }

    /// The game `rules` describe as they stand, though they do not validate: normalized as
    /// [`Description::new`] does, less the rules no engine can evaluate (unsafe ones, which
    /// would name no ground fact), with every diagnostic kept as a warning. Only for a player
    /// that must still answer a match it cannot play well (a START whose sheet is refused): the
    /// engines may refuse it, or play it as far as its rules let them.
    pub fn unvalidated(rules: Vec<Rule>) -> Description {
        let (diagnostics, mut rules) = validate::validate_and_normalize(rules);
        rules.retain(validate::is_safe);
        let roles = rules
            .iter()
            .filter(|r| r.head.rel == Sym::ROLE && r.body.is_empty() && r.head.args.len() == 1)
            .map(|r| r.head.args[0].clone())
            .collect();
        Description {
            rules,
            roles,
            warnings: diagnostics,
        }
    }

    /// Reads and validates a rule sheet.
    ///
    /// # Errors
    /// A syntax or shape error as a single diagnostic, or the validator's errors.
    pub fn from_text(text: &str) -> Result<Description, Vec<Diagnostic>> {
        Description::new(parse_rules_diagnosed(text)?)
    }

    /// Reads and validates a rule sheet whose game starts in `state` ([`starting_in`]).
    ///
    /// # Errors
    /// As [`Description::from_text`].
    pub fn from_text_starting_in(
        text: &str,
        state: &[Term],
    ) -> Result<Description, Vec<Diagnostic>> {
        Description::new(starting_in(parse_rules_diagnosed(text)?, state))
    }

    /// The rules, in sheet order, in plain GDL ([`normalize`]; the rules it makes follow).
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The roles, in the order of the `(role ...)` facts.
    pub fn roles(&self) -> &[Term] {
        &self.roles
    }

    /// Whether some rule concludes `sees` (GDL-II percepts).
    pub fn has_sees(&self) -> bool {
        self.rules.iter().any(|r| r.head.rel == Sym::SEES)
    }

    /// The validator's warnings.
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rules_and_facts() {
        let rules = parse_rules(
            "(role x) (<= (legal x (mark ?a)) (true (cell ?a b)) (not (true done)) (distinct ?a 1) (or p (q)) (r (f)))\n(<= terminal)",
        )
        .unwrap();
        let printed: Vec<String> = rules.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            printed,
            [
                "(role x)",
                "(<= (legal x (mark ?a)) (true (cell ?a b)) (not (true done)) (distinct ?a 1) (or p (q)) (r (f)))",
                "terminal",
            ]
        );
        assert_eq!(rules[1].pos, Pos { line: 1, col: 10 });
        assert_eq!(rules[2].pos, Pos { line: 2, col: 1 });
    }

    #[test]
    fn a_name_in_parentheses_is_a_relation_of_its_own() {
        let rules = parse_rules("(<= (p) q)\n(<= (terminal) (p))").unwrap();
        assert_ne!(rules[0].head.rel, Sym::new("p"));
        assert_eq!(rules[0].head.rel, Sym::new("(p)"));
        assert!(rules[0].head.args.is_empty());
        assert_eq!(rules[0].to_string(), "(<= (p) q)");
        // A reserved word is read the same either way.
        assert_eq!(rules[1].head.rel, Sym::TERMINAL);
        assert_eq!(rules[1].to_string(), "(<= terminal (p))");
    }

    #[test]
    fn keywords_any_case() {
        let rules = parse_rules("(<= (LEGAL ?r NOOP) (ROLE ?r) (NOT (TRUE (Done))))").unwrap();
        assert_eq!(
            rules[0].to_string(),
            "(<= (legal ?r NOOP) (role ?r) (not (true (Done))))"
        );
    }

    #[test]
    fn a_game_can_start_in_a_given_state() {
        let rules = parse_rules(
            "(role x) (init (cell a)) (<= (init (cell ?c)) (col ?c)) (col b) (<= (legal x go) (true (cell a)))",
        )
        .unwrap();
        let state = parse_state("( (cell c) done )").unwrap();
        let printed: Vec<String> = starting_in(rules, &state)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            printed,
            [
                "(role x)",
                "(col b)",
                "(<= (legal x go) (true (cell a)))",
                "(init (cell c))",
                "(init done)",
            ]
        );
        assert!(parse_state("cell").is_err());
        assert!(parse_state("( (cell ?x) )").is_err(), "not ground");
    }

    #[test]
    fn shape_errors_have_positions() {
        let e = parse_rules("(role x)\n(<= (p ?x) (?y a))").unwrap_err();
        assert_eq!(
            e.to_string(),
            "2:12: expected a relation name, found the variable ?y"
        );
        let e = parse_rules("(<=)").unwrap_err();
        assert_eq!(e.to_string(), "1:1: a rule `(<= ...)` needs a head");
    }
}
