//! `ggp tournament`: the command line of [`ggp_match::tournament`]; loads the games, and plays each
//! match with built-in players served in-process as `ggp match` serves them.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::matches::{builtin_player, builtin_search, referee};
use super::serve::{clock_seed, margin};
use super::{EngineChoice, GameFile, load_game};
use ggp_engine::engine::Engine;
use ggp_gdl::gdl::is_nature_role;
use ggp_gdl::kif::Sexp;
use ggp_match::record::MatchRecord;
use ggp_match::referee::{Contestant, MatchConfig};
use ggp_match::tournament::{self, Entrant, Game, Job, Settings, Source};

/// Options of `ggp tournament`.
#[derive(clap::Args, Debug)]
pub struct TournamentArgs {
    /// Rule sheets (.kif), or folders searched for them.
    #[arg(required = true)]
    games: Vec<PathBuf>,
    /// A player: `[NAME=]builtin:KIND[:threads=N,iterations=N]` (KIND any value of
    /// `ggp serve --player`) or `[NAME=]host:port[,host:port...][@THREADS]`, several
    /// addresses being a pool of servers of one player: each match is played on one that no
    /// running match uses, and waits while all are busy; THREADS (default 1) is the cores of
    /// each. Give at least two players, or one and --filler.
    #[arg(long = "player", value_name = "PLAYER", required = true)]
    players: Vec<String>,
    /// A player (same forms as --player, usually `builtin:random`) for the seats left over in
    /// games with more roles than there are players: it rotates with them, is in no pairing,
    /// and is left out of the tables, so that in such a game a player wins when its goal is
    /// above every other --player's.
    #[arg(long, value_name = "PLAYER")]
    filler: Option<String>,
    /// Matches per pairing (per group of players) on each game; seats rotate from one match
    /// to the next.
    #[arg(long, default_value_t = 2)]
    matches: usize,
    /// The folder for the records, the manifest and the tables; rerun on the same folder to
    /// resume.
    #[arg(long)]
    out: PathBuf,
    /// Seconds of the start clock.
    #[arg(long, default_value_t = 10)]
    startclock: u64,
    /// Seconds of the play clock.
    #[arg(long, default_value_t = 5)]
    playclock: u64,
    /// Cores for matches at the same time; each match counts its players' threads.
    #[arg(long, default_value_t = default_cores())]
    cores: usize,
    /// Search threads of built-in players without a `threads=` option.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// The engine of the referee and of the built-in players.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    engine: EngineChoice,
    /// Margin of the built-in players, in seconds (see `ggp serve --margin`).
    #[arg(long, default_value_t = 1.0)]
    margin: f64,
    /// Play at most this many matches not yet played, then stop; a rerun plays the next ones
    /// (for a player that must be restarted between matches: `bench/breadth.sh` gives Sancho
    /// a fresh JVM for each match, so that a game it cannot handle spoils no other).
    #[arg(long, value_name = "N")]
    max_new: Option<usize>,
    /// Print the tables of the records in `--out` and play nothing (safe while another run
    /// is playing into the folder).
    #[arg(long)]
    report: bool,
    /// Seed of the tournament (default: from the clock; a resumed tournament keeps its own).
    #[arg(long)]
    seed: Option<u64>,
}

fn default_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// A game ready to referee.
struct GameEngine {
    rules: Vec<Sexp>,
    machine: Engine,
}

