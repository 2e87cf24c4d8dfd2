//! One game in the browser: a [`Game`] behind an object-safe [`GameSession`], and the JSON
//! [`View`] of a position that the page draws.

use serde::Serialize;

use crate::board::{Grid, Layout, Square, content_text, facts_by_relation};
use crate::play::progress::Progress;
use crate::play::{Game, Level, PlayError, Seat, result_text};
use ggp_engine::engine::{self, EngineChoice, Machine, UseMachine};
use ggp_engine::machine::StateMachine;
use ggp_gdl::gdl::{Description, Term};
use ggp_match::record::MatchRecord;
use ggp_search::search::Work;

/// Why a request about a game failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The game failed.
    #[error(transparent)]
    Play(#[from] PlayError),
    /// The request does not fit the game (wrong role, no such move...).
    #[error("{0}")]
    Request(String),
    /// The request was made on a position that has changed since.
    #[error("{0}")]
    Stale(String),
}

/// A square's content as the page draws it.
#[derive(Debug, Clone, Serialize)]
pub struct CellView {
    /// The short label.
    pub label: String,
    /// The content printed in full.
    pub text: String,
    /// The role whose name the content holds, for colouring.
    pub role: Option<usize>,
}

/// The board of one position.
#[derive(Debug, Clone, Serialize)]
pub struct BoardView {
    /// File labels, left to right.
    pub files: Vec<String>,
    /// Rank labels, bottom to top.
    pub ranks: Vec<String>,
    /// The coordinate values of the files, as the rules write them.
    pub file_values: Vec<String>,
    /// The coordinate values of the ranks, as the rules write them.
    pub rank_values: Vec<String>,
    /// Square contents, rank by rank from the bottom (`null` when empty).
    pub cells: Vec<Option<CellView>>,
    /// When the squares are hexagons (found from the rules, see [`Grid::Hex`]): the rank
    /// step of the diagonal neighbour one file on, 1 or -1.
    pub hex: Option<i8>,
    /// On a hexagon board, the content (as in [`CellView::text`]) whose chains join the first
    /// and last file (`top-bottom`, as the page draws files) and the first and last rank
    /// (`left-right`), when random games show it (see [`Layout::find_joins`]).
    pub edges: Option<std::collections::BTreeMap<&'static str, String>>,
}

/// A legal move of a human seat.
#[derive(Debug, Clone, Serialize)]
pub struct MoveView {
    /// Its number in the legal list, from 0.
    pub index: usize,
    /// The move's term.
    pub term: String,
    /// Its squares, when they name it alone (`e2e4`).
    pub notation: Option<String>,
    /// Squares it empties, as `[file, rank]`.
    pub from: Vec<[usize; 2]>,
    /// Squares it fills: first those that were empty, then those whose piece it replaces.
    pub to: Vec<[usize; 2]>,
    /// The squares of `to` that were empty (where a placement puts its piece).
    pub placed: Vec<[usize; 2]>,
}

