//! The terminal game loop: shows the board, asks each human seat for its move, lets the
//! computer seats think, and announces the result.
//!
//! Everything goes through a reader and a writer, so a test can drive a whole game through
//! standard input. At the prompt a person may type a move (SAN such as `Nf3` or `O-O` on a
//! chess sheet, its squares, its number, or its KIF term) or a command: `hint`, `undo`,
//! `save FILE`, `moves`, `board`, `help`, `quit`. A line that is not UTF-8 text is refused
//! and the game goes on.
//!
//! **The screen.** Each time a person is to move (and after every move when nobody is, as
//! when watching) the loop draws one screen: a header (step, whose turn, check), the board
//! with the move history and the game's other facts beside it, the last move, the legal moves
//! in the game's notation, and the prompt. For boards up to 9x9 it fits 80 columns and 24
//! lines: the history keeps its most recent lines, and the move list ends with how many more
//! there are (`moves` lists them all). Chess pieces are figurines (♔ ♚...) or FEN letters
//! ([`Glyphs::Ascii`]); a piece whose content names a role named after a colour is a disc in
//! that colour when the terminal has colour, else its letter (white and black are ○ and ●).
//! On a terminal the screen is cleared before each drawing; in a pipe screens follow each
//! other, a blank line apart.

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shakmaty::{Color, File, Position, Rank, Role, Square as ChessSquare};

use super::{Game, Level, PlayError, Seat};
use crate::board::{Square, facts_by_relation};
use ggp_engine::machine::StateMachine;
use ggp_gdl::gdl::Term;
use ggp_search::search::Work;

/// Screen size the loop keeps to.
pub const SCREEN_COLUMNS: usize = 80;
/// Screen height the loop keeps to.
pub const SCREEN_LINES: usize = 24;

/// Why the loop stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    /// Reading or writing the terminal failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The game failed.
    #[error(transparent)]
    Play(#[from] PlayError),
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The game reached a terminal state; the goal values in role order.
    Finished(Vec<u8>),
    /// The person quit, or the input ended.
    Stopped,
}

/// The characters pieces are drawn with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Glyphs {
    /// Chess figurines, discs and stones.
    Unicode,
    /// Letters only.
    Ascii,
}

impl Glyphs {
    /// Unicode when the locale says UTF-8 (the first of `LC_ALL`, `LC_CTYPE`, `LANG` that is
    /// set) and the terminal is not `dumb`; `var` reads an environment variable.
    pub fn detect(var: impl Fn(&str) -> Option<String>) -> Glyphs {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .find_map(|v| var(v).filter(|s| !s.is_empty()))
            .unwrap_or_default()
            .to_ascii_lowercase();
        let utf8 = locale.contains("utf-8") || locale.contains("utf8");
        if utf8 && var("TERM").as_deref() != Some("dumb") {
            Glyphs::Unicode
        } else {
            Glyphs::Ascii
        }
    }
}

