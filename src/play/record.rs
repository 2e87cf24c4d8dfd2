//! Match records in the ggp.org JSON format (ggp-base's `Match.toJSON`), for saving and
//! resuming games played by people.
//!
//! States are written as ggp-base writes them, `( ( cell 1 1 b ) ( control x ) )`, and moves
//! as `( mark 1 1 )` or `noop`. Reading accepts any spacing.
//! FIXME: the match manager keeps its own record type (`manager::record::MatchRecord`, branch
//! `protocol`), with the same field names; the two should become one once both are on main.
//! Records written here carry every field that type requires, and reading ignores fields it
//! does not know.

use serde::{Deserialize, Serialize};

use super::PlayError;
use crate::gdl::{Term, term_from_sexp};
use crate::kif::{self, Sexp};

/// A match record. Field names are the ggp.org ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Record {
    /// The match's name.
    pub match_id: String,
    /// 32 random letters and digits.
    pub random_token: String,
    /// The rule sheet's text (so that a record can be replayed on its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game_rulesheet: Option<String>,
    /// When the match started, in milliseconds since the Unix epoch.
    pub start_time: u64,
    /// Start clock in seconds (0 for games played by people).
    pub start_clock: i64,
    /// Play clock in seconds (0 for games played by people).
    pub play_clock: i64,
    /// Preview clock in seconds, −1 for none.
    pub preview_clock: i64,
    /// Every state, the initial one first.
    pub states: Vec<String>,
    /// Every joint move, moves in role order.
    pub moves: Vec<Vec<String>>,
    /// When each state was reached.
    pub state_times: Vec<u64>,
    /// Errors per state and role (always empty strings here).
    pub errors: Vec<Vec<String>>,
    /// Goal values in role order, when the match is over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal_values: Option<Vec<i64>>,
    /// Whether the game reached a terminal state.
    pub is_completed: bool,
    /// Whether the match was stopped early.
    pub is_aborted: bool,
    /// Who played each role.
    pub player_names_from_host: Vec<String>,
    /// Which roles a person played.
    pub is_player_human: Vec<bool>,
    /// Whether symbols were scrambled (never, here).
    pub scrambled: bool,
}

/// A new random token: 32 letters and digits.
pub fn random_token() -> String {
    use rand::Rng;
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

impl Record {
    /// Reads a record from JSON text.
    ///
    /// # Errors
    /// The text is not a match record.
    pub fn from_json(text: &str) -> Result<Record, PlayError> {
        serde_json::from_str(text)
            .map_err(|e| PlayError::Record(format!("not a match record: {e}")))
    }

    /// The record as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a record always serializes")
    }
}

/// A term as ggp-base prints it: `( mark 1 1 )`.
pub fn term_text(term: &Term) -> String {
    match term {
        Term::Const(s) | Term::Var(s) => s.to_string(),
        Term::App(f, args) => {
            let mut out = format!("( {f} ");
            for a in args {
                out.push_str(&term_text(a));
                out.push(' ');
            }
            out.push(')');
            out
        }
    }
}

/// A state as ggp-base prints it: `( ( cell 1 1 b ) ( control x ) )`.
pub fn state_text(facts: &[Term]) -> String {
    let mut out = String::from("( ");
    for f in facts {
        out.push_str(&term_text(f));
        out.push(' ');
    }
    out.push(')');
    out
}

/// Reads the states of a record, each as its facts in sorted order.
///
/// # Errors
/// A state that is not a list of terms.
pub fn parse_states(states: &[String]) -> Result<Vec<Vec<Term>>, PlayError> {
    states
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let bad = |why: String| PlayError::Record(format!("state {i}: {why}"));
            let sexp = kif::parse_one(text).map_err(|e| bad(e.to_string()))?;
            let Sexp::List { items, .. } = sexp else {
                return Err(bad("not a list of facts".into()));
            };
            let mut facts = items
                .iter()
                .map(|s| term_from_sexp(s).map_err(|e| bad(e.to_string())))
                .collect::<Result<Vec<_>, _>>()?;
            facts.sort();
            Ok(facts)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdl::parse_term;

    #[test]
    fn texts_round_trip() {
        let facts = vec![
            parse_term("(cell 1 1 b)").unwrap(),
            parse_term("(control x)").unwrap(),
        ];
        let text = state_text(&facts);
        assert_eq!(text, "( ( cell 1 1 b ) ( control x ) )");
        let mut sorted = facts.clone();
        sorted.sort();
        assert_eq!(parse_states(&[text]).unwrap(), vec![sorted]);
        assert_eq!(term_text(&parse_term("noop").unwrap()), "noop");
        assert!(parse_states(&["( cell".into()]).is_err());
        assert!(Record::from_json("{\"moves\": 3}").is_err());
    }
}
