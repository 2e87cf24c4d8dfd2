//! Board detection: finds a grid in a game's states by looking at their shape, never at names.
//!
//! A *board* is a state relation whose facts look like `(REL X Y CONTENT...)`: two arguments
//! are coordinates and no two facts of one state share them. [`Layout::detect`] looks at a
//! sample of states (the initial state and some random playouts, see [`sample_states`]) and at
//! the ground facts of the rules, and chooses:
//!
//! - **The relation and its coordinate arguments.** Every relation of arity three or more and
//!   every pair of its arguments is a candidate when the arguments are constants, take at least
//!   two values each, and never repeat as a pair within one sampled state. The best candidate
//!   has the most *ordered* axes (see below), then the most distinct squares seen, then
//!   contents that name a role (of two relations over the same squares, `(cell a 1 red)` with a
//!   role `red` beats `(connected 3 a 1)`, whose group numbers are more distinct contents),
//!   then contents that a state fact pairs with a role (hexPie's `(cell a 1 red)` with
//!   `(usingMarker player1 red)`: its `red` is player1's marker), then the most distinct
//!   contents, then the earliest argument positions. The other
//!   arguments are the square's content.
//! - **Which axis is which.** When exactly one axis is all integers it is the rank (drawn
//!   bottom to top, the highest at the top); otherwise the first coordinate argument is the
//!   file (drawn left to right).
//! - **The values of an axis.** The values seen in the sample, widened to every integer between
//!   the smallest and the largest when they are integers, to the stretch of a successor chain
//!   between the first and the last seen value when such a chain holds them all, and by the
//!   values of the same kind (integer or not) of the smallest one-argument static fact
//!   relation that holds them all (`(row 1) (row 2)...`).
//! - **Their order.** Integers numerically; else by a successor chain: a two-argument static
//!   fact relation whose pairs form one path covering every value; else by first appearance
//!   in the rule sheet; else lexically.
//!   A square or piece met later in the game widens the board ([`Layout::include`]).
//! - **Blank squares.** A square without a fact is empty. A content value that fills at least
//!   two fifths of the squares of the first sampled state, and more of them than any other, is
//!   the blank marker, and its squares are empty too.
//! - **Hexagons.** The board is a grid of hexagons ([`Grid::Hex`]) when a static relation of
//!   four arguments, read as two squares `(F1 R1 F2 R2)` (or ranks first), relates each square
//!   to the six a hexagon touches: the four beside it along the axes and the two along one
//!   diagonal, and to no other (Hex's `adjacent`, `neighbour`...). The relation is evaluated
//!   from the rules, whatever its name; a square board's neighbour relations have four or
//!   eight directions and are not taken for one.
//! - **What each side connects.** On a hexagon board, random games played to their end
//!   ([`sample_ends`]) show which ends of the board each kind of stone must join
//!   ([`Layout::find_joins`]). A chain is a group of squares of one content touching as
//!   hexagons do; a game ended by a stone whose chain joins the two ends of one axis (both
//!   files, or both ranks) tells that this content joins that axis. At least
//!   [`MIN_JOIN_ENDS`] ended games, and half of them, must tell it (a game ended by a stone
//!   whose chain joins both axes tells nothing), each axis by one
//!   content only and each content for one axis only; with two kinds of stone, the one never
//!   seen ending a game joins the other axis. Hex's red stones join the first and last files
//!   (drawn as the top and bottom rows), its blue the ranks; a game whose ends show no such
//!   chains (or contradict each other) gets none.
//! - **Labels.** Files are named by their values when these are short alphabetic words,
//!   else `a`, `b`, `c`...; ranks by their values when these are non-negative integers, else
//!   `1`, `2`, `3`.... A square is named file then rank (`e2`). A piece is shown by the
//!   shortest prefix of its content that tells it from the other contents seen (at most four
//!   characters per content argument).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::{MachineError, StateMachine};
use ggp_gdl::gdl::{Literal, Rule, Sym, Term};

/// Most states [`sample_states`] collects.
pub const SAMPLE_STATES: usize = 150;
/// Most time [`sample_states`] spends.
pub const SAMPLE_TIME: Duration = Duration::from_secs(2);
/// Longest playout [`sample_states`] follows.
const SAMPLE_DEPTH: usize = 60;
/// Largest axis the domain widening produces.
const MAX_AXIS: usize = 64;
/// Random games [`sample_ends`] plays to their end for [`Layout::find_joins`].
pub const JOIN_GAMES: usize = 8;
/// Most time those games take.
pub const JOIN_TIME: Duration = Duration::from_secs(2);
/// Fewest ended games with a joining chain from which [`Layout::find_joins`] concludes.
pub const MIN_JOIN_ENDS: usize = 4;
/// Longest of those games.
const JOIN_PLIES: usize = 1000;

/// A square of the board: file (column, left to right) and rank (row, bottom to top), from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square {
    /// The column, from 0 at the left.
    pub file: usize,
    /// The row, from 0 at the bottom.
    pub rank: usize,
}

/// How the values of an axis were put in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AxisOrder {
    /// All values are integers.
    Numeric,
    /// A two-argument static relation chains the values.
    Successor,
    /// First appearance in the rule sheet.
    Appearance,
    /// Lexical order of the printed values.
    Lexical,
}

/// One axis of the board.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The argument position of the coordinate in the board facts.
    pub arg: usize,
    /// The values, in drawing order.
    pub values: Vec<Term>,
    /// How the order was found.
    pub order: AxisOrder,
    /// The label of each value.
    pub labels: Vec<String>,
}

/// What changed on the board between two states: squares emptied and squares (re)filled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// Squares that held a piece and are now empty; first those whose piece is now on a
    /// square of `to` (the piece that moved, not the one a jump took).
    pub from: Vec<Square>,
    /// Squares whose content changed to a piece: first those that were empty (`placed`),
    /// then those whose piece was replaced (a capture, a reversi stone turned over).
    pub to: Vec<Square>,
    /// The squares of `to` that were empty: where a placement put its piece.
    pub placed: Vec<Square>,
}

