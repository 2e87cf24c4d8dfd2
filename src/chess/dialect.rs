//! Dialects: how a chess rule sheet writes its board, its side to move and its other state.
//!
//! A dialect is knowledge about one known sheet, and the only place in `chess` that looks at
//! symbol names. It reads a state's facts into a board and a side to move, writes a position
//! (from a FEN) as facts, builds the state used to ask the sheet whether a side is in check,
//! and says which endings the sheet implements, so that a replay can tell what to expect.
//! Moves are never read here: they are worked out from boards (see
//! [`shape`](super::shape)), so a dialect does not need to know how a sheet writes them.

use std::fmt;

use shakmaty::{
    Board, CastlingSide, Chess, Color, EnPassantMode, File, Piece, Position, Rank, Role, Square,
};

use super::{color_name, role_name};
use ggp_gdl::gdl::{Sym, Term};

/// A chess sheet's way of writing state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Our `rules/chess.kif`: `(cell e 1 wk)` with `b` for an empty square, `(control white)`,
    /// `(castle white king)`, `(ep e 3)`, `(halfmove N)`, `(step N)`.
    Ggp,
    /// The repository's `chess.kif` (Fawcett, Love, Stracuzzi): the same `cell` facts,
    /// `(piece_has_moved wk e 1)`, `(pawn_moved_two wp e)`, `(check white rook a 1)` and
    /// `(step N)` from 1.
    Stanford,
    /// The repository's `chess_200.kif` (Landau): `(cell e 1 white king)` for occupied squares
    /// only, `(kingHasMoved white)`, `(aRookHasMoved white)`, `(hRookHasMoved white)`,
    /// `(canEnPassantCapture e)` and `(step N)` from 1.
    Landau,
}

/// Which positions end the game in a sheet, beyond checkmate and stalemate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endings {
    /// 100 half-moves without a capture or pawn move end the game.
    pub fifty_moves: bool,
    /// Which dead positions end the game.
    pub dead: DeadPositions,
    /// The game ends after this many plies from the sheet's starting state.
    pub step_limit: Option<usize>,
}

/// Dead positions a sheet recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadPositions {
    /// None.
    None,
    /// Only two bare kings.
    BareKings,
    /// Two bare kings, or a king and one bishop or knight against a bare king.
    KingAndMinor,
}

/// How a sheet says whether the side to move is in check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckSource {
    /// The sheet has no notion of check in its state: ask whether the opponent, were it to
    /// move without a king of its own (so that no pin or check holds it back), could take the
    /// king (see [`Reader::probe_facts`]).
    Probe,
    /// The state holds check facts for the side to move.
    StateFacts,
}

/// What a dialect reads from a state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The pieces.
    pub board: Board,
    /// The side to move, if the state names exactly one.
    pub turn: Option<Color>,
    /// For [`CheckSource::StateFacts`]: whether the state holds a check fact for the side to
    /// move.
    pub check_fact: bool,
}

