//! How moves are written for people, and how a game's ending is named.
//!
//! - **Chess sheets** (a sheet of a known [`Dialect`] whose initial state is the standard
//!   starting position, as [`ChessGame::detect`] finds it) get SAN: each legal move is
//!   understood by the board change it makes ([`MoveShape`]), matched with the move of an
//!   independent chess position (`shakmaty`) kept beside the game, and written as that move's
//!   SAN with its `+` or `#`. What a person types is read as SAN (`e4`, `Nf3`, `O-O`, `0-0-0`,
//!   `exd5`, `e8=Q`, with `+`, `#`, `!`, `?` tolerated, and a forgotten `x` forgiven when that
//!   leaves one move) or as coordinates (`e2e4`, `e2-e4`, `Ng1-f3`, `e7e8q`), always against
//!   the sheet's own legal moves. A sheet move chess does not have is written by its shape
//!   (`Ke1-f1`). The ending is named from the chess position: checkmate, stalemate, the
//!   50-move rule, a dead position, the step limit (those the dialect implements).
//! - **Other board games** get squares (`e2e4`, `d3`), from the board detection
//!   ([`crate::board`]); the ending is named when the winner's last placement completes a
//!   straight line of equal pieces (`four in a row`), which is found on the board alone.
//! - **Anything else** is written as its move term.

use shakmaty::san::{San, SanPlus};
use shakmaty::{ByColor, Chess, Color, Position, Role, Square as ChessSquare};

use crate::board::{Cells, Layout, Square};
use crate::chess::dialect::{Dialect, Reader, Snapshot};
use crate::chess::replay::{Ending, expected_ending};
use crate::chess::{ChessGame, MoveShape};
use ggp_engine::machine::StateMachine;
use ggp_gdl::gdl::Term;

/// A chess sheet seen as chess: its dialect's reader and which role plays which colour.
#[derive(Debug, Clone)]
pub struct ChessView {
    dialect: Dialect,
    reader: Reader,
    roles: ByColor<usize>,
}

impl ChessView {
    /// The chess view of `machine`'s game, when it is a chess sheet of a known dialect that
    /// starts from the standard position.
    pub fn detect<M: StateMachine>(machine: &M) -> Option<ChessView> {
        let dialect = ChessGame::<M>::detect(machine)?;
        let [white, black] = dialect.role_names();
        let find = |name: &str| {
            machine
                .roles()
                .iter()
                .position(|r| matches!(r, Term::Const(s) if s.name() == name))
        };
        Some(ChessView {
            dialect,
            reader: dialect.reader(),
            roles: ByColor {
                white: find(white)?,
                black: find(black)?,
            },
        })
    }

    /// The board and side to move of a state's facts, if the dialect can read them.
    pub fn snapshot(&self, facts: &[Term]) -> Option<Snapshot> {
        self.reader.read(facts).ok()
    }

    /// The colour role `role` plays.
    pub fn color(&self, role: usize) -> Option<Color> {
        Color::ALL.into_iter().find(|&c| self.roles[c] == role)
    }

    /// The position after a move whose boards before and after are `before` and `after`,
    /// played from `pos`: the chess move with the same shape. `None` when the change is no
    /// legal chess move in `pos` or chess's board after it differs from the sheet's.
    pub fn follow(&self, pos: &Chess, before: &Snapshot, after: &Snapshot) -> Option<Chess> {
        let shape = MoveShape::from_boards(&before.board, &after.board, pos.turn()).ok()?;
        let m = chess_move(pos, &shape)?;
        let mut next = pos.clone();
        next.play_unchecked(m);
        (*next.board() == after.board).then_some(next)
    }

    /// How the game stands ended in `pos`, `plies` plies from the start, by the endings the
    /// dialect implements.
    pub fn ending(&self, pos: &Chess, plies: usize) -> Option<String> {
        expected_ending(pos, plies, &self.dialect.endings()).map(|e| {
            match e {
                Ending::Checkmate(_) => "checkmate",
                Ending::Stalemate => "stalemate",
                Ending::FiftyMoves => "the 50-move rule",
                Ending::DeadPosition => "a dead position",
                Ending::StepLimit => "the step limit",
            }
            .to_string()
        })
    }
}

/// The legal move of `pos` with this shape.
fn chess_move(pos: &Chess, shape: &MoveShape) -> Option<shakmaty::Move> {
    pos.legal_moves()
        .into_iter()
        .find(|&m| MoveShape::from_move(pos.board(), m) == *shape)
}