/// A position as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// The session.
    pub id: u64,
    /// The game's name.
    pub game: String,
    /// Moves made.
    pub step: usize,
    /// Role names.
    pub roles: Vec<String>,
    /// Who plays each role.
    pub seats: Vec<String>,
    /// The board, when the game has one.
    pub board: Option<BoardView>,
    /// Piece labels that differ from their content: `[label, content]`.
    pub legend: Vec<[String; 2]>,
    /// The facts not on the board, grouped: `[relation, [arguments...]]`.
    pub facts: Vec<(String, Vec<String>)>,
    /// The roles with a choice now.
    pub to_move: Vec<usize>,
    /// For each role, its legal moves when it is a human seat with a choice and has not
    /// chosen yet (empty otherwise).
    pub moves: Vec<Vec<MoveView>>,
    /// Whether the computer is to move (no person has a choice).
    pub waiting: bool,
    /// The last joint move: `[role, term]` for the roles that had a choice.
    pub last: Vec<(usize, String)>,
    /// Whether the game is over.
    pub terminal: bool,
    /// Goal values when over.
    pub goals: Option<Vec<u8>>,
    /// The result in words when over.
    pub result: Option<String>,
    /// Whether undo can take anything back (a person has moved).
    pub can_undo: bool,
    /// Every move so far as people write it (SAN on a chess sheet, squares otherwise) and as
    /// its term: `[step, role, text, term]`.
    pub history: Vec<(usize, usize, String, String)>,
    /// Squares the last move emptied and filled, as `[file, rank]`, for its highlight.
    pub last_from: Vec<[usize; 2]>,
    /// See `last_from`.
    pub last_to: Vec<[usize; 2]>,
    /// How the game ended, in words (`checkmate`, `stalemate`, `four in a row`...).
    pub ending: Option<String>,
    /// The winning line's squares, when a line won.
    pub line: Vec<[usize; 2]>,
    /// GDL-II with one person playing: the role whose view `board`, `facts`, `last` and
    /// `history` show (only what it knows); `None` when everything is shown.
    pub viewer: Option<String>,
    /// What the viewer saw after the last joint move (its percepts); empty without a viewer.
    pub percepts: Vec<String>,
    /// The square of the king in check, on a chess sheet.
    pub check: Option<[usize; 2]>,
}

impl View {
    /// Names an ending the game's own detection (chess endings, lines) left unnamed, once the
    /// game is over: the sentence the display description's `endings` gives for a state
    /// relation (`{}` stands for the fact's arguments) whose fact the final position holds;
    /// else, when one role won and no square holds a piece of the others while some holds one
    /// of the winner, that the others have no pieces left.
    pub fn name_ending(&mut self, display: Option<&serde_json::Value>) {
        if !self.terminal || self.ending.is_some() {
            return;
        }
        let endings = display.and_then(|d| d["endings"].as_object());
        for (relation, sentence) in endings.into_iter().flatten() {
            let (Some(sentence), Some((_, facts))) = (
                sentence.as_str(),
                self.facts.iter().find(|(rel, _)| rel == relation),
            ) else {
                continue;
            };
            let arguments = facts.first().map(String::as_str).unwrap_or_default();
            self.ending = Some(sentence.replace("{}", arguments).trim().to_string());
            return;
        }
        let (Some(goals), Some(board)) = (&self.goals, &self.board) else {
            return;
        };
        let best = goals.iter().copied().max().unwrap_or(0);
        if goals.iter().filter(|&&g| g == best).count() != 1 {
            return;
        }
        let owners: Vec<usize> = board
            .cells
            .iter()
            .flatten()
            .filter_map(|c| c.role)
            .collect();
        let winner = goals.iter().position(|&g| g == best);
        if owners.is_empty() || owners.iter().any(|&r| Some(r) != winner) {
            return;
        }
        let losers: Vec<&str> = (0..goals.len())
            .filter(|&r| Some(r) != winner)
            .filter_map(|r| self.roles.get(r).map(String::as_str))
            .collect();
        if !losers.is_empty() {
            let verb = if losers.len() == 1 { "has" } else { "have" };
            self.ending = Some(format!("{} {verb} no pieces left", losers.join(" and ")));
        }
    }
}

/// A frame of a replayed record.
#[derive(Debug, Clone, Serialize)]
pub struct Frame {
    /// Moves made.
    pub step: usize,
    /// The board.
    pub board: Option<BoardView>,
    /// The facts not on the board.
    pub facts: Vec<(String, Vec<String>)>,
    /// The joint move that led here: `[role, term]`.
    pub last: Vec<(usize, String)>,
}

/// A replayed record: its roles and one frame per state.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    /// Role names.
    pub roles: Vec<String>,
    /// Piece labels that differ from their content.
    pub legend: Vec<[String; 2]>,
    /// One frame per state, the initial one first.
    pub frames: Vec<Frame>,
    /// Goal values, when the record is complete.
    pub goals: Option<Vec<u8>>,
}

