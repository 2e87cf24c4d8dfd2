//! Differential tests: the propnet against the Datalog engine.
//!
//! Random playouts run on both machines in lockstep with the same choices (each role's move is
//! picked by index from its legal moves sorted as printed terms), and at every step the state
//! facts, each role's legal moves, terminal and every role's goal values must agree. The
//! default run covers a sample of the corpus's games and every valid corner-case sheet; the
//! ignored test `propnet_agrees_with_datalog_on_every_game` (`cargo test -- --ignored`)
//! covers every game in `base` (games whose grounding exceeds the budget are skipped, counted
//! and printed). Every third reference trace is also replayed on the propnet, for the games
//! that ground within a small budget (every trace, with the default budget, in the ignored
//! `propnet_replays_every_reference_trace`), and the propnet's own playout loops (one game at
//! a time, and 64 games per pass) are checked against Datalog.

mod common;

use common::Scope;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::datalog::DatalogMachine;
use ggp_engine::machine::StateMachine;
use ggp_engine::propnet::{Budget, GroundError, LaneRecord, PropnetMachine, Width};
use ggp_engine::trace::{self, Replay};
use ggp_gdl::gdl::{Description, Term};

const BASE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/games/base");
const TEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/games/test");
const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/games/traces");

/// The default sample of `base` games: (name, playouts).
const SAMPLE: &[(&str, usize)] = &[
    ("ticTacToe", 20),
    ("connectFour", 5),
    ("breakthrough", 2),
    ("nim1", 5),
    ("nim2", 5),
    ("nim3", 5),
    ("nim4", 5),
    ("pentago", 2),
    ("chomp", 5),
    ("sheepAndWolf", 2),
    ("knightThrough", 2),
    ("dotsAndBoxes", 2),
    ("eightPuzzle", 3),
    ("hanoi", 3),
    ("buttons", 5),
    ("roshambo2", 5),
    ("gt_prisoner", 5),
    ("connectFourSimultaneous", 3),
    ("ticTacToeParallel", 3),
    ("3pConnectFour", 2),
    ("tictactoe_3d_small_2player", 3),
    ("blocks", 5),
    ("checkersTiny", 2),
    ("ruleDepthLinear", 3),
];

/// Most steps of one playout.
const MAX_STEPS: usize = 300;

/// What one game's comparison gave.
enum Outcome {
    /// Every compared step agreed; the number of steps.
    Agreed(usize),
    /// The propnet could not be built within the budget.
    OverBudget(String),
    /// The game could not be run at all (invalid sheet, Datalog build failure).
    Skipped(String),
}

fn budget() -> Budget {
    Budget {
        max_seconds: 10.0,
        ..Budget::default()
    }
}

/// Corner cases built to exceed any grounding budget.
const EXPECTED_OVER_BUDGET: &[&str] = &[
    // Its `prereq20` relation has 2^20 atoms by design.
    "ruledepthexponential.kif",
];

fn sorted_moves<M: StateMachine>(
    m: &mut M,
    state: &M::State,
    role: usize,
) -> Result<Vec<(String, M::Move)>, String> {
    let mut v: Vec<(String, M::Move)> = m
        .legal_moves(state, role)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|mv| (m.move_term(mv).to_string(), mv))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v.dedup_by(|a, b| a.0 == b.0);
    Ok(v)
}

fn facts(terms: Vec<Term>) -> BTreeSet<String> {
    terms.iter().map(|t| t.to_string()).collect()
}