/// Where the progress line goes while the computer thinks.
#[derive(Clone)]
pub struct ProgressSink(pub Arc<Mutex<dyn Write + Send>>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Settings of the terminal loop.
#[derive(Debug, Clone)]
pub struct Options {
    /// Pause after each move when no person had to choose (watching the computer).
    pub pause: Duration,
    /// The level the `hint` command thinks at.
    pub hint: Level,
    /// How pieces are drawn.
    pub glyphs: Glyphs,
    /// Whether to colour discs (ANSI colours).
    pub color: bool,
    /// Whether to clear the screen before each drawing (a terminal).
    pub clear: bool,
    /// Where to show the progress line while the computer thinks (a terminal), updated in
    /// place; none to stay quiet.
    pub progress: Option<ProgressSink>,
}

impl Options {
    /// Plain settings for a pipe: ASCII, no colour, no clearing, no progress line.
    pub fn plain(pause: Duration, hint: Level) -> Options {
        Options {
            pause,
            hint,
            glyphs: Glyphs::Ascii,
            color: false,
            clear: false,
            progress: None,
        }
    }
}

const HELP: &str = "\
Type a move: on a chess board its SAN (e4, Nf3, exd5, O-O, e8=Q) or squares (e2e4);
on other boards its squares (a1-b3, d3, or a column letter when one move drops into it);
or its number in the full list (moves), or its term such as (drop 4).
Commands: hint (the computer's suggestion), undo (take back your last move and the replies),
save FILE (write the match record), moves (list every move with its number and term),
board (show the board), help, quit.";

enum Turn {
    /// Moves chosen for every role with a choice.
    Moves,
    /// The history changed (undo): show the position again.
    Again,
    /// Stop.
    Stop,
}

/// Plays `game` to its end, or until the person quits or the input ends.
///
/// # Errors
/// Reading or writing failed, or the engine or a player failed.
pub fn run<M, R, W>(
    game: &mut Game<M>,
    mut input: R,
    mut out: W,
    options: &Options,
) -> Result<Ending, TerminalError>
where
    M: StateMachine + Send + 'static,
    R: BufRead,
    W: Write,
{
    writeln!(out, "{}", seats_line(game))?;
    let watching = !game.seats().contains(&Seat::Human);
    loop {
        if game.is_terminal()? {
            show(game, None, &mut out, options)?;
            let goals = game.goals()?;
            announce(game, &goals, &mut out)?;
            return Ok(Ending::Finished(goals));
        }
        let n_roles = game.roles().len();
        let mut joint = vec![None; n_roles];
        let mut someone_chose = false;
        let mut again = false;
        let askers: Vec<usize> = game
            .to_move()?
            .into_iter()
            .filter(|&r| game.seats()[r] == Seat::Human)
            .collect();
        let mut askers_with_choice = Vec::new();
        for role in askers {
            if game.legal(role)?.len() > 1 {
                askers_with_choice.push(role);
            }
        }
        if watching {
            show(game, None, &mut out, options)?;
        }
        for role in askers_with_choice {
            someone_chose = true;
            show(game, Some(role), &mut out, options)?;
            match ask(game, role, &mut input, &mut out, options)? {
                (Turn::Moves, mv) => joint[role] = mv,
                (Turn::Again, _) => {
                    again = true;
                    break;
                }
                (Turn::Stop, _) => return Ok(Ending::Stopped),
            }
        }
        if again {
            continue;
        }
        for (role, slot) in joint.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let legal = game.legal(role)?;
            *slot = match legal[..] {
                [only] => Some(only),
                _ => think(game, role, options, |g| g.computer_move(role))?.map(|c| c.mv),
            };
        }
        let joint: Vec<_> = joint.into_iter().flatten().collect();
        game.play(joint)?;
        if !someone_chose && !options.pause.is_zero() {
            out.flush()?;
            std::thread::sleep(options.pause);
        }
    }
}

/// Runs `search` (a computer move or a hint for `role`) while a progress line shows the
/// work so far (playouts or positions) and the time, when the options have somewhere to show it; the line is
/// erased afterwards.
fn think<M, T>(
    game: &mut Game<M>,
    role: usize,
    options: &Options,
    search: impl FnOnce(&mut Game<M>) -> Result<T, PlayError>,
) -> Result<T, PlayError>
where
    M: StateMachine + Send + 'static,
{
    let Some(sink) = &options.progress else {
        return search(game);
    };
    let progress = game.progress();
    progress.reset();
    progress.set_work(game.work_of(role));
    let name = game.roles()[role].to_string();
    let done = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Shown at once, then every tenth of a second, and erased at the end.
            loop {
                let line = progress_line(&name, progress.count(), progress.work(), start.elapsed());
                if let Ok(mut w) = sink.0.lock() {
                    let _ = write!(w, "\r\x1b[K{line}");
                    let _ = w.flush();
                }
                std::thread::sleep(Duration::from_millis(100));
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
            if let Ok(mut w) = sink.0.lock() {
                let _ = write!(w, "\r\x1b[K");
                let _ = w.flush();
            }
        });
        let result = search(game);
        done.store(true, Ordering::Relaxed);
        result
    })
}

/// `black is thinking: 1,234 playouts, 2.5 s` (or `positions`, as `work` says).
pub fn progress_line(name: &str, count: u64, work: Work, elapsed: Duration) -> String {
    let digits = count.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!(
        "{name} is thinking: {grouped} {}, {:.1} s",
        work.noun(),
        elapsed.as_secs_f64()
    )
}

/// Reads one line; `None` at the end of the input, `Some(Err(text))` for a line that is not
/// UTF-8 (the message to show).
fn read_line<R: BufRead>(input: &mut R) -> io::Result<Option<Result<String, String>>> {
    let mut bytes = Vec::new();
    if input.read_until(b'\n', &mut bytes)? == 0 {
        return Ok(None);
    }
    Ok(Some(String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        format!(
            "that line is not UTF-8 text (byte 0x{:02x} at column {}); type it again",
            e.as_bytes()[at],
            at + 1
        )
    })))
}

