//! Player specs: a built-in player and its options in one string, `NAME[:key=value,...]`.
//!
//! `mcts`, `mcts:c=0.7`, `alphabeta:leaf=0`, `flat`. The name is a [`PlayerKind`]; the options
//! set fields of the player's settings ([`MctsSettings`] for `mcts` and `auto`,
//! [`AlphaBetaSettings`] for `alphabeta`), each key documented by [`MCTS_KEYS`] and
//! [`ALPHABETA_KEYS`]. A spec is checked when parsed: an unknown name, an unknown key or a bad
//! value is an error that names it and lists what is allowed. The spec's text (`Display`)
//! gives the options in the order written, so it can name a variant in a record.

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;

use super::alphabeta::AlphaBetaSettings;
use super::mcts::{Anti, MctsSettings, Parallelism};
use super::{Player, PlayerKind, SearchConfig, new_player_with};
use crate::machine::StateMachine;

/// A built-in player and its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerSpec {
    /// The player.
    pub kind: PlayerKind,
    /// The options as written, checked.
    options: Vec<(String, String)>,
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
    ("mast", "MAST playouts (on or off)"),
    ("epsilon", "MAST's chance of a random move (number 0..1)"),
    (
        "decisive",
        "playouts take a win in one when the mover has one (on or off)",
    ),
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
        "with a heuristic and a start clock: MCTS cutting playouts plays MCTS playing them to the end with the heuristic as a prior, in fast games, and playouts stay cut only if cutting scores more than half (on or off; on by default)",
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
        "mobility",
        "heuristic candidates: each role's legal-move count (on or off)",
    ),
    (
        "goal",
        "heuristic candidates: each role's current goal value, goal stability (on or off)",
    ),
    (
        "progress",
        "heuristic candidates: how nearly each role's best goal rule holds (on or off)",
    ),
    (
        "latches",
        "with a heuristic: outcomes proven by latches replace its estimates (on or off)",
    ),
    (
        "prior",
        "with a heuristic: visits a new node's heuristic value counts as (integer)",
    ),
    (
        "transpositions",
        "one node per state, shared by the move orders reaching it (on or off)",
    ),
    (
        "grave",
        "GRAVE selection: visits a node needs to lend its AMAF statistics (integer, 50 is Cazenave's; 0 for off)",
    ),
    (
        "batch",
        "playouts per round side by side on the propnet's batch, 0 for one at a time (integer)",
    ),
    ("leaf", "with batch: playouts per leaf of a round (integer)"),
    (
        "parallel",
        "threads search a tree each, roots merged (root), or one shared tree with virtual loss (tree)",
    ),
    (
        "ponder",
        "keep searching while waiting for the next request: the opponents' turns, after a reply (on or off)",
    ),
];

/// The options `auto` has besides those of `mcts`: key and meaning.
pub const AUTO_KEYS: &[(&str, &str)] = &[
    (
        "trial",
        "pick alpha-beta or MCTS by trial games at the start clock (on or off)",
    ),
    (
        "puzzle",
        "single-player games played by the puzzle search (on or off)",
    ),
    (
        "endgame",
        "where MCTS plays a two-player turn-taking constant-sum game, an exact alpha-beta search first tries each move for a quarter of its time and plays a proven win (on or off)",
    ),
];

/// The option every searching player (`flat`, `mcts`, `alphabeta`, `auto`) has: key and
/// meaning (see [`super::factor`]).
pub const FACTOR_KEY: (&str, &str) = (
    "factor",
    "prune the moves of sub-games neither goal nor terminal reads (on or off)",
);

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
    (
        "ponder",
        "keep deepening while waiting for the next request (on or off)",
    ),
];

impl PlayerSpec {
    /// The player's name.
    pub fn name(&self) -> String {
        kind_name(self.kind)
    }

    /// The MCTS settings the options ask for (defaults elsewhere).
    pub fn mcts_settings(&self) -> MctsSettings {
        let mut settings = MctsSettings::default();
        if matches!(
            self.kind,
            PlayerKind::Mcts | PlayerKind::Auto | PlayerKind::Puzzle
        ) {
            for (k, v) in &self.options {
                // Checked when parsed.
                if !(self.kind == PlayerKind::Auto && AUTO_KEYS.iter().any(|a| a.0 == k)) {
                    let _ = set_mcts(&mut settings, &self.name(), k, v);
                }
            }
        }
        settings
    }