/// How the squares of a board touch each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grid {
    /// Squares (unless the rules show otherwise).
    #[default]
    Squares,
    /// Hexagons: a square touches the four beside it along the axes and the two along one
    /// diagonal, `(file + 1, rank + lean)` and `(file - 1, rank - lean)`; `lean` is 1 or -1.
    Hex {
        /// The rank step of the diagonal neighbour one file on.
        lean: i8,
    },
}

/// The board of a game: which facts it is made of and how to draw them.
#[derive(Debug, Clone)]
pub struct Layout {
    rel: Sym,
    arity: usize,
    file: Axis,
    rank: Axis,
    blank: Option<Vec<Term>>,
    labels: Vec<(Vec<Term>, String)>,
    statics: StaticFacts,
    grid: Grid,
    /// The content whose chains join the two ends of the files, and of the ranks (see
    /// [`Layout::find_joins`]).
    joins: [Option<Vec<Term>>; 2],
}

/// The content of every square, rank by rank from the bottom: `None` when empty.
pub type Cells = Vec<Option<Vec<Term>>>;

/// The initial state and the states of a few random playouts, as fact lists: at most
/// [`SAMPLE_STATES`] states, [`SAMPLE_TIME`] of work, and playouts of at most 60 moves.
/// The same seed gives the same sample.
///
/// # Errors
/// The engine failed.
pub fn sample_states<M: StateMachine>(
    machine: &mut M,
    seed: u64,
) -> Result<Vec<Vec<Term>>, MachineError> {
    let start = Instant::now();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let initial = machine.initial_state();
    let mut out = vec![machine.state_terms(&initial)];
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    while out.len() < SAMPLE_STATES && start.elapsed() < SAMPLE_TIME {
        let mut state = initial.clone();
        let before = out.len();
        for _ in 0..SAMPLE_DEPTH {
            if out.len() >= SAMPLE_STATES
                || start.elapsed() >= SAMPLE_TIME
                || machine.is_terminal(&state)?
            {
                break;
            }
            match machine.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch) {
                Ok(()) => {}
                Err(MachineError::NoLegalMoves { .. }) => break,
                Err(e) => return Err(e),
            }
            state = machine.next_state_unchecked(&state, &joint)?;
            out.push(machine.state_terms(&state));
        }
        if out.len() == before {
            break;
        }
    }
    Ok(out)
}

impl Layout {
    /// Finds the board in `samples` (fact lists of states; the first should be the initial
    /// state), using the ground facts of `rules` to widen and order the axes. `None` when no
    /// relation has the shape of a board.
    pub fn detect(samples: &[Vec<Term>], rules: &[Rule]) -> Option<Layout> {
        Layout::detect_in(samples, rules, |_| true)
    }

    /// [`Layout::detect`] among the relations `allowed` accepts only (a display description
    /// may name the board's relation where the shape alone chooses another).
    pub fn detect_in(
        samples: &[Vec<Term>],
        rules: &[Rule],
        allowed: impl Fn(Sym) -> bool,
    ) -> Option<Layout> {
        let statics = StaticFacts::new(rules);
        let roles: HashSet<&Term> = rules
            .iter()
            .filter(|r| r.head.rel == Sym::ROLE && r.body.is_empty())
            .filter_map(|r| r.head.args.first())
            .collect();
        // Score: ordered axes, squares seen, contents naming a role (directly, or paired with
        // one by a state fact), distinct contents, earlier argument positions.
        type Score = (usize, usize, (bool, bool), usize, std::cmp::Reverse<usize>);
        let mut best: Option<(Candidate, Score)> = None;
        let all = candidates(samples, &roles).into_iter().enumerate();
        for (index, candidate) in all.filter(|(_, c)| allowed(c.rel)) {
            let ordered = [&candidate.first, &candidate.second]
                .iter()
                .filter(|values| all_integers(values) || statics.chain_covering(values).is_some())
                .count();
            let score = (
                ordered,
                candidate.squares,
                (candidate.names_role, candidate.paired_with_role),
                candidate.contents,
                std::cmp::Reverse(index),
            );
            if best.as_ref().is_none_or(|(_, s)| score > *s) {
                best = Some((candidate, score));
            }
        }
        let (candidate, _) = best?;
        let first = statics.axis(candidate.args.0, &candidate.first);
        let second = statics.axis(candidate.args.1, &candidate.second);
        let (file, rank) = if all_integers(&first.values) && !all_integers(&second.values) {
            (second, first)
        } else {
            (first, second)
        };
        let mut layout = Layout {
            rel: candidate.rel,
            arity: candidate.arity,
            file: label_files(file),
            rank: label_ranks(rank),
            blank: None,
            labels: Vec::new(),
            statics,
            grid: Grid::Squares,
            joins: [None, None],
        };
        layout.grid = hex_grid(rules, &layout.file, &layout.rank);
        layout.blank = layout.find_blank(&samples[0]);
        for facts in samples {
            layout.include_contents(facts);
        }
        Some(layout)
    }

    /// Widens the board to squares and pieces of `facts` it has not seen (the sample may miss
    /// some); true when it changed. Labels of files and pieces may change with it.
    pub fn include(&mut self, facts: &[Term]) -> bool {
        let (mut files, mut ranks) = (self.file.values.clone(), self.rank.values.clone());
        for fact in facts {
            if let Term::App(rel, args) = fact
                && *rel == self.rel
                && args.len() == self.arity
            {
                for (arg, values) in [(self.file.arg, &mut files), (self.rank.arg, &mut ranks)] {
                    if matches!(args[arg], Term::Const(_)) && !values.contains(&args[arg]) {
                        values.push(args[arg].clone());
                    }
                }
            }
        }
        let mut changed = false;
        if files.len() > self.file.values.len() {
            self.file = label_files(self.statics.axis(self.file.arg, &files));
            changed = true;
        }
        if ranks.len() > self.rank.values.len() {
            self.rank = label_ranks(self.statics.axis(self.rank.arg, &ranks));
            changed = true;
        }
        self.include_contents(facts) || changed
    }

