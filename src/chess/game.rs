//! A chess sheet on an engine: positions, moves with their shapes, and check.
//!
//! [`ChessGame`] wraps any [`StateMachine`] running a chess sheet of a known
//! [`Dialect`]. It starts games from a FEN position, reads the board of any state, lists the
//! side to move's legal moves together with the state each one leads to and its
//! [`MoveShape`], and asks the sheet whether the side to move is in check.

use shakmaty::{ByColor, Chess, Color, Position};

use ggp_engine::machine::{MachineError, StateMachine};
use ggp_gdl::gdl::Term;

use super::dialect::{CheckSource, Dialect, DialectError, Meaning, Reader, Snapshot, assemble};
use super::shape::{MoveShape, ShapeError};

/// Why a chess sheet could not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChessError {
    /// The engine failed or the sheet broke a rule of GDL.
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// A state the dialect cannot read.
    #[error(transparent)]
    Dialect(#[from] DialectError),
    /// The sheet's roles are not those of the dialect.
    #[error("the sheet has no role {0}")]
    MissingRole(&'static str),
    /// A state without exactly one side to move.
    #[error("the state does not say whose turn it is")]
    NoTurn,
    /// The side not to move has other than exactly one legal move.
    #[error("{role} has {count} legal moves while the other side is to move")]
    Waiting {
        /// The waiting role.
        role: &'static str,
        /// How many legal moves it has.
        count: usize,
    },
}

/// One legal move of the side to move.
#[derive(Clone, Debug)]
pub struct GdlMove<M: StateMachine> {
    /// The move.
    pub mv: M::Move,
    /// The state after it.
    pub next: M::State,
    /// The board and side to move after it.
    pub after: Snapshot,
    /// What it does on the board, or why it is no chess move.
    pub shape: Result<MoveShape, ShapeError>,
}

/// A chess sheet running on an engine.
pub struct ChessGame<M: StateMachine> {
    machine: M,
    reader: Reader,
    roles: ByColor<usize>,
    scratch: Vec<M::Move>,
    /// What each fact id of the engine means, once read (see
    /// [`StateMachine::fact_ids_into`]).
    meanings: Vec<Option<Meaning>>,
    ids: Vec<u32>,
}

impl<M: StateMachine> ChessGame<M> {
    /// Wraps `machine`, whose sheet is written in `dialect`.
    ///
    /// # Errors
    /// The sheet lacks one of the dialect's roles.
    pub fn new(machine: M, dialect: Dialect) -> Result<ChessGame<M>, ChessError> {
        let [white, black] = dialect.role_names();
        let find = |name: &'static str| {
            machine
                .roles()
                .iter()
                .position(|r| matches!(r, Term::Const(s) if s.name() == name))
                .ok_or(ChessError::MissingRole(name))
        };
        let roles = ByColor {
            white: find(white)?,
            black: find(black)?,
        };
        Ok(ChessGame {
            machine,
            reader: dialect.reader(),
            roles,
            scratch: Vec::new(),
            meanings: Vec::new(),
            ids: Vec::new(),
        })
    }

    /// The dialect whose reading of `machine`'s initial state is the standard starting
    /// position with white to move (our own sheet is told apart from the Stanford sheet by its
    /// half-move clock).
    pub fn detect(machine: &M) -> Option<Dialect> {
        let facts = machine.state_terms(&machine.initial_state());
        let has_clock = facts
            .iter()
            .any(|f| matches!(f, Term::App(s, a) if a.len() == 1 && s.name() == "halfmove"));
        Dialect::ALL.into_iter().find(|&d| {
            if (d == Dialect::Ggp) != has_clock {
                return false;
            }
            d.reader().read(&facts).is_ok_and(|s| {
                s.turn == Some(Color::White) && s.board == shakmaty::Board::default()
            })
        })
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.reader.dialect()
    }

    /// The engine.
    pub fn machine(&self) -> &M {
        &self.machine
    }

    /// The engine, mutably.
    pub fn machine_mut(&mut self) -> &mut M {
        &mut self.machine
    }

    /// The role index of each colour.
    pub fn roles(&self) -> ByColor<usize> {
        self.roles
    }

    /// The sheet's initial state.
    pub fn initial_state(&self) -> M::State {
        self.machine.initial_state()
    }

    /// A state holding `pos`, as the dialect writes it.
    ///
    /// # Errors
    /// The engine cannot hold one of the facts.
    pub fn state_of(&mut self, pos: &Chess) -> Result<M::State, ChessError> {
        let facts = self.dialect().write(pos);
        Ok(self.machine.state_from_terms(&facts)?)
    }

    /// The board and side to move of `state`.
    ///
    /// # Errors
    /// The dialect cannot read the state.
    pub fn snapshot(&mut self, state: &M::State) -> Result<Snapshot, ChessError> {
        if !self.machine.fact_ids_into(state, &mut self.ids) {
            return Ok(self.reader.read(&self.machine.state_terms(state))?);
        }
        let known =
            |m: &Vec<Option<Meaning>>, id: u32| m.get(id as usize).is_some_and(Option::is_some);
        if !self.ids.iter().all(|&id| known(&self.meanings, id)) {
            let terms = self.machine.state_terms(state);
            for (&id, term) in self.ids.iter().zip(&terms) {
                let meaning = self.reader.meaning(term)?;
                let i = id as usize;
                if self.meanings.len() <= i {
                    self.meanings.resize(i + 1, None);
                }
                self.meanings[i] = Some(meaning);
            }
        }
        let meanings = &self.meanings;
        Ok(assemble(self.ids.iter().map(|&id| {
            meanings[id as usize].unwrap_or(Meaning::Other)
        }))?)
    }

    /// The joint move in which the side to move plays `mv` and the other side its one
    /// legal move.
    ///
    /// # Errors
    /// The other side has no move or several; the engine failed.
    pub fn joint(
        &mut self,
        state: &M::State,
        mover: Color,
        mv: M::Move,
    ) -> Result<Vec<M::Move>, ChessError> {
        let waiting = !mover;
        self.scratch.clear();
        self.machine
            .legal_moves_into(state, self.roles[waiting], &mut self.scratch)?;
        if self.scratch.len() != 1 {
            return Err(ChessError::Waiting {
                role: self.dialect().role_names()[usize::from(waiting == Color::Black)],
                count: self.scratch.len(),
            });
        }
        let mut joint = vec![self.scratch[0]; self.machine.roles().len()];
        joint[self.roles[mover]] = mv;
        Ok(joint)
    }

    /// The legal moves of the side to move in `state` (whose snapshot is `before`), each with
    /// the state it leads to and its shape.
    ///
    /// # Errors
    /// No side to move; the engine failed; a resulting state cannot be read.
    pub fn moves(
        &mut self,
        state: &M::State,
        before: &Snapshot,
    ) -> Result<Vec<GdlMove<M>>, ChessError> {
        let mover = before.turn.ok_or(ChessError::NoTurn)?;
        let legal = self.machine.legal_moves(state, self.roles[mover])?;
        let mut out = Vec::with_capacity(legal.len());
        for mv in legal {
            let joint = self.joint(state, mover, mv)?;
            let next = self.machine.next_state_unchecked(state, &joint)?;
            let after = self.snapshot(&next)?;
            let shape = MoveShape::from_boards(&before.board, &after.board, mover);
            out.push(GdlMove {
                mv,
                next,
                after,
                shape,
            });
        }
        Ok(out)
    }

    /// Whether the sheet says the side to move in `state` (whose snapshot is `snap`) is in
    /// check: from the state's check facts, or by the probe of [`CheckSource::Probe`]: can
    /// the other side take the king in the probe states of [`Reader::probe_facts`]?
    ///
    /// # Errors
    /// No side to move; the engine failed.
    pub fn in_check(&mut self, state: &M::State, snap: &Snapshot) -> Result<bool, ChessError> {
        let mover = snap.turn.ok_or(ChessError::NoTurn)?;
        if self.dialect().check_source() == CheckSource::StateFacts {
            return Ok(snap.check_fact);
        }
        let facts = self.machine.state_terms(state);
        let Some((open, blocked)) = self.reader.probe_facts(&facts, mover) else {
            return Ok(false);
        };
        let attacker = self.roles[!mover];
        let open = self.machine.state_from_terms(&open)?;
        let blocked = self.machine.state_from_terms(&blocked)?;
        let takes = self.machine.legal_moves(&open, attacker)?;
        let others = self.machine.legal_moves(&blocked, attacker)?;
        Ok(takes.iter().any(|m| !others.contains(m)))
    }
}

