//! Chess sheets checked against chess: PGN replay and perft through the GDL rules.
//!
//! A chess rule sheet runs on any engine behind [`StateMachine`](ggp_engine::machine::StateMachine).
//! [`Dialect`] knows how a known sheet writes its state; moves are understood from the board
//! change they make ([`MoveShape`]), so nothing here depends on how a sheet writes moves.
//! [`ChessGame`] puts the two together. [`replay`](replay::replay) replays recorded games
//! ([`pgn`]) and compares every ply with `shakmaty`, an independent move generator;
//! [`perft`](perft::perft) counts move sequences through the rules alone.

pub mod dialect;
pub mod game;
pub mod perft;
pub mod pgn;
pub mod replay;
pub mod shape;

pub use dialect::{Dialect, DialectError, Snapshot};
pub use game::{ChessError, ChessGame, GdlMove};
pub use shape::MoveShape;

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Color, EnPassantMode, PositionError, Role};

/// A position as FEN.
pub fn fen(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

/// A sheet's board and side to move, as the first two fields of a FEN.
pub fn board_fen(snap: &Snapshot) -> String {
    let turn = match snap.turn {
        Some(Color::White) => "w",
        Some(Color::Black) => "b",
        None => "(no side to move)",
    };
    format!("{} {turn}", snap.board)
}

/// A difference of move sets, in words.
pub fn describe_difference(lacks: &[MoveShape], adds: &[MoveShape]) -> String {
    let list = |v: &[MoveShape]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    match (lacks.is_empty(), adds.is_empty()) {
        (false, true) => format!("the sheet lacks {}", list(lacks)),
        (true, false) => format!("the sheet adds {}", list(adds)),
        _ => format!("the sheet lacks {} and adds {}", list(lacks), list(adds)),
    }
}

/// The standard-chess position of a FEN (the move counters may be left out, as in EPD).
/// Positions with a check no legal game can reach (two sliders checking along one line)
/// are accepted: the rules still apply to them.
///
/// # Errors
/// The FEN cannot be read or is no standard chess position.
pub fn position_from_fen(text: &str) -> Result<Chess, String> {
    let fen =
        Fen::from_ascii(text.trim().as_bytes()).map_err(|e| format!("bad FEN {text:?}: {e}"))?;
    fen.into_position(CastlingMode::Standard)
        .or_else(PositionError::ignore_impossible_check)
        .map_err(|e| format!("FEN {text:?}: {e}"))
}

/// A side's name as the sheets and the move shapes write it: `white`, `black`.
fn color_name(c: Color) -> &'static str {
    match c {
        Color::White => "white",
        Color::Black => "black",
    }
}

/// A piece kind's name as the sheets and the move shapes write it: `pawn` ... `king`.
fn role_name(role: Role) -> &'static str {
    match role {
        Role::Pawn => "pawn",
        Role::Knight => "knight",
        Role::Bishop => "bishop",
        Role::Rook => "rook",
        Role::Queen => "queen",
        Role::King => "king",
    }
}