    fn include_contents(&mut self, facts: &[Term]) -> bool {
        let mut contents: Vec<Vec<Term>> = self.labels.iter().map(|(c, _)| c.clone()).collect();
        let known = contents.len();
        for fact in facts {
            if let Some((_, content)) = self.locate(fact)
                && Some(&content) != self.blank.as_ref()
                && !contents.contains(&content)
            {
                contents.push(content);
            }
        }
        if contents.len() == known {
            return false;
        }
        self.labels = piece_labels(&contents);
        true
    }

    /// Whether the squares are squares or hexagons.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// The board relation.
    pub fn relation(&self) -> Sym {
        self.rel
    }

    /// The files (columns), left to right.
    pub fn files(&self) -> &Axis {
        &self.file
    }

    /// The ranks (rows), bottom to top.
    pub fn ranks(&self) -> &Axis {
        &self.rank
    }

    /// The content that marks an empty square, if the game has one.
    pub fn blank(&self) -> Option<&[Term]> {
        self.blank.as_deref()
    }

    /// Whether `fact` belongs to the board relation (on or off the grid).
    pub fn is_board_fact(&self, fact: &Term) -> bool {
        matches!(fact, Term::App(rel, args) if *rel == self.rel && args.len() == self.arity)
    }

    /// The square and content of a board fact, when its coordinates are on the grid.
    pub fn locate(&self, fact: &Term) -> Option<(Square, Vec<Term>)> {
        let Term::App(rel, args) = fact else {
            return None;
        };
        if *rel != self.rel || args.len() != self.arity {
            return None;
        }
        let file = self
            .file
            .values
            .iter()
            .position(|v| *v == args[self.file.arg])?;
        let rank = self
            .rank
            .values
            .iter()
            .position(|v| *v == args[self.rank.arg])?;
        let content = args
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.file.arg && *i != self.rank.arg)
            .map(|(_, t)| t.clone())
            .collect();
        Some((Square { file, rank }, content))
    }

    /// The content of every square in a state (blank squares are `None`).
    pub fn cells(&self, facts: &[Term]) -> Cells {
        let mut cells = vec![None; self.file.values.len() * self.rank.values.len()];
        for fact in facts {
            if let Some((square, content)) = self.locate(fact)
                && Some(&content) != self.blank.as_ref()
            {
                cells[self.index(square)] = Some(content);
            }
        }
        cells
    }

    /// The index of a square in [`Cells`].
    pub fn index(&self, square: Square) -> usize {
        square.rank * self.file.values.len() + square.file
    }

    /// Every square, rank by rank from the bottom.
    pub fn squares(&self) -> impl Iterator<Item = Square> + '_ {
        (0..self.rank.values.len()).flat_map(move |rank| {
            (0..self.file.values.len()).map(move |file| Square { file, rank })
        })
    }

    /// The squares emptied and filled between two states (see [`Change`] for their order).
    pub fn change(&self, before: &Cells, after: &Cells) -> Change {
        let mut change = Change::default();
        let mut replaced = Vec::new();
        for square in self.squares() {
            let i = self.index(square);
            match (&before[i], &after[i]) {
                (Some(_), None) => change.from.push(square),
                (None, Some(_)) => change.placed.push(square),
                (Some(old), Some(new)) if old != new => replaced.push(square),
                _ => {}
            }
        }
        change.to = change.placed.iter().chain(&replaced).copied().collect();
        // The piece that moved is found again on a filled square; a taken one is not.
        let arrived = |s: &Square| {
            let piece = &before[self.index(*s)];
            change.to.iter().any(|t| after[self.index(*t)] == *piece)
        };
        change.from.sort_by_key(|s| !arrived(s));
        change
    }

    /// The short label of a piece.
    pub fn piece_label(&self, content: &[Term]) -> String {
        match self.labels.iter().find(|(c, _)| c == content) {
            Some((_, label)) => label.clone(),
            None => content.iter().map(|t| prefix(&t.to_string(), 4)).collect(),
        }
    }

    /// Each piece seen in the sample with its label, when the label is not the content itself.
    pub fn legend(&self) -> Vec<(String, String)> {
        self.labels
            .iter()
            .map(|(content, label)| (label.clone(), content_text(content)))
            .filter(|(label, text)| label != text)
            .collect()
    }

    /// The name of a square: file label then rank label (`e2`).
    pub fn square_name(&self, square: Square) -> String {
        format!(
            "{}{}",
            self.file.labels[square.file], self.rank.labels[square.rank]
        )
    }

    /// Reads what a person typed as squares: a file label alone (`d`), one square (`d3`) or
    /// two (`e2e4`, `e2-e4`, `a1 b3`). `None` when the text is not of that form.
    pub fn parse_squares(&self, text: &str) -> Option<Typed> {
        let compact: String = text
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .collect();
        if compact.is_empty() {
            return None;
        }
        if let Some(file) = self.file.labels.iter().position(|l| *l == compact) {
            return Some(Typed::File(file));
        }
        let runs = runs(&compact);
        let mut squares = Vec::new();
        for pair in runs.chunks(2) {
            let [file, rank] = pair else {
                return None;
            };
            let file = self.file.labels.iter().position(|l| l == file)?;
            let rank = self.rank.labels.iter().position(|l| l == rank)?;
            squares.push(Square { file, rank });
        }
        match squares[..] {
            [one] => Some(Typed::Square(one)),
            [from, to] => Some(Typed::FromTo(from, to)),
            _ => None,
        }
    }

    /// The board as text: file labels above and below, rank labels on the left, `.` for an
    /// empty square, and each piece by its label.
    pub fn render_text(&self, facts: &[Term]) -> String {
        let cells = self.cells(facts);
        let width = self
            .labels
            .iter()
            .map(|(_, l)| l.chars().count())
            .chain(self.file.labels.iter().map(|l| l.chars().count()))
            .chain(
                cells
                    .iter()
                    .flatten()
                    .map(|c| self.piece_label(c).chars().count()),
            )
            .max()
            .unwrap_or(1);
        let margin = self
            .rank
            .labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(1);
        let mut header = " ".repeat(margin);
        for label in &self.file.labels {
            header.push_str(&format!(" {label:>width$}"));
        }
        let mut out = format!("{header}\n");
        for rank in (0..self.rank.values.len()).rev() {
            out.push_str(&format!("{:>margin$}", self.rank.labels[rank]));
            for file in 0..self.file.values.len() {
                let text = match &cells[self.index(Square { file, rank })] {
                    Some(content) => self.piece_label(content),
                    None => ".".to_string(),
                };
                out.push_str(&format!(" {text:>width$}"));
            }
            out.push('\n');
        }
        out.push_str(&header);
        out.push('\n');
        out
    }

    fn find_blank(&self, facts: &[Term]) -> Option<Vec<Term>> {
        let mut counts: Vec<(Vec<Term>, usize)> = Vec::new();
        for fact in facts {
            if let Some((_, content)) = self.locate(fact) {
                match counts.iter_mut().find(|(c, _)| *c == content) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((content, 1)),
                }
            }
        }
        let total = self.file.values.len() * self.rank.values.len();
        let most = counts.iter().map(|(_, n)| *n).max()?;
        let mut tops = counts.into_iter().filter(|(_, n)| *n == most);
        let (content, n) = tops.next()?;
        (tops.next().is_none() && n * 5 >= total * 2).then_some(content)
    }
}