/// A game in the browser, whatever its engine.
pub trait GameSession: Send {
    /// The position now.
    ///
    /// # Errors
    /// The engine failed.
    fn view(&mut self, id: u64) -> Result<View, SessionError>;
    /// Human seat `role` chooses its move number `index`; the joint move is played once every
    /// human seat with a choice has chosen (computer seats choose then).
    ///
    /// # Errors
    /// Not a human seat with a choice, a bad number, or the engine failed.
    fn choose(&mut self, role: usize, index: usize) -> Result<(), SessionError>;
    /// When no person has a choice, the computers move once.
    ///
    /// # Errors
    /// The engine or a player failed.
    fn step(&mut self) -> Result<(), SessionError>;
    /// Takes back moves until a person has a choice again.
    ///
    /// # Errors
    /// The engine failed.
    fn undo(&mut self) -> Result<(), SessionError>;
    /// The match record so far.
    ///
    /// # Errors
    /// The engine failed.
    fn record(&mut self) -> Result<MatchRecord, SessionError>;
    /// Moves made so far.
    fn steps(&self) -> usize;
    /// What the search of the computers about to move counts (see [`Game::work_of`]).
    ///
    /// # Errors
    /// The engine failed.
    fn work(&mut self) -> Result<Work, SessionError>;
    /// Refuses a request made on the position after `step` moves when the game has moved on.
    ///
    /// # Errors
    /// [`SessionError::Stale`] when `step` is not the current one.
    fn expect_step(&self, step: usize) -> Result<(), SessionError> {
        let now = self.steps();
        if step == now {
            return Ok(());
        }
        Err(SessionError::Stale(format!(
            "that click was on move {step}, but the game is at move {now}; click again on the board as it is now"
        )))
    }
    /// The number (in the legal list the view gives) of the move the computer suggests for
    /// human seat `role` (a short search at the `easy` level).
    ///
    /// # Errors
    /// Not a human seat with a choice, or the engine or search failed.
    fn hint(&mut self, role: usize) -> Result<usize, SessionError>;
}

/// A [`Game`] with the moves people have chosen for the next joint move.
pub struct WebGame<M: StateMachine> {
    game: Game<M>,
    name: String,
    pending: Vec<Option<M::Move>>,
}

/// A new session for `description` (on the propnet when it grounds quickly), with the
/// count of its computers' work (see [`crate::play::progress`]). `board` names the
/// board's relation when a display description says which it is.
///
/// # Errors
/// The engine cannot be built, or the seats do not fit.
pub fn new_session(
    name: &str,
    description: &Description,
    text: &str,
    seats: Vec<Seat>,
    seed: u64,
    board: Option<&str>,
) -> Result<(Box<dyn GameSession>, Progress), SessionError> {
    struct New<'a> {
        name: &'a str,
        rules: &'a [ggp_gdl::gdl::Rule],
        text: &'a str,
        seats: Vec<Seat>,
        seed: u64,
        board: Option<&'a str>,
    }
    impl UseMachine for New<'_> {
        type Output = Result<(Box<dyn GameSession>, Progress), SessionError>;
        fn with<M: Machine>(self, m: M) -> Self::Output {
            let mut game =
                WebGame::new(m, self.name, self.rules, self.text, self.seats, self.seed)?;
            if let Some(relation) = self.board {
                game.game.use_board_relation(self.rules, relation)?;
            }
            let progress = game.game.progress();
            Ok((Box::new(game), progress))
        }
    }
    load(description)?.run(New {
        name,
        rules: description.rules(),
        text,
        seats,
        seed,
        board,
    })
}

/// The game on the propnet when it grounds quickly, else on the Datalog engine (the reason
/// goes to stderr).
fn load(description: &Description) -> Result<engine::Engine, SessionError> {
    let loaded = engine::load(description, EngineChoice::Auto, &engine::quick_budget())
        .map_err(PlayError::from)?;
    if let Some(note) = loaded.fallback_note() {
        eprintln!("{note}");
    }
    Ok(loaded.engine)
}

