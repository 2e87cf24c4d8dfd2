//! Tournament players as given on the command line: an [`Entrant`] wraps the one player spec
//! every command takes ([`search::PlayerSpec`]) with the tournament's own keys.
//!
//! `[NAME=]builtin:KIND[:key=value,...]` is a built-in player (KIND any value of
//! `ggp serve --player`; keys `threads` and `iterations` are the tournament's, every other key
//! is the player's own option, given to [`search::PlayerSpec::from_options`] as read), run
//! in-process as a player server;
//! `[NAME=]host:port[,host:port...][@THREADS]` is a player somewhere on the network, THREADS
//! (default 1) the cores it uses in one match, for the core budget. Several addresses are a
//! pool of servers of one player (one name in the tables): each match is played on an address
//! that no running match is using (see [`super::Pools`]); `@THREADS` applies to each of them.

use std::str::FromStr;

use ggp_search::search;

/// One tournament player.
#[derive(Debug, Clone, PartialEq)]
pub struct Entrant {
    /// Its name in tables and file names: letters, digits, `_` and `-`.
    pub name: String,
    /// Where it comes from.
    pub source: Source,
    /// The cores it uses while it plays one match.
    pub threads: usize,
    /// The text it was given as, for the manifest.
    pub text: String,
    /// A filler (`ggp tournament --filler`): it sits in the seats of a game that has more
    /// roles than there are players, belongs to no pairing, and is left out of the results.
    pub filler: bool,
}

/// Where a player comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A built-in player, served in-process for each match.
    Builtin {
        /// The player and its options.
        player: search::PlayerSpec,
        /// Stop each search after this many playouts or nodes.
        iterations: Option<u64>,
    },
    /// A player server at `host:port`, or a pool of them.
    Remote {
        /// `host:port` of each server of the pool (at least one, no two alike).
        addresses: Vec<String>,
    },
}

/// A player spec that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("player `{text}`: {why}")]
pub struct EntrantError {
    /// The spec as given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl Entrant {
    /// Reads a spec; built-in players without a `threads` key get `default_threads`.
    ///
    /// # Errors
    /// The spec is not one of the two forms, names an unknown built-in player or key, or
    /// gives a name or number that is not valid.
    pub fn parse(text: &str, default_threads: usize) -> Result<Entrant, EntrantError> {
        let bad = |why: String| EntrantError {
            text: text.to_string(),
            why,
        };
        let (name, body) = match text.split_once('=') {
            Some((name, body)) if !name.contains(':') => (Some(name), body),
            _ => (None, text),
        };
        let (source, threads, default_name) = if let Some(builtin) = body.strip_prefix("builtin:") {
            let (kind_text, options) = builtin.split_once(':').unwrap_or((builtin, ""));
            let mut threads = default_threads.max(1);
            let mut iterations = None;
            let mut player_options: Vec<(&str, &str)> = Vec::new();
            for option in options.split(',').filter(|o| !o.is_empty()) {
                let (key, value) = option
                    .split_once('=')
                    .ok_or_else(|| bad(format!("`{option}` is not key=value")))?;
                match key {
                    "threads" => {
                        threads = positive(value).map_err(|w| bad(format!("{key}: {w}")))?
                    }
                    "iterations" => {
                        iterations =
                            Some(positive(value).map_err(|w| bad(format!("{key}: {w}")))? as u64);
                    }
                    _ => player_options.push((key, value)),
                }
            }
            let player = search::PlayerSpec::from_options(kind_text, player_options)
                .map_err(|e| bad(format!("{e} (tournament keys: threads, iterations)")))?;
            let default_name = kind_text.to_ascii_lowercase();
            let source = Source::Builtin { player, iterations };
            (source, threads, default_name)
        } else {
            let (pool, threads) = match body.rsplit_once('@') {
                Some((pool, threads)) => (
                    pool,
                    positive(threads).map_err(|w| bad(format!("threads after @: {w}")))?,
                ),
                None => (body, 1),
            };
            let mut addresses: Vec<String> = Vec::new();
            for address in pool.split(',') {
                let port = address
                    .rsplit_once(':')
                    .filter(|(host, _)| !host.is_empty())
                    .and_then(|(_, port)| u16::from_str(port).ok())
                    .filter(|&port| port != 0);
                if port.is_none() {
                    return Err(bad(
                        "expected builtin:KIND[:key=value,...] or host:port[,host:port...][@THREADS]"
                            .into(),
                    ));
                }
                if addresses.iter().any(|a| a == address) {
                    return Err(bad(format!("{address} is twice in the pool")));
                }
                addresses.push(address.to_string());
            }
            let default_name = addresses[0].replace([':', '.'], "_");
            (Source::Remote { addresses }, threads, default_name)
        };
        let name = name.map_or(default_name, str::to_string);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad(format!(
                "the name `{name}` must be letters, digits, `_` or `-`"
            )));
        }
        Ok(Entrant {
            name,
            source,
            threads,
            text: text.to_string(),
            filler: false,
        })
    }
}