/// What [`Layout::parse_squares`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typed {
    /// A file alone (a column, as in Connect Four).
    File(usize),
    /// One square.
    Square(Square),
    /// A move from one square to another.
    FromTo(Square, Square),
}

/// The facts of a state grouped by relation, in order of first appearance: each group is the
/// relation's name and its facts' arguments printed (an empty string for a constant fact).
/// Facts for which `skip` is true are left out.
pub fn facts_by_relation(
    facts: &[Term],
    skip: impl Fn(&Term) -> bool,
) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for fact in facts.iter().filter(|f| !skip(f)) {
        let (name, args) = match fact {
            Term::App(rel, args) => (
                rel.to_string(),
                args.iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            other => (other.to_string(), String::new()),
        };
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, list)) => list.push(args),
            None => groups.push((name, vec![args])),
        }
    }
    groups
}

/// A content tuple printed, its terms separated by spaces.
pub fn content_text(content: &[Term]) -> String {
    content
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A relation and pair of arguments that could be a board, with what the sample shows of it.
struct Candidate {
    rel: Sym,
    arity: usize,
    args: (usize, usize),
    /// Values of each coordinate argument, in order of first sight.
    first: Vec<Term>,
    second: Vec<Term>,
    /// Distinct pairs seen.
    squares: usize,
    /// Distinct contents (the other arguments) seen.
    contents: usize,
    /// Some content holds a role's name.
    names_role: bool,
    /// Some content holds a constant that a state fact pairs with a role's name.
    paired_with_role: bool,
}

fn candidates(samples: &[Vec<Term>], roles: &HashSet<&Term>) -> Vec<Candidate> {
    let mut shapes: Vec<(Sym, usize)> = Vec::new();
    for fact in samples.iter().flatten() {
        if let Term::App(rel, args) = fact
            && args.len() >= 3
            && !shapes.contains(&(*rel, args.len()))
        {
            shapes.push((*rel, args.len()));
        }
    }
    let mut out = Vec::new();
    for (rel, arity) in shapes {
        for i in 0..arity {
            for j in i + 1..arity {
                if let Some(c) = candidate(samples, roles, rel, arity, i, j) {
                    out.push(c);
                }
            }
        }
    }
    out
}

fn candidate(
    samples: &[Vec<Term>],
    roles: &HashSet<&Term>,
    rel: Sym,
    arity: usize,
    i: usize,
    j: usize,
) -> Option<Candidate> {
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let mut squares = HashSet::new();
    let mut contents = HashSet::new();
    for facts in samples {
        let mut seen = HashSet::new();
        for fact in facts {
            let Term::App(r, args) = fact else { continue };
            if *r != rel || args.len() != arity {
                continue;
            }
            let (x, y) = (&args[i], &args[j]);
            if !matches!(x, Term::Const(_)) || !matches!(y, Term::Const(_)) {
                return None;
            }
            if !seen.insert((x, y)) {
                return None;
            }
            if !first.contains(x) {
                first.push(x.clone());
            }
            if !second.contains(y) {
                second.push(y.clone());
            }
            squares.insert((x.clone(), y.clone()));
            let content: Vec<&Term> = (0..arity)
                .filter(|&k| k != i && k != j)
                .map(|k| &args[k])
                .collect();
            contents.insert(content);
        }
    }
    let names_role = contents
        .iter()
        .any(|content| content.iter().any(|t| roles.contains(t)));
    // Constants beside a role's name in a fact of another relation (`(usingMarker p1 red)`).
    let paired: HashSet<&Term> = samples
        .iter()
        .flatten()
        .filter_map(|fact| match fact {
            Term::App(r, args) if *r != rel && args.iter().any(|a| roles.contains(a)) => {
                Some(args.iter().filter(|a| !roles.contains(a)))
            }
            _ => None,
        })
        .flatten()
        .collect();
    let paired_with_role = contents
        .iter()
        .any(|content| content.iter().any(|t| paired.contains(t)));
    (first.len() >= 2 && second.len() >= 2).then_some(Candidate {
        rel,
        arity,
        args: (i, j),
        first,
        second,
        squares: squares.len(),
        contents: contents.len(),
        names_role,
        paired_with_role,
    })
}

/// Most rows the static relations may reach while [`hex_grid`] evaluates them.
const MAX_STATIC_ROWS: usize = 200_000;

/// The grid the static relations of `rules` show on a board with these axes (see the module
/// documentation, "Hexagons"): hexagons when a four-argument relation relates every square
/// to the six a hexagon touches, else squares. Each four-argument relation that depends on
/// neither `true` nor `does` is evaluated from the rules it depends on, within
/// [`MAX_STATIC_ROWS`] rows.
fn hex_grid(rules: &[Rule], file: &Axis, rank: &Axis) -> Grid {
    use ggp_engine::datalog::{Evaluator, Limits, lower};
    use ggp_gdl::gdl::DependencyGraph;
    let mut names: Vec<Sym> = rules
        .iter()
        .filter(|r| r.head.args.len() == 4 && !r.head.rel.is_keyword())
        .map(|r| r.head.rel)
        .collect();
    // Most games have no four-argument relation of their own: nothing to evaluate.
    if names.is_empty() {
        return Grid::Squares;
    }
    names.sort_by_key(|n| n.name());
    names.dedup();
    let graph = DependencyGraph::new(rules);
    let index = |axis: &Axis| -> HashMap<Term, isize> {
        axis.values
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), i as isize))
            .collect()
    };
    let (files, ranks) = (index(file), index(rank));
    let squares = files.len() * ranks.len();
    for name in names {
        let mut needed = graph.ancestors(name);
        if needed.iter().any(|r| *r == Sym::TRUE || *r == Sym::DOES) {
            continue;
        }
        needed.push(name);
        let own: Vec<Rule> = rules
            .iter()
            .filter(|r| needed.contains(&r.head.rel))
            .cloned()
            .collect();
        let Ok(lowered) = lower(&own) else {
            continue;
        };
        let Some(rel) = lowered.rel(name, 4) else {
            continue;
        };
        let limits = Limits {
            max_rows: MAX_STATIC_ROWS,
            max_total_rows: MAX_STATIC_ROWS,
            max_terms: MAX_STATIC_ROWS,
            ..Limits::default()
        };
        let strata: Vec<_> = lowered.strata.into_iter().map(|(s, _)| s).collect();
        let count = strata.len();
        let mut engine = Evaluator::new(
            lowered.pool,
            &lowered.arities,
            lowered.rules,
            strata,
            limits,
        );
        if (0..count).any(|s| engine.evaluate(s).is_err()) {
            continue;
        }
        let rows: Vec<Vec<Term>> = engine
            .relation(rel)
            .rows()
            .map(|row| row.iter().map(|&g| engine.pool.term(g)).collect())
            .collect();
        for ranks_first in [false, true] {
            if let Some(grid) = hex_of(&rows, &files, &ranks, ranks_first, squares) {
                return grid;
            }
        }
    }
    Grid::Squares
}

