//! Match records in the ggp.org JSON format, loaded and saved atomically.
//!
//! The fields and their meaning follow ggp-base's `Match.toJSON` (see
//! `../shared/notes/protocol.md`, §8): states as `( f1 f2 ... )` strings with `true` stripped,
//! one more state than joint moves, moves in role order and never scrambled, one list of
//! error strings per state (`""`, `TO`, `CE`, `IL <move>`). A record of a local game carries
//! its rules in `gameRulesheet` instead of a repository URL in `gameMetaURL`, so that it is
//! enough to replay or resume the match.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use ggp_engine::machine::StateMachine;
use ggp_gdl::gdl::{self, Term, parse_term};

/// One match, as ggp.org stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MatchRecord {
    /// The match id sent to the players.
    pub match_id: String,
    /// 32 random letters and digits.
    pub random_token: String,
    /// When the match started, in milliseconds since the Unix epoch.
    pub start_time: u64,
    /// The game's repository URL, for games from a repository.
    #[serde(
        rename = "gameMetaURL",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub game_meta_url: Option<String>,
    /// The rule sheet, for local games.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game_rulesheet: Option<String>,
    /// Whether the game reached a terminal state.
    pub is_completed: bool,
    /// Whether the match was stopped before the end.
    #[serde(default)]
    pub is_aborted: bool,
    /// Every state, from the initial one.
    pub states: Vec<String>,
    /// Every joint move, one move per role in role order.
    pub moves: Vec<Vec<String>>,
    /// When each state was reached, in milliseconds since the Unix epoch.
    pub state_times: Vec<u64>,
    /// One list of error strings per state (index 0: the START errors).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Vec<String>>,
    /// The goal value of each role, in role order, once the match is completed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goal_values: Vec<u32>,
    /// Per role, in role order, why its goal value is the sheet's fault (the rules give it no
    /// value or several in the final state), or an empty string; empty when no role's is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goal_faults: Vec<String>,
    /// Seconds of preview (-1: none).
    #[serde(default = "no_preview")]
    pub preview_clock: i64,
    /// Seconds of the start clock.
    pub start_clock: u64,
    /// Seconds of the play clock.
    pub play_clock: u64,
    /// The players' names, in role order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player_names_from_host: Option<Vec<String>>,
    /// Whether the players saw the game with every symbol renamed.
    #[serde(default)]
    pub scrambled: bool,
    /// Which roles a person played (games from `ggp play` and `ggp web`; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub is_player_human: Vec<bool>,
    /// GDL-II: after each step, what each role saw (its percepts, printed), in role order;
    /// empty for a game without percepts. `states` holds the true states.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percepts: Vec<Vec<Vec<String>>>,
}

/// A new random token: 32 letters and digits.
pub fn random_token(rng: &mut impl rand::Rng) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..32)
        .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
        .collect()
}

/// Reads the states of a record, each as its facts in sorted order; an error names the state.
///
/// # Errors
/// A state that is not a list of terms.
pub fn parse_states(states: &[String]) -> Result<Vec<Vec<Term>>, String> {
    states
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let bad = |why: String| format!("state {i}: {why}");
            let mut facts = gdl::parse_state(text).map_err(|e| bad(e.to_string()))?;
            facts.sort();
            Ok(facts)
        })
        .collect()
}

fn no_preview() -> i64 {
    -1
}

/// Why a record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure (named in the message, so not a source: a chain prints it once).
        error: std::io::Error,
    },
    /// The file is not a match record.
    #[error("{path}: {error}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The failure (named in the message).
        error: serde_json::Error,
    },
}

