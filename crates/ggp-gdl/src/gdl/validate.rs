//! Validation of a GDL program: every problem at once, each naming its rule and line.
//!
//! Errors make a game unplayable; warnings do not.

use std::fmt;

use hashbrown::{HashMap, HashSet};

use crate::kif::{self, Pos, Sexp};

use super::{
    Atom, DependencyGraph, Literal, ReadError, Rule, RuleGraph, Sym, Term, literal_relations,
    normalize,
};

/// How serious a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The game cannot be played as written.
    Error,
    /// Suspicious, but the game can be played.
    Warning,
}

/// What kind of problem a diagnostic reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// Unbalanced parentheses.
    Syntax,
    /// An expression that is not a sentence, rule or term.
    Shape,
    /// A relation or function used with different arities.
    Arity,
    /// A reserved word where it may not stand.
    MisplacedKeyword,
    /// A variable in a fact.
    VariableInFact,
    /// A rule variable not bound by a positive literal.
    Unsafe,
    /// A cycle through negation.
    Unstratified,
    /// The GDL recursion restriction.
    Recursion,
    /// `base`, `init` or `role` depending on `true` or `does`; `legal`, `goal` or `terminal`
    /// depending on `does`.
    BadDependency,
    /// The program is not a whole game (no role, no goal for a role, ...).
    Incomplete,
}

/// One problem found in a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The kind of problem.
    pub check: Check,
    /// Where the offending rule starts.
    pub pos: Pos,
    /// The offending rule, printed, when there is one.
    pub rule: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Diagnostic {
    /// The diagnostic for a text that could not be read as rules.
    pub fn from_read_error(e: &ReadError) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            check: match e {
                ReadError::Syntax(_) => Check::Syntax,
                ReadError::Shape { .. } => Check::Shape,
            },
            pos: e.pos(),
            rule: None,
            message: match e {
                ReadError::Syntax(p) => format!("expected {}, found {}", p.expected, p.found),
                ReadError::Shape { message, .. } => message.clone(),
            },
        }
    }
}

impl fmt::Display for Diagnostic {
    /// `line:col: error: message` (no position for a problem of the whole game), then the rule
    /// on the next line when there is one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        if self.pos.line > 0 {
            write!(f, "{}: ", self.pos)?;
        }
        write!(f, "{level}: {}", self.message)?;
        if let Some(rule) = &self.rule {
            write!(f, "\n    in {rule}")?;
        }
        Ok(())
    }
}

impl Diagnostic {
    /// The diagnostic prefixed by the file it is about: `file:line:col: error: message`.
    pub fn in_file(&self, path: &str) -> String {
        format!("{path}:{}{self}", if self.pos.line > 0 { "" } else { " " })
    }
}

/// The overall verdict on a sheet, as in the corpus's `EXPECTED.tsv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A complete, valid game.
    Valid,
    /// It parses but breaks a GDL rule.
    Invalid,
    /// It does not parse.
    SyntaxError,
    /// Valid rules, but not a complete game.
    Fragment,
}

impl Verdict {
    /// The verdict's name in `EXPECTED.tsv`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::SyntaxError => "syntax-error",
            Verdict::Fragment => "fragment",
        }
    }
}

/// The verdict on a whole sheet, with its diagnostics.
///
/// Unbalanced brackets, and a list that is empty or starts with a list (`(())`), are syntax
/// errors; other text that is not GDL sentences (`(?x a)`, `(<=)`) is invalid. A sheet whose
/// only errors say it is not a whole game is a fragment.
pub fn check_text(text: &str) -> (Verdict, Vec<Diagnostic>) {
    let rules = match super::parse_rules(text) {
        Ok(rules) => rules,
        Err(e) => {
            if let ReadError::Shape { .. } = e
                && let Some(bad) = headless_list(text)
            {
                return (Verdict::SyntaxError, vec![bad]);
            }
            let verdict = match e {
                ReadError::Syntax(_) => Verdict::SyntaxError,
                ReadError::Shape { .. } => Verdict::Invalid,
            };
            return (verdict, vec![Diagnostic::from_read_error(&e)]);
        }
    };
    let (diagnostics, _) = validate_and_normalize(rules);
    let errors = || diagnostics.iter().filter(|d| d.severity == Severity::Error);
    let verdict = if errors().next().is_none() {
        Verdict::Valid
    } else if errors().all(|d| d.check == Check::Incomplete) {
        Verdict::Fragment
    } else {
        Verdict::Invalid
    };
    (verdict, diagnostics)
}

/// The GDL-II features `rules` use: `sees` rules and the nature role `random`; empty for
/// a GDL game.
pub fn gdl2_features(rules: &[Rule]) -> Vec<&'static str> {
    let mut out = Vec::new();
    if rules.iter().any(|r| r.head.rel == Sym::SEES) {
        out.push("sees");
    }
    if rules.iter().any(|r| {
        r.head.rel == Sym::ROLE
            && r.body.is_empty()
            && r.head.args.first().is_some_and(super::is_nature_role)
    }) {
        out.push("random");
    }
    out
}

/// A syntax error for the first list, in sheet order, that is empty or starts with a list: no
/// KIF term or sentence has that form, though its brackets balance, as in `(())`.
fn headless_list(text: &str) -> Option<Diagnostic> {
    let sexps = kif::parse(text).ok()?;
    let mut stack: Vec<&Sexp> = sexps.iter().rev().collect();
    while let Some(sexp) = stack.pop() {
        let Sexp::List { items, pos } = sexp else {
            continue;
        };
        let found = match items.first() {
            None => Some("')'"),
            Some(Sexp::List { .. }) => Some("'('"),
            Some(Sexp::Atom { .. }) => None,
        };
        if let Some(found) = found {
            return Some(Diagnostic {
                severity: Severity::Error,
                check: Check::Syntax,
                pos: *pos,
                rule: None,
                message: format!("expected a word after '(', found {found}"),
            });
        }
        stack.extend(items.iter().rev());
    }
    None
}

/// Checks a program and returns every problem found: errors first, then warnings, each group in
/// sheet order.
///
/// A diagnostic about the program as a whole (no role, no `terminal` rule, ...) names no rule and
/// has the position `0:0`, so it comes first in its group.
pub fn validate(rules: &[Rule]) -> Vec<Diagnostic> {
    checks(rules, Reading::AsWritten)
}

/// Which program the checks read: the sheet as written, or the plain GDL made of it, where
/// every variable must be bound.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    AsWritten,
    Plain,
}

fn checks(rules: &[Rule], reading: Reading) -> Vec<Diagnostic> {
    let graph = DependencyGraph::new(rules);
    let mut out = Vec::new();
    check_arities(rules, &mut out);
    check_keywords(rules, &mut out);
    check_facts(rules, &mut out);
    check_safety(rules, reading, &mut out);
    check_stratification(rules, &graph, &mut out);
    check_recursion(rules, &graph, &mut out);
    check_dependencies(rules, &graph, &mut out);
    check_completeness(rules, &mut out);
    check_undefined(rules, &mut out);
    // A stable sort keeps the order of checks among diagnostics on the same rule.
    out.sort_by_key(|d| (d.severity, d.pos));
    out
}

/// [`validate`]'s diagnostics on `rules`, and the plain GDL the engines play
/// ([`normalize::plain`]). When `rules` have no error, the plain rules are checked again, and
/// their errors added: a construct whose reference meaning the rewrite could not give (a caller
/// that passes no value to a variable only a query binds) is refused there, at the rule it comes
/// from.
pub fn validate_and_normalize(rules: Vec<Rule>) -> (Vec<Diagnostic>, Vec<Rule>) {
    let mut diagnostics = validate(&rules);
    let plain = normalize::plain(rules);
    if diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return (diagnostics, plain);
    }
    let mut errors: Vec<Diagnostic> = checks(&plain, Reading::Plain)
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| Diagnostic {
            message: format!(
                "{} once read as the reference prover reads the sheet (a not or distinct of \
                 variables no positive literal binds dropped, head variables bound by their \
                 callers)",
                d.message
            ),
            ..d
        })
        .collect();
    errors.append(&mut diagnostics);
    (errors, plain)
}