fn positive(text: &str) -> Result<usize, String> {
    match usize::from_str(text) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{text}` is not a positive whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_builtin_players_with_options() {
        let p = Entrant::parse("builtin:mcts", 2).unwrap();
        assert_eq!(p.name, "mcts");
        assert_eq!(p.threads, 2);
        let p = Entrant::parse("big=builtin:MCTS:threads=3,iterations=50", 1).unwrap();
        assert_eq!(p.name, "big");
        assert_eq!(p.threads, 3);
        assert_eq!(
            p.source,
            Source::Builtin {
                player: search::PlayerKind::Mcts.into(),
                iterations: Some(50)
            }
        );
    }

    #[test]
    fn reads_remote_players_with_threads() {
        let p = Entrant::parse("sancho=127.0.0.1:9350@1", 4).unwrap();
        assert_eq!(p.name, "sancho");
        assert_eq!(p.threads, 1);
        let p = Entrant::parse("example.org:9147@8", 1).unwrap();
        assert_eq!(p.name, "example_org_9147");
        assert_eq!(p.threads, 8);
        assert_eq!(
            p.source,
            Source::Remote {
                addresses: vec!["example.org:9147".into()]
            }
        );
    }

    #[test]
    fn reads_a_pool_of_addresses_as_one_player() {
        let p = Entrant::parse("sancho=10.0.0.1:9350,10.0.0.2:9350,localhost:9351@2", 1).unwrap();
        assert_eq!(p.name, "sancho");
        assert_eq!(p.threads, 2);
        assert_eq!(
            p.source,
            Source::Remote {
                addresses: vec![
                    "10.0.0.1:9350".into(),
                    "10.0.0.2:9350".into(),
                    "localhost:9351".into()
                ]
            }
        );
        let p = Entrant::parse("h1:1,h2:2", 1).unwrap();
        assert_eq!(p.name, "h1_1");
        assert_eq!(p.threads, 1);
    }

    #[test]
    fn refuses_bad_specs_saying_why() {
        for (text, why) in [
            ("builtin:genius", "unknown player \"genius\""),
            ("builtin:mcts:threads=0", "not a positive whole number"),
            ("builtin:mcts:depth=3", "no option \"depth\""),
            ("builtin:mcts:threads", "not key=value"),
            ("localhost", "expected builtin:"),
            ("localhost:http", "expected builtin:"),
            (":9147", "expected builtin:"),
            ("a=localhost:9147@x", "threads after @"),
            ("a=localhost:9147,", "expected builtin:"),
            ("a=localhost:9147,localhost@2", "expected builtin:"),
            ("a=h:1,h:2,h:1", "h:1 is twice in the pool"),
            ("a b=builtin:random", "the name `a b`"),
        ] {
            let e = Entrant::parse(text, 1).unwrap_err();
            assert!(e.to_string().contains(why), "{text}: {e}");
            assert!(e.to_string().contains(text), "{text}: {e}");
        }
    }
}