/// Plays `playouts` random playouts on both machines in lockstep; `Err` on the first
/// disagreement. Stops early (still agreeing) after `time_limit`.
fn lockstep(
    d: &mut DatalogMachine,
    p: &mut PropnetMachine,
    playouts: usize,
    seed: u64,
    time_limit: Duration,
) -> Result<usize, String> {
    let start = Instant::now();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut steps = 0;
    let n_roles = d.roles().len();
    if p.roles() != d.roles() {
        return Err(format!("roles {:?} vs {:?}", d.roles(), p.roles()));
    }
    for playout in 0..playouts {
        let mut ds = d.initial_state();
        let mut ps = p.initial_state();
        for step in 0..MAX_STEPS {
            if start.elapsed() > time_limit {
                return Ok(steps);
            }
            let at = |what: &str| format!("playout {playout} step {step}: {what}");
            let (df, pf) = (facts(d.state_terms(&ds)), facts(p.state_terms(&ps)));
            if df != pf {
                let missing: Vec<_> = df.difference(&pf).collect();
                let extra: Vec<_> = pf.difference(&df).collect();
                return Err(at(&format!(
                    "state differs: missing from propnet {missing:?}, extra {extra:?}"
                )));
            }
            let dt = d.is_terminal(&ds).map_err(|e| at(&e.to_string()))?;
            let pt = p.is_terminal(&ps).map_err(|e| at(&e.to_string()))?;
            if dt != pt {
                return Err(at(&format!("terminal {dt} vs {pt}")));
            }
            for r in 0..n_roles {
                let dg = d.goal_values(&ds, r).map_err(|e| at(&e.to_string()))?;
                let pg = p.goal_values(&ps, r).map_err(|e| at(&e.to_string()))?;
                if dg != pg {
                    return Err(at(&format!("goals of role {r}: {dg:?} vs {pg:?}")));
                }
            }
            steps += 1;
            if dt {
                break;
            }
            let mut djoint = Vec::with_capacity(n_roles);
            let mut pjoint = Vec::with_capacity(n_roles);
            let mut stuck = false;
            for r in 0..n_roles {
                let dm = sorted_moves(d, &ds, r).map_err(|e| at(&e))?;
                let pm = sorted_moves(p, &ps, r).map_err(|e| at(&e))?;
                let dn: Vec<&String> = dm.iter().map(|x| &x.0).collect();
                let pn: Vec<&String> = pm.iter().map(|x| &x.0).collect();
                if dn != pn {
                    return Err(at(&format!("legal moves of role {r}: {dn:?} vs {pn:?}")));
                }
                if dm.is_empty() {
                    stuck = true;
                    continue;
                }
                let i = rng.random_range(0..dm.len());
                djoint.push(dm[i].1);
                pjoint.push(pm[i].1);
            }
            if stuck {
                break;
            }
            ds = d
                .next_state_unchecked(&ds, &djoint)
                .map_err(|e| at(&e.to_string()))?;
            ps = p
                .next_state_unchecked(&ps, &pjoint)
                .map_err(|e| at(&e.to_string()))?;
        }
    }
    Ok(steps)
}