    /// Whether `auto` picks its search by a trial at the start clock (`trial=on`, the default).
    pub fn auto_trial(&self) -> bool {
        self.auto_switch("trial", true)
    }

    /// Whether `auto` plays single-player games with the puzzle search (`puzzle=on`, the
    /// default).
    pub fn auto_puzzle(&self) -> bool {
        self.auto_switch("puzzle", true)
    }

    /// Whether `auto` lets the endgame solver try each MCTS move first (`endgame=on`; off
    /// by default).
    pub fn auto_endgame(&self) -> bool {
        self.auto_switch("endgame", false)
    }

    /// An on/off key of `auto`, `default` unless the spec says otherwise.
    fn auto_switch(&self, key: &str, default: bool) -> bool {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map_or(default, |(_, v)| {
                switch("auto", key, v, AUTO_KEYS).unwrap_or(default)
            })
    }

    /// Whether the player searches the factored game (`factor=on`; off by default).
    pub fn factor(&self) -> bool {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == FACTOR_KEY.0)
            .is_some_and(|(_, v)| switch("", FACTOR_KEY.0, v, &[FACTOR_KEY]).unwrap_or(false))
    }

    /// The same spec without its `factor` option.
    pub fn without_factor(&self) -> PlayerSpec {
        PlayerSpec {
            kind: self.kind,
            options: self
                .options
                .iter()
                .filter(|(k, _)| k != FACTOR_KEY.0)
                .cloned()
                .collect(),
        }
    }

    /// The alpha-beta settings the options ask for (defaults elsewhere).
    pub fn alphabeta_settings(&self) -> AlphaBetaSettings {
        let mut settings = AlphaBetaSettings::default();
        if self.kind == PlayerKind::Alphabeta {
            for (k, v) in &self.options {
                let _ = set_alphabeta(&mut settings, &self.name(), k, v);
            }
        }
        settings
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
            options: Vec::new(),
        }
    }
}

impl FromStr for PlayerSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<PlayerSpec, SpecError> {
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        let kind =
            PlayerKind::from_str(name.trim(), true).map_err(|_| SpecError::UnknownPlayer {
                name: name.to_string(),
                known: PlayerKind::value_variants()
                    .iter()
                    .map(|&k| kind_name(k))
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let player = kind_name(kind);
        let mut options = Vec::new();
        let mut mcts = MctsSettings::default();
        let mut alphabeta = AlphaBetaSettings::default();
        for item in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| SpecError::Malformed(item.to_string(), player.clone()))?;
            let (k, v) = (k.trim(), v.trim());
            match kind {
                PlayerKind::Flat | PlayerKind::Mcts | PlayerKind::Alphabeta | PlayerKind::Auto
                    if k == FACTOR_KEY.0 =>
                {
                    switch(&player, k, v, &[FACTOR_KEY])?;
                }
                PlayerKind::Auto if AUTO_KEYS.iter().any(|a| a.0 == k) => {
                    switch(&player, k, v, AUTO_KEYS)?;
                }
                PlayerKind::Mcts | PlayerKind::Auto | PlayerKind::Puzzle => {
                    set_mcts(&mut mcts, &player, k, v)?;
                }
                PlayerKind::Alphabeta => set_alphabeta(&mut alphabeta, &player, k, v)?,
                PlayerKind::Random | PlayerKind::Legal | PlayerKind::Flat => {
                    return Err(SpecError::UnknownKey {
                        player,
                        key: k.to_string(),
                        known: if kind == PlayerKind::Flat {
                            FACTOR_KEY.0.into()
                        } else {
                            "none".into()
                        },
                    });
                }
            }
            options.push((k.to_string(), v.to_string()));
        }
        Ok(PlayerSpec { kind, options })
    }
}

impl fmt::Display for PlayerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())?;
        for (i, (k, v)) in self.options.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

