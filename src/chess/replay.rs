//! Replaying recorded games on a chess sheet, move by move, against chess itself.
//!
//! At every ply the sheet must agree with chess (`shakmaty` as an independent oracle) and
//! with the record:
//!
//! - the sheet's game is not over yet;
//! - its legal moves, each understood by the board change it makes, are exactly chess's;
//! - the record's SAN move matches exactly one of them (piece, disambiguation, capture,
//!   target, promotion, or castling side);
//! - after it, the board and the side to move are chess's;
//! - the sheet's check (see [`ChessGame::in_check`]) is chess's, and a `+` or `#` in the
//!   record is right (a check the record leaves unmarked, common in old records for
//!   discovered checks, is counted but accepted).
//!
//! At the end, a game that stands in checkmate, stalemate, or another position the sheet
//! declares over (the 50-move rule, a dead position, its step limit) must be terminal with the
//! right goals; any other final position (resignation, agreement, threefold repetition, time)
//! must not be terminal. Threefold repetition is not a state property, so a game drawn by
//! repetition is accepted when every move was legal. A record that plays on after one of the
//! sheet's own endings (players need not claim a 50-move draw) is replayed up to that ending,
//! which must have the right goals, and counted as ended early.
//!
//! A record that breaks chess or PGN (an illegal or ambiguous move, a wrong `+`, unreadable
//! text, a null move) is *illegal*; a sheet that differs from chess is a *mismatch*. A game
//! stops at its first problem. A pawn move to the last rank written without a promotion piece
//! is read as a queen's promotion.

use std::fmt;

use pgn_reader::SanPlus;
use shakmaty::fen::Fen;
use shakmaty::san::{San, Suffix};
use shakmaty::{CastlingMode, Chess, Color, Position};

use ggp_engine::machine::StateMachine;

use super::dialect::{DeadPositions, Endings};
use super::game::{ChessError, ChessGame, chess_shapes, compare_shapes};
use super::pgn::PgnGame;
use super::shape::{MoveShape, lenient_san};

/// How a game's replay ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every ply and the ending agree.
    Agree,
    /// The sheet differs from chess.
    Mismatch(Problem),
    /// The record is not a legal chess game or not valid PGN.
    Illegal(Problem),
}

/// Where and how a replay failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The ply (from 1) and its move as written (`12. Nf3`), if the problem is at a move.
    pub at: Option<(usize, String)>,
    /// The position before the move (or at the end), as FEN.
    pub fen: Option<String>,
    /// What is wrong.
    pub what: String,
    /// The sheet's legal moves in that position, for a move that matched none or several.
    pub legal: Vec<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((ply, san)) = &self.at {
            write!(f, "ply {ply} ({san}): ")?;
        }
        f.write_str(&self.what)?;
        if let Some(fen) = &self.fen {
            write!(f, "; FEN {fen}")?;
        }
        if !self.legal.is_empty() {
            write!(f, "; sheet's legal moves: {}", self.legal.join(" "))?;
        }
        Ok(())
    }
}

/// A replayed game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replayed {
    /// The verdict.
    pub verdict: Verdict,
    /// Plies that agreed.
    pub plies: usize,
    /// Moves read as queen promotions although the record named no piece.
    pub lenient_promotions: usize,
    /// Checks the record did not mark with `+` or `#`.
    pub unmarked_checks: usize,
    /// One of the sheet's own endings (the 50-move rule, a dead position, the step limit)
    /// that ended the game while the record went on; the rest was not replayed.
    pub ended_early: Option<Ending>,
}

/// Replays one game on `game`'s sheet. Every problem, of the record or of the sheet
/// (including an engine failure), is a verdict.
pub fn replay<M: StateMachine>(game: &mut ChessGame<M>, record: &PgnGame) -> Replayed {
    let mut run = Run {
        game,
        plies: 0,
        lenient: 0,
        unmarked_checks: 0,
        ended_early: None,
    };
    let verdict = run.replay(record);
    Replayed {
        verdict,
        plies: run.plies,
        lenient_promotions: run.lenient,
        unmarked_checks: run.unmarked_checks,
        ended_early: run.ended_early,
    }
}

