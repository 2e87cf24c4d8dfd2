//! Tournaments (`ggp tournament`): many matches between several players on several games,
//! refereed by [`crate::referee`], with seats rotated, matches run in parallel within a core
//! budget, every record kept, and results tables ([`stats`]).
//!
//! The plan is fixed by the players, the games and the number of matches per group: for each
//! game with k roles, every group of k players (every pairing, for two-player games) plays N
//! matches, match i seating the group rotated by i places, so that over k matches each player
//! has played each role once. A game with more roles than there are players is played by all
//! the players and, in the seats left over, the filler (`--filler`, e.g. `builtin:random`),
//! which rotates with them and is left out of the results: a match's outcome holds only the
//! players' seats, so in a three-role game of A and B with a filler, A wins when its goal is
//! above B's. A remote player may be a pool of addresses ([`Pools`]): each match is played on
//! one that no running match is using, and waits while every one is busy. Each match has a key (`GAME.P1-vs-P2.007`) naming its record,
//! `OUT/KEY.json`, and a seed derived from the tournament's seed and the key. The folder also
//! holds `tournament.json`, the manifest: players, games (with a hash of each rule sheet),
//! clocks and seed. Running the same command on the same folder resumes: a match whose record
//! is complete is not played again, one whose record is missing, half written or aborted is
//! played from the start; a folder holding another tournament is refused. More matches per
//! group may be asked for on a rerun.
//!
//! **Boundary:** this module plans, schedules, resumes and counts; playing one match (starting
//! built-in player servers, loading the engine, calling the referee) is the caller's closure,
//! so the library does not depend on the command line's engine choice.

pub mod spec;
pub mod stats;

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

pub use spec::{Entrant, EntrantError, Source};
pub use stats::{Errors, Line, Outcome};

use crate::protocol::{Client, SendError, Style};
use crate::record::MatchRecord;
use crate::referee::MatchConfig;

/// A game of the tournament.
#[derive(Debug, Clone)]
pub struct Game {
    /// Its name: the file stem, made safe for file names.
    pub name: String,
    /// The rule sheet's file.
    pub path: PathBuf,
    /// The rule sheet.
    pub rulesheet: String,
    /// Its number of roles played by players (nature, `random` in GDL-II, is the referee's).
    pub roles: usize,
    /// The index of each players' role among all the game's roles, in role order.
    pub player_roles: Vec<usize>,
    /// The name of each players' role, in role order.
    pub role_names: Vec<String>,
}

/// How the tournament runs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Matches per group of players on each game.
    pub matches: usize,
    /// Seconds of the start clock.
    pub start_clock: u64,
    /// Seconds of the play clock.
    pub play_clock: u64,
    /// Cores for the matches running at the same time (each counts its players' threads).
    pub cores: usize,
    /// The tournament's seed (kept in the manifest; a resumed tournament keeps the first).
    pub seed: u64,
    /// The folder for the records and the manifest.
    pub out: PathBuf,
    /// Play at most this many matches not yet played, then stop (the rest wait for a rerun).
    pub max_new: Option<usize>,
}

/// One planned match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// Its key, which names its record.
    pub key: String,
    /// The game (index into the games).
    pub game: usize,
    /// The player (index into the players) in each role.
    pub seats: Vec<usize>,
    /// The seed of its referee and built-in players.
    pub seed: u64,
}

/// Why a tournament cannot run.
#[derive(Debug, thiserror::Error)]
pub enum TournamentError {
    /// Two players have the same name.
    #[error("two players are named `{0}`; name them with NAME=...")]
    DuplicateName(String),
    /// Two games have the same name.
    #[error("two games are named `{0}` ({1} and {2})")]
    DuplicateGame(String, String, String),
    /// A game needs more players than there are.
    #[error("{game} has {roles} roles but the tournament has {players} players")]
    TooFewPlayers {
        /// The game.
        game: String,
        /// Its roles.
        roles: usize,
        /// The players.
        players: usize,
    },
    /// A remote player does not answer.
    #[error("player {name} at {address} does not answer: {why}")]
    Unreachable {
        /// The player.
        name: String,
        /// Its address.
        address: String,
        /// What went wrong.
        why: String,
    },
    /// The output folder holds another tournament.
    #[error("{path} holds another tournament ({what} differ); use another --out folder")]
    OtherTournament {
        /// The manifest.
        path: PathBuf,
        /// What differs.
        what: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {why}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
}

/// The manifest, `OUT/tournament.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// The players, as given.
    pub players: Vec<ManifestPlayer>,
    /// The games.
    pub games: Vec<ManifestGame>,
    /// Matches per group of players on each game.
    pub matches: usize,
    /// Seconds of the start clock.
    pub start_clock: u64,
    /// Seconds of the play clock.
    pub play_clock: u64,
    /// The tournament's seed.
    pub seed: u64,
}

