//! Reference traces: reading them, replaying them against an engine, and writing playouts in
//! the same format.
//!
//! The format (one record per line) is described in the corpus README: `PLAYOUT k`, `STEP n`,
//! `STATE facts...`, one `LEGAL role moves...` per role, `DOES moves...`, and at the end
//! `TERMINAL` and `GOALS g...` (`ERR` for an undefined or multiply defined goal) or
//! `MAXDEPTH`. In a GDL-II game, `DOES` is followed by one `SEES role percepts...` per role:
//! what each role sees after that joint move. Terms are compared as printed compact KIF, and legal moves and facts as sets.

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

use rand::Rng;

use crate::machine::{MachineError, StateMachine};
use ggp_gdl::kif;

/// One step of a recorded playout.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// The step number.
    pub number: usize,
    /// The facts of the state.
    pub state: BTreeSet<String>,
    /// Each role's legal moves, in role order (empty in a terminal state).
    pub legal: Vec<(String, BTreeSet<String>)>,
    /// The joint move made, if any.
    pub does: Option<Vec<String>>,
    /// GDL-II: what each role sees after the joint move, in role order (empty if the trace
    /// does not say).
    pub sees: Vec<(String, BTreeSet<String>)>,
    /// Whether the state is terminal.
    pub terminal: bool,
    /// The goal values in a terminal state (`None` for `ERR`).
    pub goals: Option<Vec<Option<u8>>>,
}

/// A recorded playout from the initial state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Playout {
    /// The steps in order.
    pub steps: Vec<Step>,
    /// Whether the playout stopped at the step limit.
    pub max_depth: bool,
}

/// A malformed trace line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct TraceError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Reads a trace.
///
/// # Errors
/// A line that does not fit the format.
pub fn parse(text: &str) -> Result<Vec<Playout>, TraceError> {
    let mut playouts: Vec<Playout> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let err = |message: String| TraceError {
            line: i + 1,
            message,
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (keyword, rest) = line.split_once(' ').unwrap_or((line, ""));
        let terms = || -> Result<Vec<String>, TraceError> {
            kif::parse(rest)
                .map(|v| v.iter().map(|s| s.to_string()).collect())
                .map_err(|e| err(e.to_string()))
        };
        if keyword == "PLAYOUT" {
            playouts.push(Playout::default());
            continue;
        }
        let playout = playouts
            .last_mut()
            .ok_or_else(|| err("a record before the first PLAYOUT".into()))?;
        if keyword == "STEP" {
            let number = rest
                .parse()
                .map_err(|_| err(format!("bad step number {rest:?}")))?;
            playout.steps.push(Step {
                number,
                ..Step::default()
            });
            continue;
        }
        if keyword == "MAXDEPTH" {
            playout.max_depth = true;
            continue;
        }
        let step = playout
            .steps
            .last_mut()
            .ok_or_else(|| err(format!("{keyword} before the first STEP")))?;
        match keyword {
            "STATE" => step.state = terms()?.into_iter().collect(),
            "LEGAL" => {
                let mut t = terms()?.into_iter();
                let role = t.next().ok_or_else(|| err("LEGAL without a role".into()))?;
                let moves = t.filter(|m| m != "<NO-LEGAL-MOVES>").collect();
                step.legal.push((role, moves));
            }
            "DOES" => step.does = Some(terms()?),
            "SEES" => {
                let mut t = terms()?.into_iter();
                let role = t.next().ok_or_else(|| err("SEES without a role".into()))?;
                step.sees.push((role, t.collect()));
            }
            "TERMINAL" => step.terminal = true,
            "GOALS" => {
                let goals = rest
                    .split_whitespace()
                    .map(|g| match g {
                        "ERR" => Ok(None),
                        _ => g
                            .parse()
                            .map(Some)
                            .map_err(|_| err(format!("bad goal {g:?}"))),
                    })
                    .collect::<Result<_, _>>()?;
                step.goals = Some(goals);
            }
            _ => return Err(err(format!("unknown record {keyword:?}"))),
        }
    }
    Ok(playouts)
}

/// The first place where an engine disagrees with a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// Which playout (from 0).
    pub playout: usize,
    /// Which step.
    pub step: usize,
    /// The role concerned, if any.
    pub role: Option<String>,
    /// What was compared.
    pub what: String,
    /// The trace's value.
    pub expected: String,
    /// The engine's value.
    pub found: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "playout {} step {}: {}",
            self.playout, self.step, self.what
        )?;
        if let Some(role) = &self.role {
            write!(f, " of role {role}")?;
        }
        write!(
            f,
            "\n  expected: {}\n  found:    {}",
            self.expected, self.found
        )
    }
}

