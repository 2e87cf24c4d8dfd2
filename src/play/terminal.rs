//! The terminal game loop: shows the board, asks each human seat for its move, lets the
//! computer seats think, and announces the result.
//!
//! Everything goes through a reader and a writer, so a test can drive a whole game through
//! standard input. At the prompt a person may type a move (its number, its KIF term, or its
//! squares) or a command: `hint`, `undo`, `save FILE`, `moves`, `board`, `help`, `quit`.

use std::io::{self, BufRead, Write};
use std::time::Duration;

use super::{Game, Level, PlayError, Seat};
use crate::board::facts_by_relation;
use crate::machine::StateMachine;

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

/// Settings of the terminal loop.
#[derive(Debug, Clone)]
pub struct Options {
    /// Pause after each move when no person had to choose (watching the computer).
    pub pause: Duration,
    /// The level the `hint` command thinks at.
    pub hint: Level,
}

const HELP: &str = "\
Type a move: its number in the list, its term such as (drop 4), or its squares on the
board such as e2e4, a1-b3, d3, or a column letter when one move drops into it.
Commands: hint (the computer's suggestion), undo (take back your last move and the replies),
save FILE (write the match record), moves (list the moves again), board (show the board),
help, quit.";

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
    loop {
        show(game, &mut out)?;
        if game.is_terminal()? {
            let goals = game.goals()?;
            announce(game, &goals, &mut out)?;
            return Ok(Ending::Finished(goals));
        }
        let n_roles = game.roles().len();
        let mut joint = vec![None; n_roles];
        let mut someone_chose = false;
        let mut again = false;
        for role in game.to_move()? {
            if game.seats()[role] != Seat::Human || game.legal(role)?.len() < 2 {
                continue;
            }
            someone_chose = true;
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
                _ => game.computer_move(role)?.map(|c| c.mv),
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
    list_moves(game, role, out)?;
    loop {
        write!(out, "{name}> ")?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(
                out,
                "\ninput ended; the game is not finished (use save FILE to keep it)"
            )?;
            return Ok((Turn::Stop, None));
        }
        let line = line.trim();
        let (command, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match command.to_ascii_lowercase().as_str() {
            "" => {}
            "quit" | "exit" => return Ok((Turn::Stop, None)),
            "help" | "?" => writeln!(out, "{HELP}")?,
            "moves" | "list" => list_moves(game, role, out)?,
            "board" => show(game, out)?,
            "hint" => {
                writeln!(out, "thinking ({})...", options.hint)?;
                let choice = game.suggest(role, options.hint)?;
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
                match std::fs::write(path, record.to_json()) {
                    Ok(()) => writeln!(out, "saved to {path}")?,
                    Err(e) => writeln!(out, "cannot write {path}: {e}")?,
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

/// Prints the position: step and whose turn, the board (or the facts), the last move.
fn show<M, W>(game: &mut Game<M>, out: &mut W) -> Result<(), TerminalError>
where
    M: StateMachine + Send + 'static,
    W: Write,
{
    let facts = game.facts();
    writeln!(out)?;
    let turn = if game.is_terminal()? {
        "game over".to_string()
    } else {
        let names: Vec<String> = game
            .to_move()?
            .into_iter()
            .map(|r| game.roles()[r].to_string())
            .collect();
        format!("to move: {}", names.join(", "))
    };
    writeln!(out, "Step {} · {turn}", game.step())?;
    let layout = game.layout().cloned();
    if let Some(layout) = &layout {
        write!(out, "{}", layout.render_text(&facts))?;
        let legend = layout.legend();
        if !legend.is_empty() {
            let parts: Vec<String> = legend.iter().map(|(l, c)| format!("{l} = {c}")).collect();
            writeln!(out, "{}", parts.join(", "))?;
        }
    }
    for (relation, args) in facts_by_relation(&facts, |f| {
        layout.as_ref().is_some_and(|l| l.is_board_fact(f))
    }) {
        if args.iter().all(String::is_empty) {
            writeln!(out, "{relation}")?;
        } else {
            writeln!(out, "{relation}: {}", args.join(", "))?;
        }
    }
    let last = game.last_moves()?;
    if !last.is_empty() {
        let parts: Vec<String> = last
            .iter()
            .map(|(r, t)| format!("{} {t}", game.roles()[*r]))
            .collect();
        writeln!(out, "Last move: {}", parts.join(", "))?;
    }
    Ok(())
}

fn item<Mv>(index: usize, info: &super::MoveInfo<Mv>) -> String {
    match &info.notation {
        Some(n) => format!("{}. {n} {}", index + 1, info.term),
        None => format!("{}. {}", index + 1, info.term),
    }
}

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
    let per_line = (80 / width).max(1);
    for line in items.chunks(per_line) {
        let mut text = String::from(" ");
        for it in line {
            text.push_str(&format!(" {it:<w$}", w = width - 1));
        }
        writeln!(out, "{}", text.trim_end())?;
    }
    Ok(())
}

fn announce<M, W>(game: &Game<M>, goals: &[u8], out: &mut W) -> Result<(), TerminalError>
where
    M: StateMachine + Send + 'static,
    W: Write,
{
    writeln!(out, "Game over after {} moves.", game.step())?;
    for (role, goal) in game.roles().iter().zip(goals) {
        writeln!(out, "  {role}: {goal}")?;
    }
    writeln!(out, "Result: {}.", super::result_text(game.roles(), goals))?;
    Ok(())
}