/// Plays `count` random playouts `width` games per pass on the propnet and replays each on
/// Datalog: at every step each role's number of legal moves must agree and the move played
/// must be legal there; the state must not be terminal before the end; the end state,
/// terminal and goals must agree. Stops early (still agreeing) after `time_limit`.
fn batch_agrees(
    d: &mut DatalogMachine,
    p: &mut PropnetMachine,
    width: Width,
    count: u64,
    seed: u64,
    time_limit: Duration,
) -> Result<usize, String> {
    let start = Instant::now();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let n_roles = p.roles().len();
    let p0 = p.initial_state();
    let mut records: Vec<LaneRecord> = Vec::new();
    let batch = p
        .random_playouts_recorded(width, &p0, &mut rng, count, MAX_STEPS, &mut records)
        .map_err(|e| format!("batch: {e}"))?;
    if batch.playouts != count || records.len() as u64 != count {
        return Err(format!(
            "batch: {count} playouts asked, {} played, {} recorded",
            batch.playouts,
            records.len()
        ));
    }
    let mut steps = 0;
    for (k, rec) in records.iter().enumerate() {
        if start.elapsed() > time_limit {
            break;
        }
        let mut ds = d.initial_state();
        for (step, joint) in rec.joints.chunks(n_roles).enumerate() {
            let at = |what: &str| format!("{width:?} batch playout {k} step {step}: {what}");
            if d.is_terminal(&ds).map_err(|e| at(&e.to_string()))? {
                return Err(at("terminal in Datalog, played on"));
            }
            let mut djoint = Vec::with_capacity(n_roles);
            for (r, &m) in joint.iter().enumerate() {
                let legal = sorted_moves(d, &ds, r).map_err(|e| at(&e))?;
                let counted = rec.legal_counts[step * n_roles + r] as usize;
                if legal.len() != counted {
                    return Err(at(&format!(
                        "role {r} has {} legal moves, the batch saw {counted}",
                        legal.len()
                    )));
                }
                let shown = p.move_term(m).to_string();
                match legal.iter().find(|(t, _)| *t == shown) {
                    Some(&(_, dm)) => djoint.push(dm),
                    None => return Err(at(&format!("{shown} is not legal for role {r}"))),
                }
            }
            ds = d
                .next_state_unchecked(&ds, &djoint)
                .map_err(|e| at(&e.to_string()))?;
            steps += 1;
        }
        let at = |what: &str| format!("{width:?} batch playout {k} end: {what}");
        let (df, pf) = (facts(d.state_terms(&ds)), facts(p.state_terms(&rec.end)));
        if df != pf {
            return Err(at(&format!("states differ: {df:?} vs {pf:?}")));
        }
        let terminal = d.is_terminal(&ds).map_err(|e| at(&e.to_string()))?;
        if terminal != rec.terminal || !(terminal || rec.joints.len() == MAX_STEPS * n_roles) {
            return Err(at(&format!("terminal {terminal} vs {}", rec.terminal)));
        }
        for r in 0..n_roles {
            let dg = d.goal_values(&ds, r).map_err(|e| at(&e.to_string()))?;
            if dg != rec.goals[r] {
                return Err(at(&format!(
                    "goals of role {r}: {dg:?} vs {:?}",
                    rec.goals[r]
                )));
            }
        }
    }
    Ok(steps)
}

fn compare_file(
    path: &Path,
    playouts: usize,
    time_limit: Duration,
    budget: &Budget,
) -> Result<Outcome, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let Ok(description) = Description::from_text(&text) else {
        return Ok(Outcome::Skipped("invalid sheet".into()));
    };
    let mut d = match DatalogMachine::new(&description) {
        Ok(d) => d,
        Err(e) => return Ok(Outcome::Skipped(format!("Datalog: {e}"))),
    };
    let mut p = match PropnetMachine::new(&description, budget) {
        Ok(p) => p,
        Err(e @ (GroundError::Budget(_) | GroundError::Time(_))) => {
            return Ok(Outcome::OverBudget(e.to_string()));
        }
        Err(e) => return Err(format!("propnet build failed: {e}")),
    };
    let start = Instant::now();
    let n = lockstep(&mut d, &mut p, playouts, 0x5eed, time_limit)?;
    let left = time_limit.saturating_sub(start.elapsed());
    let m = batch_agrees(
        &mut d,
        &mut p,
        Width::Narrow,
        playouts as u64,
        0xba7c,
        left / 2,
    )?;
    let left = time_limit.saturating_sub(start.elapsed());
    let w = batch_agrees(&mut d, &mut p, Width::Wide, playouts as u64, 0x256, left)?;
    Ok(Outcome::Agreed(n + m + w))
}

/// Runs `jobs` on two threads; returns the failures and the over-budget games.
fn run_all(
    jobs: Vec<(String, PathBuf, usize)>,
    time_limit: Duration,
    budget: &Budget,
) -> (Vec<String>, Vec<String>) {
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let over = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((name, path, playouts)) = jobs.get(i) else {
                        break;
                    };
                    let start = Instant::now();
                    let outcome = compare_file(path, *playouts, time_limit, budget);
                    let secs = start.elapsed().as_secs_f64();
                    match outcome {
                        Ok(Outcome::Agreed(n)) => {
                            eprintln!("{name}: {n} steps agree ({secs:.1} s)")
                        }
                        Ok(Outcome::OverBudget(e)) => {
                            eprintln!("{name}: over budget ({e})");
                            over.lock().unwrap().push(name.clone());
                        }
                        Ok(Outcome::Skipped(e)) => eprintln!("{name}: skipped ({e})"),
                        Err(e) => {
                            eprintln!("{name}: DISAGREE {e}");
                            failures.lock().unwrap().push(format!("{name}: {e}"));
                        }
                    }
                }
            });
        }
    });
    (failures.into_inner().unwrap(), over.into_inner().unwrap())
}