/// The outcome of a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// Every step agreed; the number of steps compared.
    Agree(usize),
    /// The first difference.
    Differ(Box<Disagreement>),
}

/// The machine's goal values, as a trace writes them: `None` unless exactly one value.
fn goal_vector<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
) -> Result<Vec<Option<u8>>, MachineError> {
    (0..machine.roles().len())
        .map(|r| {
            let v = machine.goal_values(state, r)?;
            Ok(if v.len() == 1 { Some(v[0]) } else { None })
        })
        .collect()
}

fn show_goals(goals: &[Option<u8>]) -> String {
    let parts: Vec<String> = goals
        .iter()
        .map(|g| g.map_or("ERR".to_string(), |v| v.to_string()))
        .collect();
    parts.join(" ")
}

fn show_set(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(" ")
}

/// A set difference, shown briefly: what is missing and what is extra.
fn show_diff(expected: &BTreeSet<String>, found: &BTreeSet<String>) -> (String, String) {
    let missing: BTreeSet<String> = expected.difference(found).cloned().collect();
    let extra: BTreeSet<String> = found.difference(expected).cloned().collect();
    (
        format!(
            "{} (missing from the engine: {})",
            expected.len(),
            show_set(&missing)
        ),
        format!(
            "{} (extra in the engine: {})",
            found.len(),
            show_set(&extra)
        ),
    )
}

/// Replays recorded playouts on `machine`, comparing state, legal moves, terminal and goals at
/// every step.
///
/// # Errors
/// The engine failed in a way the trace does not record.
pub fn replay<M: StateMachine>(
    machine: &mut M,
    playouts: &[Playout],
) -> Result<Replay, MachineError> {
    let mut compared = 0;
    let roles: Vec<String> = machine.roles().iter().map(|r| r.to_string()).collect();
    for (p, playout) in playouts.iter().enumerate() {
        let mut state = machine.initial_state();
        for step in &playout.steps {
            let differ = |role: Option<&str>, what: &str, expected: String, found: String| {
                Ok(Replay::Differ(Box::new(Disagreement {
                    playout: p,
                    step: step.number,
                    role: role.map(str::to_string),
                    what: what.to_string(),
                    expected,
                    found,
                })))
            };
            let facts: BTreeSet<String> = machine
                .state_terms(&state)
                .iter()
                .map(|t| t.to_string())
                .collect();
            if facts != step.state {
                let (e, f) = show_diff(&step.state, &facts);
                return differ(None, "state", e, f);
            }
            let terminal = machine.is_terminal(&state)?;
            if terminal != step.terminal {
                return differ(
                    None,
                    "terminal",
                    step.terminal.to_string(),
                    terminal.to_string(),
                );
            }
            if let Some(expected) = &step.goals {
                let found = goal_vector(machine, &state)?;
                if &found != expected {
                    return differ(None, "goals", show_goals(expected), show_goals(&found));
                }
            }
            // The step a playout stopped at (`MAXDEPTH`, after its state) lists no moves.
            let cut = playout.max_depth && step.legal.is_empty() && step.does.is_none();
            if !step.terminal && !cut {
                if step.legal.len() != roles.len() {
                    return differ(
                        None,
                        "number of roles",
                        step.legal.len().to_string(),
                        roles.len().to_string(),
                    );
                }
                for (r, (name, expected)) in step.legal.iter().enumerate() {
                    let found: BTreeSet<String> = machine
                        .legal_moves(&state, r)?
                        .into_iter()
                        .map(|m| machine.move_term(m).to_string())
                        .collect();
                    if &found != expected {
                        let (e, f) = show_diff(expected, &found);
                        return differ(Some(name), "legal moves", e, f);
                    }
                }
            }
            compared += 1;
            let Some(does) = &step.does else {
                continue;
            };
            let mut joint = Vec::new();
            for (r, text) in does.iter().enumerate() {
                let role = roles.get(r).map(String::as_str);
                let term = match ggp_gdl::gdl::parse_term(text) {
                    Ok(term) => term,
                    Err(e) => {
                        return differ(role, "move", text.clone(), format!("not a term: {e}"));
                    }
                };
                match machine.find_move(&term) {
                    Some(m) => joint.push(m),
                    None => {
                        return differ(role, "move", text.clone(), "unknown to the engine".into());
                    }
                }
            }
            for (r, (name, expected)) in step.sees.iter().enumerate() {
                if r >= roles.len() {
                    break;
                }
                let found: BTreeSet<String> = machine
                    .percepts(&state, &joint, r)?
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                if &found != expected {
                    let (e, f) = show_diff(expected, &found);
                    return differ(Some(name), "percepts", e, f);
                }
            }
            state = machine.next_state(&state, &joint)?;
        }
    }
    Ok(Replay::Agree(compared))
}