/// Replays a record on `description`, checking every move and state.
///
/// # Errors
/// The engine cannot be built or the record does not fit the game.
pub fn replay(
    description: &Description,
    text: &str,
    record: &MatchRecord,
) -> Result<Replay, SessionError> {
    struct ReplayOn<'a>(&'a Description, &'a str, &'a MatchRecord);
    impl UseMachine for ReplayOn<'_> {
        type Output = Result<Replay, SessionError>;
        fn with<M: Machine>(self, m: M) -> Self::Output {
            replay_on(m, self.0, self.1, self.2)
        }
    }
    load(description)?.run(ReplayOn(description, text, record))
}

fn replay_on<M: StateMachine + Send + 'static>(
    machine: M,
    description: &Description,
    text: &str,
    record: &MatchRecord,
) -> Result<Replay, SessionError> {
    let seats = vec![Seat::Human; machine.roles().len()];
    let mut game = Game::new(machine, description.rules(), text, seats, 0)?;
    game.resume(record)?;
    let layout = game.layout().cloned();
    let roles = game.roles().to_vec();
    let moves = game.move_terms();
    let mut frames = Vec::new();
    for step in 0..=game.step() {
        let facts = game.facts_at(step);
        let last = match step {
            0 => Vec::new(),
            _ => moves[step - 1]
                .iter()
                .enumerate()
                .map(|(r, t)| (r, t.to_string()))
                .collect(),
        };
        frames.push(Frame {
            step,
            board: layout.as_ref().map(|l| board_view(l, &facts, &roles)),
            facts: other_facts(layout.as_ref(), &facts),
            last,
        });
    }
    let goals = if game.is_terminal()? {
        Some(game.goals()?)
    } else {
        None
    };
    Ok(Replay {
        roles: roles.iter().map(|r| r.to_string()).collect(),
        legend: legend(layout.as_ref()),
        frames,
        goals,
    })
}

impl<M: StateMachine + Send + 'static> WebGame<M> {
    fn new(
        machine: M,
        name: &str,
        rules: &[ggp_gdl::gdl::Rule],
        text: &str,
        seats: Vec<Seat>,
        seed: u64,
    ) -> Result<WebGame<M>, SessionError> {
        let n = machine.roles().len();
        Ok(WebGame {
            game: Game::new(machine, rules, text, seats, seed)?,
            name: name.to_string(),
            pending: vec![None; n],
        })
    }

    /// The human seats with a choice now.
    fn humans_to_choose(&mut self) -> Result<Vec<usize>, PlayError> {
        let mut out = Vec::new();
        if self.game.is_terminal()? {
            return Ok(out);
        }
        for role in 0..self.game.roles().len() {
            if self.game.seats()[role] == Seat::Human && self.game.legal(role)?.len() > 1 {
                out.push(role);
            }
        }
        Ok(out)
    }

    /// Fills the other roles' moves (forced, or the computer's) and plays.
    fn complete_and_play(&mut self) -> Result<(), PlayError> {
        let mut joint = Vec::new();
        for role in 0..self.game.roles().len() {
            let mv = match self.pending[role] {
                Some(mv) => mv,
                None => {
                    // A forced move (a `noop`) is played without a search.
                    let legal = self.game.legal(role)?;
                    if legal.len() == 1 {
                        legal[0]
                    } else {
                        match self.game.computer_move(role)? {
                            Some(choice) => choice.mv,
                            None => legal[0],
                        }
                    }
                }
            };
            joint.push(mv);
        }
        self.pending.iter_mut().for_each(|p| *p = None);
        self.game.play(joint)
    }
}

