//! What a move does, worked out by comparing the board before and after it.
//!
//! This is how a GDL move is understood without knowing how the sheet writes moves: the
//! squares the mover's pieces left and reached, and the opponent's pieces that disappeared,
//! give the from-square, the to-square, the piece, a promotion, a capture and castling. A SAN
//! move is then matched against these shapes, and so is each move of an independent move
//! generator.

use std::fmt;

use shakmaty::san::San;
use shakmaty::{Board, CastlingSide, Color, Move, Role, Square};

use super::{color_name, role_name};

/// A move as seen on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MoveShape {
    /// The square the moving piece left (the king's square for castling).
    pub from: Square,
    /// The square it reached (the king's for castling).
    pub to: Square,
    /// The moving piece's kind, before any promotion.
    pub role: Role,
    /// The kind of piece a pawn became.
    pub promotion: Option<Role>,
    /// Whether an opponent's piece left the board.
    pub capture: bool,
    /// Castling, if the king and a rook moved together.
    pub castle: Option<CastlingSide>,
}

/// A board change that is no single chess move.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShapeError(pub String);

impl MoveShape {
    /// The shape of the move that turned `before` into `after`, played by `mover`.
    ///
    /// # Errors
    /// The change is not one chess move: nothing moved, pieces appeared from nowhere, the
    /// mover's pieces moved in a way no move does, or an opponent's piece appeared.
    pub fn from_boards(
        before: &Board,
        after: &Board,
        mover: Color,
    ) -> Result<MoveShape, ShapeError> {
        let mut left = Vec::new();
        let mut reached = Vec::new();
        let mut taken = 0;
        for sq in Square::ALL {
            let b = before.piece_at(sq);
            let a = after.piece_at(sq);
            if a == b {
                continue;
            }
            match b {
                Some(p) if p.color == mover => left.push((sq, p.role)),
                Some(_) => taken += 1,
                None => {}
            }
            match a {
                Some(p) if p.color == mover => reached.push((sq, p.role)),
                Some(p) => {
                    return Err(ShapeError(format!(
                        "a {} {} appeared on {sq}",
                        color_name(p.color),
                        role_name(p.role)
                    )));
                }
                None => {}
            }
        }
        let capture = taken > 0;
        match (&left[..], &reached[..]) {
            (&[(from, role)], &[(to, new_role)]) => {
                let promotion = if new_role == role {
                    None
                } else if role == Role::Pawn && new_role != Role::King && new_role != Role::Pawn {
                    Some(new_role)
                } else {
                    return Err(ShapeError(format!(
                        "a {} left {from} and a {} reached {to}",
                        role_name(role),
                        role_name(new_role)
                    )));
                };
                if taken > 1 {
                    return Err(ShapeError(format!("one move took {taken} pieces")));
                }
                Ok(MoveShape {
                    from,
                    to,
                    role,
                    promotion,
                    capture,
                    castle: None,
                })
            }
            (&[l1, l2], &[r1, r2]) if !capture => {
                let king = [l1, l2].into_iter().find(|l| l.1 == Role::King);
                let king_to = [r1, r2].into_iter().find(|r| r.1 == Role::King);
                let rooks = [l1, l2, r1, r2]
                    .iter()
                    .filter(|x| x.1 == Role::Rook)
                    .count();
                match (king, king_to) {
                    (Some((from, _)), Some((to, _))) if rooks == 2 && from.rank() == to.rank() => {
                        let castle = if to.file() > from.file() {
                            CastlingSide::KingSide
                        } else {
                            CastlingSide::QueenSide
                        };
                        Ok(MoveShape {
                            from,
                            to,
                            role: Role::King,
                            promotion: None,
                            capture: false,
                            castle: Some(castle),
                        })
                    }
                    _ => Err(ShapeError("two pieces moved, and not king and rook".into())),
                }
            }
            ([], []) if !capture => Err(ShapeError("the board did not change".into())),
            _ => Err(ShapeError(format!(
                "{} of the mover's pieces left a square, {} reached one, {taken} taken",
                left.len(),
                reached.len()
            ))),
        }
    }

    /// The shape of a move of the `shakmaty` move generator, played on `board`.
    pub fn from_move(board: &Board, m: Move) -> MoveShape {
        match m {
            Move::Castle { king, rook } => {
                let side = if rook.file() > king.file() {
                    CastlingSide::KingSide
                } else {
                    CastlingSide::QueenSide
                };
                MoveShape {
                    from: king,
                    to: Square::from_coords(side.king_to_file(), king.rank()),
                    role: Role::King,
                    promotion: None,
                    capture: false,
                    castle: Some(side),
                }
            }
            Move::EnPassant { from, to } => MoveShape {
                from,
                to,
                role: Role::Pawn,
                promotion: None,
                capture: true,
                castle: None,
            },
            Move::Normal {
                role,
                from,
                capture,
                to,
                promotion,
            } => MoveShape {
                from,
                to,
                role,
                promotion,
                capture: capture.is_some() || board.piece_at(to).is_some(),
                castle: None,
            },
            Move::Put { role, to } => MoveShape {
                from: to,
                to,
                role,
                promotion: None,
                capture: false,
                castle: None,
            },
        }
    }