/// The fixed arities of GDL's keyword relations.
pub const KEYWORD_ARITIES: [(Sym, usize); 11] = [
    (Sym::ROLE, 1),
    (Sym::INIT, 1),
    (Sym::TRUE, 1),
    (Sym::DOES, 2),
    (Sym::NEXT, 1),
    (Sym::LEGAL, 2),
    (Sym::GOAL, 2),
    (Sym::TERMINAL, 0),
    (Sym::BASE, 1),
    (Sym::INPUT, 2),
    (Sym::SEES, 2),
];

/// Words that only give rules and bodies their structure: they never name a sentence or a term.
const CONNECTIVES: [Sym; 4] = [Sym::DISTINCT, Sym::NOT, Sym::OR, Sym::IMPLIES];

/// The fixed arity of `rel`, if it is a keyword relation.
pub(super) fn keyword_arity(rel: Sym) -> Option<usize> {
    KEYWORD_ARITIES
        .iter()
        .find(|(k, _)| *k == rel)
        .map(|(_, n)| *n)
}

/// A diagnostic about `rule`.
fn at_rule(severity: Severity, check: Check, rule: &Rule, message: String) -> Diagnostic {
    Diagnostic {
        severity,
        check,
        pos: rule.pos,
        rule: Some(rule.to_string()),
        message,
    }
}

/// A diagnostic about the program as a whole.
fn whole(severity: Severity, check: Check, message: String) -> Diagnostic {
    Diagnostic {
        severity,
        check,
        pos: Pos::default(),
        rule: None,
        message,
    }
}

/// Adds one diagnostic on `rule` for each distinct message, in order.
fn report_each(
    out: &mut Vec<Diagnostic>,
    (severity, check): (Severity, Check),
    rule: &Rule,
    messages: Vec<String>,
) {
    let mut seen = HashSet::new();
    for message in messages {
        if seen.insert(message.clone()) {
            out.push(at_rule(severity, check, rule, message));
        }
    }
}

/// `variable ?x` or `variables ?x, ?y`.
fn var_list(vars: &[Sym]) -> String {
    let names: Vec<&str> = vars.iter().map(|v| v.name()).collect();
    let noun = if vars.len() == 1 {
        "variable"
    } else {
        "variables"
    };
    format!("{noun} {}", names.join(", "))
}

/// Adds each of `vars` that is not in `allowed` to `out`, without repeats.
fn add_missing(vars: &[Sym], allowed: &[Sym], out: &mut Vec<Sym>) {
    for v in vars {
        if !allowed.contains(v) && !out.contains(v) {
            out.push(*v);
        }
    }
}

/// Calls `visit` on every sentence in a body literal, under `not` and `or` too.
pub(super) fn literal_atoms<'a>(literal: &'a Literal, visit: &mut impl FnMut(&'a Atom)) {
    match literal {
        Literal::Atom(a) => visit(a),
        Literal::Not(inner) => literal_atoms(inner, visit),
        Literal::Distinct(..) => {}
        Literal::Or(ls) => ls.iter().for_each(|l| literal_atoms(l, visit)),
    }
}

/// Calls `visit` on every sentence in a body literal that is not under a `not`.
fn positive_atoms<'a>(literal: &'a Literal, visit: &mut impl FnMut(&'a Atom)) {
    match literal {
        Literal::Atom(a) => visit(a),
        Literal::Not(_) | Literal::Distinct(..) => {}
        Literal::Or(ls) => ls.iter().for_each(|l| positive_atoms(l, visit)),
    }
}

/// Every sentence of a rule: the head, then those of the body.
pub(super) fn rule_atoms(rule: &Rule) -> Vec<&Atom> {
    let mut out = vec![&rule.head];
    for literal in &rule.body {
        literal_atoms(literal, &mut |a| out.push(a));
    }
    out
}

/// Every outermost term of a rule: the arguments of its sentences and of its `distinct`s.
pub(super) fn rule_terms(rule: &Rule) -> Vec<&Term> {
    fn literal_terms<'a>(literal: &'a Literal, out: &mut Vec<&'a Term>) {
        match literal {
            Literal::Atom(a) => out.extend(&a.args),
            Literal::Not(inner) => literal_terms(inner, out),
            Literal::Distinct(s, t) => out.extend([s, t]),
            Literal::Or(ls) => ls.iter().for_each(|l| literal_terms(l, out)),
        }
    }
    let mut out: Vec<&Term> = rule.head.args.iter().collect();
    for literal in &rule.body {
        literal_terms(literal, &mut out);
    }
    out
}

/// Calls `visit` on `term` and on every term nested in it.
pub(super) fn subterms<'a>(term: &'a Term, visit: &mut impl FnMut(&'a Term)) {
    visit(term);
    if let Term::App(_, args) = term {
        args.iter().for_each(|a| subterms(a, visit));
    }
}

/// Check 1: each relation is used with a single arity, and each keyword relation with its fixed
/// arity. Constants are not compared with functions, nor relations with functions: real sheets
/// reuse names across those.
///
/// Two uses the reference prover (ggp-base) plays are only warned about: a function symbol used
/// with several arities (`(cell 1 2)` and `(cell 1 2 x)`, two different functions to it, as to
/// our engines, which key terms by functor and arguments), and `base` or `input` with another
/// arity than the keyword's, as in sheets written before those keywords existed (an ordinary
/// relation then: engines key relations by name and arity).
fn check_arities(rules: &[Rule], out: &mut Vec<Diagnostic>) {
    let mut relations = HashMap::new();
    let mut functions = HashMap::new();
    let mut first_use = HashMap::new();
    for rule in rules {
        for atom in rule_atoms(rule) {
            first_use.entry(atom.rel).or_insert(rule.pos);
        }
    }
    for rule in rules {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        for atom in rule_atoms(rule) {
            match relation_arity_problem(atom, rule.pos, &mut relations) {
                Some(Problem::Error(m)) => errors.push(m),
                Some(Problem::Warning(m)) => warnings.push(m),
                None => {}
            }
            warnings.extend(parenthesised_twin(atom.rel, &first_use));
        }
        for term in rule_terms(rule) {
            subterms(term, &mut |t| {
                if let Term::App(f, args) = t {
                    warnings.extend(
                        arity_conflict("function", *f, args.len(), rule.pos, &mut functions).map(
                            |m| format!("{m}: read as two functions, as the reference prover does"),
                        ),
                    );
                }
            });
        }
        report_each(out, (Severity::Error, Check::Arity), rule, errors);
        report_each(out, (Severity::Warning, Check::Arity), rule, warnings);
    }
}

/// The warning for a relation written `(p)` when the sheet also uses the bare `p` (at the
/// position `first_use` gives): the parser keeps them apart, as the reference prover does.
fn parenthesised_twin(rel: Sym, first_use: &HashMap<Sym, Pos>) -> Option<String> {
    let bare = rel.name().strip_prefix('(')?.strip_suffix(')')?;
    let pos = first_use.get(&Sym::lookup(bare)?)?;
    Some(format!(
        "{rel} and {bare} (used at {pos}) are different relations, as for the reference \
         prover: the one does not make the other hold"
    ))
}

/// A problem found in one place, with its severity.
enum Problem {
    /// The game cannot be played as written.
    Error(String),
    /// The reference prover plays it; so do we.
    Warning(String),
}