/// A state the dialect cannot read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DialectError {
    /// Two facts give one square different contents.
    #[error("{square} holds both {first} and {second}")]
    TwoPieces {
        /// The square.
        square: Square,
        /// The first content.
        first: String,
        /// The second content.
        second: String,
    },
    /// A board fact the dialect does not understand.
    #[error("unreadable board fact {0}")]
    BadFact(String),
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Dialect {
    /// Every dialect, in the order `auto` tries them.
    pub const ALL: [Dialect; 3] = [Dialect::Ggp, Dialect::Stanford, Dialect::Landau];

    /// The dialect's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Ggp => "ggp",
            Dialect::Stanford => "stanford",
            Dialect::Landau => "landau",
        }
    }

    /// The endings the sheet implements, as its header or rules say.
    pub fn endings(self) -> Endings {
        match self {
            Dialect::Ggp => Endings {
                fifty_moves: true,
                dead: DeadPositions::KingAndMinor,
                step_limit: Some(1000),
            },
            Dialect::Stanford => Endings {
                fifty_moves: false,
                dead: DeadPositions::None,
                step_limit: Some(200),
            },
            Dialect::Landau => Endings {
                fifty_moves: false,
                dead: DeadPositions::BareKings,
                step_limit: Some(200),
            },
        }
    }

    /// Where the sheet's notion of check comes from.
    pub fn check_source(self) -> CheckSource {
        match self {
            Dialect::Stanford => CheckSource::StateFacts,
            Dialect::Ggp | Dialect::Landau => CheckSource::Probe,
        }
    }

    /// The role names, white first.
    pub fn role_names(self) -> [&'static str; 2] {
        ["white", "black"]
    }

    /// A reader of this dialect's states.
    pub fn reader(self) -> Reader {
        Reader::new(self)
    }

    /// The facts of a state holding `pos`, for a game that starts there.
    pub fn write(self, pos: &Chess) -> Vec<Term> {
        let mut facts = Vec::new();
        let board = pos.board();
        let turn = pos.turn();
        let castles = pos.castles();
        let ep = pos.ep_square(EnPassantMode::Always);
        facts.push(app("control", &[color_name(turn)]));
        match self {
            Dialect::Ggp | Dialect::Stanford => {
                for square in Square::ALL {
                    let code = board.piece_at(square).map_or("b", piece_code);
                    facts.push(app("cell", &[file_name(square), rank_name(square), code]));
                }
            }
            Dialect::Landau => {
                for (square, piece) in board {
                    facts.push(app(
                        "cell",
                        &[
                            file_name(square),
                            rank_name(square),
                            color_name(piece.color),
                            role_name(piece.role),
                        ],
                    ));
                }
            }
        }
        match self {
            Dialect::Ggp => {
                for color in Color::ALL {
                    for side in [CastlingSide::KingSide, CastlingSide::QueenSide] {
                        if castles.has(color, side) {
                            let side = if side == CastlingSide::KingSide {
                                "king"
                            } else {
                                "queen"
                            };
                            facts.push(app("castle", &[color_name(color), side]));
                        }
                    }
                }
                if let Some(sq) = ep {
                    facts.push(app("ep", &[file_name(sq), rank_name(sq)]));
                }
                let clock = pos.halfmoves().min(100).to_string();
                facts.push(app("halfmove", &[&clock]));
                facts.push(app("step", &["0"]));
            }
            Dialect::Stanford => {
                for color in Color::ALL {
                    let (king, rook, rank) = match color {
                        Color::White => ("wk", "wr", "1"),
                        Color::Black => ("bk", "br", "8"),
                    };
                    if !castles.has_color(color) {
                        facts.push(app("piece_has_moved", &[king, "e", rank]));
                    } else {
                        if !castles.has(color, CastlingSide::KingSide) {
                            facts.push(app("piece_has_moved", &[rook, "h", rank]));
                        }
                        if !castles.has(color, CastlingSide::QueenSide) {
                            facts.push(app("piece_has_moved", &[rook, "a", rank]));
                        }
                    }
                }
                if let Some(sq) = ep {
                    let pawn = if turn == Color::White { "bp" } else { "wp" };
                    facts.push(app("pawn_moved_two", &[pawn, file_name(sq)]));
                }
                for square in pos.checkers() {
                    if let Some(piece) = board.piece_at(square) {
                        facts.push(app(
                            "check",
                            &[
                                color_name(turn),
                                role_name(piece.role),
                                file_name(square),
                                rank_name(square),
                            ],
                        ));
                    }
                }
                facts.push(app("step", &["1"]));
            }
            Dialect::Landau => {
                for color in Color::ALL {
                    if !castles.has_color(color) {
                        facts.push(app("kingHasMoved", &[color_name(color)]));
                    }
                    if !castles.has(color, CastlingSide::KingSide) {
                        facts.push(app("hRookHasMoved", &[color_name(color)]));
                    }
                    if !castles.has(color, CastlingSide::QueenSide) {
                        facts.push(app("aRookHasMoved", &[color_name(color)]));
                    }
                }
                if let Some(sq) = ep {
                    facts.push(app("canEnPassantCapture", &[file_name(sq)]));
                }
                facts.push(app("step", &["1"]));
            }
        }
        facts
    }
}

/// Reads states of one dialect: the symbols it looks for, interned once, and tables from
/// symbol ids to what they mean.
#[derive(Clone, Debug)]
pub struct Reader {
    dialect: Dialect,
    cell: Sym,
    control: Sym,
    check: Sym,
    /// Per symbol id: file index + 1 (0: not a file).
    files: Vec<u8>,
    /// Per symbol id: rank index + 1.
    ranks: Vec<u8>,
    /// Per symbol id: colour + 1.
    colors: Vec<u8>,
    /// Per symbol id: the piece code (Ggp, Stanford) or role (Landau) it names, as
    /// `PieceCode`.
    pieces: Vec<PieceCode>,
}

/// What a symbol in a cell fact's piece position means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PieceCode {
    Unknown,
    Blank,
    Piece(Piece),
    Role(Role),
}

