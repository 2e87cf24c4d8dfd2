//! Player specs: a built-in player and its options in one string, `NAME[:key=value,...]`.
//!
//! `mcts`, `mcts:c=0.7`, `alphabeta:leaf=0`, `flat`. The name is a [`PlayerKind`]; the options
//! set fields of the player's typed settings ([`MctsSettings`] for `mcts`, `puzzle` and `auto`,
//! [`AutoSettings`] for `auto`'s own, [`AlphaBetaSettings`] for `alphabeta`), each key
//! documented by [`MCTS_KEYS`], [`AUTO_KEYS`] and [`ALPHABETA_KEYS`]. A spec is parsed once,
//! into those settings: an unknown name, an unknown key or a bad value is an error that names
//! it and lists what is allowed. The spec's text (`Display`) gives the options in the order
//! written, so it can name a variant in a record; it is never read again. Every command takes
//! this one type (the tournament wraps it with its own keys).

use std::fmt;
use std::str::FromStr;

use super::alphabeta::AlphaBetaSettings;
use super::auto::AutoSettings;
use super::mcts::{Anti, MctsSettings};
use super::{Player, PlayerKind, SearchConfig, new_player_with};
use ggp_engine::machine::StateMachine;

/// A built-in player and its settings, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayerSpec {
    /// The player.
    pub kind: PlayerKind,
    /// The MCTS settings (of `mcts`, `puzzle`'s fallback and `auto`; defaults for others).
    pub mcts: MctsSettings,
    /// The alpha-beta settings (of `alphabeta`; defaults for others).
    pub alphabeta: AlphaBetaSettings,
    /// `auto`'s own settings (defaults for others).
    pub auto: AutoSettings,
    /// The options as written, for [`fmt::Display`] only.
    written: Vec<(String, String)>,
}

/// Why a spec is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The name is not a built-in player.
    #[error("unknown player {name:?} (known: {known})")]
    UnknownPlayer {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// An option is not `key=value`.
    #[error("option {0:?} of player {1} is not key=value")]
    Malformed(String, String),
    /// The player has no such option.
    #[error("player {player} has no option {key:?} (options: {known})")]
    UnknownKey {
        /// The player's name.
        player: String,
        /// The key given.
        key: String,
        /// The keys it has.
        known: String,
    },
    /// The value does not suit the option.
    #[error("option {key}={value} of player {player}: expected {expected}")]
    BadValue {
        /// The player's name.
        player: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What the key takes.
        expected: String,
    },
}

/// The options of `mcts` (and of `auto` and `puzzle`, whose fallback is MCTS; `memory` also
/// bounds the puzzle search): key and meaning.
pub const MCTS_KEYS: &[(&str, &str)] = &[
    ("c", "UCB1 exploration constant on 0..1 rewards (number)"),
    ("memory", "MiB all trees may use (integer)"),
    ("steps", "playout length cap in joint moves (integer)"),
    (
        "anti",
        "decisive playouts that also avoid a move after which the next mover wins in one (on, off, or auto, the default: measured at the start clock, on when they run at least 5,000 a second and change at least one choice in two playouts; then they play to the end, without the heuristic)",
    ),
    (
        "heuristic",
        "learn a heuristic at the start clock and value cut playouts with it (on or off)",
    ),
    (
        "htrial",
        "with a heuristic and a start clock: MCTS cutting playouts plays MCTS playing them to the end with the heuristic as a prior, in fast games, and playouts stay cut only if cutting wins by a whole game net (on or off; on by default)",
    ),
    (
        "cutoff",
        "with a heuristic: moves per playout before the heuristic values it (integer)",
    ),
    (
        "groups",
        "heuristic candidates: counts of fact groups, e.g. pieces (on or off)",
    ),
    (
        "prior",
        "with a heuristic: visits a new node's heuristic value counts as (integer)",
    ),
    (
        "batch",
        "playouts per round side by side on the propnet's batch, 0 for one at a time (integer)",
    ),
    ("leaf", "with batch: playouts per leaf of a round (integer)"),
];