struct Run<'a, M: StateMachine> {
    game: &'a mut ChessGame<M>,
    plies: usize,
    lenient: usize,
    unmarked_checks: usize,
    ended_early: Option<Ending>,
}

fn illegal(what: impl Into<String>) -> Verdict {
    Verdict::Illegal(Problem {
        at: None,
        fen: None,
        what: what.into(),
        legal: Vec::new(),
    })
}

fn mismatch(what: impl Into<String>) -> Verdict {
    Verdict::Mismatch(Problem {
        at: None,
        fen: None,
        what: what.into(),
        legal: Vec::new(),
    })
}

/// Puts a ply and a position on a verdict's problem.
fn at(mut v: Verdict, ply: Option<(usize, String)>, fen: String) -> Verdict {
    if let Verdict::Mismatch(p) | Verdict::Illegal(p) = &mut v {
        p.at = ply;
        p.fen = Some(fen);
    }
    v
}

/// The move as written in a record: `12. Nf3` or `12... Nf6`.
fn written(pos: &Chess, san: &SanPlus) -> String {
    let n = pos.fullmoves();
    match pos.turn() {
        Color::White => format!("{n}. {san}"),
        Color::Black => format!("{n}... {san}"),
    }
}

impl<M: StateMachine> Run<'_, M> {
    fn replay(&mut self, record: &PgnGame) -> Verdict {
        if let Some(problem) = &record.problem {
            return illegal(format!("not valid PGN: {problem}"));
        }
        if let Some(variant) = record.tag("Variant")
            && !matches!(
                variant.to_ascii_lowercase().as_str(),
                "standard" | "chess" | "from position" | "normal"
            )
        {
            return illegal(format!("variant {variant:?} is not standard chess"));
        }
        let mut pos = Chess::default();
        if let Some(fen) = record.tag("FEN") {
            match Fen::from_ascii(fen.as_bytes())
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    f.into_position(CastlingMode::Standard)
                        .map_err(|e| e.to_string())
                }) {
                Ok(p) => pos = p,
                Err(e) => return illegal(format!("FEN tag {fen:?}: {e}")),
            }
        }
        let mut state = if record.tag("FEN").is_some() {
            match self.game.state_of(&pos) {
                Ok(s) => s,
                Err(e) => return mismatch(format!("the sheet cannot hold the FEN position: {e}")),
            }
        } else {
            self.game.initial_state()
        };
        let mut snap = match self.game.snapshot(&state) {
            Ok(s) => s,
            Err(e) => return at(mismatch(e.to_string()), None, super::fen(&pos)),
        };
        if snap.board != *pos.board() || snap.turn != Some(pos.turn()) {
            return at(
                mismatch(format!(
                    "the sheet's starting position is {}",
                    super::board_fen(&snap)
                )),
                None,
                super::fen(&pos),
            );
        }
        let endings = self.game.dialect().endings();
        for san_plus in &record.moves {
            let ply = Some((self.plies + 1, written(&pos, san_plus)));
            let fen = super::fen(&pos);
            match self.game.machine_mut().is_terminal(&state) {
                Ok(false) => {}
                Ok(true) => {
                    return match self.ended_by_rule(&state, &pos, &endings) {
                        Ok(None) => Verdict::Agree,
                        Ok(Some(v)) => at(v, ply, fen),
                        Err(e) => at(mismatch(e.to_string()), ply, fen),
                    };
                }
                Err(e) => return at(mismatch(e.to_string()), ply, fen),
            }
            match self.step(&mut state, &mut snap, &mut pos, san_plus) {
                Ok(None) => self.plies += 1,
                Ok(Some(v)) => return at(v, ply, fen),
                Err(e) => return at(mismatch(e.to_string()), ply, fen),
            }
        }
        let fen = super::fen(&pos);
        match self.ending(&state, &pos, &endings) {
            Ok(None) => Verdict::Agree,
            Ok(Some(v)) => at(v, None, fen),
            Err(e) => at(mismatch(e.to_string()), None, fen),
        }
    }

    /// One ply; `Some` verdict when it fails.
    fn step(
        &mut self,
        state: &mut M::State,
        snap: &mut super::dialect::Snapshot,
        pos: &mut Chess,
        san_plus: &SanPlus,
    ) -> Result<Option<Verdict>, ChessError> {
        let moves = self.game.moves(state, snap)?;
        let mut shapes = Vec::with_capacity(moves.len());
        for m in &moves {
            match &m.shape {
                Ok(s) => shapes.push(*s),
                Err(e) => {
                    let term = self.game.machine().move_term(m.mv);
                    return Ok(Some(mismatch(format!(
                        "the sheet's move {term} is no chess move: {e}"
                    ))));
                }
            }
        }
        if let Some((lacks, adds)) = compare_shapes(&shapes, &chess_shapes(pos)) {
            return Ok(Some(mismatch(format!(
                "legal moves differ from chess: {}",
                super::describe_difference(&lacks, &adds)
            ))));
        }
        if san_plus.san == San::Null {
            return Ok(Some(illegal(format!(
                "{san_plus} is a null move, not a chess move"
            ))));
        }
        let (san, filled) = lenient_san(san_plus.san);
        let matching: Vec<usize> = (0..moves.len())
            .filter(|&i| shapes[i].matches(&san))
            .collect();
        let chess_move = match san.to_move(pos) {
            Ok(m) => m,
            Err(e) => {
                let what = format!(
                    "{san_plus}: {e} in chess ({} of the sheet's moves match)",
                    matching.len()
                );
                return Ok(Some(if matching.len() == 1 {
                    mismatch(what)
                } else {
                    illegal(what)
                }));
            }
        };
        let [i] = matching[..] else {
            let legal = moves
                .iter()
                .map(|m| self.game.machine().move_term(m.mv).to_string())
                .collect();
            return Ok(Some(Verdict::Mismatch(Problem {
                at: None,
                fen: None,
                what: format!("{san_plus} matches {} of the sheet's moves", matching.len()),
                legal,
            })));
        };
        if shapes[i] != MoveShape::from_move(pos.board(), chess_move) {
            return Ok(Some(mismatch(format!(
                "{san_plus} is {} in chess but {} on the sheet",
                MoveShape::from_move(pos.board(), chess_move),
                shapes[i]
            ))));
        }
        if filled {
            self.lenient += 1;
        }
        let chosen = moves.into_iter().nth(i).expect("index of a move");
        pos.play_unchecked(chess_move);
        *state = chosen.next;
        *snap = chosen.after;
        if snap.board != *pos.board() || snap.turn != Some(pos.turn()) {
            return Ok(Some(mismatch(format!(
                "after {san_plus} the sheet's position is {}",
                super::board_fen(snap)
            ))));
        }
        let sheet_check = self.game.in_check(state, snap)?;
        if sheet_check != pos.is_check() {
            return Ok(Some(mismatch(format!(
                "after {san_plus} the sheet says the side to move is {}in check",
                if sheet_check { "" } else { "not " }
            ))));
        }
        match san_plus.suffix {
            Some(_) if !pos.is_check() => {
                return Ok(Some(illegal(format!(
                    "{san_plus} is marked as check, but the move does not give check"
                ))));
            }
            Some(Suffix::Checkmate) if !pos.is_checkmate() => {
                return Ok(Some(illegal(format!(
                    "{san_plus} is marked as mate, but it is not"
                ))));
            }
            None if pos.is_check() => self.unmarked_checks += 1,
            _ => {}
        }
        Ok(None)
    }

    /// The sheet's game is over while the record goes on: that is right only if one of the
    /// sheet's own endings (the 50-move rule, a dead position, the step limit) holds, with
    /// its goals; the replay then stops there.
    fn ended_by_rule(
        &mut self,
        state: &M::State,
        pos: &Chess,
        endings: &Endings,
    ) -> Result<Option<Verdict>, ChessError> {
        match expected_ending(pos, self.plies, endings) {
            Some(end @ (Ending::FiftyMoves | Ending::DeadPosition | Ending::StepLimit)) => {
                if let Some(v) = self.check_goals(state, end)? {
                    return Ok(Some(v));
                }
                self.ended_early = Some(end);
                Ok(None)
            }
            Some(end) => Ok(Some(illegal(format!("the record plays on after {end}")))),
            None => Ok(Some(mismatch(
                "the sheet's game is over before this move, but chess's is not",
            ))),
        }
    }

    /// Checks that each colour's goal in `state` is the one `end` gives.
    fn check_goals(
        &mut self,
        state: &M::State,
        end: Ending,
    ) -> Result<Option<Verdict>, ChessError> {
        let roles = self.game.roles();
        let want = end.goals();
        for color in Color::ALL {
            let values = self.game.machine_mut().goal_values(state, roles[color])?;
            if values != [want[color]] {
                return Ok(Some(mismatch(format!(
                    "the game ends in {end}: {color} should score {}, the sheet gives {values:?}",
                    want[color]
                ))));
            }
        }
        Ok(None)
    }

    /// Checks the final position's terminal status and goals.
    fn ending(
        &mut self,
        state: &M::State,
        pos: &Chess,
        endings: &Endings,
    ) -> Result<Option<Verdict>, ChessError> {
        let expected = expected_ending(pos, self.plies, endings);
        let terminal = self.game.machine_mut().is_terminal(state)?;
        match (expected, terminal) {
            (None, false) => Ok(None),
            (None, true) => Ok(Some(mismatch(
                "the sheet's game is over, but chess's is not",
            ))),
            (Some(end), false) => Ok(Some(mismatch(format!(
                "the game ends in {end}, but the sheet's state is not terminal"
            )))),
            (Some(end), true) => self.check_goals(state, end),
        }
    }
}