impl<M: StateMachine + Send + 'static> GameSession for WebGame<M> {
    fn view(&mut self, id: u64) -> Result<View, SessionError> {
        let game = &mut self.game;
        let facts = game.facts();
        let roles = game.roles().to_vec();
        let terminal = game.is_terminal()?;
        // The history and the moves first: they may widen the board (see `Game::move_infos`).
        let terms = game.move_terms();
        let history = game
            .history()?
            .into_iter()
            .map(|p| {
                let term = terms[p.step][p.role].to_string();
                (p.step, p.role, p.text, term)
            })
            .collect();
        let humans = self.humans_to_choose()?;
        let game = &mut self.game;
        let mut moves = vec![Vec::new(); roles.len()];
        for &role in &humans {
            if self.pending[role].is_some() {
                continue;
            }
            moves[role] = game
                .move_infos(role)?
                .iter()
                .enumerate()
                .map(|(index, info)| MoveView {
                    index,
                    term: info.term.to_string(),
                    notation: info.notation.clone(),
                    from: info.change.from.iter().map(pair).collect(),
                    to: info.change.to.iter().map(pair).collect(),
                    placed: info.change.placed.iter().map(pair).collect(),
                })
                .collect();
        }
        let layout = game.layout().cloned();
        let (goals, result) = if terminal {
            let goals = game.goals()?;
            let result = result_text(&roles, &goals);
            (Some(goals), Some(result))
        } else {
            (None, None)
        };
        let (last_from, last_to) = match (&layout, game.step()) {
            (Some(l), step) if step > 0 => {
                let change = l.change(&l.cells(&game.facts_at(step - 1)), &l.cells(&facts));
                (
                    change.from.iter().map(pair).collect(),
                    change.to.iter().map(pair).collect(),
                )
            }
            _ => (Vec::new(), Vec::new()),
        };
        let ending = game.ending()?;
        let line = game
            .winning_line()?
            .unwrap_or_default()
            .iter()
            .map(pair)
            .collect();
        let check = match (&layout, game.chess_position()?) {
            (Some(l), Some(position)) if shakmaty::Position::is_check(&position) => {
                use shakmaty::Position;
                let king = position.board().king_of(position.turn());
                king.and_then(|k| {
                    let name = k.to_string();
                    l.squares().find(|&s| l.square_name(s) == name)
                })
                .map(|s| pair(&s))
            }
            _ => None,
        };
        Ok(View {
            id,
            game: self.name.clone(),
            step: game.step(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            seats: game.seats().iter().map(|s| s.to_string()).collect(),
            board: layout.as_ref().map(|l| board_view(l, &facts, &roles)),
            legend: legend(layout.as_ref()),
            facts: other_facts(layout.as_ref(), &facts),
            to_move: if terminal {
                Vec::new()
            } else {
                game.to_move()?
            },
            moves,
            waiting: !terminal && humans.is_empty(),
            last: game
                .last_moves()?
                .into_iter()
                .map(|(r, t)| (r, t.to_string()))
                .collect(),
            terminal,
            goals,
            result,
            can_undo: self.game.seats().contains(&Seat::Human) && self.game.step() > 0,
            history,
            last_from,
            last_to,
            ending,
            line,
            viewer: self.game.viewer().map(|r| roles[r].to_string()),
            percepts: self
                .game
                .percepts()
                .iter()
                .map(ToString::to_string)
                .collect(),
            check,
        })
    }

    fn choose(&mut self, role: usize, index: usize) -> Result<(), SessionError> {
        let humans = self.humans_to_choose()?;
        if !humans.contains(&role) {
            return Err(SessionError::Stale(format!(
                "{} has no choice to make now",
                self.game
                    .roles()
                    .get(role)
                    .map_or_else(|| format!("role number {role}"), |r| r.to_string())
            )));
        }
        let infos = self.game.move_infos(role)?;
        let Some(info) = infos.get(index) else {
            return Err(SessionError::Request(format!(
                "there is no move number {index} (the position may have changed)"
            )));
        };
        self.pending[role] = Some(info.mv);
        if humans.iter().all(|&r| self.pending[r].is_some()) {
            self.complete_and_play()?;
        }
        Ok(())
    }

    fn step(&mut self) -> Result<(), SessionError> {
        if self.game.is_terminal()? || !self.humans_to_choose()?.is_empty() {
            return Ok(());
        }
        Ok(self.complete_and_play()?)
    }

    fn undo(&mut self) -> Result<(), SessionError> {
        self.pending.iter_mut().for_each(|p| *p = None);
        self.game.undo_turn()?;
        Ok(())
    }

    fn record(&mut self) -> Result<MatchRecord, SessionError> {
        Ok(self.game.record()?)
    }

    fn steps(&self) -> usize {
        self.game.step()
    }

    fn work(&mut self) -> Result<Work, SessionError> {
        let roles = self.game.to_move()?;
        let computer = roles
            .into_iter()
            .find(|&r| matches!(self.game.seats()[r], Seat::Computer(_)));
        Ok(computer.map_or(Work::Playouts, |r| self.game.work_of(r)))
    }

    fn hint(&mut self, role: usize) -> Result<usize, SessionError> {
        if !self.humans_to_choose()?.contains(&role) || self.pending[role].is_some() {
            return Err(SessionError::Request(format!(
                "role number {role} has no choice to make now"
            )));
        }
        let choice = self.game.suggest(role, Level::Easy)?;
        let infos = self.game.move_infos(role)?;
        infos
            .iter()
            .position(|info| info.mv == choice.mv)
            .ok_or_else(|| SessionError::Request("the suggestion is not a legal move".into()))
    }
}