/// The options `auto` has besides those of `mcts`: key and meaning.
pub const AUTO_KEYS: &[(&str, &str)] = &[(
    "puzzle",
    "single-player games played by the puzzle search (on or off)",
)];

/// The options of `alphabeta`: key and meaning.
pub const ALPHABETA_KEYS: &[(&str, &str)] = &[
    (
        "table",
        "log2 of the transposition table's entries (integer)",
    ),
    (
        "leaf",
        "random playouts per leaf, 0 for the goal value (integer)",
    ),
    ("depth", "deepest iteration (integer)"),
    (
        "heuristic",
        "leaves valued by a heuristic learnt from random games (on or off)",
    ),
    (
        "material",
        "leaves valued by material found from the state's shape and the moves (on or off)",
    ),
    (
        "mobility",
        "with material or a heuristic, leaves also valued by the mover's mobility (on or off)",
    ),
];

impl PlayerSpec {
    /// The player's name.
    pub fn name(&self) -> String {
        kind_name(self.kind)
    }

    /// The spec of player `name` with `options` (key and value pairs, as in
    /// `NAME:key=value,...`), each checked and set once.
    ///
    /// # Errors
    /// The name is not a built-in player, or a key is not one of its options, or a value
    /// does not suit its key.
    pub fn from_options<'a>(
        name: &str,
        options: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<PlayerSpec, SpecError> {
        let mut spec = PlayerSpec::from(parse_kind(name)?);
        let kind = spec.kind;
        let player = spec.name();
        for (k, v) in options {
            let (k, v) = (k.trim(), v.trim());
            match kind {
                PlayerKind::Auto if AUTO_KEYS.iter().any(|a| a.0 == k) => {
                    set_auto(&mut spec.auto, &player, k, v)?;
                }
                PlayerKind::Mcts | PlayerKind::Auto | PlayerKind::Puzzle => {
                    set_mcts(&mut spec.mcts, &player, k, v)?;
                }
                PlayerKind::Alphabeta => set_alphabeta(&mut spec.alphabeta, &player, k, v)?,
                PlayerKind::Random | PlayerKind::Legal | PlayerKind::Flat => {
                    return Err(SpecError::UnknownKey {
                        player,
                        key: k.to_string(),
                        known: "none".into(),
                    });
                }
            }
            spec.written.push((k.to_string(), v.to_string()));
        }
        Ok(spec)
    }

    /// A new player as the spec says.
    pub fn build<M>(&self, config: &SearchConfig) -> Box<dyn Player<M>>
    where
        M: StateMachine + Send + 'static,
    {
        new_player_with(self, config)
    }
}

impl From<PlayerKind> for PlayerSpec {
    fn from(kind: PlayerKind) -> PlayerSpec {
        PlayerSpec {
            kind,
            mcts: MctsSettings::default(),
            alphabeta: AlphaBetaSettings::default(),
            auto: AutoSettings::default(),
            written: Vec::new(),
        }
    }
}

impl FromStr for PlayerSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<PlayerSpec, SpecError> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let player = kind_name(parse_kind(name)?);
        let mut options = Vec::new();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| SpecError::Malformed(item.to_string(), player.clone()))?;
            options.push((k, v));
        }
        PlayerSpec::from_options(name, options)
    }
}

impl fmt::Display for PlayerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())?;
        for (i, (k, v)) in self.written.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

/// Every built-in player, in the order an unknown name's error lists them.
const KINDS: [PlayerKind; 7] = [
    PlayerKind::Random,
    PlayerKind::Legal,
    PlayerKind::Flat,
    PlayerKind::Mcts,
    PlayerKind::Alphabeta,
    PlayerKind::Puzzle,
    PlayerKind::Auto,
];

/// The player named `name` (any case).
fn parse_kind(name: &str) -> Result<PlayerKind, SpecError> {
    KINDS
        .into_iter()
        .find(|&k| kind_name(k).eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| SpecError::UnknownPlayer {
            name: name.to_string(),
            known: KINDS.map(kind_name).join(", "),
        })
}