#[test]
fn propnet_agrees_with_datalog_on_games() {
    agree_on_games(Scope::Sample);
}

#[test]
#[ignore = "slow: every game of the corpus"]
fn propnet_agrees_with_datalog_on_every_game() {
    agree_on_games(Scope::All);
}

fn agree_on_games(scope: Scope) {
    let jobs: Vec<(String, PathBuf, usize)> = if scope == Scope::All {
        let mut names: Vec<String> = std::fs::read_dir(BASE)
            .expect("the corpus is beside the project, in ../shared/games")
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".kif").map(str::to_string)
            })
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|n| {
                let path = Path::new(BASE).join(format!("{n}.kif"));
                (n, path, 3)
            })
            .collect()
    } else {
        SAMPLE
            .iter()
            .map(|&(n, k)| (n.to_string(), Path::new(BASE).join(format!("{n}.kif")), k))
            .collect()
    };
    let limit = Duration::from_secs(if scope == Scope::All { 30 } else { 8 });
    let total = jobs.len();
    let (failures, over) = run_all(jobs, limit, &budget());
    eprintln!("{} games, {} over budget: {:?}", total, over.len(), over);
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
    if scope == Scope::Sample {
        assert!(over.is_empty(), "sample games over budget: {over:?}");
    }
}

#[test]
fn propnet_agrees_with_datalog_on_corner_cases() {
    let expected = std::fs::read_to_string(Path::new(TEST).join("EXPECTED.tsv"))
        .expect("the corpus is beside the project");
    let jobs: Vec<(String, PathBuf, usize)> = expected
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut cols = line.split('\t');
            let file = cols.next()?;
            (cols.next()? == "valid").then(|| (file.to_string(), Path::new(TEST).join(file), 5))
        })
        .collect();
    assert!(jobs.len() >= 15, "expected the valid corner cases");
    let small = Budget {
        max_seconds: 2.0,
        ..Budget::default()
    };
    let (failures, over) = run_all(jobs, Duration::from_secs(8), &small);
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
    assert_eq!(over, EXPECTED_OVER_BUDGET, "corner cases over budget");
}

/// Grounding budget per game when replaying traces: games that take longer are skipped (and
/// named). By default every third trace is replayed; the ignored test replays them all with
/// the default budget.
const TRACE_BUDGET_SECONDS: f64 = 1.0;

/// Replays one trace on the propnet; `Ok(None)` when the game does not ground in the budget.
fn replay_trace(name: &str, budget: &Budget) -> Result<Option<usize>, String> {
    let rules = std::fs::read_to_string(Path::new(BASE).join(format!("{name}.kif")))
        .map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(Path::new(TRACES).join(format!("{name}.trace")))
        .map_err(|e| e.to_string())?;
    let description = Description::from_text(&rules).map_err(|d| format!("{d:?}"))?;
    let mut m = match PropnetMachine::new(&description, budget) {
        Ok(m) => m,
        Err(GroundError::Budget(_) | GroundError::Time(_)) => return Ok(None),
        Err(e) => return Err(format!("propnet build failed: {e}")),
    };
    let playouts = trace::parse(&text).map_err(|e| e.to_string())?;
    match trace::replay(&mut m, &playouts).map_err(|e| e.to_string())? {
        Replay::Agree(n) => Ok(Some(n)),
        Replay::Differ(d) => Err(d.to_string()),
    }
}

#[test]
fn propnet_replays_reference_traces() {
    replay_traces(Scope::Sample);
}

#[test]
#[ignore = "slow: every trace, every game grounded with the default budget"]
fn propnet_replays_every_reference_trace() {
    replay_traces(Scope::All);
}