/// What is wrong with the arity of `atom`, given the arities of relations seen so far.
fn relation_arity_problem(
    atom: &Atom,
    pos: Pos,
    seen: &mut HashMap<Sym, (usize, Pos)>,
) -> Option<Problem> {
    let arity = atom.args.len();
    if CONNECTIVES.contains(&atom.rel) {
        // Misplaced connectives are check 2's business.
        return None;
    }
    match keyword_arity(atom.rel) {
        Some(expected) if expected != arity && LEGACY_KEYWORDS.contains(&atom.rel) => {
            Some(Problem::Warning(format!(
                "{} used with {arity} arguments, read as an ordinary relation (as in sheets \
                 older than the {} keyword)",
                atom.rel, atom.rel
            )))
        }
        Some(expected) if expected != arity && normalize::never_holds(atom) => {
            Some(Problem::Warning(format!(
                "{} takes {expected} {}, found {arity}: it never holds, as for the reference \
                 prover (no state fact or move matches it)",
                atom.rel,
                if expected == 1 {
                    "argument"
                } else {
                    "arguments"
                }
            )))
        }
        Some(expected) if expected != arity => {
            let noun = if expected == 1 {
                "argument"
            } else {
                "arguments"
            };
            Some(Problem::Error(format!(
                "{} takes {expected} {noun}, found {arity}",
                atom.rel
            )))
        }
        Some(_) => None,
        None => arity_conflict("relation", atom.rel, arity, pos, seen).map(|m| {
            Problem::Warning(format!(
                "{m}: read as two relations, as the reference prover does"
            ))
        }),
    }
}

/// Keyword relations added to GDL after sheets had used their names as ordinary relations of
/// other arities: `(base 1 2)` in such a sheet is a relation of its own.
const LEGACY_KEYWORDS: [Sym; 2] = [Sym::BASE, Sym::INPUT];

/// Whether `atom` is a keyword relation with its keyword meaning (`(base x)`, not an old
/// sheet's `(base x y)`).
fn is_keyword_use(atom: &Atom) -> bool {
    keyword_arity(atom.rel) == Some(atom.args.len())
}

/// Records that `name` is used with `arity` at `pos`, and says so if it was first used with
/// another arity.
fn arity_conflict(
    kind: &str,
    name: Sym,
    arity: usize,
    pos: Pos,
    seen: &mut HashMap<Sym, (usize, Pos)>,
) -> Option<String> {
    let &mut (first, first_pos) = seen.entry(name).or_insert((arity, pos));
    (first != arity).then(|| {
        format!("{kind} {name} used with arity {arity}, but with arity {first} at {first_pos}")
    })
}

/// Check 2: reserved words where they may not stand. `distinct`, `not`, `or` and `<=` never name
/// a sentence, a fact or a term; `true` and `does` are never concluded; `not` negates only a
/// sentence. Three uses are merely warned about: negating an `or`; `(not (distinct s t))`, which
/// the reference prover (ggp-base) reads as s = t (and so do we: [`super::normalize`]); and
/// `not` applied to arguments inside a term, a function symbol to it.
fn check_keywords(rules: &[Rule], out: &mut Vec<Diagnostic>) {
    for rule in rules {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        errors.extend(head_keyword_problem(rule));
        for literal in &rule.body {
            literal_keyword_problems(literal, &mut errors, &mut warnings);
        }
        for term in rule_terms(rule) {
            subterms(term, &mut |t| match t {
                // The reference prover reads `(not x)` in a term as a function term.
                Term::App(f, args) if *f == Sym::NOT && !args.is_empty() => warnings.push(
                    "not used as a function symbol in a term, read as an ordinary function"
                        .to_string(),
                ),
                _ => {
                    if let Some((f, _)) = t.functor()
                        && CONNECTIVES.contains(&f)
                    {
                        errors.push(format!("{f} used in a term"));
                    }
                }
            });
        }
        report_each(
            out,
            (Severity::Error, Check::MisplacedKeyword),
            rule,
            errors,
        );
        report_each(
            out,
            (Severity::Warning, Check::MisplacedKeyword),
            rule,
            warnings,
        );
    }
}

/// What is wrong with a keyword as the head of `rule`, if anything.
fn head_keyword_problem(rule: &Rule) -> Option<String> {
    let rel = rule.head.rel;
    let what = if rule.body.is_empty() {
        "a fact"
    } else {
        "the head of a rule"
    };
    (CONNECTIVES.contains(&rel) || rel == Sym::TRUE || rel == Sym::DOES)
        .then(|| format!("{rel} cannot be {what}"))
}

/// Adds the keyword problems of a body literal to `errors` and `warnings`.
fn literal_keyword_problems(
    literal: &Literal,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    match literal {
        Literal::Atom(a) if a.rel == Sym::DISTINCT => {
            errors.push(format!(
                "distinct takes 2 arguments, found {}",
                a.args.len()
            ));
        }
        Literal::Atom(a) if CONNECTIVES.contains(&a.rel) => {
            errors.push(format!("{} used as a sentence", a.rel));
        }
        Literal::Atom(a) if a.rel == Sym::SEES => {
            warnings.push(
                "sees used in a rule body: read as the relation the sees rules define, as the \
                 reference prover does"
                    .into(),
            );
        }
        Literal::Atom(_) | Literal::Distinct(..) => {}
        Literal::Not(inner) => {
            match **inner {
                Literal::Atom(_) => {}
                Literal::Or(_) => warnings.push(format!("not applied to a disjunction {inner}")),
                Literal::Distinct(..) => warnings.push(format!(
                    "not applied to {inner}, read as equality, as the reference prover does"
                )),
                Literal::Not(_) => {
                    errors.push(format!("not applied to {inner}, which is not a sentence"));
                }
            }
            literal_keyword_problems(inner, errors, warnings);
        }
        Literal::Or(ls) => ls
            .iter()
            .for_each(|l| literal_keyword_problems(l, errors, warnings)),
    }
}

/// Check 3: facts are ground; a `base` or `input` fact with variables, which no referee reads to
/// play, is only warned about and dropped ([`normalize`]).
fn check_facts(rules: &[Rule], out: &mut Vec<Diagnostic>) {
    for rule in rules.iter().filter(|r| r.body.is_empty()) {
        let mut vars = Vec::new();
        rule.head.vars_into(&mut vars);
        if vars.is_empty() {
            continue;
        }
        if normalize::is_unread_schema(rule) {
            let message = format!(
                "{} in a fact: dropped, as no referee reads base or input to play",
                var_list(&vars)
            );
            out.push(at_rule(
                Severity::Warning,
                Check::VariableInFact,
                rule,
                message,
            ));
        } else {
            let message = format!("{} in a fact", var_list(&vars));
            out.push(at_rule(
                Severity::Error,
                Check::VariableInFact,
                rule,
                message,
            ));
        }
    }
}

/// The variables a literal binds for the rest of its conjunction, added to `out`: those of a
/// positive sentence whose relation passes `counts`, and those bound by every disjunct of an
/// `or`. An empty `or` binds nothing.
pub(super) fn bound_by(literal: &Literal, counts: &impl Fn(Sym) -> bool, out: &mut Vec<Sym>) {
    match literal {
        Literal::Atom(a) if counts(a.rel) => a.vars_into(out),
        Literal::Atom(_) | Literal::Not(_) | Literal::Distinct(..) => {}
        Literal::Or(ls) => {
            let mut each = ls.iter().map(|l| {
                let mut vars = Vec::new();
                bound_by(l, counts, &mut vars);
                vars
            });
            let Some(mut common) = each.next() else {
                return;
            };
            for vars in each {
                common.retain(|v| vars.contains(v));
            }
            add_missing(&common, &[], out);
        }
    }
}