/// The name a spec gives a kind.
fn kind_name(kind: PlayerKind) -> String {
    match kind {
        PlayerKind::Random => "random",
        PlayerKind::Legal => "legal",
        PlayerKind::Flat => "flat",
        PlayerKind::Mcts => "mcts",
        PlayerKind::Alphabeta => "alphabeta",
        PlayerKind::Puzzle => "puzzle",
        PlayerKind::Auto => "auto",
    }
    .to_string()
}

fn unknown(player: &str, key: &str, keys: &[(&str, &str)]) -> SpecError {
    SpecError::UnknownKey {
        player: player.to_string(),
        key: key.to_string(),
        known: keys.iter().map(|k| k.0).collect::<Vec<_>>().join(", "),
    }
}

/// Parses `value` for `key`, or says what `key` takes.
fn value<T: FromStr>(
    player: &str,
    key: &str,
    value: &str,
    keys: &[(&str, &str)],
) -> Result<T, SpecError> {
    value
        .parse()
        .map_err(|_| bad_value(player, key, value, keys))
}

/// The error for a value `key` does not take.
fn bad_value(player: &str, key: &str, value: &str, keys: &[(&str, &str)]) -> SpecError {
    SpecError::BadValue {
        player: player.to_string(),
        key: key.to_string(),
        value: value.to_string(),
        expected: keys
            .iter()
            .find(|k| k.0 == key)
            .map_or("a value", |k| k.1)
            .to_string(),
    }
}

/// Parses `on`/`off` (or `true`/`false`, `1`/`0`).
fn switch(player: &str, key: &str, v: &str, keys: &[(&str, &str)]) -> Result<bool, SpecError> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(bad_value(player, key, v, keys)),
    }
}

/// Sets one MCTS option.
fn set_mcts(s: &mut MctsSettings, player: &str, key: &str, v: &str) -> Result<(), SpecError> {
    let keys = MCTS_KEYS;
    match key {
        "c" => s.exploration = value(player, key, v, keys)?,
        "memory" => s.memory_bytes = value::<usize>(player, key, v, keys)?.saturating_mul(1 << 20),
        "steps" => s.max_playout_steps = value(player, key, v, keys)?,
        "anti" => {
            s.anti = if v.eq_ignore_ascii_case("auto") {
                Anti::Auto
            } else if switch(player, key, v, keys)? {
                Anti::On
            } else {
                Anti::Off
            }
        }
        "heuristic" => s.heuristic = switch(player, key, v, keys)?,
        "htrial" => s.heuristic_trial = switch(player, key, v, keys)?,
        "cutoff" => s.cutoff = value(player, key, v, keys)?,
        "groups" => s.groups = switch(player, key, v, keys)?,
        "prior" => s.prior = value(player, key, v, keys)?,
        "batch" => s.batch = value(player, key, v, keys)?,
        "leaf" => {
            s.leaf = value(player, key, v, keys)?;
            if s.leaf == 0 {
                return Err(bad_value(player, key, v, keys));
            }
        }
        _ => return Err(unknown(player, key, keys)),
    }
    Ok(())
}

/// Sets one of `auto`'s own options.
fn set_auto(s: &mut AutoSettings, player: &str, key: &str, v: &str) -> Result<(), SpecError> {
    match key {
        "puzzle" => s.puzzle = switch(player, key, v, AUTO_KEYS)?,
        _ => return Err(unknown(player, key, AUTO_KEYS)),
    }
    Ok(())
}