/// What one fact of a state says about the position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// A square's content.
    Cell(Square, Option<Piece>),
    /// The side to move (`None`: a role that is no colour).
    Control(Option<Color>),
    /// A check fact for this side (the Stanford dialect).
    Check(Color),
    /// Nothing the dialect reads.
    Other,
}

/// A snapshot from the meanings of a state's facts.
///
/// # Errors
/// Two different contents for one square.
pub fn assemble(meanings: impl Iterator<Item = Meaning>) -> Result<Snapshot, DialectError> {
    let mut board = Board::empty();
    let mut placed: [Option<Option<Piece>>; 64] = [None; 64];
    let mut turn = None;
    let mut turns = 0;
    let mut check_fact_for = [false; 2];
    for m in meanings {
        match m {
            Meaning::Cell(square, piece) => match placed[square as usize] {
                Some(first) if first != piece => {
                    return Err(DialectError::TwoPieces {
                        square,
                        first: describe(first),
                        second: describe(piece),
                    });
                }
                Some(_) => {}
                None => {
                    placed[square as usize] = Some(piece);
                    if let Some(p) = piece {
                        board.set_piece_at(square, p);
                    }
                }
            },
            Meaning::Control(c) => {
                turns += 1;
                turn = c;
            }
            Meaning::Check(c) => check_fact_for[c as usize] = true,
            Meaning::Other => {}
        }
    }
    if turns != 1 {
        turn = None;
    }
    let check_fact = turn.is_some_and(|c| check_fact_for[c as usize]);
    Ok(Snapshot {
        board,
        turn,
        check_fact,
    })
}

fn describe(piece: Option<Piece>) -> String {
    match piece {
        None => "nothing".into(),
        Some(p) => format!("{} {}", color_name(p.color), role_name(p.role)),
    }
}

fn table<T: Copy>(entries: &[(Sym, T)], none: T) -> Vec<T> {
    let len = entries
        .iter()
        .map(|(s, _)| s.index() + 1)
        .max()
        .unwrap_or(0);
    let mut v = vec![none; len];
    for &(s, t) in entries {
        v[s.index()] = t;
    }
    v
}

fn lookup<T: Copy>(table: &[T], t: &Term, none: T) -> T {
    match t {
        Term::Const(s) => table.get(s.index()).copied().unwrap_or(none),
        _ => none,
    }
}

impl Reader {
    fn new(dialect: Dialect) -> Reader {
        let files: Vec<(Sym, u8)> = (0..8).map(|i| (Sym::new(FILES[i]), i as u8 + 1)).collect();
        let ranks: Vec<(Sym, u8)> = (0..8).map(|i| (Sym::new(RANKS[i]), i as u8 + 1)).collect();
        let colors = [(Sym::new("white"), 1), (Sym::new("black"), 2)];
        let mut pieces = Vec::new();
        if dialect == Dialect::Landau {
            for role in Role::ALL {
                pieces.push((Sym::new(role_name(role)), PieceCode::Role(role)));
            }
        } else {
            pieces.push((Sym::new("b"), PieceCode::Blank));
            for color in Color::ALL {
                for role in Role::ALL {
                    let piece = Piece { color, role };
                    pieces.push((Sym::new(piece_code(piece)), PieceCode::Piece(piece)));
                }
            }
        }
        Reader {
            dialect,
            cell: Sym::new("cell"),
            control: Sym::new("control"),
            check: Sym::new("check"),
            files: table(&files, 0),
            ranks: table(&ranks, 0),
            colors: table(&colors, 0),
            pieces: table(&pieces, PieceCode::Unknown),
        }
    }