/// The hexagon grid that `rows` of `(F1 R1 F2 R2)` (`(R1 F1 R2 F2)` when `ranks_first`)
/// describe, if each of the `squares` has a neighbour and the steps between neighbours are
/// exactly a hexagon's six.
fn hex_of(
    rows: &[Vec<Term>],
    files: &HashMap<Term, isize>,
    ranks: &HashMap<Term, isize>,
    ranks_first: bool,
    squares: usize,
) -> Option<Grid> {
    let (a, b) = if ranks_first {
        (ranks, files)
    } else {
        (files, ranks)
    };
    let mut steps = HashSet::new();
    let mut starts = HashSet::new();
    for row in rows {
        let at = |k: usize, axis: &HashMap<Term, isize>| axis.get(&row[k]).copied();
        let (a1, b1, a2, b2) = (at(0, a)?, at(1, b)?, at(2, a)?, at(3, b)?);
        let (f1, r1, f2, r2) = if ranks_first {
            (b1, a1, b2, a2)
        } else {
            (a1, b1, a2, b2)
        };
        steps.insert((f2 - f1, r2 - r1));
        starts.insert((f1, r1));
    }
    if starts.len() < squares {
        return None;
    }
    [1i8, -1].into_iter().find_map(|lean| {
        let l = isize::from(lean);
        let hex: HashSet<(isize, isize)> =
            [(1, 0), (-1, 0), (0, 1), (0, -1), (1, l), (-1, -l)].into();
        (steps == hex).then_some(Grid::Hex { lean })
    })
}

/// The last two states (fact lists: before the last joint move, and the end) of up to
/// `games` random games from the initial state, as many as end within `time` (a game is not
/// cut short once started): what [`Layout::find_joins`] reads. The same seed gives the same
/// games.
///
/// # Errors
/// The engine failed.
pub fn sample_ends<M: StateMachine>(
    machine: &mut M,
    seed: u64,
    games: usize,
    time: Duration,
) -> Result<Vec<[Vec<Term>; 2]>, MachineError> {
    let start = Instant::now();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let initial = machine.initial_state();
    let (mut joint, mut scratch) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    'games: while out.len() < games && start.elapsed() < time {
        let (mut before, mut state) = (initial.clone(), initial.clone());
        for _ in 0..JOIN_PLIES {
            if machine.is_terminal(&state)? {
                out.push([machine.state_terms(&before), machine.state_terms(&state)]);
                continue 'games;
            }
            match machine.random_joint_move_into(&state, &mut rng, &mut joint, &mut scratch) {
                Ok(()) => {}
                Err(MachineError::NoLegalMoves { .. }) => break 'games,
                Err(e) => return Err(e),
            }
            let next = machine.next_state_unchecked(&state, &joint)?;
            before = std::mem::replace(&mut state, next);
        }
        break;
    }
    Ok(out)
}