/// A player in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestPlayer {
    /// Its name.
    pub name: String,
    /// Its spec as given.
    pub spec: String,
}

/// A game in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestGame {
    /// Its name.
    pub name: String,
    /// Its file when the tournament was started.
    pub path: String,
    /// FNV-1a hash of its rule sheet, in hex.
    pub hash: String,
}

/// The results: every finished match (including those finished by an earlier run), and the
/// matches that could not be played this time.
#[derive(Debug, Default)]
pub struct Summary {
    /// Finished matches.
    pub outcomes: Vec<Outcome>,
    /// Matches that failed, with why; they are played again on a rerun.
    pub failures: Vec<(String, String)>,
    /// Matches that were already finished when this run started.
    pub resumed: usize,
}

/// The name of a game file: its stem, with characters other than letters, digits, `_` and `-`
/// replaced by `_`.
pub fn game_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map_or("game".into(), |s| s.to_string_lossy().into_owned());
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The rule sheets named by `paths`: files as given, folders as every `.kif` file under them,
/// in name order.
///
/// # Errors
/// A path or folder cannot be read, or a folder holds no `.kif` file.
pub fn game_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, TournamentError> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), TournamentError> {
        let io = |e: std::io::Error| TournamentError::Io {
            path: dir.to_path_buf(),
            why: e.to_string(),
        };
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io)?;
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, found)?;
            } else if path.extension().is_some_and(|e| e == "kif") {
                found.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| TournamentError::Io {
            path: path.clone(),
            why: e.to_string(),
        })?;
        if meta.is_dir() {
            let before = files.len();
            walk(path, &mut files)?;
            if files.len() == before {
                return Err(TournamentError::Io {
                    path: path.clone(),
                    why: "no .kif file in this folder".into(),
                });
            }
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

/// Every match of the tournament (the filler, if any, is the one player marked so), interleaved so that a stopped tournament has played about
/// as many matches of each game and group: first match 1 of every game and group, then
/// match 2, and so on.
///
/// # Errors
/// Two players or two games share a name, or a game has more roles than there are players.
pub fn plan(
    games: &[Game],
    players: &[Entrant],
    matches: usize,
    seed: u64,
) -> Result<Vec<Job>, TournamentError> {
    for (i, p) in players.iter().enumerate() {
        if players[..i].iter().any(|q| q.name == p.name) {
            return Err(TournamentError::DuplicateName(p.name.clone()));
        }
    }
    let main: Vec<usize> = (0..players.len()).filter(|&p| !players[p].filler).collect();
    let filler = players.iter().position(|p| p.filler);
    for (i, g) in games.iter().enumerate() {
        if let Some(h) = games[..i].iter().find(|h| h.name == g.name) {
            return Err(TournamentError::DuplicateGame(
                g.name.clone(),
                h.path.display().to_string(),
                g.path.display().to_string(),
            ));
        }
        if g.roles > main.len() && filler.is_none() {
            return Err(TournamentError::TooFewPlayers {
                game: g.name.clone(),
                roles: g.roles,
                players: main.len(),
            });
        }
    }
    let groups: Vec<Vec<Vec<usize>>> = games
        .iter()
        .map(|g| {
            combinations(main.len(), g.roles.min(main.len()))
                .into_iter()
                .map(|group| {
                    let mut seats: Vec<usize> = group.iter().map(|&i| main[i]).collect();
                    seats.resize(g.roles, filler.unwrap_or(0));
                    seats
                })
                .collect()
        })
        .collect();
    let mut jobs = Vec::new();
    for index in 0..matches {
        for (game, groups) in groups.iter().enumerate() {
            for group in groups {
                let names: Vec<&str> = group
                    .iter()
                    .filter(|&&p| !players[p].filler)
                    .map(|&p| players[p].name.as_str())
                    .collect();
                let key = format!(
                    "{}.{}.{:03}",
                    games[game].name,
                    names.join("-vs-"),
                    index + 1
                );
                let mut seats = group.clone();
                seats.rotate_left(index % group.len());
                jobs.push(Job {
                    seed: mix(seed, &key),
                    key,
                    game,
                    seats,
                });
            }
        }
    }
    Ok(jobs)
}

/// Every set of `k` of `n` items, in lexicographic order.
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    fn extend(
        n: usize,
        k: usize,
        from: usize,
        current: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if current.len() == k {
            out.push(current.clone());
            return;
        }
        for i in from..n {
            current.push(i);
            extend(n, k, i + 1, current, out);
            current.pop();
        }
    }
    let mut out = Vec::new();
    extend(n, k, 0, &mut Vec::new(), &mut out);
    out
}