/// A move's SAN in `pos` with its check suffix, or its shape when chess has no such move.
pub fn san(pos: Option<&Chess>, shape: &MoveShape) -> String {
    match pos.and_then(|p| chess_move(p, shape).map(|m| (p, m))) {
        Some((p, m)) => SanPlus::from_move(p.clone(), m).to_string(),
        None => shape.to_string(),
    }
}

/// What a person typed, read as a chess move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChessInput {
    /// SAN.
    San(San),
    /// Coordinates: the piece if named, from, to, the promotion piece if named.
    Coordinates(Option<Role>, ChessSquare, ChessSquare, Option<Role>),
}

impl ChessInput {
    /// Reads SAN or coordinates; `None` when the text is neither.
    pub fn parse(text: &str) -> Option<ChessInput> {
        let text: String = text.trim().trim_end_matches(['!', '?']).into();
        let text = text.trim_end_matches(['+', '#']);
        if text.is_empty() || !text.is_ascii() {
            return None;
        }
        // Castling may be written with zeros.
        let castle = text.replace('0', "O");
        if castle == "O-O" || castle == "O-O-O" {
            return castle.parse().ok().map(ChessInput::San);
        }
        if let Some(c) = coordinates(text) {
            return Some(c);
        }
        // A piece letter typed in lower case (not `b`, which is a file).
        let mut fixed = text.to_string();
        if let Some(first @ ('n' | 'r' | 'q' | 'k')) = text.chars().next()
            && text.len() > 2
        {
            fixed.replace_range(..1, &first.to_ascii_uppercase().to_string());
        }
        fixed.parse::<San>().ok().map(ChessInput::San)
    }

    /// Whether a move of this shape is what was typed; `loose` forgives a wrong capture mark.
    pub fn fits(&self, shape: &MoveShape, loose: bool) -> bool {
        match *self {
            ChessInput::San(San::Normal {
                role,
                file,
                rank,
                to,
                promotion,
                capture,
            }) if loose => shape.matches(&San::Normal {
                role,
                file,
                rank,
                to,
                promotion,
                capture: !capture,
            }),
            ChessInput::San(ref s) => !loose && shape.matches(s),
            ChessInput::Coordinates(role, from, to, promotion) => {
                !loose
                    && shape.from == from
                    && shape.to == to
                    && role.is_none_or(|r| r == shape.role)
                    && promotion.or(shape.promotion.map(|_| Role::Queen)) == shape.promotion
            }
        }
    }
}

/// `e2e4`, `e2-e4`, `Ng1-f3`, `Ng1xf3`, `e7e8q`, `e7e8=Q`.
fn coordinates(text: &str) -> Option<ChessInput> {
    let compact: String = text
        .chars()
        .filter(|c| !matches!(c, '-' | 'x' | '='))
        .collect();
    let mut rest = compact.as_str();
    let mut role = None;
    if let Some(c) = rest.chars().next()
        && c.is_ascii_uppercase()
    {
        role = Some(Role::from_char(c)?);
        rest = &rest[1..];
    }
    if rest.len() < 4 {
        return None;
    }
    let from: ChessSquare = rest[..2].parse().ok()?;
    let to: ChessSquare = rest[2..4].parse().ok()?;
    let promotion = match &rest[4..] {
        "" => None,
        p if p.len() == 1 => Some(Role::from_char(p.chars().next()?.to_ascii_lowercase())?),
        _ => return None,
    };
    Some(ChessInput::Coordinates(role, from, to, promotion))
}

/// The straight line of at least three equal pieces through one of `placed`, the longest,
/// in order; `None` when there is none.
pub fn line_through(layout: &Layout, cells: &Cells, placed: &[Square]) -> Option<Vec<Square>> {
    let width = layout.files().values.len() as isize;
    let height = layout.ranks().values.len() as isize;
    let at = |f: isize, r: isize| -> Option<&Vec<Term>> {
        if f < 0 || r < 0 || f >= width || r >= height {
            return None;
        }
        cells[layout.index(Square {
            file: f as usize,
            rank: r as usize,
        })]
        .as_ref()
    };
    let mut best: Option<Vec<Square>> = None;
    for square in placed {
        let (f, r) = (square.file as isize, square.rank as isize);
        let Some(content) = at(f, r) else { continue };
        for (df, dr) in [(1, 0), (0, 1), (1, 1), (1, -1)] {
            let mut start = 0;
            while at(f + (start - 1) * df, r + (start - 1) * dr) == Some(content) {
                start -= 1;
            }
            let mut end = 0;
            while at(f + (end + 1) * df, r + (end + 1) * dr) == Some(content) {
                end += 1;
            }
            let line: Vec<Square> = (start..=end)
                .map(|k| Square {
                    file: (f + k * df) as usize,
                    rank: (r + k * dr) as usize,
                })
                .collect();
            if line.len() >= 3 && best.as_ref().is_none_or(|b| line.len() > b.len()) {
                best = Some(line);
            }
        }
    }
    best
}

