//! `ggp serve`: the player server, and the session factory that picks its engine and player.

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::EngineChoice;
use ggp_engine::datalog::DatalogMachine;
use ggp_engine::engine::{self, Machine, UseMachine};
use ggp_gdl::gdl::Description;
use ggp_match::protocol::{
    MatchSession, Server, ServerConfig, SessionError, SessionFactory, launch,
};
use ggp_search::search::{PlayerKind, PlayerSpec, SearchConfig};

/// Options of `ggp serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The port to listen on (0: any free port, printed at start).
    #[arg(long, default_value_t = 9147)]
    port: u16,
    /// The address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    bind: String,
    /// The name INFO reports.
    #[arg(long, default_value = "ggp")]
    name: String,
    /// Threads for the search (default: the machine's cores).
    #[arg(long, default_value_t = default_threads())]
    threads: usize,
    /// The player: NAME[:key=value,...] (see the README's player specs); options not given
    /// take the library's defaults.
    #[arg(long, default_value = "auto")]
    player: PlayerSpec,
    /// The engine that runs the games.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    engine: EngineChoice,
    /// Seconds before the end of each clock at which the reply is sent (at most half the
    /// clock).
    #[arg(long, default_value_t = 1.0)]
    margin: f64,
    /// Seed of the player's random choices (default: from the clock).
    #[arg(long)]
    seed: Option<u64>,
}

/// Sends tracing's log lines to stderr (once per process).
pub(super) fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// A seed from the clock, for runs that did not ask for one.
pub(super) fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The margin in seconds as a duration.
pub(super) fn margin(seconds: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(seconds).context("--margin must be a number of seconds, 0 or more")
}

/// Runs `ggp serve` until the process is stopped.
///
/// # Errors
/// The address cannot be bound.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    init_logging();
    let factory = EngineSessions {
        player: args.player,
        search: SearchConfig {
            threads: args.threads.max(1),
            seed: args.seed.unwrap_or_else(clock_seed),
            ..SearchConfig::default()
        },
        engine: args.engine,
    };
    let config = ServerConfig {
        name: args.name,
        margin: margin(args.margin)?,
        ..ServerConfig::default()
    };
    let server = Server::bind((args.bind.as_str(), args.port), config, Arc::new(factory))
        .with_context(|| format!("cannot listen on {}:{}", args.bind, args.port))?;
    println!("listening on {}", server.local_addr());
    std::io::stdout().flush()?;
    server.run().context("the player can no longer listen")?;
    Ok(ExitCode::SUCCESS)
}

/// Builds sessions with the chosen engine and player kind. With `auto`, grounding gets half
/// of the time left on the start clock, and a game that does not ground in it runs on the
/// Datalog engine.
pub(super) struct EngineSessions {
    pub player: PlayerSpec,
    pub search: SearchConfig,
    pub engine: EngineChoice,
}

/// Launches a session on whichever machine the engine holds.
struct Launch<'a> {
    sessions: &'a EngineSessions,
    engine: String,
    role: usize,
    deadline: Instant,
}

impl UseMachine for Launch<'_> {
    type Output = MatchSession;
    fn with<M: Machine>(self, machine: M) -> MatchSession {
        let player = self.sessions.player.build(&self.sessions.search);
        launch(
            machine,
            player,
            self.role,
            self.deadline,
            &self.engine,
            &self.sessions.search,
        )
    }
}

impl SessionFactory for EngineSessions {
    fn create(
        &self,
        description: &Description,
        role: usize,
        start_deadline: Instant,
    ) -> Result<MatchSession, SessionError> {
        let budget = engine::budget_before(start_deadline);
        let loaded =
            engine::load(description, self.engine, &budget).map_err(SessionError::Build)?;
        if let Some(note) = loaded.fallback_note() {
            tracing::info!("{note}");
        }
        let name = loaded.engine.name().to_string();
        Ok(loaded.engine.run(Launch {
            sessions: self,
            engine: name,
            role,
            deadline: start_deadline,
        }))
    }

    /// The Datalog engine (built in milliseconds for most games, where grounding can take
    /// the whole start clock) and the random player.
    fn stand_in(
        &self,
        description: &Description,
        role: usize,
    ) -> Result<MatchSession, SessionError> {
        let machine = DatalogMachine::new(description)
            .map_err(|e| SessionError::Build(engine::LoadError::Datalog(e)))?;
        let player = PlayerSpec::from(PlayerKind::Random).build(&self.search);
        Ok(launch(
            machine,
            player,
            role,
            Instant::now(),
            "datalog (stand-in)",
            &self.search,
        ))
    }
}

/// The number of cores, the default for search threads.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