impl Layout {
    /// Finds what each side connects on a hexagon board from `ends`, the last two states of
    /// ended games (see the module documentation): afterwards [`Layout::joins`] tells it.
    /// Nothing on a square board.
    pub fn find_joins(&mut self, ends: &[[Vec<Term>; 2]]) {
        self.joins = [None, None];
        let Grid::Hex { lean } = self.grid else {
            return;
        };
        // The content and axis of each chain through the stone that ended a game, when it
        // joins the two ends of exactly one axis.
        let mut found: Vec<(Vec<Term>, usize)> = Vec::new();
        let mut contents: Vec<Vec<Term>> = Vec::new();
        for [before, after] in ends {
            let (before, after) = (self.cells(before), self.cells(after));
            for content in after.iter().flatten() {
                if !contents.contains(content) {
                    contents.push(content.clone());
                }
            }
            let placed = (0..after.len()).filter(|&i| before[i].is_none() && after[i].is_some());
            let joins: Vec<(Vec<Term>, [bool; 2])> = placed
                .map(|i| self.chain_ends(&after, i, lean))
                .filter(|(_, axes)| axes.contains(&true))
                .collect();
            if let [(content, [files, ranks])] = &joins[..]
                && files != ranks
            {
                found.push((content.clone(), usize::from(*ranks)));
            }
        }
        if found.len() < MIN_JOIN_ENDS || found.len() * 2 < ends.len() {
            return;
        }
        for axis in 0..2 {
            let mut by: Vec<&Vec<Term>> = Vec::new();
            for (c, _) in found.iter().filter(|(_, a)| *a == axis) {
                if !by.contains(&c) {
                    by.push(c);
                }
            }
            if let [content] = by[..] {
                self.joins[axis] = Some(content.clone());
            }
        }
        // One content that joins both axes, or two that join one: not a connection game.
        if self.joins[0] == self.joins[1]
            || found
                .iter()
                .any(|(c, a)| self.joins[1 - a].as_ref() == Some(c))
        {
            self.joins = [None, None];
            return;
        }
        // Two kinds of stone: the one not seen joining an axis joins the other.
        if let [a, b] = &contents[..] {
            for axis in 0..2 {
                if self.joins[axis].is_none()
                    && let Some(known) = &self.joins[1 - axis]
                {
                    self.joins[axis] = Some(if known == a { b } else { a }.clone());
                }
            }
        }
    }

    /// The content whose chains join the first and last file, and the first and last rank,
    /// as [`Layout::find_joins`] found them.
    pub fn joins(&self) -> [Option<&[Term]>; 2] {
        [self.joins[0].as_deref(), self.joins[1].as_deref()]
    }

    /// The content of square `start` (an index into `cells`, on a hexagon board leaning
    /// `lean`) and whether its chain (the squares of that content it reaches through
    /// neighbours of the same content) joins the first and last file, and the first and last
    /// rank.
    fn chain_ends(&self, cells: &Cells, start: usize, lean: i8) -> (Vec<Term>, [bool; 2]) {
        let (nf, nr) = (self.file.values.len(), self.rank.values.len());
        let content = cells[start].clone().unwrap_or_default();
        let l = isize::from(lean);
        let steps = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, l), (-1, -l)];
        let mut seen = vec![false; cells.len()];
        seen[start] = true;
        let (mut files, mut ranks) = ([false; 2], [false; 2]);
        let mut stack = vec![start];
        while let Some(at) = stack.pop() {
            let (f, r) = (at % nf, at / nf);
            files[0] |= f == 0;
            files[1] |= f + 1 == nf;
            ranks[0] |= r == 0;
            ranks[1] |= r + 1 == nr;
            for (df, dr) in steps {
                let (Some(f2), Some(r2)) = (f.checked_add_signed(df), r.checked_add_signed(dr))
                else {
                    continue;
                };
                let next = r2 * nf + f2;
                if f2 < nf && r2 < nr && !seen[next] && cells[next].as_ref() == Some(&content) {
                    seen[next] = true;
                    stack.push(next);
                }
            }
        }
        (content, [files == [true; 2], ranks == [true; 2]])
    }
}

/// The ground facts of a sheet that widen and order the axes.
#[derive(Debug, Clone)]
struct StaticFacts {
    /// One-argument fact relations, values in sheet order.
    sets: Vec<Vec<Term>>,
    /// Two-argument fact relations that form one path, in path order.
    chains: Vec<Vec<Term>>,
    /// Each constant's rank of first appearance in the sheet.
    appearance: HashMap<Term, usize>,
}

impl StaticFacts {
    fn new(rules: &[Rule]) -> StaticFacts {
        let mut unary: Vec<(Sym, Vec<Term>)> = Vec::new();
        let mut binary: Vec<(Sym, Vec<(Term, Term)>)> = Vec::new();
        let mut appearance = HashMap::new();
        // Relations defined by some rule with a body are not plain fact tables.
        let derived: HashSet<Sym> = rules
            .iter()
            .filter(|r| !r.body.is_empty())
            .map(|r| r.head.rel)
            .collect();
        for rule in rules {
            let mut terms: Vec<&Term> = rule.head.args.iter().collect();
            for literal in &rule.body {
                literal_terms(literal, &mut terms);
            }
            for term in terms {
                note_constants(term, &mut appearance);
            }
            let head = &rule.head;
            if !rule.body.is_empty() || head.rel.is_keyword() || derived.contains(&head.rel) {
                continue;
            }
            if !head.args.iter().all(|a| matches!(a, Term::Const(_))) {
                continue;
            }
            match &head.args[..] {
                [a] => match unary.iter_mut().find(|(r, _)| *r == head.rel) {
                    Some((_, v)) => v.push(a.clone()),
                    None => unary.push((head.rel, vec![a.clone()])),
                },
                [a, b] => match binary.iter_mut().find(|(r, _)| *r == head.rel) {
                    Some((_, v)) => v.push((a.clone(), b.clone())),
                    None => binary.push((head.rel, vec![(a.clone(), b.clone())])),
                },
                _ => {}
            }
        }
        StaticFacts {
            sets: unary.into_iter().map(|(_, v)| v).collect(),
            chains: binary
                .into_iter()
                .filter_map(|(_, pairs)| chain(&pairs))
                .collect(),
            appearance,
        }
    }

    /// The shortest chain holding every value.
    fn chain_covering(&self, values: &[Term]) -> Option<&Vec<Term>> {
        self.chains
            .iter()
            .filter(|c| values.iter().all(|v| c.contains(v)))
            .min_by_key(|c| c.len())
    }