/// The name `clap` knows a kind by.
fn kind_name(kind: PlayerKind) -> String {
    kind.to_possible_value()
        .map_or_else(|| format!("{kind:?}"), |v| v.get_name().to_string())
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
        "mast" => s.mast = switch(player, key, v, keys)?,
        "epsilon" => {
            s.mast_epsilon = value(player, key, v, keys)?;
            if !(0.0..=1.0).contains(&s.mast_epsilon) {
                return Err(bad_value(player, key, v, keys));
            }
        }
        "decisive" => s.decisive = switch(player, key, v, keys)?,
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
        "groups" => s.features.groups = switch(player, key, v, keys)?,
        "mobility" => s.features.mobility = switch(player, key, v, keys)?,
        "goal" => s.features.goal = switch(player, key, v, keys)?,
        "progress" => s.features.progress = switch(player, key, v, keys)?,
        "latches" => s.features.latches = switch(player, key, v, keys)?,
        "prior" => s.prior = value(player, key, v, keys)?,
        "transpositions" => s.transpositions = switch(player, key, v, keys)?,
        "grave" => s.grave = value(player, key, v, keys)?,
        "batch" => s.batch = value(player, key, v, keys)?,
        "leaf" => {
            s.leaf = value(player, key, v, keys)?;
            if s.leaf == 0 {
                return Err(bad_value(player, key, v, keys));
            }
        }
        "ponder" => s.ponder = switch(player, key, v, keys)?,
        "parallel" => {
            s.parallel = match v.to_ascii_lowercase().as_str() {
                "root" => Parallelism::Root,
                "tree" => Parallelism::Tree,
                _ => return Err(bad_value(player, key, v, keys)),
            }
        }
        _ => return Err(unknown(player, key, keys)),
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
        "ponder" => s.ponder = switch(player, key, v, keys)?,
        _ => return Err(unknown(player, key, keys)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_round_trips() {
        let spec: PlayerSpec = "MCTS:c=0.7, steps=100".parse().unwrap();
        assert_eq!(spec.kind, PlayerKind::Mcts);
        assert_eq!(spec.to_string(), "mcts:c=0.7,steps=100");
        let s = spec.mcts_settings();
        assert_eq!(s.exploration, 0.7);
        assert_eq!(s.max_playout_steps, 100);
        assert_eq!("flat".parse::<PlayerSpec>().unwrap().to_string(), "flat");
    }

    #[test]
    fn errors_name_the_offender() {
        let e = "mcts:mast=maybe".parse::<PlayerSpec>().unwrap_err();
        assert!(e.to_string().contains("on or off"), "{e}");
        assert!(
            "mcts:mast=on"
                .parse::<PlayerSpec>()
                .unwrap()
                .mcts_settings()
                .mast
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
        assert!("random:factor=on".parse::<PlayerSpec>().is_err());
        assert!("auto:factor=maybe".parse::<PlayerSpec>().is_err());
        let spec: PlayerSpec = "auto:factor=on,c=0.5".parse().unwrap();
        assert!(spec.factor());
        assert_eq!(spec.without_factor().to_string(), "auto:c=0.5");
        assert_eq!(spec.mcts_settings().exploration, 0.5);
        assert!(!"auto".parse::<PlayerSpec>().unwrap().factor());
        assert!("flat:factor=on".parse::<PlayerSpec>().unwrap().factor());
        assert!("mcts:c".parse::<PlayerSpec>().is_err());
    }

    #[test]
    fn auto_switches_have_their_defaults() {
        let plain: PlayerSpec = "auto".parse().unwrap();
        assert!(plain.auto_trial() && plain.auto_puzzle() && !plain.auto_endgame());
        let spec: PlayerSpec = "auto:trial=off,puzzle=off,endgame=on,c=0.5"
            .parse()
            .unwrap();
        assert!(!spec.auto_trial() && !spec.auto_puzzle() && spec.auto_endgame());
        assert_eq!(spec.mcts_settings().exploration, 0.5);
        assert!("auto:endgame=maybe".parse::<PlayerSpec>().is_err());
        assert!("mcts:endgame=on".parse::<PlayerSpec>().is_err());
    }
}