fn replay_traces(scope: Scope) {
    let mut names: Vec<String> = std::fs::read_dir(TRACES)
        .expect("the corpus is beside the project, in ../shared/games")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".trace").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 300, "expected the corpus's traces");
    if scope == Scope::Sample {
        names = names.into_iter().step_by(3).collect();
    }
    let budget = if scope == Scope::All {
        Budget::default()
    } else {
        Budget {
            max_seconds: TRACE_BUDGET_SECONDS,
            ..Budget::default()
        }
    };
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let skipped = Mutex::new(Vec::new());
    let replayed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) {
                    match replay_trace(name, &budget) {
                        Ok(Some(n)) => {
                            assert!(n > 0, "{name}: nothing compared");
                            replayed.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(None) => skipped.lock().unwrap().push(name.clone()),
                        Err(e) => {
                            eprintln!("{name}: DISAGREE {e}");
                            failures.lock().unwrap().push(format!("{name}: {e}"));
                        }
                    }
                }
            });
        }
    });
    let mut skipped = skipped.into_inner().unwrap();
    skipped.sort();
    eprintln!(
        "{} traces replayed on the propnet; {} games not grounded within the budget: {skipped:?}",
        replayed.load(Ordering::Relaxed),
        skipped.len()
    );
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
    // Most of the corpus grounds; a sudden drop means grounding broke. The bar is low because
    // the budget is in seconds and a loaded machine grounds fewer games in time.
    assert!(
        replayed.load(Ordering::Relaxed) * 10 >= names.len() * 6,
        "too few traces replayed"
    );
}

/// The propnet's own playout loop (moves drawn from its legal sets, states changed in place)
/// against the Datalog engine: every joint move it plays must be legal there, and the end
/// state, terminal and goals must agree.
#[test]
fn propnet_playouts_agree_with_datalog() {
    for &(name, playouts) in SAMPLE {
        let text = std::fs::read_to_string(Path::new(BASE).join(format!("{name}.kif"))).unwrap();
        let description = Description::from_text(&text).unwrap();
        let mut d = DatalogMachine::new(&description).unwrap();
        let mut p = PropnetMachine::new(&description, &budget()).unwrap();
        let n_roles = p.roles().len();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x9e37);
        let p0 = p.initial_state();
        for k in 0..playouts {
            let mut joints = Vec::new();
            let (end, steps) = p
                .playout_recorded(&p0, &mut rng, MAX_STEPS, &mut joints)
                .unwrap();
            assert_eq!(joints.len(), steps * n_roles);
            let mut ds = d.initial_state();
            for (step, joint) in joints.chunks(n_roles).enumerate() {
                let mut djoint = Vec::with_capacity(n_roles);
                for (r, &m) in joint.iter().enumerate() {
                    let shown = p.move_term(m).to_string();
                    let legal = sorted_moves(&mut d, &ds, r).unwrap();
                    match legal.iter().find(|(t, _)| *t == shown) {
                        Some(&(_, dm)) => djoint.push(dm),
                        None => panic!("{name} playout {k} step {step}: {shown} is not legal"),
                    }
                }
                ds = d.next_state_unchecked(&ds, &djoint).unwrap();
            }
            assert_eq!(
                facts(d.state_terms(&ds)),
                facts(p.state_terms(&end)),
                "{name} playout {k}: end states differ"
            );
            let terminal = d.is_terminal(&ds).unwrap();
            assert_eq!(terminal, p.is_terminal(&end).unwrap(), "{name}: terminal");
            assert!(terminal || steps == MAX_STEPS, "{name}: stopped early");
            for r in 0..n_roles {
                assert_eq!(
                    d.goal_values(&ds, r).unwrap(),
                    p.goal_values(&end, r).unwrap(),
                    "{name} playout {k}: goals of role {r}"
                );
            }
        }
    }
}