/// Runs `ggp tournament`; exit status 0 when every match was played.
///
/// # Errors
/// A bad player spec, an unreadable game, an unreachable player, or an output folder that
/// holds another tournament.
pub fn run(args: TournamentArgs) -> anyhow::Result<ExitCode> {
    if args.startclock == 0 || args.playclock == 0 {
        anyhow::bail!("the clocks must be at least 1 second");
    }
    if args.matches == 0 {
        anyhow::bail!("--matches must be at least 1");
    }
    let margin = margin(args.margin)?;
    let mut players: Vec<Entrant> = args
        .players
        .iter()
        .map(|text| Entrant::parse(text, args.threads))
        .collect::<Result<_, _>>()?;
    if let Some(text) = &args.filler {
        let mut filler = Entrant::parse(text, args.threads)?;
        filler.filler = true;
        players.push(filler);
    }
    let mut games = Vec::new();
    let mut loaded = Vec::new();
    for path in tournament::game_files(&args.games)? {
        let GameFile {
            text,
            rules,
            loaded: machine,
        } = load_game(&path, args.engine)?;
        if let Some(note) = machine.fallback_note() {
            eprintln!("{}: {note}", path.display());
        }
        let player_roles: Vec<usize> = (0..machine.engine.roles().len())
            .filter(|&r| !is_nature_role(&machine.engine.roles()[r]))
            .collect();
        games.push(Game {
            name: tournament::game_name(&path),
            path,
            rulesheet: text,
            roles: player_roles.len(),
            role_names: player_roles
                .iter()
                .map(|&r| machine.engine.roles()[r].to_string())
                .collect(),
            player_roles,
        });
        loaded.push(GameEngine {
            rules,
            machine: machine.engine,
        });
    }
    if !args.report {
        tournament::check_players(&players)?;
    }
    let mut settings = Settings {
        matches: args.matches,
        start_clock: args.startclock,
        play_clock: args.playclock,
        cores: args.cores.max(1),
        seed: args.seed.unwrap_or_else(clock_seed),
        out: args.out.clone(),
        max_new: args.max_new,
    };
    // Plan first, so that a bad plan leaves no folder behind.
    tournament::plan(&games, &players, settings.matches, settings.seed)?;
    if args.report {
        let jobs = tournament::plan(&games, &players, settings.matches, settings.seed)?;
        let (summary, _) = tournament::collect(&jobs, &games, &players, &args.out);
        let tables = tournament::tables(&summary.outcomes, &games, &players);
        print!(
            "{} matches planned, {} finished\n\n{tables}",
            jobs.len(),
            summary.outcomes.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    settings.seed = tournament::open_folder(&games, &players, &settings)?;
    log_to(&args.out.join("players.log"))?;
    let jobs = tournament::plan(&games, &players, settings.matches, settings.seed)?;
    let play = |job: &Job, lease: &[Option<String>], config: MatchConfig| {
        play_one(
            job,
            lease,
            config,
            &players,
            &loaded[job.game],
            args.engine,
            margin,
        )
        .map_err(|e| format!("{e:#}"))
    };
    ggp_match::referee::stop_on_signals();
    let summary = tournament::run(&jobs, &games, &players, &settings, play);
    let tables = tournament::tables(&summary.outcomes, &games, &players);
    let mut report = format!(
        "{} matches planned, {} finished ({} from earlier runs), {} failed\n\n{tables}",
        jobs.len(),
        summary.outcomes.len(),
        summary.resumed,
        summary.failures.len()
    );
    for (key, why) in &summary.failures {
        report.push_str(&format!("failed: {key}: {why}\n"));
    }
    if ggp_match::referee::stop_requested() {
        let unplayed = jobs.len() - summary.outcomes.len() - summary.failures.len();
        report.push_str(&format!(
            "stopped: {unplayed} matches not played; the same command resumes\n"
        ));
    }
    print!("{report}");
    let results = args.out.join("results.txt");
    let temp = args.out.join(".results.txt.tmp");
    std::fs::write(&temp, &report)
        .and_then(|()| std::fs::rename(&temp, &results))
        .with_context(|| format!("cannot write {}", results.display()))?;
    Ok(if summary.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Sends warnings to the terminal, and every line the referee and the built-in players log
/// (`auto`'s choice of search, each message and reply) to `path`, appended to across resumed
/// runs: on the terminal they would drown the progress bar.
fn log_to(path: &std::path::Path) -> anyhow::Result<()> {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::prelude::*;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let terminal = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(LevelFilter::WARN);
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::sync::Mutex::new(file))
        .with_target(false)
        .with_ansi(false)
        .with_filter(LevelFilter::INFO);
    let _ = tracing_subscriber::registry()
        .with(terminal)
        .with(log)
        .try_init();
    Ok(())
}

/// How long a match waits for a remote player still busy with its last one.
const FREE_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Plays one match: serves its built-in players, plays the remote ones at the addresses
/// `lease` gives each seat (once each answers INFO as free), refers it on a copy of the
/// game's engine, and stops the servers.
fn play_one(
    job: &Job,
    lease: &[Option<String>],
    config: MatchConfig,
    players: &[Entrant],
    game: &GameEngine,
    engine: EngineChoice,
    margin: std::time::Duration,
) -> anyhow::Result<MatchRecord> {
    let mut servers = Vec::new();
    // Nature's role (GDL-II `random`) is played by the referee and contacted by no one.
    let roles = game.machine.roles();
    let mut contestants: Vec<Contestant> = roles
        .iter()
        .map(|_| Contestant {
            address: String::new(),
            name: "referee".into(),
        })
        .collect();
    let player_roles = (0..roles.len()).filter(|&r| !is_nature_role(&roles[r]));
    for ((role, &p), slot) in job.seats.iter().enumerate().zip(player_roles) {
        let player = &players[p];
        let address = match &player.source {
            Source::Builtin {
                player: spec,
                iterations,
            } => {
                let search = builtin_search(
                    player.threads,
                    job.seed.wrapping_add(role as u64 + 1),
                    *iterations,
                );
                let server = builtin_player(spec.clone(), search, engine, margin)?;
                let address = server.addr().to_string();
                servers.push(server);
                address
            }
            Source::Remote { .. } => {
                let address = lease[role]
                    .clone()
                    .context("no address of the pool was given to the match")?;
                if !tournament::await_free(player, &address, FREE_WAIT) {
                    tracing::warn!(
                        "{} at {address} is still busy after {} s: the match starts anyway",
                        player.name,
                        FREE_WAIT.as_secs()
                    );
                }
                address
            }
        };
        contestants[slot] = Contestant {
            address,
            name: player.name.clone(),
        };
    }
    let result = referee(
        &mut game.machine.clone(),
        &game.rules,
        &contestants,
        &config,
    );
    for server in servers {
        server.shutdown();
    }
    Ok(result?)
}