/// FNV-1a of `text`, mixed with `seed`.
fn mix(seed: u64, text: &str) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64 ^ seed;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Makes `out` and writes the manifest, or checks it against the one already there; returns
/// the seed to use (the first run's, on a resume).
///
/// # Errors
/// The folder cannot be made, the manifest cannot be read or written, or it describes another
/// tournament (other players, games or clocks).
pub fn open_folder(
    games: &[Game],
    players: &[Entrant],
    settings: &Settings,
) -> Result<u64, TournamentError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e: std::io::Error| TournamentError::Io {
            path,
            why: e.to_string(),
        }
    };
    std::fs::create_dir_all(&settings.out).map_err(io(&settings.out))?;
    let path = settings.out.join("tournament.json");
    let mut manifest = Manifest {
        players: players
            .iter()
            .map(|p| ManifestPlayer {
                name: p.name.clone(),
                spec: if p.filler {
                    format!("--filler {}", p.text)
                } else {
                    p.text.clone()
                },
            })
            .collect(),
        games: games
            .iter()
            .map(|g| ManifestGame {
                name: g.name.clone(),
                path: g.path.display().to_string(),
                hash: format!("{:016x}", mix(0, &g.rulesheet)),
            })
            .collect(),
        matches: settings.matches,
        start_clock: settings.start_clock,
        play_clock: settings.play_clock,
        seed: settings.seed,
    };
    if path.exists() {
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        let old: Manifest = serde_json::from_str(&text).map_err(|e| TournamentError::Io {
            path: path.clone(),
            why: format!("not a tournament manifest: {e}"),
        })?;
        let differs = |what: &str| TournamentError::OtherTournament {
            path: path.clone(),
            what: what.into(),
        };
        if old.players != manifest.players {
            return Err(differs("the players"));
        }
        let names = |m: &Manifest| -> Vec<(String, String)> {
            m.games
                .iter()
                .map(|g| (g.name.clone(), g.hash.clone()))
                .collect()
        };
        if names(&old) != names(&manifest) {
            return Err(differs("the games or their rules"));
        }
        if (old.start_clock, old.play_clock) != (manifest.start_clock, manifest.play_clock) {
            return Err(differs("the clocks"));
        }
        manifest.seed = old.seed;
        manifest.matches = manifest.matches.max(old.matches);
    }
    let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
    let temp = settings.out.join(".tournament.json.tmp");
    std::fs::write(&temp, text + "\n")
        .and_then(|()| std::fs::rename(&temp, &path))
        .map_err(io(&path))?;
    Ok(manifest.seed)
}

/// The record's path of a match.
pub fn record_path(out: &Path, job: &Job) -> PathBuf {
    out.join(format!("{}.json", job.key))
}

/// What a completed record gives the tables; `None` for a record that is missing, cannot be
/// read, is not completed, or does not fit the match (another number of roles).
pub fn finished(out: &Path, job: &Job, games: &[Game], players: &[Entrant]) -> Option<Outcome> {
    let record = MatchRecord::load(&record_path(out, job)).ok()?;
    outcome(&record, job, games, players).ok()
}