/// Sets one alpha-beta option.
fn set_alphabeta(
    s: &mut AlphaBetaSettings,
    player: &str,
    key: &str,
    v: &str,
) -> Result<(), SpecError> {
    let keys = ALPHABETA_KEYS;
    match key {
        "table" => s.table_bits = value(player, key, v, keys)?,
        "leaf" => s.leaf_playouts = value(player, key, v, keys)?,
        "depth" => s.max_depth = value(player, key, v, keys)?,
        "heuristic" => s.heuristic = switch(player, key, v, keys)?,
        "material" => s.material = switch(player, key, v, keys)?,
        "mobility" => s.mobility = switch(player, key, v, keys)?,
        _ => return Err(unknown(player, key, keys)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names clap's `ValueEnum` derive gave the kinds before the workspace cut (issue 57),
    /// read in any case, and listed in that order when a name is unknown.
    #[test]
    fn kinds_are_named_as_clap_named_them() {
        for kind in KINDS {
            assert_eq!(parse_kind(&kind_name(kind).to_uppercase()).unwrap(), kind);
        }
        let e = parse_kind(" nobody ").unwrap_err();
        assert_eq!(
            e,
            SpecError::UnknownPlayer {
                name: " nobody ".to_string(),
                known: "random, legal, flat, mcts, alphabeta, puzzle, auto".to_string(),
            }
        );
    }

    #[test]
    fn a_spec_round_trips() {
        let spec: PlayerSpec = "MCTS:c=0.7, steps=100".parse().unwrap();
        assert_eq!(spec.kind, PlayerKind::Mcts);
        assert_eq!(spec.to_string(), "mcts:c=0.7,steps=100");
        assert_eq!(spec.mcts.exploration, 0.7);
        assert_eq!(spec.mcts.max_playout_steps, 100);
        assert_eq!("flat".parse::<PlayerSpec>().unwrap().to_string(), "flat");
    }

    #[test]
    fn errors_name_the_offender() {
        let e = "mcts:heuristic=maybe".parse::<PlayerSpec>().unwrap_err();
        assert!(e.to_string().contains("on or off"), "{e}");
        assert!(
            !"mcts:heuristic=off"
                .parse::<PlayerSpec>()
                .unwrap()
                .mcts
                .heuristic
        );
        let e = "mcts:rave=maybe".parse::<PlayerSpec>().unwrap_err();
        assert!(
            matches!(&e, SpecError::UnknownKey { key, .. } if key == "rave"),
            "{e}"
        );
        assert!(e.to_string().contains("\"rave\""), "{e}");
        let e = "mcts:c=high".parse::<PlayerSpec>().unwrap_err();
        assert!(e.to_string().contains("c=high"), "{e}");
        let e = "deep".parse::<PlayerSpec>().unwrap_err();
        assert!(e.to_string().contains("flat"), "{e}");
        assert!("random:c=1".parse::<PlayerSpec>().is_err());
        assert!("flat:c=1".parse::<PlayerSpec>().is_err());
        assert!("mcts:c".parse::<PlayerSpec>().is_err());
        assert!("mcts:leaf=0".parse::<PlayerSpec>().is_err());
        // Removed options are refused (docs/experiments/ says why they went).
        for removed in [
            "mcts:mast=on",
            "mcts:grave=50",
            "mcts:transpositions=on",
            "mcts:parallel=tree",
            "mcts:ponder=on",
            "mcts:decisive=on",
            "mcts:mobility=on",
            "auto:factor=on",
            "auto:endgame=on",
            "auto:trial=on",
            "alphabeta:ponder=on",
        ] {
            assert!(removed.parse::<PlayerSpec>().is_err(), "{removed}");
        }
    }

    #[test]
    fn auto_switches_have_their_defaults() {
        let plain: PlayerSpec = "auto".parse().unwrap();
        assert_eq!(plain.auto, AutoSettings::default());
        assert!(plain.auto.puzzle);
        let spec: PlayerSpec = "auto:puzzle=off,c=0.5".parse().unwrap();
        assert!(!spec.auto.puzzle);
        assert_eq!(spec.mcts.exploration, 0.5);
        assert!("auto:puzzle=maybe".parse::<PlayerSpec>().is_err());
        assert!("mcts:puzzle=on".parse::<PlayerSpec>().is_err());
    }
}