/// 64 and 256 games per pass with more playouts than lanes: lanes that finish start new
/// games, and every game still agrees with Datalog.
#[test]
fn propnet_batch_playouts_restart_lanes_and_agree() {
    for (name, count) in [("ticTacToe", 150), ("nim1", 70), ("roshambo2", 70)] {
        let text = std::fs::read_to_string(Path::new(BASE).join(format!("{name}.kif"))).unwrap();
        let description = Description::from_text(&text).unwrap();
        let mut d = DatalogMachine::new(&description).unwrap();
        let mut p = PropnetMachine::new(&description, &budget()).unwrap();
        for (width, count) in [(Width::Narrow, count), (Width::Wide, 4 * count)] {
            let limit = Duration::from_secs(600);
            if let Err(e) = batch_agrees(&mut d, &mut p, width, count, 0x64, limit) {
                panic!("{name}: {e}");
            }
        }
        // Through the trait: the goal sums of the batch agree with the games' goals.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let s0 = p.initial_state();
        let batch = p.random_playouts(&s0, &mut rng, count, MAX_STEPS).unwrap();
        assert_eq!(batch.playouts, count, "{name}");
        assert_eq!(batch.goal_sums.len(), p.roles().len(), "{name}");
    }
}

/// Sheets with the constructs outside GDL's specification that the reference prover
/// (ggp-base) plays: `(not (distinct s t))`, a function symbol with several arities, `base` and
/// `input` as old ordinary relations, `not` as a function symbol.
const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/reference"
);

/// The corpus's GDL-II sheets.
const GDL2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/games/gdl2");

/// Plays `moves` (one printed joint move per step, in role order) from the initial state;
/// each role's legal moves at every state reached (sorted, joined by spaces; roles joined by
/// `|`, states by ` / `), and the goals if the last state is terminal.
fn scripted<M: StateMachine>(m: &mut M, moves: &[&[&str]]) -> (String, Option<Vec<u8>>) {
    let mut state = m.initial_state();
    let mut seen = Vec::new();
    for step in 0..=moves.len() {
        let legal: Vec<String> = (0..m.roles().len())
            .map(|r| {
                let mut v: Vec<String> = m
                    .legal_moves(&state, r)
                    .unwrap()
                    .into_iter()
                    .map(|mv| m.move_term(mv).to_string())
                    .collect();
                v.sort();
                v.join(" ")
            })
            .collect();
        seen.push(legal.join("|"));
        let Some(joint) = moves.get(step) else { break };
        let joint: Vec<M::Move> = joint
            .iter()
            .map(|t| {
                m.find_move(&ggp_gdl::gdl::parse_term(t).unwrap())
                    .unwrap_or_else(|| panic!("unknown move {t}"))
            })
            .collect();
        state = m.next_state(&state, &joint).unwrap();
    }
    let goals = m
        .is_terminal(&state)
        .unwrap()
        .then(|| m.goals(&state).unwrap());
    (seen.join(" / "), goals)
}