    /// The axis for coordinate argument `arg` whose sampled values are `seen`: widened and
    /// ordered as the module documentation says.
    fn axis(&self, arg: usize, seen: &[Term]) -> Axis {
        let mut values = seen.to_vec();
        let mut order = None;
        if all_integers(&values) {
            let numbers: Vec<i64> = values.iter().filter_map(integer).collect();
            let (lo, hi) = (numbers.iter().min().unwrap(), numbers.iter().max().unwrap());
            if hi - lo < MAX_AXIS as i64 {
                for n in *lo..=*hi {
                    let t = Term::Const(Sym::new(&n.to_string()));
                    if !values.contains(&t) {
                        values.push(t);
                    }
                }
            }
            order = Some(AxisOrder::Numeric);
        } else if let Some(chain) = self.chain_covering(&values) {
            let positions: Vec<usize> = values
                .iter()
                .filter_map(|v| chain.iter().position(|c| c == v))
                .collect();
            let (lo, hi) = (
                positions.iter().min().unwrap(),
                positions.iter().max().unwrap(),
            );
            if hi - lo < MAX_AXIS {
                values = chain[*lo..=*hi].to_vec();
                order = Some(AxisOrder::Successor);
            }
        }
        // Only values of the axis's kind (integers or not) are added: one static relation
        // may list both the files and the ranks.
        let numeric = all_integers(&values);
        if let Some(set) = self
            .sets
            .iter()
            .filter(|s| s.len() <= MAX_AXIS && values.iter().all(|v| s.contains(v)))
            .min_by_key(|s| s.len())
        {
            for v in set {
                if !values.contains(v) && integer(v).is_some() == numeric {
                    values.push(v.clone());
                }
            }
        }
        let order = match order {
            Some(AxisOrder::Numeric) => AxisOrder::Numeric,
            _ if all_integers(&values) => AxisOrder::Numeric,
            _ if self.chain_covering(&values).is_some() => AxisOrder::Successor,
            _ if values.iter().all(|v| self.appearance.contains_key(v)) => AxisOrder::Appearance,
            _ => AxisOrder::Lexical,
        };
        match order {
            AxisOrder::Numeric => values.sort_by_key(|v| integer(v).unwrap_or(0)),
            AxisOrder::Successor => {
                let chain = self.chain_covering(&values).unwrap();
                values.sort_by_key(|v| chain.iter().position(|c| c == v));
            }
            AxisOrder::Appearance => values.sort_by_key(|v| self.appearance[v]),
            AxisOrder::Lexical => values.sort_by_key(|v| v.to_string()),
        }
        Axis {
            arg,
            values,
            order,
            labels: Vec::new(),
        }
    }
}

fn literal_terms<'a>(literal: &'a Literal, out: &mut Vec<&'a Term>) {
    match literal {
        Literal::Atom(a) => out.extend(a.args.iter()),
        Literal::Not(l) => literal_terms(l, out),
        Literal::Distinct(s, t) => out.extend([s, t]),
        Literal::Or(ls) => ls.iter().for_each(|l| literal_terms(l, out)),
    }
}

fn note_constants(term: &Term, out: &mut HashMap<Term, usize>) {
    match term {
        Term::Const(_) => {
            let next = out.len();
            out.entry(term.clone()).or_insert(next);
        }
        Term::Var(_) => {}
        Term::App(_, args) => args.iter().for_each(|a| note_constants(a, out)),
    }
}

/// The values of `pairs` in path order when the pairs form one simple path.
fn chain(pairs: &[(Term, Term)]) -> Option<Vec<Term>> {
    let mut next: HashMap<&Term, &Term> = HashMap::new();
    let mut has_prev: HashSet<&Term> = HashSet::new();
    for (a, b) in pairs {
        if next.insert(a, b).is_some() || !has_prev.insert(b) || a == b {
            return None;
        }
    }
    let mut starts = pairs
        .iter()
        .map(|(a, _)| a)
        .filter(|a| !has_prev.contains(a));
    let start = starts.next()?;
    if starts.next().is_some() {
        return None;
    }
    let mut path = vec![start.clone()];
    let mut at = start;
    while let Some(b) = next.get(at) {
        path.push((*b).clone());
        at = b;
    }
    (path.len() == pairs.len() + 1).then_some(path)
}

fn integer(term: &Term) -> Option<i64> {
    match term {
        Term::Const(s) => s.name().parse().ok(),
        _ => None,
    }
}

fn all_integers(values: &[Term]) -> bool {
    values.iter().all(|v| integer(v).is_some())
}

fn label_files(mut axis: Axis) -> Axis {
    let texts: Vec<String> = axis.values.iter().map(|v| v.to_string()).collect();
    let own = texts
        .iter()
        .all(|t| (1..=2).contains(&t.len()) && t.chars().all(|c| c.is_ascii_lowercase()));
    axis.labels = if own {
        texts
    } else {
        (0..axis.values.len()).map(letters).collect()
    };
    axis
}

fn label_ranks(mut axis: Axis) -> Axis {
    let own = axis
        .values
        .iter()
        .all(|v| integer(v).is_some_and(|n| n >= 0));
    axis.labels = if own {
        axis.values.iter().map(|v| v.to_string()).collect()
    } else {
        (1..=axis.values.len()).map(|n| n.to_string()).collect()
    };
    axis
}

/// `a`..`z`, then `aa`, `ab`...
fn letters(i: usize) -> String {
    let letter = |n: usize| char::from(b'a' + n as u8);
    if i < 26 {
        letter(i).to_string()
    } else {
        format!("{}{}", letter((i / 26 - 1) % 26), letter(i % 26))
    }
}

/// Alternating runs of letters and digits: `e2e4` gives `e`, `2`, `e`, `4`.
fn runs(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut last_digit = None;
    for c in text.chars() {
        let digit = c.is_ascii_digit();
        if last_digit == Some(digit) {
            out.last_mut().unwrap().push(c);
        } else {
            out.push(c.to_string());
        }
        last_digit = Some(digit);
    }
    out
}