/// What a record gives the tables, or why it gives nothing. A match that finished counts
/// whatever the players' errors: one in which a player timed out, moved illegally or could
/// not be reached (its moves the referee's random ones) counts in the full figures and is
/// left out of its opponents' clean ones ([`stats::Clean`]).
fn outcome(
    record: &MatchRecord,
    job: &Job,
    games: &[Game],
    players: &[Entrant],
) -> Result<Outcome, String> {
    let game = &games[job.game];
    let all = record.goal_values.len();
    if !record.is_completed || record.is_aborted {
        return Err("the match did not finish".into());
    }
    if game.player_roles.len() != job.seats.len() || game.player_roles.iter().any(|&r| r >= all) {
        return Err("the record does not fit the game's roles".into());
    }
    let errors = game
        .player_roles
        .iter()
        .map(|&role| {
            Errors::count(
                record
                    .errors
                    .iter()
                    .filter_map(|step| step.get(role).map(String::as_str)),
            )
        })
        .collect::<Vec<Errors>>();
    // The filler's seats are left out: the players are judged against each other.
    let kept: Vec<usize> = (0..job.seats.len())
        .filter(|&i| !players[job.seats[i]].filler)
        .collect();
    Ok(Outcome {
        game: game.name.clone(),
        seats: kept.iter().map(|&i| job.seats[i]).collect(),
        roles: kept.clone(),
        goals: kept
            .iter()
            .map(|&i| record.goal_values[game.player_roles[i]])
            .collect(),
        errors: kept.iter().map(|&i| errors[i]).collect(),
        total: record.goal_values.iter().sum(),
    })
}

/// Sends INFO to every address of every remote player; one that cannot be reached within 5 s
/// is an error.
///
/// # Errors
/// A remote player does not answer at one of its addresses.
pub fn check_players(players: &[Entrant]) -> Result<(), TournamentError> {
    for player in players {
        if let Source::Remote { addresses } = &player.source {
            for address in addresses {
                check_address(player, address)?;
            }
        }
    }
    Ok(())
}

/// Sends INFO to one address of a player.
///
/// # Errors
/// It does not answer within 5 s.
pub fn check_address(player: &Entrant, address: &str) -> Result<(), TournamentError> {
    let client = Client::new().map_err(|e| TournamentError::Io {
        path: PathBuf::from("(http client)"),
        why: e.to_string(),
    })?;
    let reply = client.send(
        address,
        &player.name,
        &Style::GgpBase.info(),
        Duration::from_secs(5),
    );
    reply.map(|_| ()).map_err(|e| TournamentError::Unreachable {
        name: player.name.clone(),
        address: address.to_string(),
        why: match e {
            SendError::Timeout => "no reply within 5 s".into(),
            SendError::Connection(why) => why,
        },
    })
}