/// Asks human seat `role` for a move until it gives one or a command that ends the turn.
fn ask<M, R, W>(
    game: &mut Game<M>,
    role: usize,
    input: &mut R,
    out: &mut W,
    options: &Options,
) -> Result<(Turn, Option<M::Move>), TerminalError>
where
    M: StateMachine + Send + 'static,
    R: BufRead,
    W: Write,
{
    let name = game.roles()[role].to_string();
    loop {
        write!(out, "{name}> ")?;
        out.flush()?;
        let line = match read_line(input)? {
            None => {
                writeln!(
                    out,
                    "\ninput ended; the game is not finished (use save FILE to keep it)"
                )?;
                return Ok((Turn::Stop, None));
            }
            Some(Err(message)) => {
                writeln!(out, "{message}")?;
                continue;
            }
            Some(Ok(line)) => line,
        };
        let line = line.trim();
        let (command, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match command.to_ascii_lowercase().as_str() {
            "" => {}
            "quit" | "exit" => return Ok((Turn::Stop, None)),
            "help" | "?" => writeln!(out, "{HELP}")?,
            "moves" | "list" => list_moves(game, role, out)?,
            "board" => {
                show(game, Some(role), out, options)?;
            }
            "hint" => {
                writeln!(out, "thinking ({})...", options.hint)?;
                let level = options.hint;
                let choice = think(game, role, options, |g| g.suggest(role, level))?;
                let infos = game.move_infos(role)?;
                if let Some(i) = infos.iter().position(|i| i.mv == choice.mv) {
                    writeln!(out, "hint: {}", item(i, &infos[i]))?;
                }
            }
            "undo" => {
                if game.undo_turn()? {
                    writeln!(out, "taken back")?;
                    return Ok((Turn::Again, None));
                }
                writeln!(out, "nothing to take back")?;
            }
            "save" => {
                if rest.trim().is_empty() {
                    writeln!(out, "usage: save FILE")?;
                    continue;
                }
                let path = rest.trim();
                let record = game.record()?;
                match record.save(std::path::Path::new(path)) {
                    Ok(()) => writeln!(out, "saved to {path}")?,
                    Err(e) => writeln!(out, "cannot save: {e}")?,
                }
            }
            _ => match game.resolve(role, line) {
                Ok(mv) => return Ok((Turn::Moves, Some(mv))),
                Err(e) => writeln!(out, "{e}")?,
            },
        }
    }
}

fn seats_line<M: StateMachine + Send + 'static>(game: &Game<M>) -> String {
    let parts: Vec<String> = game
        .roles()
        .iter()
        .zip(game.seats())
        .map(|(r, s)| format!("{r}: {s}"))
        .collect();
    format!("Players: {}", parts.join(", "))
}

/// One line of text and the columns it takes on screen (colour codes take none).
struct Line {
    text: String,
    width: usize,
}

impl Line {
    fn plain(text: impl Into<String>) -> Line {
        let text = text.into();
        let width = text.chars().count();
        Line { text, width }
    }
}

/// Cuts `text` to `width` columns, marking the cut with `…` (or `~` in ASCII).
fn fit(text: &str, width: usize, glyphs: Glyphs) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mark = if glyphs == Glyphs::Unicode {
        '…'
    } else {
        '~'
    };
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push(mark);
    cut
}

/// Words wrapped into lines of at most `width` columns.
fn wrap(words: &[String], width: usize) -> Vec<String> {
    wrap_counted(words, width)
        .into_iter()
        .map(|(l, _)| l)
        .collect()
}

/// Words wrapped into lines of at most `width` columns, with the number of words on each.
fn wrap_counted(words: &[String], width: usize) -> Vec<(String, usize)> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut count = 0;
    for word in words {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push((std::mem::take(&mut line), count));
            count = 0;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        count += 1;
    }
    if !line.is_empty() {
        lines.push((line, count));
    }
    lines
}

/// Draws one screen: the position, and when `asking` is a role, its moves (the prompt
/// follows). Fits [`SCREEN_COLUMNS`] x [`SCREEN_LINES`] with the prompt for boards up to 9x9.
fn show<M, W>(
    game: &mut Game<M>,
    asking: Option<usize>,
    out: &mut W,
    options: &Options,
) -> Result<(), TerminalError>
where
    M: StateMachine + Send + 'static,
    W: Write,
{
    let position = game.chess_position()?;
    let mut lines = vec![header_line(game, position.as_ref())?];
    lines.extend(board_and_panel(game, position.as_ref(), asking, options)?);
    lines.extend(last_move_line(game, options)?);
    lines.extend(percepts_line(game, options));
    if let Some(role) = asking {
        // The blank line before, the prompt after.
        let room = SCREEN_LINES.saturating_sub(lines.len() + 2);
        lines.extend(move_lines(game, role, room)?.into_iter().map(Line::plain));
    }
    if options.clear {
        write!(out, "\x1b[H\x1b[2J")?;
    } else {
        writeln!(out)?;
    }
    for line in lines {
        writeln!(out, "{}", line.text)?;
    }
    Ok(())
}