/// Check 4: every variable of the head, of a negated literal and of a `distinct` is bound by a
/// positive sentence of the body.
///
/// Two kinds of unbound variable are only warned about, since the reference prover gives them a
/// meaning (and so do we: [`normalize`]): one that only negations and `distinct`s hold (they
/// are dropped), and one in the head of a relation whose callers pass its value (or in the role
/// place of `legal` and `goal`, asked of each role). A normalized rule that is still unsafe (a
/// caller passes nothing) is refused then.
fn check_safety(rules: &[Rule], reading: Reading, out: &mut Vec<Diagnostic>) {
    // A fact with a variable is check 3's business.
    for rule in rules.iter().filter(|r| !r.body.is_empty()) {
        let unbound = unbound_vars(rule);
        if normalize::is_unread_schema(rule) {
            let verb = if unbound.len() == 1 { "is" } else { "are" };
            let message = format!(
                "{} {verb} not bound by a positive literal: the rule is dropped, as no referee \
                 reads base or input to play",
                var_list(&unbound)
            );
            out.push(at_rule(Severity::Warning, Check::Unsafe, rule, message));
            continue;
        }
        let (from_query, refused): (Vec<Sym>, Vec<Sym>) = unbound
            .into_iter()
            .partition(|v| reading == Reading::AsWritten && bound_like_the_prover(rule, *v));
        if !refused.is_empty() {
            let verb = if refused.len() == 1 { "is" } else { "are" };
            let message = format!(
                "unsafe rule: {} {verb} not bound by a positive literal",
                var_list(&refused)
            );
            out.push(at_rule(Severity::Error, Check::Unsafe, rule, message));
        }
        if !from_query.is_empty() {
            let verb = if from_query.len() == 1 { "is" } else { "are" };
            let message = format!(
                "{} {verb} not bound by a positive literal: read as the reference referee \
                 reads it (a head variable takes the value its caller passes; ggp-base drops a \
                 not or distinct of one, the Dresden GameController evaluates it as it stands)",
                var_list(&from_query)
            );
            out.push(at_rule(Severity::Warning, Check::Unsafe, rule, message));
        }
    }
}

/// Whether every variable of `rule`'s head, negations and `distinct`s is bound by a positive
/// literal of its body (a fact: whether it is ground).
pub fn is_safe(rule: &Rule) -> bool {
    unbound_vars(rule).is_empty()
}

/// The variables of `rule`'s head, negations and `distinct`s that no positive literal of its
/// body binds (of a fact: every variable), in the order they first appear in the rule.
fn unbound_vars(rule: &Rule) -> Vec<Sym> {
    let mut unbound = Vec::new();
    let bound = unbound_in_conjunction(&rule.body, &[], &mut unbound);
    let mut head_vars = Vec::new();
    rule.head.vars_into(&mut head_vars);
    add_missing(&head_vars, &bound, &mut unbound);
    let order = rule.vars();
    unbound.sort_by_key(|v| order.iter().position(|o| o == v));
    unbound
}

/// Whether the unbound variable `v` of `rule` is one the reference prover gives a meaning, as
/// [`check_safety`] says.
fn bound_like_the_prover(rule: &Rule, v: Sym) -> bool {
    let holds = |t: &Term| {
        let mut vars = Vec::new();
        t.vars_into(&mut vars);
        vars.contains(&v)
    };
    let places: Vec<usize> = (0..rule.head.args.len())
        .filter(|&i| holds(&rule.head.args[i]))
        .collect();
    if !places.is_empty() {
        return match rule.head.rel {
            // Asked of each role: the query binds the variable wherever it stands.
            Sym::LEGAL | Sym::GOAL | Sym::SEES => places.contains(&0),
            rel => keyword_arity(rel).is_none(),
        };
    }
    // Only in negations and `distinct`s, which the prover drops.
    true
}

/// Adds to `unbound` each variable of a negated literal or `distinct` in `conjunction` that is
/// bound neither by `outer` nor by a positive literal of the conjunction, looking into each
/// disjunct of an `or` as a conjunction of its own; returns the variables bound.
fn unbound_in_conjunction(
    conjunction: &[Literal],
    outer: &[Sym],
    unbound: &mut Vec<Sym>,
) -> Vec<Sym> {
    let mut bound = outer.to_vec();
    for literal in conjunction {
        bound_by(literal, &|_| true, &mut bound);
    }
    for literal in conjunction {
        match literal {
            Literal::Atom(_) => {}
            Literal::Not(_) | Literal::Distinct(..) => {
                let mut vars = Vec::new();
                literal.vars_into(&mut vars);
                add_missing(&vars, &bound, unbound);
            }
            Literal::Or(ls) => {
                for disjunct in ls {
                    unbound_in_conjunction(std::slice::from_ref(disjunct), &bound, unbound);
                }
            }
        }
    }
    bound
}

/// Check 5: no sentence depends on its own negation (the program is stratified).
///
/// [`DependencyGraph::negative_cycles`] finds negation inside a recursive cycle of relations.
/// Published games often negate one form of a relation to define another, as in
/// `(<= (goal robot 100) (not (goal robot 0)))`, which is stratified once arguments are taken
/// into account. So the rules of each such cycle are checked again: a rule depends on another
/// when one of its body sentences could match the other's head, and only negation inside a
/// cycle of rules is reported.
fn check_stratification(rules: &[Rule], graph: &DependencyGraph, out: &mut Vec<Diagnostic>) {
    let stratum_of = graph.stratum_of();
    let suspect: HashSet<usize> = graph
        .negative_cycles()
        .iter()
        .filter_map(|(_, head)| stratum_of.get(head).copied())
        .collect();
    if suspect.is_empty() {
        return;
    }
    let members: Vec<&Rule> = rules
        .iter()
        .filter(|r| {
            stratum_of
                .get(&r.head.rel)
                .is_some_and(|s| suspect.contains(s))
        })
        .collect();
    let rule_graph = RuleGraph::new(&members);
    for (j, rule) in members.iter().enumerate() {
        let negated = rule_graph.negated_in_cycle(j);
        if negated.is_empty() {
            continue;
        }
        let cycle = rule_graph.cycle_relations(j).join(", ");
        for rel in negated {
            let message = format!(
                "unstratified negation: {} depends on (not {rel}) in the cycle {cycle}",
                rule.head.rel
            );
            out.push(at_rule(Severity::Error, Check::Unstratified, rule, message));
        }
    }
}

/// Check 6: GDL's recursion restriction (the specification's: Love et al., 2008). In a rule
/// whose head relation is recursive with a positive body sentence's, each argument of that
/// sentence must be ground, or one of the head's arguments as a whole, or have all its
/// variables bound by a positive sentence outside the recursion. A rule that breaks it may
/// build ever-deeper terms, as `(<= (num (s ?x)) (num ?x))` does.
///
/// Reported with [`RECURSION_SEVERITY`].
fn check_recursion(rules: &[Rule], graph: &DependencyGraph, out: &mut Vec<Diagnostic>) {
    let stratum_of = graph.stratum_of();
    for rule in rules.iter().filter(|r| !r.body.is_empty()) {
        let Some(&own) = stratum_of.get(&rule.head.rel) else {
            continue;
        };
        let recursive = |rel: Sym| stratum_of.get(&rel) == Some(&own);
        let mut recursive_atoms = Vec::new();
        for literal in &rule.body {
            positive_atoms(literal, &mut |a| {
                if recursive(a.rel) {
                    recursive_atoms.push(a);
                }
            });
        }
        if recursive_atoms.is_empty() {
            continue;
        }
        let mut outside = Vec::new();
        for literal in &rule.body {
            bound_by(literal, &|rel| !recursive(rel), &mut outside);
        }
        let mut messages = Vec::new();
        for atom in recursive_atoms {
            for arg in &atom.args {
                let mut vars = Vec::new();
                arg.vars_into(&mut vars);
                if vars.is_empty()
                    || rule.head.args.contains(arg)
                    || vars.iter().all(|v| outside.contains(v))
                {
                    continue;
                }
                messages.push(format!(
                    "recursion restriction: the argument {arg} of the recursive {atom} is not \
                     ground, not an argument of the head, and not bound outside the recursion \
                     (the rule may build ever-deeper terms; played as the reference prover \
                     plays it, within the engines' budgets)"
                ));
            }
        }
        report_each(out, (RECURSION_SEVERITY, Check::Recursion), rule, messages);
    }
}