fn prefix(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

/// For each content, the shortest prefix of each argument that tells it from the other
/// values of that argument (at most four characters), joined.
fn piece_labels(contents: &[Vec<Term>]) -> Vec<(Vec<Term>, String)> {
    let width = contents.iter().map(Vec::len).max().unwrap_or(0);
    let mut columns: Vec<Vec<String>> = vec![Vec::new(); width];
    for content in contents {
        for (i, t) in content.iter().enumerate() {
            let text = t.to_string();
            if !columns[i].contains(&text) {
                columns[i].push(text);
            }
        }
    }
    contents
        .iter()
        .map(|content| {
            let label = content
                .iter()
                .enumerate()
                .map(|(i, t)| unique_prefix(&t.to_string(), &columns[i], 4))
                .collect();
            (content.clone(), label)
        })
        .collect()
}

fn unique_prefix(text: &str, all: &[String], cap: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    for k in 1..=chars.len().min(cap) {
        let p: String = chars[..k].iter().collect();
        if all
            .iter()
            .all(|other| other == text || !other.starts_with(&p))
        {
            return p;
        }
    }
    prefix(text, cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ggp_gdl::gdl::{parse_rules, parse_term};

    fn facts(text: &str) -> Vec<Term> {
        ggp_gdl::kif::parse(text)
            .unwrap()
            .iter()
            .map(|s| ggp_gdl::gdl::term_from_sexp(s).unwrap())
            .collect()
    }

    #[test]
    fn chains_only_simple_paths() {
        let t = |s: &str| parse_term(s).unwrap();
        let pair = |a: &str, b: &str| (t(a), t(b));
        assert_eq!(
            chain(&[pair("b", "c"), pair("a", "b")]),
            Some(vec![t("a"), t("b"), t("c")])
        );
        assert_eq!(chain(&[pair("a", "b"), pair("b", "a")]), None);
        assert_eq!(chain(&[pair("a", "b"), pair("a", "c")]), None);
        assert_eq!(chain(&[pair("a", "b"), pair("c", "d")]), None);
    }

    #[test]
    fn labels_are_shortest_unique_prefixes() {
        let all: Vec<String> = ["1", "10", "red", "rook"].map(String::from).to_vec();
        assert_eq!(unique_prefix("1", &all, 4), "1");
        assert_eq!(unique_prefix("10", &all, 4), "10");
        assert_eq!(unique_prefix("red", &all, 4), "re");
        assert_eq!(unique_prefix("rook", &all, 4), "ro");
        assert_eq!(letters(0), "a");
        assert_eq!(letters(27), "ab");
        assert_eq!(runs("e10e4"), ["e", "10", "e", "4"]);
    }

    #[test]
    fn detects_content_first_boards_and_orders_by_chain() {
        // Pieces first, coordinates as words ordered only by successor facts.
        let rules = parse_rules(
            "(role w) (nx one two) (nx two three) (ny lo mid) (ny mid hi) (init (at k one lo))",
        )
        .unwrap();
        let sample = facts("(at k three hi) (at q one lo) (at q two lo) (turn w)");
        let layout = Layout::detect(std::slice::from_ref(&sample), &rules).unwrap();
        assert_eq!(layout.files().arg, 1);
        assert_eq!(layout.ranks().arg, 2);
        assert_eq!(layout.files().order, AxisOrder::Successor);
        assert_eq!(layout.ranks().labels, ["1", "2", "3"]);
        assert_eq!(layout.files().labels, ["a", "b", "c"]);
        assert_eq!(
            layout.render_text(&sample),
            "  a b c\n3 . . k\n2 . . .\n1 q q .\n  a b c\n"
        );
        assert_eq!(
            layout.parse_squares("a1-c3"),
            Some(Typed::FromTo(
                Square { file: 0, rank: 0 },
                Square { file: 2, rank: 2 }
            ))
        );
        assert_eq!(layout.parse_squares("b"), Some(Typed::File(1)));
        assert_eq!(layout.parse_squares("z9"), None);
    }

    #[test]
    fn a_change_lists_the_placed_square_and_the_piece_that_moved_first() {
        let rules = parse_rules("(role b) (role w) (succ 1 2) (succ 2 3) (succ 3 4)").unwrap();
        let sample = facts("(cell 1 1 b) (cell 4 4 w) (cell 2 2 w) (cell 3 3 b)");
        let layout = Layout::detect(std::slice::from_ref(&sample), &rules).unwrap();
        let sq = |f, r| Square { file: f, rank: r };
        // A stone placed on d1 turns c3 over: d1 first (the placed square), then c3.
        let before = layout.cells(&facts("(cell 1 1 b) (cell 3 3 b)"));
        let after = layout.cells(&facts("(cell 1 1 b) (cell 3 3 w) (cell 4 1 w)"));
        let change = layout.change(&before, &after);
        assert_eq!(change.to, [sq(3, 0), sq(2, 2)]);
        assert_eq!(change.placed, [sq(3, 0)]);
        assert!(change.from.is_empty());
        // A jump from c3 over b2 to a1: c3 first (its piece lands on a1), then the taken b2.
        let before = layout.cells(&facts("(cell 3 3 b) (cell 2 2 w)"));
        let after = layout.cells(&facts("(cell 1 1 b)"));
        let change = layout.change(&before, &after);
        assert_eq!(change.from, [sq(2, 2), sq(1, 1)]);
        assert_eq!(change.to, [sq(0, 0)]);
    }

    #[test]
    fn no_board_without_the_shape() {
        let sample = facts("(control x) (score x 10) (pair 1 2 3) (pair 1 2 4)");
        assert!(Layout::detect(&[sample], &[]).is_none());
        let groups = facts_by_relation(&facts("(control x) (score x 10) (score o 5) done"), |_| {
            false
        });
        assert_eq!(
            groups[1],
            ("score".to_string(), vec!["x 10".into(), "o 5".into()])
        );
        assert_eq!(groups[2], ("done".to_string(), vec![String::new()]));
    }
}