    /// The dialect read.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn square(&self, file: &Term, rank: &Term) -> Option<Square> {
        let f = lookup(&self.files, file, 0);
        let r = lookup(&self.ranks, rank, 0);
        (f > 0 && r > 0)
            .then(|| Square::from_coords(File::new(u32::from(f - 1)), Rank::new(u32::from(r - 1))))
    }

    fn color(&self, t: &Term) -> Option<Color> {
        match lookup(&self.colors, t, 0) {
            1 => Some(Color::White),
            2 => Some(Color::Black),
            _ => None,
        }
    }

    /// What one fact says.
    ///
    /// # Errors
    /// A board fact that cannot be read.
    pub fn meaning(&self, fact: &Term) -> Result<Meaning, DialectError> {
        let Term::App(name, args) = fact else {
            return Ok(Meaning::Other);
        };
        if *name == self.cell {
            return match self.cell(fact) {
                Some((square, piece)) => Ok(Meaning::Cell(square, piece)),
                None => Err(DialectError::BadFact(fact.to_string())),
            };
        }
        if *name == self.control && args.len() == 1 {
            return Ok(Meaning::Control(self.color(&args[0])));
        }
        if *name == self.check
            && args.len() == 4
            && self.dialect == Dialect::Stanford
            && let Some(c) = self.color(&args[0])
        {
            return Ok(Meaning::Check(c));
        }
        Ok(Meaning::Other)
    }

    /// Reads the board and the side to move from a state's facts. Facts the dialect does not
    /// know are ignored.
    ///
    /// # Errors
    /// A board fact that cannot be read, or two pieces on one square.
    pub fn read(&self, facts: &[Term]) -> Result<Snapshot, DialectError> {
        let mut meanings = Vec::with_capacity(facts.len());
        for f in facts {
            meanings.push(self.meaning(f)?);
        }
        assemble(meanings.into_iter())
    }

    /// The two states of the check probe for a state whose side to move is `mover`, or
    /// `None` if it has no king of each side. In both, the other side is to move, there is no
    /// en passant, and the other side's king is replaced by a knight of `mover`'s: without a
    /// king of its own the other side has no pin or check to respect, so every move its
    /// pieces can make is legal, and the knight still blocks the lines the king blocked (it
    /// cannot move: it is not the side to move). In the second state `mover`'s king is also
    /// replaced, by a knight of the other side, which no move of that side can land on. The
    /// moves legal in the first state and not in the second are exactly those that take
    /// `mover`'s king.
    pub fn probe_facts(&self, facts: &[Term], mover: Color) -> Option<(Vec<Term>, Vec<Term>)> {
        let other = !mover;
        let king = |color| Piece {
            color,
            role: Role::King,
        };
        let knight = |color| Piece {
            color,
            role: Role::Knight,
        };
        let mut kings = 0;
        let mut open = Vec::with_capacity(facts.len());
        let mut blocked = Vec::with_capacity(facts.len());
        for fact in facts {
            let Term::App(name, args) = fact else {
                open.push(fact.clone());
                blocked.push(fact.clone());
                continue;
            };
            if *name == self.control && args.len() == 1 {
                let control = app("control", &[color_name(other)]);
                open.push(control.clone());
                blocked.push(control);
            } else if let Some((square, piece)) = self.cell(fact) {
                let (a, b) = if piece == Some(king(other)) {
                    kings += 1;
                    (Some(knight(mover)), Some(knight(mover)))
                } else if piece == Some(king(mover)) {
                    kings += 1;
                    (piece, Some(knight(other)))
                } else {
                    (piece, piece)
                };
                open.extend(self.cell_fact(square, a));
                blocked.extend(self.cell_fact(square, b));
            } else if matches!(
                (name.name(), args.len()),
                ("ep", 2) | ("canEnPassantCapture", 1) | ("pawn_moved_two", 2)
            ) {
                // En passant is a right of the side that was to move; the probe drops it.
            } else {
                open.push(fact.clone());
                blocked.push(fact.clone());
            }
        }
        (kings == 2).then_some((open, blocked))
    }

    /// The square and content of a cell fact.
    fn cell(&self, fact: &Term) -> Option<(Square, Option<Piece>)> {
        let Term::App(name, args) = fact else {
            return None;
        };
        if *name != self.cell {
            return None;
        }
        match (self.dialect, args.len()) {
            (Dialect::Ggp | Dialect::Stanford, 3) => {
                let square = self.square(&args[0], &args[1])?;
                match lookup(&self.pieces, &args[2], PieceCode::Unknown) {
                    PieceCode::Blank => Some((square, None)),
                    PieceCode::Piece(p) => Some((square, Some(p))),
                    _ => None,
                }
            }
            (Dialect::Landau, 4) => {
                let square = self.square(&args[0], &args[1])?;
                let color = self.color(&args[2])?;
                match lookup(&self.pieces, &args[3], PieceCode::Unknown) {
                    PieceCode::Role(role) => Some((square, Some(Piece { color, role }))),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The cell fact for a square's content (none for an empty square in the Landau
    /// dialect).
    fn cell_fact(&self, square: Square, piece: Option<Piece>) -> Option<Term> {
        let (f, r) = (file_name(square), rank_name(square));
        match (self.dialect, piece) {
            (Dialect::Landau, None) => None,
            (Dialect::Landau, Some(p)) => {
                Some(app("cell", &[f, r, color_name(p.color), role_name(p.role)]))
            }
            (_, p) => Some(app("cell", &[f, r, p.map_or("b", piece_code)])),
        }
    }
}

fn constant(name: &str) -> Term {
    Term::Const(Sym::new(name))
}

fn app(name: &str, args: &[&str]) -> Term {
    Term::App(Sym::new(name), args.iter().map(|a| constant(a)).collect())
}

const FILES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
const RANKS: [&str; 8] = ["1", "2", "3", "4", "5", "6", "7", "8"];

fn file_name(sq: Square) -> &'static str {
    FILES[sq.file() as usize]
}

fn rank_name(sq: Square) -> &'static str {
    RANKS[sq.rank() as usize]
}

fn piece_code(piece: Piece) -> &'static str {
    const CODES: [[&str; 6]; 2] = [
        ["wp", "wn", "wb", "wr", "wq", "wk"],
        ["bp", "bn", "bb", "br", "bq", "bk"],
    ];
    let color = usize::from(piece.color == Color::Black);
    CODES[color][piece.role as usize - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(fen: &str) -> Chess {
        crate::chess::position_from_fen(fen).unwrap()
    }

    #[test]
    fn facts_round_trip_through_every_dialect() {
        let pos = position("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w Kq - 3 9");
        for d in Dialect::ALL {
            let facts = d.write(&pos);
            let snap = d.reader().read(&facts).unwrap();
            assert_eq!(&snap.board, pos.board(), "{d}");
            assert_eq!(snap.turn, Some(Color::White), "{d}");
            assert!(!snap.check_fact, "{d}");
        }
    }

    #[test]
    fn ggp_facts_are_readable() {
        let pos = position("8/8/8/1k6/3Pp3/8/8/4KQ2 b - d3 5 40");
        let printed: Vec<String> = Dialect::Ggp
            .write(&pos)
            .iter()
            .map(Term::to_string)
            .collect();
        for fact in [
            "(control black)",
            "(cell d 4 wp)",
            "(cell a 1 b)",
            "(ep d 3)",
            "(halfmove 5)",
            "(step 0)",
        ] {
            assert!(printed.iter().any(|f| f == fact), "{fact} missing");
        }
        assert!(!printed.iter().any(|f| f.starts_with("(castle")));
    }

    #[test]
    fn stanford_check_facts_name_the_checker() {
        let pos = position("4k3/8/8/8/8/8/4r3/4K3 w - - 0 1");
        let facts = Dialect::Stanford.write(&pos);
        assert!(
            facts
                .iter()
                .any(|f| f.to_string() == "(check white rook e 2)")
        );
        assert!(Dialect::Stanford.reader().read(&facts).unwrap().check_fact);
    }

    #[test]
    fn probe_states() {
        let pos = position("4k3/8/8/8/8/8/4r3/4K3 w - - 0 1");
        let knight = |color| {
            Some(Piece {
                color,
                role: Role::Knight,
            })
        };
        for d in [Dialect::Ggp, Dialect::Landau] {
            let reader = d.reader();
            let (open, blocked) = reader.probe_facts(&d.write(&pos), Color::White).unwrap();
            let open = reader.read(&open).unwrap();
            let blocked = reader.read(&blocked).unwrap();
            assert_eq!(open.turn, Some(Color::Black));
            assert_eq!(open.board.piece_at(Square::E8), knight(Color::White));
            assert_eq!(open.board.king_of(Color::White), Some(Square::E1));
            assert_eq!(blocked.board.piece_at(Square::E8), knight(Color::White));
            assert_eq!(blocked.board.piece_at(Square::E1), knight(Color::Black));
            assert_eq!(
                blocked.board.piece_at(Square::E2),
                open.board.piece_at(Square::E2)
            );
        }
    }

    #[test]
    fn bad_facts_are_refused() {
        let bad = ggp_gdl::gdl::parse_term("(cell i 1 wk)").unwrap();
        let reader = Dialect::Ggp.reader();
        assert!(matches!(reader.read(&[bad]), Err(DialectError::BadFact(_))));
        let a = ggp_gdl::gdl::parse_term("(cell a 1 wk)").unwrap();
        let b = ggp_gdl::gdl::parse_term("(cell a 1 bk)").unwrap();
        assert!(matches!(
            reader.read(&[a, b]),
            Err(DialectError::TwoPieces { .. })
        ));
    }
}