/// `Step N · to move: ROLES` (`· check` on a chess sheet), or `Step N · game over`.
fn header_line<M>(game: &mut Game<M>, position: Option<&shakmaty::Chess>) -> Result<Line, PlayError>
where
    M: StateMachine + Send + 'static,
{
    let mut header = format!("Step {} · ", game.step());
    if game.is_terminal()? {
        header.push_str("game over");
    } else {
        let names: Vec<String> = game
            .to_move()?
            .into_iter()
            .map(|r| game.roles()[r].to_string())
            .collect();
        header.push_str(&format!("to move: {}", names.join(", ")));
        if position.is_some_and(Position::is_check) {
            header.push_str(" · check");
        }
    }
    Ok(Line::plain(header))
}

/// The board with a panel beside it: the legend, the other facts (not on a chess sheet,
/// whose position says it all), and the most recent history; without a board, the facts and
/// the history's last line.
fn board_and_panel<M>(
    game: &mut Game<M>,
    position: Option<&shakmaty::Chess>,
    asking: Option<usize>,
    options: &Options,
) -> Result<Vec<Line>, PlayError>
where
    M: StateMachine + Send + 'static,
{
    let (board, legend, board_facts) = board_lines(game, position, asking, options);
    let board_width = board.iter().map(|l| l.width).max().unwrap_or(0);
    let panel_width = SCREEN_COLUMNS.saturating_sub(board_width + 3);
    let mut panel: Vec<Line> = legend;
    if position.is_none() {
        for (relation, args) in facts_by_relation(&game.facts(), |f| board_facts(f)) {
            let text = if args.iter().all(String::is_empty) {
                relation
            } else {
                format!("{relation}: {}", args.join(", "))
            };
            panel.push(Line::plain(fit(&text, panel_width.max(20), options.glyphs)));
        }
    }
    let history = history_words(game)?;
    let mut lines = Vec::new();
    if board.is_empty() {
        lines.extend(panel);
        if !history.is_empty() {
            let wrapped = wrap(&history, SCREEN_COLUMNS - 9);
            let last = wrapped.last().cloned().unwrap_or_default();
            lines.push(Line::plain(format!("History: {last}")));
        }
        return Ok(lines);
    }
    let room = board.len().saturating_sub(panel.len());
    if room > 0 && !history.is_empty() {
        let wrapped = wrap(&history, panel_width);
        let skip = wrapped.len().saturating_sub(room);
        panel.extend(wrapped.into_iter().skip(skip).map(Line::plain));
    }
    panel.truncate(board.len());
    for (i, row) in board.into_iter().enumerate() {
        match panel.get(i) {
            Some(p) => lines.push(Line {
                text: format!(
                    "{}{}   {}",
                    row.text,
                    " ".repeat(board_width - row.width),
                    p.text
                ),
                width: board_width + 3 + p.width,
            }),
            None => lines.push(row),
        }
    }
    Ok(lines)
}

/// `Last move: ROLE NOTATION TERM, ...`, if a move was made.
fn last_move_line<M>(game: &mut Game<M>, options: &Options) -> Result<Option<Line>, PlayError>
where
    M: StateMachine + Send + 'static,
{
    let last = game.last_moves()?;
    if last.is_empty() {
        return Ok(None);
    }
    let plies = game.history()?;
    let step = game.step() - 1;
    let parts: Vec<String> = last
        .iter()
        .map(|(r, t)| {
            let text = plies
                .iter()
                .find(|p| p.step == step && p.role == *r)
                .map(|p| p.text.clone())
                .filter(|n| *n != t.to_string())
                .map_or(format!("{t}"), |n| format!("{n} {t}"));
            format!("{} {text}", game.roles()[*r])
        })
        .collect();
    let text = format!("Last move: {}", parts.join(", "));
    Ok(Some(Line::plain(fit(
        &text,
        SCREEN_COLUMNS,
        options.glyphs,
    ))))
}

/// GDL-II: the board shows only what the viewing role knows; this line says what it was told.
fn percepts_line<M>(game: &Game<M>, options: &Options) -> Option<Line>
where
    M: StateMachine + Send + 'static,
{
    let viewer = game.viewer()?;
    let seen: Vec<String> = game.percepts().iter().map(ToString::to_string).collect();
    let text = format!(
        "{} sees only its own: {}",
        game.roles()[viewer],
        if seen.is_empty() {
            "nothing new".to_string()
        } else {
            seen.join(" ")
        }
    );
    Some(Line::plain(fit(&text, SCREEN_COLUMNS, options.glyphs)))
}