/// A line's length in words: `four in a row`.
pub fn line_name(len: usize) -> String {
    let word = match len {
        3 => "three".to_string(),
        4 => "four".to_string(),
        5 => "five".to_string(),
        6 => "six".to_string(),
        n => n.to_string(),
    };
    format!("{word} in a row")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sq(s: &str) -> ChessSquare {
        s.parse().unwrap()
    }

    #[test]
    fn reads_san_and_coordinates() {
        for text in [
            "e4", "Nf3", "O-O", "O-O-O", "exd5", "e8=Q", "Qxf7#", "Nf3+", "e4!?",
        ] {
            assert!(
                matches!(ChessInput::parse(text), Some(ChessInput::San(_))),
                "{text}"
            );
        }
        assert_eq!(
            ChessInput::parse("0-0"),
            Some(ChessInput::San(San::Castle(
                shakmaty::CastlingSide::KingSide
            )))
        );
        assert_eq!(
            ChessInput::parse("nf3"),
            ChessInput::parse("Nf3"),
            "a lower-case knight"
        );
        assert_eq!(
            ChessInput::parse("e1f1"),
            Some(ChessInput::Coordinates(None, sq("e1"), sq("f1"), None))
        );
        assert_eq!(
            ChessInput::parse("Ng1-f3"),
            Some(ChessInput::Coordinates(
                Some(Role::Knight),
                sq("g1"),
                sq("f3"),
                None
            ))
        );
        assert_eq!(
            ChessInput::parse("e7e8q"),
            Some(ChessInput::Coordinates(
                None,
                sq("e7"),
                sq("e8"),
                Some(Role::Queen)
            ))
        );
        for text in ["", "hello", "(move e 2 e 4)", "z9", "é4"] {
            assert_eq!(ChessInput::parse(text), None, "{text}");
        }
    }

    #[test]
    fn a_king_step_is_not_castling() {
        let step = MoveShape {
            from: sq("e1"),
            to: sq("f1"),
            role: Role::King,
            promotion: None,
            capture: false,
            castle: None,
        };
        let castle = MoveShape {
            to: sq("g1"),
            castle: Some(shakmaty::CastlingSide::KingSide),
            ..step
        };
        let typed = ChessInput::parse("e1f1").unwrap();
        assert!(typed.fits(&step, false));
        assert!(!typed.fits(&castle, false));
        let typed = ChessInput::parse("O-O").unwrap();
        assert!(typed.fits(&castle, false) && !typed.fits(&step, false));
    }

    #[test]
    fn a_forgotten_capture_mark_is_forgiven_only_loosely() {
        let take = MoveShape {
            from: sq("g1"),
            to: sq("f3"),
            role: Role::Knight,
            promotion: None,
            capture: true,
            castle: None,
        };
        let typed = ChessInput::parse("Nf3").unwrap();
        assert!(!typed.fits(&take, false));
        assert!(typed.fits(&take, true));
    }

    #[test]
    fn san_with_check_and_shape_fallback() {
        let pos: Chess = crate::chess::position_from_fen(
            "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2",
        )
        .unwrap();
        let mate = MoveShape {
            from: sq("d8"),
            to: sq("h4"),
            role: Role::Queen,
            promotion: None,
            capture: false,
            castle: None,
        };
        assert_eq!(san(Some(&pos), &mate), "Qh4#");
        let impossible = MoveShape {
            from: sq("d8"),
            to: sq("a5"),
            ..mate
        };
        assert_eq!(san(Some(&pos), &impossible), "Qd8-a5");
    }

    #[test]
    fn line_names() {
        assert_eq!(line_name(4), "four in a row");
        assert_eq!(line_name(7), "7 in a row");
    }
}