#[test]
fn both_engines_play_what_the_reference_prover_plays() {
    // (sheet, scripted joint moves, each role's legal moves at each state, goals at the end)
    type Script = (
        &'static str,
        &'static [&'static [&'static str]],
        &'static str,
        Option<&'static [u8]>,
    );
    let scripts: &[Script] = &[
        (
            "not_distinct.kif",
            &[&["(mark 2)", "noop"], &["noop", "(mark 1)"]],
            "(mark 1) (mark 2)|noop / noop|(mark 1) (mark 2) / (mark 1) (mark 2)|noop",
            Some(&[100, 100]),
        ),
        ("function_arities.kif", &[&["stay"]], "go stay / stay", None),
        (
            "old_base_input.kif",
            &[&["(go 3)"]],
            "(go 3) / (go 3)",
            Some(&[100]),
        ),
        (
            "not_function.kif",
            &[&["(flip (not x))"], &["(flip x)"]],
            "(flip (not x)) / (flip x) / ",
            Some(&[100]),
        ),
    ];
    for &(file, moves, legal, goals) in scripts {
        let text = std::fs::read_to_string(Path::new(FIXTURES).join(file)).unwrap();
        let description =
            Description::from_text(&text).unwrap_or_else(|e| panic!("{file} is refused: {e:?}"));
        assert!(!description.warnings().is_empty(), "{file} gets a warning");
        let mut d = DatalogMachine::new(&description).unwrap();
        let mut p = PropnetMachine::new(&description, &budget()).unwrap();
        let expected = (legal.to_string(), goals.map(<[u8]>::to_vec));
        assert_eq!(scripted(&mut d, moves), expected, "{file} on Datalog");
        assert_eq!(scripted(&mut p, moves), expected, "{file} on the propnet");
    }
    // And in lockstep over random playouts, with the corpus's own sheets for two of them.
    let mut paths: Vec<PathBuf> = [
        "not_distinct",
        "function_arities",
        "old_base_input",
        "not_function",
    ]
    .iter()
    .map(|n| Path::new(FIXTURES).join(format!("{n}.kif")))
    .collect();
    paths.push(Path::new(TEST).join("test_clean_not_distinct.kif"));
    paths.push(Path::new(TEST).join("test_invalid_function_arities_differ.kif"));
    for path in paths {
        match compare_file(&path, 10, Duration::from_secs(5), &budget()) {
            Ok(Outcome::Agreed(_)) => {}
            Ok(Outcome::OverBudget(e) | Outcome::Skipped(e)) => {
                panic!("{}: not played: {e}", path.display())
            }
            Err(e) => panic!("{}: engines disagree: {e}", path.display()),
        }
    }
    // The corpus sheet's meaning: `success` holds only with equality read as ggp-base does.
    let text =
        std::fs::read_to_string(Path::new(TEST).join("test_clean_not_distinct.kif")).unwrap();
    let description = Description::from_text(&text).unwrap();
    let mut d = DatalogMachine::new(&description).unwrap();
    let mut p = PropnetMachine::new(&description, &budget()).unwrap();
    let end = (String::from("proceed / proceed"), Some(vec![100]));
    assert_eq!(scripted(&mut d, &[&["proceed"]]), end);
    assert_eq!(scripted(&mut p, &[&["proceed"]]), end);
}

/// Percepts as the GDL-II referee reads them: every valid sheet of `../shared/games/gdl2` and
/// our blind_race against its Dresden GameController trace
/// (`bench/referee/reftrace --dresden SHEET --playouts 3 --seed 7`; battleshipsFog's first 8
/// steps of one playout, as its states are large), whose SEES lines give each role's percepts
/// after each joint move: both engines must see what the referee sends, or a belief built on
/// our reading dies for that reason alone (issue 58). twogenerals is replayed on the Datalog
/// engine only: its terms nest without bound, so the propnet does not ground it.
#[test]
fn both_engines_see_what_the_gdl2_referee_sends() {
    let gdl2 = Path::new(GDL2);
    let fixtures = Path::new(FIXTURES);
    let mut sheets: Vec<PathBuf> = std::fs::read_dir(gdl2)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "kif"))
        .collect();
    sheets.sort();
    sheets.push(fixtures.join("blind_race.kif"));
    let mut replayed = 0;
    for sheet in sheets {
        let name = sheet.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&sheet).unwrap();
        let Ok(description) = Description::from_text(&text) else {
            // oneCardGame: not valid GDL, refused by `ggp check`; nothing to replay.
            assert_eq!(name, "oneCardGame", "{name} is refused");
            continue;
        };
        let trace_file = fixtures.join(format!("{name}.dresden.trace"));
        let trace_text = std::fs::read_to_string(&trace_file)
            .unwrap_or_else(|e| panic!("{}: {e}", trace_file.display()));
        assert!(
            trace_text.contains("\nSEES "),
            "{name}: no percepts in the trace"
        );
        let playouts = trace::parse(&trace_text).unwrap();
        let steps = |replay: Replay| match replay {
            Replay::Agree(n) => n,
            Replay::Differ(d) => panic!("{name}: {d}"),
        };
        let mut d = DatalogMachine::new(&description).unwrap();
        let on_datalog = steps(trace::replay(&mut d, &playouts).unwrap());
        assert!(on_datalog >= 6, "{name}: only {on_datalog} steps compared");
        let unhurried = Budget {
            max_seconds: 300.0,
            ..Budget::default()
        };
        match PropnetMachine::new(&description, &unhurried) {
            Ok(mut p) => assert_eq!(steps(trace::replay(&mut p, &playouts).unwrap()), on_datalog),
            Err(e) => assert_eq!(name, "twogenerals", "{name}: the propnet is not built: {e}"),
        }
        replayed += 1;
    }
    assert_eq!(replayed, 13);
}