/// The moves as history words: `1. e4 e5 2. Nf3` when two roles take turns from the first,
/// else `1. d1` (several movers of a step joined by `/`).
fn history_words<M>(game: &mut Game<M>) -> Result<Vec<String>, PlayError>
where
    M: StateMachine + Send + 'static,
{
    let plies = game.history()?;
    let alternate = game.roles().len() == 2
        && plies
            .iter()
            .enumerate()
            .all(|(i, p)| p.step == i && p.role == i % 2);
    let mut words = Vec::new();
    if alternate {
        for (i, p) in plies.iter().enumerate() {
            if i % 2 == 0 {
                words.push(format!("{}. {}", i / 2 + 1, p.text));
            } else {
                words.push(p.text.clone());
            }
        }
        return Ok(words);
    }
    let mut i = 0;
    while i < plies.len() {
        let step = plies[i].step;
        let texts: Vec<String> = plies[i..]
            .iter()
            .take_while(|p| p.step == step)
            .map(|p| p.text.clone())
            .collect();
        i += texts.len();
        words.push(format!("{}. {}", step + 1, texts.join("/")));
    }
    Ok(words)
}

/// The legal moves of `role` in at most `room` lines: the notations (SAN on a chess sheet,
/// pieces first) when every move has one, else numbered terms; the last line says how many
/// did not fit.
fn move_lines<M>(game: &mut Game<M>, role: usize, room: usize) -> Result<Vec<String>, PlayError>
where
    M: StateMachine + Send + 'static,
{
    let name = game.roles()[role].to_string();
    let infos = game.move_infos(role)?;
    let (mut words, width): (Vec<String>, usize) = if infos.iter().all(|i| i.notation.is_some()) {
        let mut w: Vec<String> = infos.iter().filter_map(|i| i.notation.clone()).collect();
        if infos.iter().any(|i| i.shape.is_some()) {
            w.sort_by_key(|n| (san_order(n), n.clone()));
        }
        (w, 0)
    } else {
        let items: Vec<String> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| item(i, info))
            .collect();
        let width = items.iter().map(|s| s.chars().count()).max().unwrap_or(0) + 1;
        (items, width)
    };
    if width > 0 {
        for w in &mut words {
            *w = format!("{w:<width$}");
        }
    }
    let mut lines = vec![format!("Moves for {name}:")];
    let body = wrap_counted(&words, SCREEN_COLUMNS - 2);
    let room = room.max(3);
    if body.len() < room {
        lines.extend(body.into_iter().map(|(l, _)| format!("  {}", l.trim_end())));
        return Ok(lines);
    }
    // Keep what fits, and say how many more there are.
    let mut shown = 0;
    for (line, n) in body.into_iter().take(room - 2) {
        shown += n;
        lines.push(format!("  {}", line.trim_end()));
    }
    lines.push(format!(
        "  ... and {} more (type moves to see them all)",
        words.len() - shown
    ));
    Ok(lines)
}

/// Pawn moves first, then knight, bishop, rook, queen, king and castling.
fn san_order(san: &str) -> u8 {
    match san.chars().next() {
        Some('N') => 1,
        Some('B') => 2,
        Some('R') => 3,
        Some('Q') => 4,
        Some('K') => 5,
        Some('O') => 6,
        _ => 0,
    }
}