fn pair(square: &Square) -> [usize; 2] {
    [square.file, square.rank]
}

fn board_view(layout: &Layout, facts: &[Term], roles: &[Term]) -> BoardView {
    let cells = layout
        .cells(facts)
        .into_iter()
        .map(|cell| {
            cell.map(|content| CellView {
                label: layout.piece_label(&content),
                text: content_text(&content),
                role: roles.iter().position(|r| content.contains(r)),
            })
        })
        .collect();
    let values = |axis: &crate::board::Axis| axis.values.iter().map(|v| v.to_string()).collect();
    BoardView {
        files: layout.files().labels.clone(),
        ranks: layout.ranks().labels.clone(),
        file_values: values(layout.files()),
        rank_values: values(layout.ranks()),
        cells,
        hex: match layout.grid() {
            Grid::Hex { lean } => Some(lean),
            Grid::Squares => None,
        },
        edges: {
            let edges: std::collections::BTreeMap<&'static str, String> =
                ["top-bottom", "left-right"]
                    .into_iter()
                    .zip(layout.joins())
                    .filter_map(|(side, content)| Some((side, content_text(content?))))
                    .collect();
            (!edges.is_empty()).then_some(edges)
        },
    }
}

fn legend(layout: Option<&Layout>) -> Vec<[String; 2]> {
    layout.map_or_else(Vec::new, |l| {
        l.legend().into_iter().map(|(a, b)| [a, b]).collect()
    })
}