/// The shapes of the legal moves of `pos`, sorted, for comparing with a sheet's.
pub fn chess_shapes(pos: &Chess) -> Vec<MoveShape> {
    let mut v: Vec<MoveShape> = pos
        .legal_moves()
        .iter()
        .map(|&m| MoveShape::from_move(pos.board(), m))
        .collect();
    v.sort_by_key(shape_key);
    v
}

/// A sort key for shapes.
pub fn shape_key(s: &MoveShape) -> (u8, u8, u8) {
    (s.from as u8, s.to as u8, s.promotion.map_or(0, |r| r as u8))
}

/// How a sheet's legal moves differ from chess's, as sets: the moves it lacks and the moves
/// it adds, or `None` if they agree. (Two sheet moves with one shape are caught when a SAN
/// move matches both.)
pub fn compare_shapes(
    sheet: &[MoveShape],
    chess: &[MoveShape],
) -> Option<(Vec<MoveShape>, Vec<MoveShape>)> {
    let mut lacks: Vec<MoveShape> = chess
        .iter()
        .filter(|c| !sheet.contains(c))
        .copied()
        .collect();
    let mut adds: Vec<MoveShape> = sheet
        .iter()
        .filter(|s| !chess.contains(s))
        .copied()
        .collect();
    lacks.sort_by_key(shape_key);
    lacks.dedup();
    adds.sort_by_key(shape_key);
    adds.dedup();
    if lacks.is_empty() && adds.is_empty() {
        None
    } else {
        Some((lacks, adds))
    }
}