/// The board's lines, the legend to show beside it, and which facts it shows. A chess sheet
/// is drawn from its chess position (flipped when the only person plays black); another
/// board from the board detection.
#[allow(clippy::type_complexity)]
fn board_lines<M>(
    game: &mut Game<M>,
    position: Option<&shakmaty::Chess>,
    asking: Option<usize>,
    options: &Options,
) -> (Vec<Line>, Vec<Line>, Box<dyn Fn(&Term) -> bool>)
where
    M: StateMachine + Send + 'static,
{
    let layout = game.layout().cloned();
    if let Some(pos) = position {
        let humans: Vec<usize> = (0..game.roles().len())
            .filter(|&r| game.seats()[r] == Seat::Human)
            .collect();
        let black_only = !humans.is_empty()
            && humans
                .iter()
                .all(|&r| game.chess_color(r) == Some(Color::Black));
        let flipped = match asking {
            Some(r) => black_only && game.chess_color(r) == Some(Color::Black),
            None => black_only,
        };
        let lines = chess_board(pos.board(), flipped, options.glyphs);
        return (lines, Vec::new(), Box::new(move |_| true));
    }
    let Some(layout) = layout else {
        return (Vec::new(), Vec::new(), Box::new(|_| false));
    };
    let facts = game.facts();
    let cells = layout.cells(&facts);
    let roles = game.roles().to_vec();
    let winning = game.winning_line().ok().flatten().unwrap_or_default();
    let glyph_of = |content: &[Term]| -> (String, usize) {
        let owner = roles.iter().find(|r| content.contains(r));
        let label = layout.piece_label(content);
        match owner.map(|r| colour_of(&r.to_string())) {
            Some(Some(c)) => disc(c, &label, options),
            _ => {
                let w = label.chars().count();
                (label, w)
            }
        }
    };
    let files = &layout.files().labels;
    let ranks = &layout.ranks().labels;
    let mut glyphs: Vec<(String, usize)> = Vec::new();
    for content in cells.iter() {
        glyphs.push(match content {
            Some(c) => glyph_of(c),
            None => (".".into(), 1),
        });
    }
    let cell_width = glyphs
        .iter()
        .map(|g| g.1)
        .chain(files.iter().map(|l| l.chars().count()))
        .max()
        .unwrap_or(1);
    let rank_width = ranks.iter().map(|l| l.chars().count()).max().unwrap_or(1);
    let mut lines = Vec::new();
    let file_line = {
        let mut t = " ".repeat(rank_width);
        for f in files {
            t.push(' ');
            t.push_str(&format!("{f:<cell_width$}"));
        }
        Line::plain(t.trim_end().to_string())
    };
    lines.push(Line::plain(file_line.text.clone()));
    for rank in (0..ranks.len()).rev() {
        let mut text = format!("{:>rank_width$}", ranks[rank]);
        let mut width = rank_width;
        for file in 0..files.len() {
            let square = Square { file, rank };
            let (g, w) = &glyphs[layout.index(square)];
            let mark = if winning.contains(&square) { '*' } else { ' ' };
            text.push(mark);
            text.push_str(g);
            text.push_str(&" ".repeat(cell_width - w));
            width += 1 + cell_width;
        }
        lines.push(Line { text, width });
    }
    lines.push(file_line);
    // The legend: discs by role, other pieces by label.
    let mut legend = Vec::new();
    let mut parts = Vec::new();
    let mut width = 0;
    for role in &roles {
        if let Some(c) = colour_of(&role.to_string())
            && cells.iter().flatten().any(|content| content.contains(role))
        {
            let label = layout.piece_label(std::slice::from_ref(role));
            let (g, w) = disc(c, &label, options);
            let sep = if g == label { " = " } else { " " };
            width += w + sep.len() + role.to_string().chars().count() + 2;
            parts.push(format!("{g}{sep}{role}"));
        }
    }
    if !parts.is_empty() {
        legend.push(Line {
            text: parts.join(", "),
            width: width.saturating_sub(2),
        });
    } else {
        let l = layout.legend();
        if !l.is_empty() {
            let parts: Vec<String> = l.iter().map(|(l, c)| format!("{l} = {c}")).collect();
            legend.push(Line::plain(parts.join(", ")));
        }
    }
    if !winning.is_empty() {
        legend.push(Line::plain("* the winning line"));
    }
    (lines, legend, Box::new(move |f| layout.is_board_fact(f)))
}

/// The chess board: rank 8 at the top (rank 1 when flipped), files below and above.
fn chess_board(board: &shakmaty::Board, flipped: bool, glyphs: Glyphs) -> Vec<Line> {
    let mut files: Vec<File> = File::ALL.to_vec();
    let mut ranks: Vec<Rank> = Rank::ALL.to_vec();
    ranks.reverse();
    if flipped {
        files.reverse();
        ranks.reverse();
    }
    let file_line: String = std::iter::once(" ".to_string())
        .chain(files.iter().map(|f| format!(" {}", f.char())))
        .collect();
    let mut lines = vec![Line::plain(file_line.clone())];
    for &rank in &ranks {
        let mut text = format!("{}", rank.char());
        for &file in &files {
            let square = ChessSquare::from_coords(file, rank);
            text.push(' ');
            text.push(match board.piece_at(square) {
                Some(p) => figurine(p.color, p.role, glyphs),
                None if glyphs == Glyphs::Unicode => '·',
                None => '.',
            });
        }
        text.push_str(&format!(" {}", rank.char()));
        lines.push(Line::plain(text));
    }
    lines.push(Line::plain(file_line));
    lines
}