/// The constructs of issue 25 against the reference referees' own traces, replayed on both
/// engines (state, legal moves, terminal and goals at every step). `NAME.trace` is made by
/// ggp-base's prover (`bench/referee/reftrace SHEET --playouts 3 --seed 7`), the reference for
/// GDL; `NAME.dresden.trace` by the Dresden GameController's (`--dresden`), the reference for
/// GDL-II (it plays `random` as an ordinary role; its SEES lines, the percepts it sends, are
/// compared too).
/// - `moves_in_terminal`: `legal`, `goal` and `terminal` reading `does` (asked with no moves);
/// - `query_bound`: variables no positive literal binds (ggp-base drops a negation or distinct
///   of them; head variables take the caller's value);
/// - `mastermind2x3`: `sees` read in a rule body; `numberguessing`: `true` with two arguments;
/// - `blackjack`: a relation with two arities (ggp-base's prover fails on it);
/// - `battleshipsFog` (its first steps): `sees` and `legal` whose role only the query binds, a
///   `distinct` of it evaluated as the GameController does;
/// - `meier`, `stratego`: `base` facts with variables (dropped);
/// - `test_case_3a`: a relation written `(open2)` in one place and `open2` in another (two
///   relations).
#[test]
fn both_engines_agree_with_the_reference_referees_traces() {
    let gdl2 = Path::new(GDL2);
    let fixtures = Path::new(FIXTURES);
    let sheets = [
        (
            fixtures.join("moves_in_terminal.kif"),
            "moves_in_terminal.trace",
            10,
        ),
        (fixtures.join("query_bound.kif"), "query_bound.trace", 10),
        (fixtures.join("orders.kif"), "orders.trace", 18),
        (fixtures.join("deep_question.kif"), "deep_question.trace", 9),
        (gdl2.join("mastermind2x3.kif"), "mastermind2x3.trace", 10),
        (gdl2.join("numberguessing.kif"), "numberguessing.trace", 10),
        (gdl2.join("blackjack.kif"), "blackjack.dresden.trace", 10),
        (
            gdl2.join("battleshipsFog.kif"),
            "battleshipsFog.dresden.trace",
            4,
        ),
        (gdl2.join("meier.kif"), "meier.dresden.trace", 8),
        (gdl2.join("stratego.kif"), "stratego.dresden.trace", 4),
        (
            Path::new(TEST).join("test_case_3a.kif"),
            "test_case_3a.trace",
            6,
        ),
    ];
    for (sheet, trace_file, least) in sheets {
        let text = std::fs::read_to_string(&sheet).unwrap();
        let description = Description::from_text(&text)
            .unwrap_or_else(|e| panic!("{trace_file}: the sheet is refused: {e:?}"));
        assert!(
            !description.warnings().is_empty(),
            "{trace_file}: no warning"
        );
        let playouts =
            trace::parse(&std::fs::read_to_string(fixtures.join(trace_file)).unwrap()).unwrap();
        let steps = |replay: Replay| match replay {
            Replay::Agree(n) => n,
            Replay::Differ(d) => panic!("{trace_file}: {d}"),
        };
        let mut d = DatalogMachine::new(&description).unwrap();
        let on_datalog = steps(trace::replay(&mut d, &playouts).unwrap());
        // Agreement is the point, not speed: a budget no loaded machine runs out of.
        let unhurried = Budget {
            max_seconds: 300.0,
            ..Budget::default()
        };
        let mut p = PropnetMachine::new(&description, &unhurried)
            .unwrap_or_else(|e| panic!("{trace_file}: the propnet is not built: {e}"));
        let on_propnet = steps(trace::replay(&mut p, &playouts).unwrap());
        assert_eq!(on_datalog, on_propnet, "{trace_file}");
        assert!(
            on_datalog >= least,
            "{trace_file}: only {on_datalog} steps compared"
        );
    }
}