/// Plays `count` random playouts and writes them in the trace format.
///
/// # Errors
/// The engine failed (for example a role without legal moves).
pub fn write_playouts<M: StateMachine>(
    machine: &mut M,
    rng: &mut impl Rng,
    count: usize,
    max_steps: usize,
    out: &mut String,
) -> Result<(), MachineError> {
    let roles: Vec<String> = machine.roles().iter().map(|r| r.to_string()).collect();
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    for p in 0..count {
        let _ = writeln!(out, "PLAYOUT {p}");
        let mut state = machine.initial_state();
        for step in 0..=max_steps {
            let _ = writeln!(out, "STEP {step}");
            let mut facts: Vec<String> = machine
                .state_terms(&state)
                .iter()
                .map(|t| t.to_string())
                .collect();
            facts.sort();
            let _ = writeln!(out, "STATE {}", facts.join(" "));
            if machine.is_terminal(&state)? {
                let goals = goal_vector(machine, &state)?;
                let _ = writeln!(out, "TERMINAL\nGOALS {}", show_goals(&goals));
                break;
            }
            if step == max_steps {
                let _ = writeln!(out, "MAXDEPTH");
                break;
            }
            for (r, name) in roles.iter().enumerate() {
                let mut moves: Vec<String> = machine
                    .legal_moves(&state, r)?
                    .into_iter()
                    .map(|m| machine.move_term(m).to_string())
                    .collect();
                moves.sort();
                if moves.is_empty() {
                    moves.push("<NO-LEGAL-MOVES>".into());
                }
                let _ = writeln!(out, "LEGAL {name} {}", moves.join(" "));
            }
            machine.random_joint_move_into(&state, rng, &mut joint, &mut scratch)?;
            let printed: Vec<String> = joint
                .iter()
                .map(|&m| machine.move_term(m).to_string())
                .collect();
            let _ = writeln!(out, "DOES {}", printed.join(" "));
            if machine.has_percepts() {
                for (r, name) in roles.iter().enumerate() {
                    let seen: Vec<String> = machine
                        .percepts(&state, &joint, r)?
                        .iter()
                        .map(ToString::to_string)
                        .collect();
                    let _ = writeln!(out, "SEES {name} {}", seen.join(" ")).map(|_| ());
                }
            }
            state = machine.next_state_unchecked(&state, &joint)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datalog::DatalogMachine;
    use ggp_gdl::gdl::Description;
    use rand::SeedableRng;

    #[test]
    fn own_playouts_replay() {
        let d = Description::from_text(include_str!("../../../rules/ticTacToe.kif")).unwrap();
        let mut m = DatalogMachine::new(&d).unwrap();
        let mut text = String::new();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        write_playouts(&mut m, &mut rng, 3, 100, &mut text).unwrap();
        let playouts = parse(&text).unwrap();
        assert_eq!(playouts.len(), 3);
        assert!(matches!(replay(&mut m, &playouts).unwrap(), Replay::Agree(n) if n >= 15));
        // A playout cut at its step limit (`MAXDEPTH`) replays too: 3 steps of moves, then
        // the last state.
        let mut cut = String::new();
        write_playouts(&mut m, &mut rng, 2, 3, &mut cut).unwrap();
        assert!(cut.contains("MAXDEPTH"), "{cut}");
        let playouts = parse(&cut).unwrap();
        assert!(matches!(
            replay(&mut m, &playouts).unwrap(),
            Replay::Agree(8)
        ));
    }

    #[test]
    fn a_changed_trace_disagrees() {
        let d = Description::from_text(include_str!("../../../rules/ticTacToe.kif")).unwrap();
        let mut m = DatalogMachine::new(&d).unwrap();
        let mut text = String::new();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        write_playouts(&mut m, &mut rng, 1, 100, &mut text).unwrap();
        let broken = text.replacen("(mark 1 1)", "(mark 1 4)", 1);
        let Replay::Differ(d) = replay(&mut m, &parse(&broken).unwrap()).unwrap() else {
            panic!("expected a disagreement");
        };
        assert_eq!(
            (d.step, d.what.as_str(), d.role.as_deref()),
            (0, "legal moves", Some("x"))
        );
        assert!(parse("STEP 1").is_err());
    }
}