/// How a break of the recursion restriction is reported: a warning. The reference prover
/// plays such a sheet as long as each question it asks is finite (a public three-role sheet of
/// simultaneous orders, issue 56, has `(<= (now_empty ?t) (territory ?t) (move_possible ?p ?t
/// ?anywhere))` with `move_possible` calling `now_empty`), and so do the engines: bottom-up
/// evaluation is the same least fixpoint, relations too big to compute in full are computed
/// for the arguments asked (`datalog::magic`), and a rule that really builds ever-deeper terms
/// is stopped by the engines' term and row budgets, with the engine's error at load.
pub const RECURSION_SEVERITY: Severity = Severity::Warning;

/// Check 7: `base`, `init` and `role` do not depend on `true` or `does`; `legal`, `goal` and
/// `terminal` do not depend on `does`; `role` is given by facts only.
fn check_dependencies(rules: &[Rule], graph: &DependencyGraph, out: &mut Vec<Diagnostic>) {
    // An old sheet's `base` of another arity is an ordinary relation.
    let base_is_keyword = rules
        .iter()
        .any(|r| r.head.rel == Sym::BASE && is_keyword_use(&r.head));
    for rel in [Sym::BASE, Sym::INIT, Sym::ROLE] {
        if rel == Sym::BASE && !base_is_keyword {
            continue;
        }
        out.extend(forbidden_dependency(
            rules,
            graph,
            rel,
            &[Sym::TRUE, Sym::DOES],
        ));
    }
    // The reference prover asks these of the state alone: `does` never holds there.
    for rel in [Sym::LEGAL, Sym::GOAL, Sym::TERMINAL] {
        out.extend(
            forbidden_dependency(rules, graph, rel, &[Sym::DOES]).map(|d| Diagnostic {
                severity: Severity::Warning,
                message: format!(
                    "{}: read with no moves (does never holds there), as the reference prover \
                     does",
                    d.message
                ),
                ..d
            }),
        );
    }
    for rule in rules
        .iter()
        .filter(|r| r.head.rel == Sym::ROLE && !r.body.is_empty())
    {
        let message = "role must be given by facts, not by a rule".to_string();
        out.push(at_rule(
            Severity::Error,
            Check::BadDependency,
            rule,
            message,
        ));
    }
}

/// The diagnostic for `rel` depending on any of `forbidden`, naming the first rule for `rel`
/// through which it does.
fn forbidden_dependency(
    rules: &[Rule],
    graph: &DependencyGraph,
    rel: Sym,
    forbidden: &[Sym],
) -> Option<Diagnostic> {
    let found: Vec<Sym> = forbidden
        .iter()
        .copied()
        .filter(|f| graph.depends_on_any(rel, &[*f]))
        .collect();
    if found.is_empty() {
        return None;
    }
    let body_reaches = |rule: &Rule| {
        let mut hit = false;
        for literal in &rule.body {
            literal_relations(literal, false, &mut |r, _| {
                hit = hit || found.contains(&r) || graph.depends_on_any(r, &found);
            });
        }
        hit
    };
    let rule = rules
        .iter()
        .find(|r| r.head.rel == rel && body_reaches(r))
        .or_else(|| rules.iter().find(|r| r.head.rel == rel))?;
    let names = |syms: &[Sym]| syms.iter().map(|s| s.name()).collect::<Vec<_>>();
    let message = format!(
        "{rel} depends on {}, but {rel} must not depend on {}",
        names(&found).join(" and "),
        names(forbidden).join(" or ")
    );
    Some(at_rule(
        Severity::Error,
        Check::BadDependency,
        rule,
        message,
    ))
}

/// Check 8: the program is a whole game. It has a role; rules for `legal`, `goal` and
/// `terminal`; and a goal for every role. A game without `init` only gets a warning, since its
/// initial state is simply empty.
fn check_completeness(rules: &[Rule], out: &mut Vec<Diagnostic>) {
    let defines = |rel: Sym| rules.iter().any(|r| r.head.rel == rel);
    let roles: Vec<&Rule> = rules
        .iter()
        .filter(|r| r.head.rel == Sym::ROLE && r.body.is_empty() && r.head.args.len() == 1)
        .collect();
    if roles.is_empty() {
        out.push(whole(
            Severity::Error,
            Check::Incomplete,
            "the game has no role".into(),
        ));
    }
    for rel in [Sym::LEGAL, Sym::GOAL, Sym::TERMINAL] {
        if !defines(rel) {
            let message = format!("the game has no {rel} rule");
            out.push(whole(Severity::Error, Check::Incomplete, message));
        }
    }
    if !defines(Sym::INIT) {
        let message = "the game has no init fact, so its initial state is empty".into();
        out.push(whole(Severity::Warning, Check::Incomplete, message));
    }
    if defines(Sym::GOAL) {
        for rule in roles {
            let role = &rule.head.args[0];
            if super::is_nature_role(role) {
                // GDL-II nature needs no goal.
                continue;
            }
            let has_goal = rules.iter().any(|g| {
                g.head.rel == Sym::GOAL
                    && g.head
                        .args
                        .first()
                        .is_some_and(|a| a == role || matches!(a, Term::Var(_)))
            });
            if !has_goal {
                let message = format!("role {role} has no goal rule");
                out.push(at_rule(Severity::Error, Check::Incomplete, rule, message));
            }
        }
    }
}

