//! Replays every reference trace of the corpus on the Datalog engine and asserts exact
//! agreement: state, legal moves (as sets), terminal and goals at every step.
//!
//! There are no exclusions: the only ones the corpus README would accept are sheet defects,
//! and those (chess.kif's missing goal at the step limit, pentago.kif's double goal) are
//! reproduced as `ERR` goals, exactly as the traces record them. Games run on two threads;
//! games that take 5 s or more are named in the output, so a slowdown shows in the log.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use ggp_engine::datalog::DatalogMachine;
use ggp_engine::trace::{self, Replay};
use ggp_gdl::gdl::Description;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/games")
}

/// Replays one game; `Err` describes a disagreement or failure.
fn replay_game(name: &str) -> Result<usize, String> {
    let dir = corpus();
    let rules = std::fs::read_to_string(dir.join("base").join(format!("{name}.kif")))
        .map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(dir.join("traces").join(format!("{name}.trace")))
        .map_err(|e| e.to_string())?;
    let description = Description::from_text(&rules).map_err(|d| format!("{d:?}"))?;
    let mut machine = DatalogMachine::new(&description).map_err(|e| e.to_string())?;
    let playouts = trace::parse(&text).map_err(|e| e.to_string())?;
    match trace::replay(&mut machine, &playouts).map_err(|e| e.to_string())? {
        Replay::Agree(n) => Ok(n),
        Replay::Differ(d) => Err(d.to_string()),
    }
}

#[test]
fn every_trace_agrees() {
    let mut games: Vec<String> = std::fs::read_dir(corpus().join("traces"))
        .expect("the corpus is beside the project, in ../shared/games")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".trace").map(str::to_string)
        })
        .collect();
    games.sort();
    assert!(
        games.len() >= 300,
        "expected the corpus's traces, found {}",
        games.len()
    );
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let steps = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(name) = games.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let start = Instant::now();
                    let result = replay_game(name);
                    if start.elapsed().as_secs() >= 5 {
                        println!("{name}: {:.1} s", start.elapsed().as_secs_f64());
                    }
                    match result {
                        Ok(n) => {
                            steps.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(e) => failures.lock().unwrap().push(format!("{name}: {e}")),
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    println!(
        "traces: {} of {} games agree, {} steps compared",
        games.len() - failures.len(),
        games.len(),
        steps.load(Ordering::Relaxed)
    );
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
}