impl MatchRecord {
    /// Reads a record from JSON text.
    ///
    /// # Errors
    /// The text is not a match record.
    pub fn from_json(text: &str) -> Result<MatchRecord, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The record as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a record always serializes")
    }

    /// Reads a record.
    ///
    /// # Errors
    /// The file cannot be read or is not a match record.
    pub fn load(path: &Path) -> Result<MatchRecord, RecordError> {
        let text = std::fs::read_to_string(path).map_err(|error| RecordError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        serde_json::from_str(&text).map_err(|error| RecordError::Json {
            path: path.to_path_buf(),
            error,
        })
    }

    /// The record's joint moves as `machine`'s moves, in role order; an error names the step
    /// (1 for the first joint move) and the move. Legality is the caller's to check: a move
    /// is only looked up among the game's moves.
    ///
    /// # Errors
    /// A move that does not parse, is not a move of the game, or a joint move with the wrong
    /// number of moves.
    pub fn joint_moves<M: StateMachine>(&self, machine: &M) -> Result<Vec<Vec<M::Move>>, String> {
        let roles = machine.roles().len();
        self.moves
            .iter()
            .enumerate()
            .map(|(i, joint)| {
                let step = i + 1;
                if joint.len() != roles {
                    return Err(format!(
                        "move {step} has {} moves for {roles} roles",
                        joint.len()
                    ));
                }
                joint
                    .iter()
                    .map(|text| {
                        let term =
                            parse_term(text).map_err(|e| format!("move {step} {text:?}: {e}"))?;
                        machine.find_move(&term).ok_or_else(|| {
                            format!("move {step}: {term} is not a move of this game")
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// Writes the record atomically: to a temporary file in the same directory, then renamed
    /// over `path`, so that a reader never sees half a record.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&self, path: &Path) -> Result<(), RecordError> {
        let io = |error| RecordError::Io {
            path: path.to_path_buf(),
            error,
        };
        let text = serde_json::to_string_pretty(self).map_err(|error| RecordError::Json {
            path: path.to_path_buf(),
            error,
        })?;
        let name = path
            .file_name()
            .map_or("record".into(), |n| n.to_string_lossy().into_owned());
        let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let written = std::fs::File::create(&temp).and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()
        });
        if let Err(e) = written.and_then(|()| std::fs::rename(&temp, path)) {
            let _ = std::fs::remove_file(&temp);
            return Err(io(e));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skeleton of `../shared/notes/protocol.md` §8.
    const SKELETON: &str = r#"{
      "matchId": "ggp.demo.1",
      "randomToken": "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
      "startTime": 1700000000000,
      "gameMetaURL": "http://games.ggp.org/base/games/ticTacToe/v0/",
      "isCompleted": true,
      "isAborted": false,
      "states": ["( ( control xplayer ) ( cell 1 1 b ) ( cell 2 2 b ) )",
                 "( ( control oplayer ) ( cell 1 1 x ) ( cell 2 2 b ) )",
                 "( ( control xplayer ) ( cell 1 1 x ) ( cell 2 2 o ) )"],
      "moves": [["( mark 1 1 )", "noop"], ["noop", "( mark 2 2 )"]],
      "stateTimes": [1700000000100, 1700000003100, 1700000006100],
      "errors": [["", ""], ["", "TO"], ["IL ( mark 9 9 )", ""]],
      "goalValues": [100, 0],
      "previewClock": -1, "startClock": 60, "playClock": 15,
      "playerNamesFromHost": ["ggp", "SampleMonteCarloGamer"],
      "tournamentNameFromHost": "local",
      "scrambled": false
    }"#;

    #[test]
    fn reads_the_ggp_org_format_and_writes_it_back() {
        let record: MatchRecord = serde_json::from_str(SKELETON).unwrap();
        assert_eq!(record.moves[1], ["noop", "( mark 2 2 )"]);
        assert_eq!(record.errors[2][0], "IL ( mark 9 9 )");
        assert_eq!(record.goal_values, [100, 0]);
        let json: serde_json::Value = serde_json::to_value(&record).unwrap();
        for key in [
            "matchId",
            "randomToken",
            "startTime",
            "gameMetaURL",
            "isCompleted",
            "states",
            "moves",
            "stateTimes",
            "errors",
            "goalValues",
            "previewClock",
            "startClock",
            "playClock",
            "playerNamesFromHost",
            "scrambled",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(json.get("gameRulesheet").is_none());
    }

    #[test]
    fn saves_atomically_and_loads_back() {
        let mut record: MatchRecord = serde_json::from_str(SKELETON).unwrap();
        record.game_meta_url = None;
        record.game_rulesheet = Some("(role a)".into());
        let dir = std::env::temp_dir().join(format!("ggp-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        record.save(&path).unwrap();
        record.is_completed = false;
        record.save(&path).unwrap();
        assert_eq!(MatchRecord::load(&path).unwrap(), record);
        let leftovers = std::fs::read_dir(&dir).unwrap().count();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(leftovers, 1);
    }

    #[test]
    fn load_names_the_file_on_error() {
        let missing = Path::new("/nonexistent/m.json");
        assert!(
            MatchRecord::load(missing)
                .unwrap_err()
                .to_string()
                .starts_with("/nonexistent/m.json: ")
        );
    }
}