/// How a game ended, as the sheet should see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The side to move is mated.
    Checkmate(Color),
    /// The side to move has no move and is not in check.
    Stalemate,
    /// 100 half-moves without a capture or pawn move.
    FiftyMoves,
    /// A dead position the sheet recognises.
    DeadPosition,
    /// The sheet's step limit.
    StepLimit,
}

impl Ending {
    /// Each colour's goal value.
    pub fn goals(self) -> shakmaty::ByColor<u8> {
        match self {
            Ending::Checkmate(loser) => {
                let mut g = shakmaty::ByColor {
                    white: 100,
                    black: 100,
                };
                g[loser] = 0;
                g
            }
            _ => shakmaty::ByColor {
                white: 50,
                black: 50,
            },
        }
    }
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Checkmate(loser) => write!(f, "checkmate of {loser}"),
            Ending::Stalemate => f.write_str("stalemate"),
            Ending::FiftyMoves => f.write_str("a draw by the 50-move rule"),
            Ending::DeadPosition => f.write_str("a dead position"),
            Ending::StepLimit => f.write_str("the step limit"),
        }
    }
}

/// The ending a sheet with `endings` should see in `pos`, reached `plies` plies after the
/// sheet's starting state; checkmate comes first.
pub fn expected_ending(pos: &Chess, plies: usize, endings: &Endings) -> Option<Ending> {
    if pos.is_checkmate() {
        return Some(Ending::Checkmate(pos.turn()));
    }
    if pos.is_stalemate() {
        return Some(Ending::Stalemate);
    }
    if endings.fifty_moves && pos.halfmoves() >= 100 {
        return Some(Ending::FiftyMoves);
    }
    let board = pos.board();
    let others = board.occupied() ^ board.kings();
    let dead = match endings.dead {
        DeadPositions::None => false,
        DeadPositions::BareKings => others.is_empty(),
        DeadPositions::KingAndMinor => {
            others.count() <= 1
                && (others & (board.pawns() | board.rooks() | board.queens())).is_empty()
        }
    };
    if dead {
        return Some(Ending::DeadPosition);
    }
    if endings.step_limit.is_some_and(|limit| plies >= limit) {
        return Some(Ending::StepLimit);
    }
    None
}
