//! `ggp match`: referee one match and write its record.
//!
//! Remote players are `ROLE=host:port`; built-in players (`ROLE=builtin:SPEC`) each get an
//! in-process player server on an ephemeral 127.0.0.1 port, so they receive exactly the
//! messages a remote player would. What follows `ROLE=` is read as a tournament player is
//! ([`Entrant::parse`]), so the tournament's keys (`threads`, `iterations`) work here too.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::serve::{EngineSessions, clock_seed, init_logging, margin};
use super::{EngineChoice, GameFile, load_game};
use ggp_engine::engine::{Machine, UseMachineMut};
use ggp_gdl::gdl::Term;
use ggp_gdl::kif;
use ggp_match::protocol::{RunningServer, Server, ServerConfig, Style};
use ggp_match::record::MatchRecord;
use ggp_match::referee::{Contestant, MatchConfig, now_ms, run_match};
use ggp_match::tournament::{Entrant, Source};
use ggp_search::search::{PlayerSpec, SearchConfig};

/// Options of `ggp match`.
#[derive(clap::Args, Debug)]
pub struct MatchArgs {
    /// The rule sheet (.kif).
    game: PathBuf,
    /// A player for a role: `ROLE=host:port`, or `ROLE=builtin:SPEC` with SPEC any value of
    /// `ggp serve --player`, plus the tournament's keys `threads` and `iterations`. Give one
    /// per role.
    #[arg(long = "player", value_name = "ROLE=PLAYER", required = true)]
    players: Vec<String>,
    /// Seconds of the start clock.
    #[arg(long, default_value_t = 10)]
    startclock: u64,
    /// Seconds of the play clock.
    #[arg(long, default_value_t = 5)]
    playclock: u64,
    /// Abort the match after this many joint moves (a game whose end cannot be reached).
    #[arg(long, default_value_t = ggp_match::referee::DEFAULT_MAX_STEPS)]
    max_steps: usize,
    /// The directory for the match record.
    #[arg(long, default_value = "matches")]
    out: PathBuf,
    /// Rename every symbol of the game before sending it, as Tiltyard does.
    #[arg(long)]
    scramble: bool,
    /// Send messages as the Dresden gamecontroller does: uppercased and without INFO.
    #[arg(long)]
    dresden: bool,
    /// Seed of the default moves and the scrambling (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
    /// The engine of the referee and of the built-in players.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    engine: EngineChoice,
    /// Margin of the built-in players, in seconds (see `ggp serve --margin`).
    #[arg(long, default_value_t = 1.0)]
    margin: f64,
    /// Search threads of each built-in player.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

/// Runs `ggp match`; exit status 0 when the match was completed.
///
/// # Errors
/// The game cannot be loaded, the players are not one per role, or the record cannot be
/// written.
pub fn run(args: MatchArgs) -> anyhow::Result<ExitCode> {
    init_logging();
    if args.startclock == 0 || args.playclock == 0 {
        bail!("the clocks must be at least 1 second");
    }
    let GameFile {
        text,
        rules,
        mut loaded,
    } = load_game(&args.game, args.engine)?;
    let roles: Vec<Term> = loaded.engine.roles().to_vec();
    let seed = args.seed.unwrap_or_else(clock_seed);
    let margin = margin(args.margin)?;
    let mut servers: Vec<RunningServer> = Vec::new();
    let mut contestants: Vec<Option<Contestant>> = vec![None; roles.len()];
    for spec in &args.players {
        let (role, player) = spec.split_once('=').with_context(|| {
            format!("--player {spec}: expected ROLE=host:port or ROLE=builtin:NAME")
        })?;
        let index = find_role(&roles, role)
            .with_context(|| format!("--player {spec}: the game has no role {role}"))?;
        if contestants[index].is_some() {
            bail!("--player {spec}: role {role} has two players");
        }
        let entrant =
            Entrant::parse(player, args.threads).with_context(|| format!("--player {spec}"))?;
        let contestant = match &entrant.source {
            Source::Builtin {
                player: kind,
                iterations,
            } => {
                let search = builtin_search(
                    entrant.threads,
                    seed.wrapping_add(index as u64 + 1),
                    *iterations,
                );
                let server = builtin_player(kind.clone(), search, args.engine, margin)?;
                let address = server.addr().to_string();
                servers.push(server);
                Contestant {
                    address,
                    name: player
                        .strip_prefix("builtin:")
                        .unwrap_or(player)
                        .to_string(),
                }
            }
            Source::Remote { addresses } => match addresses.as_slice() {
                [address] => Contestant {
                    address: address.clone(),
                    name: address.clone(),
                },
                _ => bail!("--player {spec}: a match takes one address for a role"),
            },
        };
        contestants[index] = Some(contestant);
    }
    let nature: Vec<bool> = (0..roles.len())
        .map(|r| ggp_gdl::gdl::is_nature_role(&roles[r]))
        .collect();
    let contestants: Vec<Contestant> = contestants
        .into_iter()
        .zip(&roles)
        .zip(&nature)
        .map(|((c, role), &nature)| match c {
            Some(_) if nature => bail!("role {role} is nature: the referee plays it"),
            Some(c) => Ok(c),
            None if nature => Ok(Contestant {
                address: String::new(),
                name: "referee".into(),
            }),
            None => bail!("no --player for role {role}"),
        })
        .collect::<anyhow::Result<_>>()?;

    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let match_id = format!(
        "ggp.{}.{}",
        ggp_match::tournament::game_name(&args.game),
        now_ms()
    );
    let record_path = args.out.join(format!("{match_id}.json"));
    let config = MatchConfig {
        match_id,
        start_clock: args.startclock,
        play_clock: args.playclock,
        style: if args.dresden {
            Style::Dresden
        } else {
            Style::GgpBase
        },
        scramble: args.scramble,
        seed,
        record_path: Some(record_path.clone()),
        rulesheet: text,
        max_steps: args.max_steps,
    };
    ggp_match::referee::stop_on_signals();
    let result = referee(&mut loaded.engine, &rules, &contestants, &config);
    for server in servers {
        server.shutdown();
    }
    let record = result.with_context(|| format!("match {}", config.match_id))?;
    print_summary(&record, &roles, &record_path);
    Ok(if record.is_completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The search configuration of a built-in player of `ggp match` and `ggp tournament`: its
/// threads, its seed and its iteration limit ([`Source::Builtin`]).
pub(super) fn builtin_search(threads: usize, seed: u64, iterations: Option<u64>) -> SearchConfig {
    SearchConfig {
        threads: threads.max(1),
        seed,
        max_iterations: iterations,
        ..SearchConfig::default()
    }
}

/// A built-in player served in-process on an ephemeral 127.0.0.1 port, as `ggp match` and
/// `ggp tournament` run them.
pub(super) fn builtin_player(
    player: PlayerSpec,
    search: SearchConfig,
    engine: EngineChoice,
    margin: std::time::Duration,
) -> anyhow::Result<RunningServer> {
    let name = player.name();
    let factory = EngineSessions {
        player,
        search,
        engine,
    };
    let config = ServerConfig {
        name,
        margin,
        ..ServerConfig::default()
    };
    let server = Server::bind("127.0.0.1:0", config, Arc::new(factory))
        .context("cannot start a built-in player")?;
    Ok(server.spawn()?)
}

/// The role named `name`: the same spelling, or failing that the same ignoring case.
fn find_role(roles: &[Term], name: &str) -> Option<usize> {
    roles
        .iter()
        .position(|r| r.to_string() == name)
        .or_else(|| {
            roles
                .iter()
                .position(|r| r.to_string().eq_ignore_ascii_case(name))
        })
}

fn print_summary(record: &MatchRecord, roles: &[Term], path: &Path) {
    let names = record.player_names_from_host.clone().unwrap_or_default();
    for (i, role) in roles.iter().enumerate() {
        let goal = record
            .goal_values
            .get(i)
            .map_or("-".to_string(), u32::to_string);
        let errors = record
            .errors
            .iter()
            .filter(|step| step.get(i).is_some_and(|e| !e.is_empty()))
            .count();
        let name = names.get(i).map_or("?", String::as_str);
        println!("{role} ({name}): goal {goal}, errors {errors}");
    }
    for fault in record.goal_faults.iter().filter(|f| !f.is_empty()) {
        println!("goal fault: {fault}");
    }
    println!("steps: {}", record.moves.len());
    println!("record: {}", path.display());
}

/// Referees one match on `engine` (the referee's own copy of the game).
pub(super) fn referee(
    engine: &mut ggp_engine::engine::Engine,
    rules: &[kif::Sexp],
    contestants: &[Contestant],
    config: &MatchConfig,
) -> Result<MatchRecord, ggp_match::referee::RefereeError> {
    struct Referee<'a> {
        rules: &'a [kif::Sexp],
        contestants: &'a [Contestant],
        config: &'a MatchConfig,
    }
    impl UseMachineMut for Referee<'_> {
        type Output = Result<MatchRecord, ggp_match::referee::RefereeError>;
        fn with<M: Machine>(self, m: &mut M) -> Self::Output {
            run_match(m, self.rules, self.contestants, self.config)
        }
    }
    engine.run_mut(Referee {
        rules,
        contestants,
        config,
    })
}