/// Check 8, continued (a warning): every relation used in a body is defined by some rule or
/// fact, except `true` and `does`, which the game's state and moves supply.
fn check_undefined(rules: &[Rule], out: &mut Vec<Diagnostic>) {
    let defined: HashSet<Sym> = rules.iter().map(|r| r.head.rel).collect();
    let mut reported = HashSet::new();
    for rule in rules {
        for literal in &rule.body {
            literal_relations(literal, false, &mut |rel, _| {
                let builtin = rel == Sym::TRUE || rel == Sym::DOES || CONNECTIVES.contains(&rel);
                if !builtin && !defined.contains(&rel) && reported.insert(rel) {
                    let message = format!("relation {rel} is never defined");
                    out.push(at_rule(Severity::Warning, Check::Incomplete, rule, message));
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdl::parse_rules;
    use proptest::prelude::*;

    /// A small complete game, so that only the problems under test are reported.
    const GAME: &str = "(role r) (init s) (legal r m) (<= (next s) (does r m)) \
                        (<= terminal (true s)) (goal r 100)\n";

    /// The diagnostics of `GAME` followed by `extra`.
    fn diagnostics(extra: &str) -> Vec<Diagnostic> {
        validate(&parse_rules(&format!("{GAME}{extra}")).unwrap())
    }

    /// The `(check, message)` of each diagnostic of `GAME` and `extra` with the given severity.
    fn found(severity: Severity, extra: &str) -> Vec<(Check, String)> {
        diagnostics(extra)
            .into_iter()
            .filter(|d| d.severity == severity)
            .map(|d| (d.check, d.message))
            .collect()
    }

    fn errors(extra: &str) -> Vec<(Check, String)> {
        found(Severity::Error, extra)
    }

    fn warnings(extra: &str) -> Vec<(Check, String)> {
        found(Severity::Warning, extra)
    }

    /// The checks of the errors, for when the messages do not matter.
    fn error_checks(extra: &str) -> Vec<Check> {
        errors(extra).into_iter().map(|(c, _)| c).collect()
    }

    /// The checks of the warnings, for when the messages do not matter.
    fn warning_checks(extra: &str) -> Vec<Check> {
        warnings(extra).into_iter().map(|(c, _)| c).collect()
    }

    #[test]
    fn a_complete_game_is_clean() {
        assert_eq!(diagnostics(""), []);
        assert_eq!(check_text(GAME).0, Verdict::Valid);
    }

    #[test]
    fn a_relation_with_several_arities_is_only_warned_about() {
        // Two relations to the reference prover, whose unifier never matches the one with the
        // other; the engines key relations by name and arity.
        assert_eq!(errors("(p a)\n(<= (q ?x) (p ?x ?x))"), []);
        assert_eq!(
            warnings("(p a)\n(<= (q ?x) (p ?x ?x))"),
            [(
                Check::Arity,
                "relation p used with arity 2, but with arity 1 at 2:1: read as two relations, \
                 as the reference prover does"
                    .to_string()
            )]
        );
        // Inside `not` and `or` too.
        let checks =
            |extra| -> Vec<Check> { warnings(extra).into_iter().map(|(c, _)| c).collect() };
        assert_eq!(checks("(p a) (<= q (p a) (not (p a b)))"), [Check::Arity]);
        assert_eq!(checks("(p a) (<= q (or (p a) (p a a)))"), [Check::Arity]);
    }

    #[test]
    fn a_relation_in_parentheses_beside_the_bare_one_is_warned_about() {
        // test_case_3a's construct: `(<= (p) ...)` and a rule reading `p`.
        let extra = "(<= p (true s))\n(<= (p) (true s))\n(<= (legal r n) p)";
        assert_eq!(errors(extra), []);
        assert_eq!(
            warnings(extra),
            [(
                Check::Arity,
                "(p) and p (used at 2:1) are different relations, as for the reference prover: \
                 the one does not make the other hold"
                    .to_string()
            )]
        );
        // Written one way throughout, it is no problem.
        assert_eq!(diagnostics("(<= (p) (true s))\n(<= (legal r n) (p))"), []);
    }

    #[test]
    fn a_function_with_several_arities_is_only_warned_about() {
        // The reference prover plays it as two functions, and so do the engines.
        assert_eq!(errors("(p (f a)) (p (g (h (f a b))))"), []);
        assert_eq!(
            warnings("(p (f a)) (p (g (h (f a b))))"),
            [(
                Check::Arity,
                "function f used with arity 2, but with arity 1 at 2:1: read as two functions, \
                 as the reference prover does"
                    .to_string()
            )]
        );
        assert_eq!(
            warnings("(p (f a)) (<= q (p ?x) (distinct ?x (f a b)))")
                .into_iter()
                .map(|(c, _)| c)
                .collect::<Vec<_>>(),
            [Check::Arity]
        );
    }

    #[test]
    fn old_base_and_input_relations_are_only_warned_about() {
        let extra = "(base 1 2) (input 1 2 3) (<= (q ?x) (base ?x ?y) (input ?x ?y ?z))";
        assert_eq!(errors(extra), []);
        let found = warnings(extra);
        assert!(
            found.contains(&(
                Check::Arity,
                "base used with 2 arguments, read as an ordinary relation (as in sheets older \
                 than the base keyword)"
                    .to_string()
            )),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|(_, m)| m.starts_with("input used with 3"))
        );
        // Not a keyword `base`, so it may depend on the state.
        assert_eq!(errors("(<= (base ?x 1) (true ?x))"), []);
        // The keyword itself still has its arity elsewhere, and its rules.
        assert_eq!(error_checks("(legal r m n)"), [Check::Arity]);
        assert_eq!(
            error_checks("(<= (base t) (true s))"),
            [Check::BadDependency]
        );
    }

    #[test]
    fn constants_functions_and_relations_may_share_names() {
        assert_eq!(errors("(cell a) (p cell) (p (cell 1 2)) (q (p 1 2 3))"), []);
    }

    #[test]
    fn keyword_relations_have_fixed_arities() {
        assert_eq!(
            errors("(legal r m n)"),
            [(Check::Arity, "legal takes 2 arguments, found 3".to_string())]
        );
        assert_eq!(error_checks("(<= (terminal s) (true s))"), [Check::Arity]);
        assert_eq!(error_checks("(sees r)"), [Check::Arity]);
        assert_eq!(errors("(sees r m) (base s) (input r m)"), []);
    }

    #[test]
    fn true_and_does_of_another_arity_never_hold() {
        // No state fact or move unifies with them, to the reference prover: they never hold.
        assert_eq!(
            errors("(<= (next s) (true s t)) (<= (next t) (does r))"),
            []
        );
        assert_eq!(
            warnings("(<= (next s) (true s t))"),
            [(
                Check::Arity,
                "true takes 1 argument, found 2: it never holds, as for the reference prover \
                 (no state fact or move matches it)"
                    .to_string()
            )]
        );
        assert_eq!(error_checks("(sees r)"), [Check::Arity]);
        assert_eq!(errors("(sees r m) (base s) (input r m)"), []);
    }

    #[test]
    fn connectives_are_not_sentences_or_terms() {
        let misplaced = |extra| error_checks(extra) == [Check::MisplacedKeyword];
        assert!(misplaced("(distinct a b)"));
        assert!(misplaced("(<= (not p) (true s))"));
        assert!(misplaced("(<= (or p) (true s))"));
        assert!(misplaced("(foo not bar)"));
        assert!(misplaced("(foo (or a b))"));
        assert!(misplaced("(foo (<= a b))"));
        assert!(misplaced("(foo (bar (distinct a b)))"));
        assert!(misplaced("(<= p (true s) (distinct ?x))"));
        assert!(misplaced("(<= p (true s) (distinct a b c))"));
        assert!(misplaced("(<= p (true s) or)"));
        assert_eq!(
            errors("(foo not)"),
            [(Check::MisplacedKeyword, "not used in a term".to_string())]
        );
        // A function `not` is played by the reference prover: only a warning.
        assert_eq!(errors("(foo (not bar)) (<= (q ?x) (foo (not ?x)))"), []);
        assert_eq!(
            warnings("(foo (not bar))"),
            [(
                Check::MisplacedKeyword,
                "not used as a function symbol in a term, read as an ordinary function".to_string()
            )]
        );
    }

    #[test]
    fn true_and_does_are_never_concluded() {
        assert_eq!(
            errors("(<= (true t) (true s))"),
            [(
                Check::MisplacedKeyword,
                "true cannot be the head of a rule".to_string()
            )]
        );
        assert_eq!(
            errors("(does r m)"),
            [(Check::MisplacedKeyword, "does cannot be a fact".to_string())]
        );
    }

    #[test]
    fn not_negates_only_a_sentence() {
        // `(not (distinct a b))` is equality to the reference prover: only a warning.
        assert_eq!(errors("(<= p (true s) (not (distinct a b)))"), []);
        assert_eq!(
            warnings("(<= p (true s) (not (distinct a b)))"),
            [(
                Check::MisplacedKeyword,
                "not applied to (distinct a b), read as equality, as the reference prover does"
                    .to_string()
            )]
        );
        assert_eq!(
            error_checks("(<= p (true s) (not (not (true s))))"),
            [Check::MisplacedKeyword]
        );
        // Negating a disjunction is only suspicious.
        let extra = "(<= p (true s) (not (or (true s) (does r m))))";
        assert_eq!(errors(extra), []);
        assert_eq!(
            warnings(extra),
            [(
                Check::MisplacedKeyword,
                "not applied to a disjunction (or (true s) (does r m))".to_string()
            )]
        );
    }

    #[test]
    fn facts_are_ground() {
        assert_eq!(
            errors("(p ?x a ?y)"),
            [(
                Check::VariableInFact,
                "variables ?x, ?y in a fact".to_string()
            )]
        );
    }

    #[test]
    fn head_negated_and_distinct_variables_must_be_bound() {
        assert_eq!(
            errors("(<= (next (p ?x ?y)) (true ?y))"),
            [(
                Check::Unsafe,
                "unsafe rule: variable ?x is not bound by a positive literal".to_string()
            )]
        );
        assert_eq!(
            errors("(<= (next (p ?x ?y)) (true s) (not (true ?x)) (distinct ?y a))"),
            [(
                Check::Unsafe,
                "unsafe rule: variables ?x, ?y are not bound by a positive literal".to_string()
            )]
        );
        // Order does not matter: `distinct` may come before the literal that binds.
        assert_eq!(
            errors("(<= (p ?x) (distinct ?x a) (not (true ?x)) (true ?x))"),
            []
        );
    }

    #[test]
    fn variables_the_prover_binds_from_the_query_are_only_warned_about() {
        // A head variable its callers pass, legal's and goal's role, a negation's or a
        // distinct's variable bound nowhere: the reference prover gives each a meaning.
        let extra = "(<= (p ?x ?y) (true ?y)) (<= (legal ?r m) (not (true (c ?r)))) \
                     (<= (goal ?r 0) (not (true (c ?r)))) (<= q (true s) (not (true ?x)) (distinct ?y a))";
        assert_eq!(errors(extra), []);
        let warned: Vec<Check> = warnings(extra).into_iter().map(|(c, _)| c).collect();
        assert_eq!(warned, [Check::Unsafe; 4]);
        // Read so, a rule whose caller passes no value is still refused, at the rule.
        let mut rules = parse_rules(GAME).unwrap();
        rules.extend(
            parse_rules("(<= (free ?c) (not (true (cell ?c)))) (<= (next (f ?c)) (free ?c))")
                .unwrap(),
        );
        let (diags, _) = validate_and_normalize(rules);
        let errors: Vec<&str> = diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(
            errors,
            [
                "variable ?c in a fact once read as the reference prover reads the sheet (a not or \
              distinct of variables no positive literal binds dropped, head variables bound by \
              their callers)"
            ]
        );
    }

    #[test]
    fn an_or_binds_what_every_disjunct_binds() {
        assert_eq!(errors("(<= (next ?x) (or (true ?x) (does r ?x)))"), []);
        assert_eq!(
            error_checks("(<= (next ?x) (or (true ?x) (true s)))"),
            [Check::Unsafe]
        );
        assert_eq!(error_checks("(<= (next ?x) (or))"), [Check::Unsafe]);
        // A variable of one positive disjunct needs no other binding.
        assert_eq!(errors("(<= p (or (true ?x) (true s)))"), []);
        // A negated disjunct needs its variables bound outside the `or`.
        assert_eq!(errors("(<= p (true ?x) (or (not (true ?x)) (true s)))"), []);
        assert_eq!(
            error_checks("(<= (next ?x) (or (true s) (not (true ?x))))"),
            [Check::Unsafe]
        );
        assert_eq!(
            errors("(<= (p ?x) (true ?x) (or (distinct ?x a) (true s)))"),
            []
        );
    }

    #[test]
    fn negation_through_recursion_is_refused() {
        let extra = "(<= (p ?x) (true ?x) (not (q ?x)))\n(<= (q ?x) (p ?x))";
        assert_eq!(
            errors(extra),
            [(
                Check::Unstratified,
                "unstratified negation: p depends on (not q) in the cycle p, q".to_string()
            )]
        );
        assert_eq!(
            error_checks("(<= p (true s) (not p))"),
            [Check::Unstratified]
        );
    }

    #[test]
    fn negating_another_form_of_a_relation_is_stratified() {
        // As in futoshiki, hexPie and the queens puzzles.
        let extra = "(<= (goal r 0) (true s)) (<= (goal r 100) (not (goal r 0)))";
        assert_eq!(errors(extra), []);
        let extra = "(<= (goal ?p 0) (role ?p) (not (goal ?p 100)))";
        assert_eq!(errors(extra), []);
        // A variable could be either form, so this one is a cycle.
        let extra = "(<= (goal ?p 0) (role ?p) (not (goal ?p ?v)) (true ?v))";
        assert_eq!(error_checks(extra), [Check::Unstratified]);
    }

    /// The reference prover plays a sheet that breaks the restriction as long as each question
    /// is finite, so a break is a warning, and the engines bound what is not finite.
    #[test]
    fn the_recursion_restriction_is_a_warning() {
        let extra = "(<= (p ?x) (true ?x)) (<= (p ?x) (p ?y) (true ?x))";
        assert_eq!(errors(extra), []);
        assert_eq!(
            warnings(extra),
            [(
                Check::Recursion,
                "recursion restriction: the argument ?y of the recursive (p ?y) is not ground, \
                 not an argument of the head, and not bound outside the recursion (the rule may \
                 build ever-deeper terms; played as the reference prover plays it, within the \
                 engines' budgets)"
                    .to_string()
            )]
        );
        // A rule that builds ever-deeper terms: the argument is inside a head argument.
        let deeper = "(num 0) (<= (num (s ?x)) (num ?x))";
        assert_eq!(warning_checks(deeper), [Check::Recursion]);
        assert_eq!(check_text(&format!("{GAME}{deeper}")).0, Verdict::Valid);
        // Through another relation of the same cycle too.
        assert_eq!(
            warning_checks("(q 0) (<= (p (f ?x)) (q ?x)) (<= (q ?x) (p ?x))"),
            [Check::Recursion]
        );
        // Ground, a whole head argument, or bound by a non-recursive sentence: fine.
        let ok = "(<= (p ?x) (true ?x)) (<= (p ?x) (succ ?y ?x) (p ?y)) (succ 1 2) \
                  (<= (p ?x) (p ?x) (true s)) (<= (p (f ?x)) (p a) (true ?x)) \
                  (<= (p (g ?x)) (succ ?x ?y) (p ?x))";
        assert_eq!(errors(ok), []);
        assert_eq!(warnings(ok), []);
    }

    /// A `base` or `input` rule with a variable nothing binds is dropped with a warning: no
    /// referee reads them to play.
    #[test]
    fn an_unsafe_input_rule_is_dropped_with_a_warning() {
        let extra = "(tlt t1 t2) (tlt t2 t3) \
                     (<= (input ?r (disband ?t1 ?t2 ?t4)) (role ?r) (tlt ?t1 ?t2) (tlt ?t2 t3)) \
                     (<= (base (at ?x)) (tlt ?x ?y) (not (tlt ?z ?x)))";
        assert_eq!(errors(extra), []);
        let found = warnings(extra);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].1.starts_with(
                "variable ?t4 is not bound by a positive literal: the rule is dropped"
            ),
            "{found:?}"
        );
        assert!(
            found[1].1.starts_with("variable ?z is not bound"),
            "{found:?}"
        );
        let text = format!("{GAME}{extra}");
        assert_eq!(check_text(&text).0, Verdict::Valid);
        let rules = normalize::plain(parse_rules(&text).unwrap());
        assert!(
            !rules
                .iter()
                .any(|r| r.head.rel == Sym::INPUT || r.head.rel == Sym::BASE)
        );
        // A safe one stays.
        let kept = normalize::plain(parse_rules("(<= (input ?r go) (role ?r))").unwrap());
        assert_eq!(kept.len(), 1);
    }

    #[test]
    fn state_independent_relations_do_not_depend_on_state_or_moves() {
        assert_eq!(
            errors("(<= (base t) (true s))"),
            [(
                Check::BadDependency,
                "base depends on true, but base must not depend on true or does".to_string()
            )]
        );
        // Through a helper, reported once, on the first rule that reaches it.
        let extra = "(<= h (does r m)) (<= (legal r n) (true s)) (<= (legal r k) h) \
                     (<= (legal r j) h)";
        let diags = diagnostics(extra);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].check, Check::BadDependency);
        assert_eq!(diags[0].rule.as_deref(), Some("(<= (legal r k) h)"));
        // `legal`, `goal` and `terminal` reading moves are read with none, as the reference
        // prover asks them: only a warning.
        assert_eq!(diags[0].severity, Severity::Warning);
        assert_eq!(
            warnings("(<= terminal (does r m))"),
            [(
                Check::BadDependency,
                "terminal depends on does, but terminal must not depend on does: read with no \
                 moves (does never holds there), as the reference prover does"
                    .to_string()
            )]
        );
        assert_eq!(
            error_checks("(<= (init t) (role ?r) (does ?r m))"),
            [Check::BadDependency]
        );
        // `next` and helpers used only by `next` may depend on moves.
        assert_eq!(errors("(<= h (does r m)) (<= (next t) h)"), []);
    }

    #[test]
    fn roles_are_facts() {
        assert_eq!(
            errors("(<= (role q) (p q)) (p q) (goal q 0)"),
            [(
                Check::BadDependency,
                "role must be given by facts, not by a rule".to_string()
            )]
        );
    }

    #[test]
    fn a_game_needs_roles_moves_goals_and_an_end() {
        let messages = |text: &str| -> Vec<String> {
            validate(&parse_rules(text).unwrap())
                .into_iter()
                .map(|d| d.message)
                .collect()
        };
        assert_eq!(
            messages(""),
            [
                "the game has no role",
                "the game has no legal rule",
                "the game has no goal rule",
                "the game has no terminal rule",
                "the game has no init fact, so its initial state is empty",
            ]
        );
        assert_eq!(
            messages(
                "(role a) (role b) (role c) (init s) (legal a m) terminal (goal a 1) (<= (goal ?r 0) (role ?r))"
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            messages("(role a) (role b) (init s) (legal a m) terminal (goal a 1)"),
            ["role b has no goal rule"]
        );
        let (verdict, _) = check_text("(role a) (role b) (init s) (legal a m) terminal (goal a 1)");
        assert_eq!(verdict, Verdict::Fragment);
    }

    #[test]
    fn undefined_relations_are_only_warned_about() {
        let extra = "(<= (legal r n) squee (not squee) (true s))";
        let diags = diagnostics(extra);
        let warned: Vec<_> = diags
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(|d| (d.check, d.message.as_str()))
            .collect();
        assert_eq!(
            warned,
            [(Check::Incomplete, "relation squee is never defined")]
        );
    }

    #[test]
    fn errors_come_first_then_sheet_order() {
        let text = "(role r) (<= (p ?x) (p ?y) (true ?x))\n(<= (p ?x) (true ?x))\n(q ?z)\n(legal r m) \
                    (<= terminal undefined) (goal r 1) (init s) (<= (next ?w) (true s))";
        let diags = validate(&parse_rules(text).unwrap());
        let summary: Vec<(Severity, Check, String)> = diags
            .iter()
            .map(|d| (d.severity, d.check, d.pos.to_string()))
            .collect();
        assert_eq!(
            summary,
            [
                (Severity::Error, Check::VariableInFact, "3:1".to_string()),
                (Severity::Error, Check::Unsafe, "4:57".to_string()),
                (Severity::Warning, Check::Recursion, "1:10".to_string()),
                (Severity::Warning, Check::Incomplete, "4:13".to_string()),
            ]
        );
        assert_eq!(diags[0].rule.as_deref(), Some("(q ?z)"));
    }

    #[test]
    fn verdicts_of_texts() {
        assert_eq!(check_text("(role").0, Verdict::SyntaxError);
        let (verdict, diags) = check_text("0( ())6");
        assert_eq!(verdict, Verdict::SyntaxError);
        assert_eq!(diags[0].check, Check::Syntax);
        assert_eq!(
            diags[0].to_string(),
            "1:2: error: expected a word after '(', found '('"
        );
        assert_eq!(check_text("((a) b)").0, Verdict::SyntaxError);
        assert_eq!(check_text("(role r) (p ())").0, Verdict::SyntaxError);
        // Balanced, well-formed KIF that is not GDL: invalid rather than a syntax error.
        assert_eq!(check_text("(?x a)").0, Verdict::Invalid);
        assert_eq!(check_text("(<=)").0, Verdict::Invalid);
        assert_eq!(check_text("(role r)").0, Verdict::Fragment);
        assert_eq!(check_text("(role r) (distinct r r)").0, Verdict::Invalid);
    }

    /// The pieces of random rule sheets.
    const TOKENS: &[&str] = &[
        "(", "(", "(", ")", ")", ")", "a", "b", "f", "1", "?x", "?y", "?z", "<=", "not", "or",
        "distinct", "true", "does", "next", "role", "init", "legal", "goal", "terminal", "base",
        "input", "sees",
    ];

    /// Joins tokens into text, dropping unmatched `)` and closing what is left open, so that
    /// most soups get past the bracket parser.
    fn balanced(tokens: &[usize]) -> String {
        let mut text = String::new();
        let mut depth = 0usize;
        for &i in tokens {
            let token = TOKENS[i % TOKENS.len()];
            match token {
                "(" => depth += 1,
                ")" if depth == 0 => continue,
                ")" => depth -= 1,
                _ => {}
            }
            text.push_str(token);
            text.push(' ');
        }
        text.push_str(&")".repeat(depth));
        text
    }

    /// Words that may start a list in a random rule sheet.
    const WORDS: &[&str] = &[
        "p", "q", "f", "<=", "not", "or", "distinct", "true", "does", "next", "role", "init",
        "legal", "goal", "terminal", "base",
    ];

    /// Random well-bracketed expressions whose lists start with a word, so that most of them
    /// read as rules and reach the validator.
    fn arb_expr() -> impl Strategy<Value = String> {
        let leaf = prop::sample::select(&TOKENS[6..]).prop_map(String::from);
        leaf.prop_recursive(5, 64, 5, |inner| {
            (
                prop::sample::select(WORDS),
                prop::collection::vec(inner, 0..5),
            )
                .prop_map(|(head, items)| format!("({head} {})", items.join(" ")))
        })
    }

    proptest! {
        #[test]
        fn random_sheets_never_panic(exprs in prop::collection::vec(arb_expr(), 0..8)) {
            let text = exprs.join("\n");
            if let Ok(rules) = parse_rules(&text) {
                let diags = validate(&rules);
                let severities: Vec<Severity> = diags.iter().map(|d| d.severity).collect();
                prop_assert!(severities.is_sorted());
            }
            let _ = check_text(&text);
        }

        /// The token soup joined by any Unicode blank or control character, inside up to
        /// 2,000 levels of brackets; the whole checked path (read, validate, rewrite) never
        /// panics.
        #[test]
        fn token_soup_with_any_blank_and_depth_never_panics(
            tokens in prop::collection::vec(0..TOKENS.len(), 0..120),
            seps in prop::collection::vec(prop::sample::select(crate::kif::fuzz::ODD), 1..8),
            depth in 0usize..2000,
        ) {
            let mut text = "(".repeat(depth);
            for (i, &t) in tokens.iter().enumerate() {
                text.push_str(TOKENS[t]);
                text.push(seps[i % seps.len()]);
            }
            text.push_str(&")".repeat(depth));
            let _ = check_text(&text);
            let _ = crate::gdl::Description::from_text(&text);
            let balanced = balanced(&tokens).replace(' ', &seps[0].to_string());
            let _ = check_text(&balanced);
            let _ = crate::gdl::Description::from_text(&balanced);
        }

        /// Any text of GDL words, blanks, controls and characters, nested up to 2,000 deep.
        #[test]
        fn unicode_sheets_never_panic(text in crate::kif::fuzz::text(TOKENS)) {
            let _ = check_text(&text);
            let _ = crate::gdl::Description::from_text(&text);
        }

        #[test]
        fn token_soup_never_panics(tokens in prop::collection::vec(0..TOKENS.len(), 0..120)) {
            let raw: Vec<&str> = tokens.iter().map(|&i| TOKENS[i]).collect();
            let _ = check_text(&raw.join(" "));
            let text = balanced(&tokens);
            if let Ok(rules) = parse_rules(&text) {
                let diags = validate(&rules);
                let severities: Vec<Severity> = diags.iter().map(|d| d.severity).collect();
                prop_assert!(severities.is_sorted());
            }
            let _ = check_text(&text);
        }
    }
}