/// Waits until the player at `address` answers INFO as free (any reply but a `busy` status)
/// within 5 s, asking again each second, for at most `limit`; whether it did. A refused
/// connection ends the wait at once (`false`): that player is down, not busy. A player may
/// still be busy with its last match after the STOP (Sancho tidies up, and collects a heap of
/// gigabytes on one core, for up to two minutes on a loaded machine): a START sent meanwhile
/// waits unread, and it loses every move of the next match to the clock.
pub fn await_free(player: &Entrant, address: &str, limit: Duration) -> bool {
    let Ok(client) = Client::new() else {
        return false;
    };
    let start = std::time::Instant::now();
    loop {
        let reply = client.send(
            address,
            &player.name,
            &Style::GgpBase.info(),
            Duration::from_secs(5),
        );
        match reply {
            Ok(r) if !r.to_ascii_lowercase().contains("busy") => return true,
            Err(SendError::Connection(_)) => return false,
            _ => {}
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The address of each seat of a running match: `Some` for a remote player, the address of
/// its pool the match is played on; `None` for a built-in player.
pub type Lease = Vec<Option<String>>;

/// The pools of addresses of the remote players: which are in use by a running match, and
/// which are down (no match is played on them any more).
#[derive(Debug)]
pub struct Pools {
    /// Per player, each address with its state; empty for a built-in player.
    slots: Vec<Vec<(String, Slot)>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Free,
    Busy,
    Down,
}

impl Pools {
    /// Every address free.
    pub fn new(players: &[Entrant]) -> Pools {
        let slots = players
            .iter()
            .map(|p| match &p.source {
                Source::Remote { addresses } => {
                    addresses.iter().map(|a| (a.clone(), Slot::Free)).collect()
                }
                Source::Builtin { .. } => Vec::new(),
            })
            .collect();
        Pools { slots }
    }

    /// Takes a free address for each remote player of `job` (marking it busy), or takes
    /// nothing and returns `None` when one of them has none free.
    pub fn take(&mut self, job: &Job) -> Option<Lease> {
        let mut picks = Vec::with_capacity(job.seats.len());
        for &p in &job.seats {
            if self.slots[p].is_empty() {
                picks.push(None);
                continue;
            }
            // The same player in two seats of one match takes two addresses.
            let free = self.slots[p]
                .iter()
                .enumerate()
                .position(|(i, (_, slot))| *slot == Slot::Free && !picks.contains(&Some((p, i))))?;
            picks.push(Some((p, free)));
        }
        Some(
            picks
                .into_iter()
                .map(|pick| {
                    pick.map(|(p, i)| {
                        self.slots[p][i].1 = Slot::Busy;
                        self.slots[p][i].0.clone()
                    })
                })
                .collect(),
        )
    }

    /// Gives back the addresses of a match that ended, however it ended.
    pub fn give_back(&mut self, job: &Job, lease: &[Option<String>]) {
        for (&p, address) in job.seats.iter().zip(lease) {
            if let Some(address) = address {
                for (a, slot) in &mut self.slots[p] {
                    if a == address && *slot == Slot::Busy {
                        *slot = Slot::Free;
                    }
                }
            }
        }
    }

    /// Marks an address of a player down; returns whether the player has any other left.
    pub fn down(&mut self, player: usize, address: &str) -> bool {
        for (a, slot) in &mut self.slots[player] {
            if a == address {
                *slot = Slot::Down;
            }
        }
        self.slots[player].iter().any(|(_, s)| *s != Slot::Down)
    }
}

/// The matches already finished in `out` (as a summary) and the ones still to play.
pub fn collect<'a>(
    jobs: &'a [Job],
    games: &[Game],
    players: &[Entrant],
    out: &Path,
) -> (Summary, VecDeque<&'a Job>) {
    let mut summary = Summary::default();
    let mut pending = VecDeque::new();
    for job in jobs {
        match finished(out, job, games, players) {
            Some(outcome) => {
                summary.outcomes.push(outcome);
                summary.resumed += 1;
            }
            None => pending.push_back(job),
        }
    }
    (summary, pending)
}

/// The cores a match takes from the budget: its players' threads (the filler's count for
/// none), at most the whole budget.
fn cost(job: &Job, players: &[Entrant], cores: usize) -> usize {
    job.seats
        .iter()
        .filter(|&&p| !players[p].filler)
        .map(|&p| players[p].threads)
        .sum::<usize>()
        .min(cores.max(1))
}

/// Plays every job whose record is not complete, at most `settings.cores` threads' worth at
/// a time, each on free addresses of its remote players' pools (a match waits while a pool
/// has none free), with a progress bar; `play` plays one match given the address of each
/// seat (`None` for a built-in player) and its referee settings (record path included), and
/// returns its record.
pub fn run<F>(
    jobs: &[Job],
    games: &[Game],
    players: &[Entrant],
    settings: &Settings,
    play: F,
) -> Summary
where
    F: Fn(&Job, &[Option<String>], MatchConfig) -> Result<MatchRecord, String> + Sync,
{
    schedule(jobs, games, players, settings, play, |p, address| {
        check_address(&players[p], address)
    })
}

/// [`run`], with `check` telling whether a player's address still answers after a match on
/// it failed.
fn schedule<F, C>(
    jobs: &[Job],
    games: &[Game],
    players: &[Entrant],
    settings: &Settings,
    play: F,
    check: C,
) -> Summary
where
    F: Fn(&Job, &[Option<String>], MatchConfig) -> Result<MatchRecord, String> + Sync,
    C: Fn(usize, &str) -> Result<(), TournamentError>,
{
    let (mut summary, mut pending) = collect(jobs, games, players, &settings.out);
    if let Some(n) = settings.max_new {
        pending.truncate(n);
    }
    let bar = ProgressBar::new(jobs.len() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{wide_bar}] {pos}/{len} matches ({eta} left) {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_position(summary.resumed as u64);
    let cores = settings.cores.max(1);
    let mut pools = Pools::new(players);
    std::thread::scope(|scope| {
        type Done<'j> = (&'j Job, Lease, Result<MatchRecord, String>);
        let (done, results) = mpsc::channel::<Done>();
        let mut free = cores;
        let mut running = 0;
        loop {
            while !crate::referee::stop_requested() {
                let mut started = None;
                for (at, job) in pending.iter().enumerate() {
                    if cost(job, players, cores) > free {
                        continue;
                    }
                    if let Some(lease) = pools.take(job) {
                        started = Some((at, lease));
                        break;
                    }
                }
                let Some((at, lease)) = started else {
                    break;
                };
                let job = pending.remove(at).expect("found");
                free -= cost(job, players, cores);
                running += 1;
                let config = MatchConfig {
                    match_id: format!("{}.{}", job.key, crate::referee::now_ms()),
                    start_clock: settings.start_clock,
                    play_clock: settings.play_clock,
                    style: Style::GgpBase,
                    scramble: false,
                    seed: job.seed,
                    record_path: Some(record_path(&settings.out, job)),
                    rulesheet: games[job.game].rulesheet.clone(),
                    max_steps: crate::referee::DEFAULT_MAX_STEPS,
                };
                let done = done.clone();
                let play = &play;
                scope.spawn(move || {
                    let result = play(job, &lease, config);
                    let _ = done.send((job, lease, result));
                });
            }
            bar.set_message(format!("{running} running"));
            if running == 0 {
                break;
            }
            let Ok((job, lease, result)) = results.recv() else {
                break;
            };
            running -= 1;
            free += cost(job, players, cores);
            pools.give_back(job, &lease);
            bar.inc(1);
            let lost_contact = match result.and_then(|r| outcome(&r, job, games, players)) {
                Ok(outcome) => {
                    let line: Vec<String> = outcome
                        .seats
                        .iter()
                        .zip(&outcome.goals)
                        .map(|(&p, g)| format!("{} {g}", players[p].name))
                        .collect();
                    say(&bar, format!("{}: {}", job.key, line.join(", ")));
                    let lost = outcome.errors.iter().any(|e| e.connection > 0);
                    summary.outcomes.push(outcome);
                    lost
                }
                Err(why) => {
                    say(&bar, format!("{}: failed: {why}", job.key));
                    summary.failures.push((job.key.clone(), why));
                    true
                }
            };
            if !lost_contact {
                continue;
            }
            // An address of this match that is now down plays no more matches; a player with
            // no address left fails every match still to play with it, at once (they are
            // played on a rerun).
            for (&p, address) in job.seats.iter().zip(&lease) {
                let Some(address) = address else { continue };
                let Err(down) = check(p, address) else {
                    continue;
                };
                if pools.down(p, address) {
                    say(&bar, format!("{down}; no more matches there"));
                    continue;
                }
                let why = format!("not played: {down}");
                say(&bar, format!("{why}; its other matches are not played"));
                let (gone, kept): (VecDeque<&Job>, VecDeque<&Job>) =
                    pending.drain(..).partition(|j| j.seats.contains(&p));
                pending = kept;
                for job in gone {
                    bar.inc(1);
                    summary.failures.push((job.key.clone(), why.clone()));
                }
            }
        }
    });
    bar.finish_and_clear();
    summary
}

/// A line above the progress bar, or on stderr when the bar is hidden (not a terminal).
fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() {
        eprintln!("{line}");
    } else {
        bar.println(line);
    }
}

/// The tables: one per game, then one over every game. A game whose matches' goals sum to
/// different totals also gets each player's mean goal role by role ([`stats::render_roles`]).
pub fn tables(outcomes: &[Outcome], games: &[Game], players: &[Entrant]) -> String {
    let names: Vec<String> = players.iter().map(|p| p.name.clone()).collect();
    let mut by_game: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for outcome in outcomes {
        by_game.entry(&outcome.game).or_default().push(outcome);
    }
    let mut text = String::new();
    for game in games {
        if let Some(list) = by_game.get(game.name.as_str()) {
            text.push_str(&stats::render(&game.name, &stats::lines(list), &names));
            if list.iter().any(|o| o.total != list[0].total) {
                text.push_str(&stats::render_roles(list, &game.role_names, &names));
            }
            text.push('\n');
        }
    }
    let all: Vec<&Outcome> = outcomes.iter().collect();
    text.push_str(&stats::render(
        &format!("all games ({} matches)", outcomes.len()),
        &stats::lines(&all),
        &names,
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn players(n: usize) -> Vec<Entrant> {
        (0..n)
            .map(|i| Entrant::parse(&format!("p{i}=builtin:random"), 1).unwrap())
            .collect()
    }

    fn game(name: &str, roles: usize) -> Game {
        Game {
            name: name.into(),
            path: PathBuf::from(format!("{name}.kif")),
            rulesheet: String::new(),
            roles,
            player_roles: (0..roles).collect(),
            role_names: (0..roles).map(|r| format!("r{r}")).collect(),
        }
    }

    /// A player still busy with its last match is waited for: two INFOs answered `busy`,
    /// then `available`.
    #[test]
    fn a_busy_player_is_waited_for_before_its_next_match() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let asked = std::thread::spawn(move || {
            for status in ["busy", "busy", "available"] {
                let (mut stream, _) = listener.accept().unwrap();
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let body = format!("((name p) (status {status}))");
                let reply = format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: text/acl\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(reply.as_bytes()).unwrap();
            }
        });
        let player = Entrant::parse(&format!("p={address}"), 1).unwrap();
        let start = std::time::Instant::now();
        assert!(await_free(&player, &address, Duration::from_secs(30)));
        assert!(
            start.elapsed() >= Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        asked.join().unwrap();
        // No one at the address: not free within the limit.
        assert!(!await_free(&player, &address, Duration::from_millis(10)));
    }

    #[test]
    fn seats_rotate_so_each_player_has_each_role_equally() {
        let jobs = plan(&[game("two", 2), game("three", 3)], &players(3), 6, 1).unwrap();
        // two: 3 pairings × 6, three: 1 group × 6.
        assert_eq!(jobs.len(), 24);
        let mut seen: BTreeMap<(usize, usize, usize), usize> = BTreeMap::new();
        for job in &jobs {
            for (role, &p) in job.seats.iter().enumerate() {
                *seen.entry((job.game, p, role)).or_default() += 1;
            }
        }
        // Two-player game: each player is in 2 pairings × 6 matches, half in each role.
        for p in 0..3 {
            assert_eq!(seen[&(0, p, 0)], 6);
            assert_eq!(seen[&(0, p, 1)], 6);
            for role in 0..3 {
                assert_eq!(seen[&(1, p, role)], 2);
            }
        }
        let keys: std::collections::HashSet<&str> = jobs.iter().map(|j| j.key.as_str()).collect();
        assert_eq!(keys.len(), jobs.len());
        assert_eq!(jobs[0].key, "two.p0-vs-p1.001");
    }

    #[test]
    fn plans_refuse_too_few_players_and_duplicates() {
        assert!(matches!(
            plan(&[game("three", 3)], &players(2), 1, 0),
            Err(TournamentError::TooFewPlayers { roles: 3, .. })
        ));
        let mut twins = players(2);
        twins[1].name = "p0".into();
        assert!(matches!(
            plan(&[game("two", 2)], &twins, 1, 0),
            Err(TournamentError::DuplicateName(_))
        ));
    }

    fn pool_players() -> Vec<Entrant> {
        vec![
            Entrant::parse("a=h:1,h:2", 1).unwrap(),
            Entrant::parse("b=builtin:random", 1).unwrap(),
        ]
    }

    fn job(key: &str) -> Job {
        Job {
            key: key.into(),
            game: 0,
            seats: vec![0, 1],
            seed: 0,
        }
    }

    #[test]
    fn matches_side_by_side_get_different_addresses_and_give_them_back() {
        let mut pools = Pools::new(&pool_players());
        let one = pools.take(&job("one")).unwrap();
        let two = pools.take(&job("two")).unwrap();
        assert_eq!(one, vec![Some("h:1".to_string()), None]);
        assert_eq!(two, vec![Some("h:2".to_string()), None]);
        assert_eq!(pools.take(&job("three")), None, "every address is busy");
        pools.give_back(&job("two"), &two);
        assert_eq!(
            pools.take(&job("three")).unwrap()[0].as_deref(),
            Some("h:2")
        );
        // A down address is never handed out again; the last one down says so.
        pools.give_back(&job("one"), &one);
        assert!(pools.down(0, "h:1"));
        assert_eq!(pools.take(&job("four")), None);
        assert!(!pools.down(0, "h:2"));
    }

    fn settings(out: &Path, cores: usize) -> Settings {
        Settings {
            matches: 1,
            start_clock: 1,
            play_clock: 1,
            cores,
            seed: 0,
            out: out.to_path_buf(),
            max_new: None,
        }
    }

    #[test]
    fn every_match_is_played_on_a_free_address_even_when_matches_fail() {
        use std::sync::Mutex;
        let out = std::env::temp_dir().join(format!("ggp-pool-{}", std::process::id()));
        let players = pool_players();
        let jobs = plan(&[game("two", 2)], &players, 6, 0).unwrap();
        assert_eq!(jobs.len(), 6);
        let in_use: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let used: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let most = Mutex::new(0);
        let play = |_: &Job, lease: &[Option<String>], _: MatchConfig| {
            // Seats rotate: the pool's player is in either seat, the built-in has none.
            let addresses: Vec<&String> = lease.iter().flatten().collect();
            assert_eq!(addresses.len(), 1, "{lease:?}");
            let address = addresses[0].clone();
            {
                let mut in_use = in_use.lock().unwrap();
                assert!(!in_use.contains(&address), "{address} used twice at once");
                in_use.push(address.clone());
                let mut most = most.lock().unwrap();
                *most = (*most).max(in_use.len());
            }
            std::thread::sleep(Duration::from_millis(50));
            in_use.lock().unwrap().retain(|a| a != &address);
            used.lock().unwrap().push(address);
            // Every match fails: its address must come back all the same.
            Err::<MatchRecord, String>("the match failed".into())
        };
        let summary = schedule(
            &jobs,
            &[game("two", 2)],
            &players,
            &settings(&out, 8),
            play,
            |_, _| Ok(()),
        );
        assert_eq!(summary.failures.len(), 6);
        assert_eq!(used.lock().unwrap().len(), 6, "every match was played");
        assert_eq!(*most.lock().unwrap(), 2, "two at a time, one per address");
        let used = used.lock().unwrap();
        assert!(used.contains(&"h:1".to_string()) && used.contains(&"h:2".to_string()));
        let _ = std::fs::remove_dir_all(&out);
    }

    /// `max_new`: a run plays at most that many of the matches not yet played.
    #[test]
    fn a_run_plays_at_most_max_new_matches() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let out = std::env::temp_dir().join(format!("ggp-max-new-{}", std::process::id()));
        let players = players(2);
        let jobs = plan(&[game("two", 2)], &players, 6, 0).unwrap();
        let played = AtomicUsize::new(0);
        let play = |_: &Job, _: &[Option<String>], _: MatchConfig| {
            played.fetch_add(1, Ordering::SeqCst);
            Err::<MatchRecord, String>("not played here".into())
        };
        let settings = Settings {
            max_new: Some(1),
            ..settings(&out, 8)
        };
        let summary = schedule(
            &jobs,
            &[game("two", 2)],
            &players,
            &settings,
            play,
            |_, _| Ok(()),
        );
        assert_eq!(played.load(Ordering::SeqCst), 1);
        assert_eq!(summary.failures.len(), 1);
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_filler_sits_in_the_seats_left_over_and_is_left_out_of_the_outcome() {
        let mut players = players(2);
        let mut filler = Entrant::parse("rnd=builtin:random", 1).unwrap();
        filler.filler = true;
        players.push(filler);
        let games = [game("two", 2), game("four", 4)];
        let jobs = plan(&games, &players, 4, 0).unwrap();
        // One pairing per game: the filler plays no two-player match.
        assert_eq!(jobs.len(), 8);
        assert_eq!(jobs[0].key, "two.p0-vs-p1.001");
        assert_eq!(jobs[1].key, "four.p0-vs-p1.001");
        assert_eq!(jobs[1].seats, vec![0, 1, 2, 2]);
        assert_eq!(jobs[3].seats, vec![1, 2, 2, 0]);
        assert_eq!(cost(&jobs[1], &players, 8), 2);
        let record: MatchRecord = serde_json::from_value(serde_json::json!({
            "matchId": "m", "randomToken": "t", "startTime": 0, "isCompleted": true,
            "states": [], "moves": [], "stateTimes": [], "startClock": 1, "playClock": 1,
            "errors": [["", "", "", ""]], "goalValues": [0, 100, 50, 100],
        }))
        .unwrap();
        // Job 3 seats p1, the filler twice, then p0.
        let got = outcome(&record, &jobs[3], &games, &players).unwrap();
        assert_eq!(got.seats, vec![1, 0]);
        assert_eq!(got.goals, vec![0, 100]);
        // p0 (100) is above p1 (0): a win, though a filler also has 100.
        let lines = stats::lines(&[&got]);
        let p0 = lines.iter().find(|l| l.player == 0).unwrap();
        assert_eq!((p0.wins, p0.draws, p0.losses), (1, 0, 0));
    }

    #[test]
    fn combinations_are_complete() {
        assert_eq!(combinations(4, 2).len(), 6);
        assert_eq!(combinations(3, 3), vec![vec![0, 1, 2]]);
        assert_eq!(combinations(2, 1), vec![vec![0], vec![1]]);
    }
}