    /// Whether the SAN move names this move: piece, disambiguation, capture flag, target and
    /// promotion, or the castling side. A pawn move to the last rank written without a
    /// promotion piece is read as a queen's promotion (`e8` as `e8=Q`), as some records do.
    pub fn matches(&self, san: &San) -> bool {
        match *san {
            San::Normal {
                role,
                file,
                rank,
                capture,
                to,
                promotion,
            } => {
                let promotion = lenient_promotion(role, to, promotion);
                self.castle.is_none()
                    && self.role == role
                    && self.to == to
                    && file.is_none_or(|f| f == self.from.file())
                    && rank.is_none_or(|r| r == self.from.rank())
                    && self.capture == capture
                    && self.promotion == promotion
            }
            San::Castle(side) => self.castle == Some(side),
            San::Put { .. } | San::Null => false,
        }
    }
}

/// The promotion a SAN move means: as written, or a queen for a pawn move to the first or
/// last rank written without one.
pub fn lenient_promotion(role: Role, to: Square, promotion: Option<Role>) -> Option<Role> {
    let last = matches!(to.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth);
    if role == Role::Pawn && last && promotion.is_none() {
        Some(Role::Queen)
    } else {
        promotion
    }
}

/// The SAN with a missing promotion piece filled in as a queen (see [`lenient_promotion`]);
/// `true` if it was missing.
pub fn lenient_san(san: San) -> (San, bool) {
    match san {
        San::Normal {
            role,
            file,
            rank,
            capture,
            to,
            promotion,
        } => {
            let filled = lenient_promotion(role, to, promotion);
            let san = San::Normal {
                role,
                file,
                rank,
                capture,
                to,
                promotion: filled,
            };
            (san, filled != promotion)
        }
        other => (other, false),
    }
}

impl fmt::Display for MoveShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.castle {
            Some(CastlingSide::KingSide) => return f.write_str("O-O"),
            Some(CastlingSide::QueenSide) => return f.write_str("O-O-O"),
            None => {}
        }
        let sep = if self.capture { 'x' } else { '-' };
        write!(f, "{}{}{sep}{}", self.role.upper_char(), self.from, self.to)?;
        if let Some(p) = self.promotion {
            write!(f, "={}", p.upper_char())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, Chess, Position};

    fn position(fen: &str) -> Chess {
        Fen::from_ascii(fen.as_bytes())
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap()
    }

    /// Every legal move's board change gives back the move's own shape, and exactly one
    /// SAN matches it.
    fn check_all(fen: &str) {
        let pos = position(fen);
        let moves = pos.legal_moves();
        for &m in &moves {
            let mut after = pos.clone();
            after.play_unchecked(m);
            let shape = MoveShape::from_boards(pos.board(), after.board(), pos.turn()).unwrap();
            assert_eq!(shape, MoveShape::from_move(pos.board(), m), "{m:?}");
            let san = San::from_move(&pos, m);
            let n = moves
                .iter()
                .filter(|&&o| {
                    let mut a = pos.clone();
                    a.play_unchecked(o);
                    MoveShape::from_boards(pos.board(), a.board(), pos.turn())
                        .unwrap()
                        .matches(&san)
                })
                .count();
            assert_eq!(n, 1, "{san}");
        }
    }

    #[test]
    fn shapes_of_every_kind_of_move() {
        // Castling both ways, promotions with and without capture.
        check_all("r3k2r/pPppqpb1/bn2pnp1/3PN3/4P3/2N2Q1p/P1PBBPPP/R3K2R w KQkq - 0 1");
        // En passant.
        check_all("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3");
        // Disambiguation by file and by rank.
        check_all("4k3/8/8/R6R/8/8/R7/4K3 w - - 0 1");
    }

    #[test]
    fn promotion_without_piece_reads_as_queen() {
        let san: San = "e8".parse().unwrap();
        let (filled, changed) = lenient_san(san);
        assert!(changed);
        assert_eq!(filled.to_string(), "e8=Q");
    }

    #[test]
    fn impossible_changes_are_refused() {
        let before = position("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
        let empty = Board::empty();
        assert!(MoveShape::from_boards(before.board(), before.board(), Color::White).is_err());
        assert!(MoveShape::from_boards(before.board(), &empty, Color::White).is_err());
    }
}
