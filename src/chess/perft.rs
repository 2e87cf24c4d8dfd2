//! Perft: the number of move sequences of a given length, counted through the GDL rules.
//!
//! [`perft`] works on any game: a node's children are its joint moves (every combination of
//! each role's legal moves), so in chess, where the side not to move has only `noop`, the
//! count is that of chess perft. Terminal states are not cut off, as chess perft ignores
//! draws by rule; a state without moves counts nothing. [`perft_checked`] walks the same tree
//! on a chess sheet and compares each node's moves with an independent move generator, to
//! say where a count goes wrong.

use shakmaty::{Chess, Position};

use ggp_engine::machine::{MachineError, StateMachine};
use ggp_gdl::gdl::Term;

use super::game::{ChessError, ChessGame, chess_shapes, compare_shapes};
use super::shape::MoveShape;

/// The number of joint-move sequences of length `depth` from `state`.
///
/// # Errors
/// The engine failed.
pub fn perft<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    depth: u32,
) -> Result<u64, MachineError> {
    if depth == 0 {
        return Ok(1);
    }
    let per_role = legal_per_role(machine, state)?;
    if depth == 1 {
        return Ok(per_role.iter().map(|v| v.len() as u64).product());
    }
    // All children first: an engine keeps one state loaded, so going back to this state
    // between children would evaluate it again for each.
    let children = joint_moves(&per_role)
        .iter()
        .map(|joint| machine.next_state_unchecked(state, joint))
        .collect::<Result<Vec<_>, _>>()?;
    let mut total = 0;
    for child in &children {
        total += perft(machine, child, depth - 1)?;
    }
    Ok(total)
}

/// The count below each joint move of `state`, the moves printed (roles with a single move
/// left out), in the engine's order.
///
/// # Errors
/// The engine failed.
pub fn divide<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    depth: u32,
) -> Result<Vec<(String, u64)>, MachineError> {
    let per_role = legal_per_role(machine, state)?;
    let joints = joint_moves(&per_role);
    let children = joints
        .iter()
        .map(|joint| machine.next_state_unchecked(state, joint))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for (joint, next) in joints.into_iter().zip(&children) {
        let count = perft(machine, next, depth.saturating_sub(1))?;
        let printed: Vec<String> = joint
            .iter()
            .zip(&per_role)
            .filter(|(_, legal)| legal.len() > 1)
            .map(|(&m, _)| machine.move_term(m).to_string())
            .collect();
        let label = if printed.is_empty() {
            joint
                .iter()
                .map(|&m| machine.move_term(m).to_string())
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            printed.join(" ")
        };
        out.push((label, count));
    }
    Ok(out)
}

fn legal_per_role<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
) -> Result<Vec<Vec<M::Move>>, MachineError> {
    (0..machine.roles().len())
        .map(|r| machine.legal_moves(state, r))
        .collect()
}

/// Every combination of one move per role.
fn joint_moves<T: Copy>(per_role: &[Vec<T>]) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = vec![Vec::new()];
    for legal in per_role {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                legal.iter().map(move |&m| {
                    let mut j = prefix.clone();
                    j.push(m);
                    j
                })
            })
            .collect();
    }
    out
}

/// Where a sheet's moves first differ from chess's in a perft tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PerftError {
    /// The sheet failed.
    #[error(transparent)]
    Chess(#[from] ChessError),
    /// A position where the sheet's board or moves are not chess's.
    #[error("at {fen} (after {path}): {what}")]
    Differs {
        /// The position, as FEN.
        fen: String,
        /// The moves leading there from the root.
        path: String,
        /// What differs.
        what: String,
    },
}

/// Perft through the sheet, comparing every node's board, side to move and legal moves with
/// `pos`, which must be the position of `state`.
///
/// # Errors
/// The first node where the sheet and chess differ, or a failure of the sheet.
pub fn perft_checked<M: StateMachine>(
    game: &mut ChessGame<M>,
    state: &M::State,
    pos: &Chess,
    depth: u32,
) -> Result<u64, PerftError> {
    let mut path = Vec::new();
    walk(game, state, pos, depth, &mut path)
}

fn walk<M: StateMachine>(
    game: &mut ChessGame<M>,
    state: &M::State,
    pos: &Chess,
    depth: u32,
    path: &mut Vec<MoveShape>,
) -> Result<u64, PerftError> {
    let differs = |what: String, path: &[MoveShape]| PerftError::Differs {
        fen: super::fen(pos),
        path: if path.is_empty() {
            "nothing".into()
        } else {
            path.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        },
        what,
    };
    let snap = game.snapshot(state)?;
    if snap.board != *pos.board() || snap.turn != Some(pos.turn()) {
        return Err(differs(
            format!("the sheet's position is {}", super::board_fen(&snap)),
            path,
        ));
    }
    if depth == 0 {
        return Ok(1);
    }
    let moves = game.moves(state, &snap)?;
    let mut shapes = Vec::with_capacity(moves.len());
    for m in &moves {
        match &m.shape {
            Ok(s) => shapes.push(*s),
            Err(e) => {
                let term: Term = game.machine().move_term(m.mv);
                return Err(differs(format!("{term} is no chess move: {e}"), path));
            }
        }
    }
    if let Some((lacks, adds)) = compare_shapes(&shapes, &chess_shapes(pos)) {
        return Err(differs(super::describe_difference(&lacks, &adds), path));
    }
    if depth == 1 {
        return Ok(moves.len() as u64);
    }
    let mut total = 0;
    for m in &moves {
        let shape = m.shape.clone().expect("checked above");
        let chess_move = pos
            .legal_moves()
            .into_iter()
            .find(|&c| MoveShape::from_move(pos.board(), c) == shape)
            .expect("the shapes agree");
        let mut child = pos.clone();
        child.play_unchecked(chess_move);
        path.push(shape);
        total += walk(game, &m.next, &child, depth - 1, path)?;
        path.pop();
    }
    Ok(total)
}