fn other_facts(layout: Option<&Layout>, facts: &[Term]) -> Vec<(String, Vec<String>)> {
    facts_by_relation(facts, |f| layout.is_some_and(|l| l.is_board_fact(f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(sheet: &str, seats: Vec<Seat>, board: Option<&str>) -> Box<dyn GameSession> {
        let path = format!("{}/{sheet}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap();
        let description = Description::from_text(&text).unwrap();
        new_session(sheet, &description, &text, seats, 1, board)
            .unwrap()
            .0
    }

    /// Issue 15: the board covers every square a legal move fills, seen before or not, so
    /// that every Dominup placement can be clicked (before, the board covered only the
    /// squares of the sampled states).
    #[test]
    fn the_board_covers_every_legal_placement() {
        let seats = vec![Seat::Computer(Level::Random), Seat::Human];
        let mut game = session("rules/dominupFixed.kif", seats, None);
        let view = game.view(1).unwrap();
        let board = view.board.unwrap();
        assert!(view.moves[1].len() > 100, "{}", view.moves[1].len());
        for m in &view.moves[1] {
            // (place A B ROW COL DIRECTION): both halves' squares are on the board.
            let words: Vec<&str> = m.term.trim_matches(['(', ')']).split(' ').collect();
            let (row, col): (i64, i64) = (words[3].parse().unwrap(), words[4].parse().unwrap());
            let (r2, c2) = match words[5] {
                "n" => (row - 1, col),
                "s" => (row + 1, col),
                "e" => (row, col + 1),
                _ => (row, col - 1),
            };
            for (r, c) in [(row, col), (r2, c2)] {
                assert!(board.file_values.contains(&r.to_string()), "{} {r}", m.term);
                assert!(board.rank_values.contains(&c.to_string()), "{} {c}", m.term);
            }
        }
    }

    /// Hex's board by shape alone is `cell`, whose contents name the roles (`red`, `blue`), not
    /// `connected`, whose contents are group numbers; a display description may still name
    /// another relation.
    #[test]
    fn the_board_whose_contents_name_roles_wins() {
        let sheet = "rules/hex.kif";
        let seats = vec![Seat::Human, Seat::Human];
        let mut game = session(sheet, seats.clone(), None);
        game.choose(0, 0).unwrap();
        let view = game.view(1).unwrap();
        let board = view.board.unwrap();
        assert_eq!(
            board.file_values,
            ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
        );
        assert_eq!(board.rank_values.len(), 9);
        let stones: Vec<&str> = board
            .cells
            .iter()
            .flatten()
            .map(|c| c.text.as_str())
            .collect();
        assert_eq!(stones, ["red"]);
        assert!(view.facts.iter().any(|(rel, _)| rel == "connected"));
        let mut named = session(sheet, seats, Some("connected"));
        named.choose(0, 0).unwrap();
        let view = named.view(1).unwrap();
        assert!(view.facts.iter().any(|(rel, _)| rel == "cell"));
        assert!(!view.facts.iter().any(|(rel, _)| rel == "connected"));
    }

    /// An ending named from the display description's `endings`, else from the pieces left.
    #[test]
    fn endings_are_named_from_the_description_or_the_pieces_left() {
        let mut game = session("rules/hex.kif", vec![Seat::Human, Seat::Human], None);
        game.choose(0, 0).unwrap();
        let mut view = game.view(1).unwrap();
        view.name_ending(None);
        assert_eq!(view.ending, None, "not over");
        view.terminal = true;
        view.goals = Some(vec![100, 0]);
        let mut pieces = view.clone();
        pieces.name_ending(None);
        assert_eq!(pieces.ending.as_deref(), Some("blue has no pieces left"));
        let mut drawn = view.clone();
        drawn.goals = Some(vec![50, 50]);
        drawn.name_ending(None);
        assert_eq!(drawn.ending, None);
        let display = serde_json::json!({"endings": {"owner": "{} owns a group"}});
        view.name_ending(Some(&display));
        assert_eq!(view.ending.as_deref(), Some("1 red owns a group"));
    }

    /// Issue 15: the computer's `noop` was searched with its full budget before its real
    /// move; a forced move is now played without a single playout.
    #[test]
    fn a_forced_move_is_played_without_a_search() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/rules/ticTacToe.kif");
        let text = std::fs::read_to_string(path).unwrap();
        let description = Description::from_text(&text).unwrap();
        let seats = vec![Seat::Human, Seat::Computer(Level::Seconds(30.0))];
        let (mut game, progress) =
            new_session("ticTacToe", &description, &text, seats, 1, None).unwrap();
        let before = progress.count();
        let start = std::time::Instant::now();
        game.choose(0, 0).unwrap();
        assert_eq!(progress.count(), before, "o's noop was searched");
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        let view = game.view(1).unwrap();
        assert_eq!(view.step, 1);
        assert!(view.waiting, "o is to move now");
    }
}
