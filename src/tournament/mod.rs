//! Tournaments (`ggp tournament`): many matches between several players on several games,
//! refereed by [`crate::manager`], with seats rotated, matches run in parallel within a core
//! budget, every record kept, and results tables ([`stats`]).
//!
//! The plan is fixed by the players, the games and the number of matches per group: for each
//! game with k roles, every group of k players (every pairing, for two-player games) plays N
//! matches, match i seating the group rotated by i places, so that over k matches each player
//! has played each role once. Each match has a key (`GAME.P1-vs-P2.007`) naming its record,
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

use crate::manager::{MatchConfig, MatchRecord};
use crate::protocol::{Client, SendError, Style};

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

/// Every match of the tournament, interleaved so that a stopped tournament has played about
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
    for (i, g) in games.iter().enumerate() {
        if let Some(h) = games[..i].iter().find(|h| h.name == g.name) {
            return Err(TournamentError::DuplicateGame(
                g.name.clone(),
                h.path.display().to_string(),
                g.path.display().to_string(),
            ));
        }
        if g.roles > players.len() {
            return Err(TournamentError::TooFewPlayers {
                game: g.name.clone(),
                roles: g.roles,
                players: players.len(),
            });
        }
    }
    let groups: Vec<Vec<Vec<usize>>> = games
        .iter()
        .map(|g| combinations(players.len(), g.roles))
        .collect();
    let mut jobs = Vec::new();
    for index in 0..matches {
        for (game, groups) in groups.iter().enumerate() {
            for group in groups {
                let names: Vec<&str> = group.iter().map(|&p| players[p].name.as_str()).collect();
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
                spec: p.text.clone(),
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
/// read, is not completed, does not fit the match (another number of roles), or in which a
/// player could not be reached (see [`outcome`]).
pub fn finished(out: &Path, job: &Job, games: &[Game], players: &[Entrant]) -> Option<Outcome> {
    let record = MatchRecord::load(&record_path(out, job)).ok()?;
    outcome(&record, job, games, players).ok()
}

/// What a record gives the tables, or why it gives nothing. A match in which a player's
/// connection failed (`CE`: the player died, or never answered) is not a result: its moves
/// were the referee's random ones, so it is reported as failed and played again on a rerun.
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
    let unreachable: Vec<String> = errors
        .iter()
        .zip(&job.seats)
        .filter(|(e, _)| e.connection > 0)
        .map(|(e, &p)| format!("{} ({} connection errors)", players[p].name, e.connection))
        .collect();
    if !unreachable.is_empty() {
        return Err(format!(
            "not counted, a player could not be reached: {}",
            unreachable.join(", ")
        ));
    }
    Ok(Outcome {
        game: game.name.clone(),
        seats: job.seats.clone(),
        goals: game
            .player_roles
            .iter()
            .map(|&r| record.goal_values[r])
            .collect(),
        errors,
    })
}

/// Sends INFO to every remote player; one that cannot be reached within 5 s is an error.
///
/// # Errors
/// A remote player does not answer.
pub fn check_players(players: &[Entrant]) -> Result<(), TournamentError> {
    let client = Client::new().map_err(|e| TournamentError::Io {
        path: PathBuf::from("(http client)"),
        why: e.to_string(),
    })?;
    for player in players {
        if let Source::Remote { address } = &player.source {
            let reply = client.send(
                address,
                &player.name,
                &Style::GgpBase.info(),
                Duration::from_secs(5),
            );
            if let Err(e) = reply {
                return Err(TournamentError::Unreachable {
                    name: player.name.clone(),
                    address: address.clone(),
                    why: match e {
                        SendError::Timeout => "no reply within 5 s".into(),
                        SendError::Connection(why) => why,
                    },
                });
            }
        }
    }
    Ok(())
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

/// The cores a match takes from the budget: its players' threads, at most the whole budget.
fn cost(job: &Job, players: &[Entrant], cores: usize) -> usize {
    job.seats
        .iter()
        .map(|&p| players[p].threads)
        .sum::<usize>()
        .min(cores.max(1))
}

/// Plays every job whose record is not complete, at most `settings.cores` threads' worth at
/// a time, with a progress bar; `play` plays one match given its referee settings (record
/// path included) and returns its record.
pub fn run<F>(
    jobs: &[Job],
    games: &[Game],
    players: &[Entrant],
    settings: &Settings,
    play: F,
) -> Summary
where
    F: Fn(&Job, MatchConfig) -> Result<MatchRecord, String> + Sync,
{
    let (mut summary, mut pending) = collect(jobs, games, players, &settings.out);
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
    std::thread::scope(|scope| {
        let (done, results) = mpsc::channel::<(&Job, Result<MatchRecord, String>)>();
        let mut free = cores;
        let mut running = 0;
        loop {
            while let Some(at) = pending
                .iter()
                .position(|job| cost(job, players, cores) <= free)
                .filter(|_| !crate::manager::stop_requested())
            {
                let job = pending.remove(at).expect("found");
                free -= cost(job, players, cores);
                running += 1;
                let config = MatchConfig {
                    match_id: format!("{}.{}", job.key, crate::manager::now_ms()),
                    start_clock: settings.start_clock,
                    play_clock: settings.play_clock,
                    style: Style::GgpBase,
                    scramble: false,
                    seed: job.seed,
                    record_path: Some(record_path(&settings.out, job)),
                    rulesheet: games[job.game].rulesheet.clone(),
                    max_steps: crate::manager::DEFAULT_MAX_STEPS,
                };
                let done = done.clone();
                let play = &play;
                scope.spawn(move || {
                    let result = play(job, config);
                    let _ = done.send((job, result));
                });
            }
            bar.set_message(format!("{running} running"));
            if running == 0 {
                break;
            }
            let Ok((job, result)) = results.recv() else {
                break;
            };
            running -= 1;
            free += cost(job, players, cores);
            bar.inc(1);
            match result.and_then(|record| outcome(&record, job, games, players)) {
                Ok(outcome) => {
                    let line: Vec<String> = outcome
                        .seats
                        .iter()
                        .zip(&outcome.goals)
                        .map(|(&p, g)| format!("{} {g}", players[p].name))
                        .collect();
                    say(&bar, format!("{}: {}", job.key, line.join(", ")));
                    summary.outcomes.push(outcome);
                }
                Err(why) => {
                    say(&bar, format!("{}: failed: {why}", job.key));
                    summary.failures.push((job.key.clone(), why));
                    // A remote player of this match that is now down fails every match
                    // still to play with it, at once (they are played on a rerun).
                    for &p in &job.seats {
                        let Err(down) = check_players(std::slice::from_ref(&players[p])) else {
                            continue;
                        };
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

/// The tables: one per game, then one over every game.
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
        }
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

    #[test]
    fn combinations_are_complete() {
        assert_eq!(combinations(4, 2).len(), 6);
        assert_eq!(combinations(3, 3), vec![vec![0, 1, 2]]);
        assert_eq!(combinations(2, 1), vec![vec![0], vec![1]]);
    }
}