/// A chess piece as one character: a figurine, or its FEN letter.
pub fn figurine(color: Color, role: Role, glyphs: Glyphs) -> char {
    if glyphs == Glyphs::Ascii {
        return match color {
            Color::White => role.upper_char(),
            Color::Black => role.char(),
        };
    }
    match (color, role) {
        (Color::White, Role::King) => '♔',
        (Color::White, Role::Queen) => '♕',
        (Color::White, Role::Rook) => '♖',
        (Color::White, Role::Bishop) => '♗',
        (Color::White, Role::Knight) => '♘',
        (Color::White, Role::Pawn) => '♙',
        (Color::Black, Role::King) => '♚',
        (Color::Black, Role::Queen) => '♛',
        (Color::Black, Role::Rook) => '♜',
        (Color::Black, Role::Bishop) => '♝',
        (Color::Black, Role::Knight) => '♞',
        (Color::Black, Role::Pawn) => '♟',
    }
}

/// The ANSI colour code of a role name that names a colour (`white` and `black` are drawn
/// by shape instead, as ○ and ●).
fn colour_of(name: &str) -> Option<Colour> {
    let name = name.to_ascii_lowercase();
    Some(match name.as_str() {
        "white" => Colour::White,
        "black" => Colour::Black,
        "red" => Colour::Ansi("31"),
        "green" => Colour::Ansi("32"),
        "yellow" => Colour::Ansi("33"),
        "blue" => Colour::Ansi("34"),
        "purple" | "magenta" | "violet" => Colour::Ansi("35"),
        "cyan" => Colour::Ansi("36"),
        "orange" => Colour::Ansi("38;5;208"),
        "pink" => Colour::Ansi("38;5;205"),
        "brown" => Colour::Ansi("38;5;130"),
        _ => return None,
    })
}

#[derive(Clone, Copy)]
enum Colour {
    White,
    Black,
    Ansi(&'static str),
}

/// A disc of colour `c` (its text and columns): ○ or ● for white and black, a coloured ●
/// where the terminal has colour, else the piece's letter `label`.
fn disc(c: Colour, label: &str, options: &Options) -> (String, usize) {
    let letter = || (label.to_string(), label.chars().count());
    if options.glyphs == Glyphs::Ascii {
        return letter();
    }
    match c {
        Colour::White => ("○".into(), 1),
        Colour::Black => ("●".into(), 1),
        Colour::Ansi(code) if options.color => (format!("\x1b[{code}m●\x1b[0m"), 1),
        Colour::Ansi(_) => letter(),
    }
}

fn item<Mv>(index: usize, info: &super::MoveInfo<Mv>) -> String {
    match &info.notation {
        Some(n) => format!("{}. {n} {}", index + 1, info.term),
        None => format!("{}. {}", index + 1, info.term),
    }
}

/// Every legal move with its number, notation and term (the `moves` command).
fn list_moves<M, W>(game: &mut Game<M>, role: usize, out: &mut W) -> Result<(), TerminalError>
where
    M: StateMachine + Send + 'static,
    W: Write,
{
    let name = game.roles()[role].to_string();
    let items: Vec<String> = game
        .move_infos(role)?
        .iter()
        .enumerate()
        .map(|(i, info)| item(i, info))
        .collect();
    writeln!(out, "Moves for {name}:")?;
    let width = items.iter().map(|s| s.chars().count()).max().unwrap_or(0) + 3;
    let per_line = (SCREEN_COLUMNS / width).max(1);
    for line in items.chunks(per_line) {
        let mut text = String::from(" ");
        for it in line {
            text.push_str(&format!(" {it:<w$}", w = width - 1));
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

fn announce<M, W>(game: &mut Game<M>, goals: &[u8], out: &mut W) -> Result<(), TerminalError>
where
    M: StateMachine + Send + 'static,
    W: Write,
{
    match game.ending()? {
        Some(how) => writeln!(out, "Game over after {} moves: {how}.", game.step())?,
        None => writeln!(out, "Game over after {} moves.", game.step())?,
    }
    for (role, goal) in game.roles().iter().zip(goals) {
        writeln!(out, "  {role}: {goal}")?;
    }
    writeln!(out, "Result: {}.", super::result_text(game.roles(), goals))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glyphs_follow_the_locale_and_the_terminal() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_string())
            }
        };
        assert_eq!(
            Glyphs::detect(env(&[("LANG", "en_US.UTF-8")])),
            Glyphs::Unicode
        );
        assert_eq!(
            Glyphs::detect(env(&[("LC_ALL", "C.utf8")])),
            Glyphs::Unicode
        );
        assert_eq!(
            Glyphs::detect(env(&[("LC_ALL", "C"), ("LANG", "en_US.UTF-8")])),
            Glyphs::Ascii,
            "LC_ALL wins"
        );
        assert_eq!(Glyphs::detect(env(&[("LANG", "C")])), Glyphs::Ascii);
        assert_eq!(Glyphs::detect(env(&[])), Glyphs::Ascii);
        assert_eq!(
            Glyphs::detect(env(&[("LANG", "en_US.UTF-8"), ("TERM", "dumb")])),
            Glyphs::Ascii
        );
    }

    #[test]
    fn figurines_and_letters() {
        assert_eq!(figurine(Color::White, Role::King, Glyphs::Unicode), '♔');
        assert_eq!(figurine(Color::Black, Role::Pawn, Glyphs::Unicode), '♟');
        assert_eq!(figurine(Color::White, Role::Knight, Glyphs::Ascii), 'N');
        assert_eq!(figurine(Color::Black, Role::Queen, Glyphs::Ascii), 'q');
    }

    /// Role 0's computer move with a progress sink: what the sink was shown. The game's count
    /// ends at the search's own count of its work.
    fn computer_move_shown<M: StateMachine + Send + 'static>(game: &mut Game<M>) -> String {
        let buffer = Arc::new(Mutex::new(Vec::<u8>::new()));
        let mut options = Options::plain(Duration::ZERO, Level::Easy);
        options.progress = Some(ProgressSink(buffer.clone()));
        let choice = think(game, 0, &options, |g| g.computer_move(0))
            .unwrap()
            .unwrap();
        assert_eq!(game.progress().count(), choice.iterations);
        assert!(choice.iterations > 0);
        String::from_utf8(buffer.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn the_progress_line_counts_the_playouts_of_the_search() {
        use ggp_engine::datalog::DatalogMachine;
        use ggp_gdl::gdl::Description;
        let text = include_str!("../../rules/connectFour.kif");
        let description = Description::from_text(text).unwrap();
        let machine = DatalogMachine::new(&description).unwrap();
        let seats = vec![Seat::Computer(Level::Easy), Seat::Human];
        let mut game = Game::new(machine, description.rules(), text, seats, 1).unwrap();
        // Every playout of the search was counted as it went.
        let shown = computer_move_shown(&mut game);
        assert!(shown.starts_with("\r\x1b[Kred is thinking: "), "{shown:?}");
        assert!(shown.ends_with(" s\r\x1b[K"), "{shown:?}");
        // Without a sink nothing is shown, and the search is the same.
        let quiet = Options::plain(Duration::ZERO, Level::Easy);
        assert!(think(&mut game, 0, &quiet, |g| g.computer_move(0)).is_ok());
    }

    /// Chess at `easy` is played by alpha-beta: the line counts positions, from its first
    /// showing, and ends at the search's node count.
    #[test]
    fn the_progress_line_counts_positions_for_alpha_beta() {
        use ggp_engine::propnet::{Budget, PropnetMachine};
        use ggp_gdl::gdl::Description;
        let text = include_str!("../../rules/chess.kif");
        let description = Description::from_text(text).unwrap();
        let machine = PropnetMachine::new(&description, &Budget::default()).unwrap();
        let seats = vec![Seat::Computer(Level::Easy), Seat::Human];
        let mut game = Game::new(machine, description.rules(), text, seats, 1).unwrap();
        let shown = computer_move_shown(&mut game);
        let first = shown.split("\r\x1b[K").nth(1).unwrap();
        assert!(first.starts_with("white is thinking: "), "{shown:?}");
        assert!(first.contains(" positions, "), "{shown:?}");
        assert!(!shown.contains("playouts"), "{shown:?}");
    }

    #[test]
    fn progress_line_groups_digits() {
        assert_eq!(
            progress_line(
                "black",
                1_234_567,
                Work::Playouts,
                Duration::from_millis(2500)
            ),
            "black is thinking: 1,234,567 playouts, 2.5 s"
        );
        assert_eq!(
            progress_line("x", 12, Work::Positions, Duration::ZERO),
            "x is thinking: 12 positions, 0.0 s"
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_refused_and_reading_goes_on() {
        let mut input: &[u8] = b"e4\n\xffe5\nNf3\n";
        assert_eq!(read_line(&mut input).unwrap(), Some(Ok("e4\n".into())));
        assert_eq!(
            read_line(&mut input).unwrap(),
            Some(Err(
                "that line is not UTF-8 text (byte 0xff at column 1); type it again".into()
            ))
        );
        assert_eq!(read_line(&mut input).unwrap(), Some(Ok("Nf3\n".into())));
        assert_eq!(read_line(&mut input).unwrap(), None);
    }

    #[test]
    fn wrapping_and_fitting() {
        let words: Vec<String> = ["1. e4", "e5", "2. Nf3", "Nc6"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(wrap(&words, 12), ["1. e4 e5", "2. Nf3 Nc6"]);
        assert_eq!(fit("abcdef", 4, Glyphs::Ascii), "abc~");
        assert_eq!(fit("abc", 4, Glyphs::Unicode), "abc");
    }
}
