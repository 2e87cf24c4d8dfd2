//! `ggp factor`: a game's independent sub-games, for sheet writers (the players no longer
//! search the factored game: see `docs/experiments/factoring.md`), and its turn-taking parts
//! when it is several turn-taking games played at once ([`ggp_engine::analysis::turn_taking`]).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::analysis::{TurnTakingParts, turn_taking_parts};
use ggp_engine::engine::{self, EngineChoice, UseMachineMut};
use ggp_engine::machine::{Factoring, MachineError};
use ggp_engine::propnet::{Budget, factoring, ground};
use ggp_gdl::gdl::Term;

/// Arguments of `ggp factor`.
#[derive(clap::Args, Debug)]
pub struct FactorArgs {
    /// The rule sheet (.kif).
    game: PathBuf,
    /// List every fact and move instead of the first few of each component.
    #[arg(long)]
    all: bool,
}

/// How many facts or moves a component's line shows without `--all`.
const SHOWN: usize = 6;

/// Random games (of at most [`PART_STEPS`] joint moves) sampled for the turn-taking parts.
const PART_GAMES: usize = 20;
const PART_STEPS: usize = 200;

/// Runs `ggp factor`.
pub fn run(args: &FactorArgs) -> anyhow::Result<ExitCode> {
    let description = super::load_description(&args.game)?;
    let prog = ground(&description, &Budget::default())
        .map_err(|e| anyhow::anyhow!("{} does not ground: {e}", args.game.display()))?;
    let factoring = factoring(&prog, description.roles());
    struct Parts<'a>(&'a Factoring);
    impl UseMachineMut for Parts<'_> {
        type Output = Result<Option<TurnTakingParts>, MachineError>;
        fn with<M: engine::Machine>(self, m: &mut M) -> Self::Output {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
            let far = std::time::Instant::now() + std::time::Duration::from_secs(24 * 3600);
            turn_taking_parts(m, self.0, &mut rng, PART_GAMES, PART_STEPS, far)
        }
    }
    let mut loaded = super::engine_for(
        &args.game,
        &description,
        EngineChoice::Auto,
        &Budget::default(),
    )?;
    let parts = loaded.engine.run_mut(Parts(&factoring));
    print!("{}", render(&factoring, description.roles(), args.all));
    print!("{}", render_parts(&parts));
    Ok(ExitCode::SUCCESS)
}

/// The line on turn-taking parts: which components each part joins, none, or why the random
/// games that look for them failed.
pub fn render_parts(parts: &Result<Option<TurnTakingParts>, MachineError>) -> String {
    let parts = match parts {
        Ok(Some(parts)) => parts,
        Ok(None) => return "turn-taking parts: none\n".to_string(),
        Err(e) => {
            return format!("turn-taking parts: not looked for (a random game failed: {e})\n");
        }
    };
    let listed: Vec<String> = parts
        .parts
        .iter()
        .map(|part| {
            let numbers: Vec<String> = part.iter().map(|c| (c + 1).to_string()).collect();
            format!("components {}", numbers.join(" "))
        })
        .collect();
    format!(
        "turn-taking parts: {} ({}): in every state seen each role chooses in one part, one \
         role a part, the roles taking turns in each\n",
        parts.parts.len(),
        listed.join("; ")
    )
}

/// The report `ggp factor` prints.
pub fn render(f: &Factoring, roles: &[Term], all: bool) -> String {
    let mut out = String::new();
    let shown = if all { usize::MAX } else { SHOWN };
    let list = |items: Vec<String>| -> String {
        let n = items.len();
        let mut s = items.into_iter().take(shown).collect::<Vec<_>>().join(" ");
        if n > shown {
            let _ = write!(s, " ... ({} more)", n - shown);
        }
        s
    };
    let moves = |ms: &[(usize, Term)]| -> String {
        list(
            ms.iter()
                .map(|(r, m)| format!("{}:{m}", roles[*r]))
                .collect(),
        )
    };
    let _ = writeln!(
        out,
        "components: {} ({} relevant), shared facts: {}, free moves: {}",
        f.components.len(),
        f.relevant().len(),
        f.shared.len(),
        f.free_moves.len()
    );
    for (c, comp) in f.components.iter().enumerate() {
        let mut readers: Vec<String> = roles
            .iter()
            .enumerate()
            .filter(|(r, _)| f.goal_reads[*r].contains(&c))
            .map(|(_, role)| format!("goal {role}"))
            .collect();
        if f.terminal_reads.contains(&c) {
            readers.push("terminal".into());
        }
        let read = if readers.is_empty() {
            "read by neither goal nor terminal: its moves are idle".to_string()
        } else {
            format!("read by {}", readers.join(", "))
        };
        let _ = writeln!(
            out,
            "component {}: {} facts, {} moves; {read}",
            c + 1,
            comp.facts.len(),
            comp.moves.len()
        );
        let _ = writeln!(
            out,
            "  facts: {}",
            list(comp.facts.iter().map(Term::to_string).collect())
        );
        if !comp.moves.is_empty() {
            let _ = writeln!(out, "  moves: {}", moves(&comp.moves));
        }
    }
    if !f.shared.is_empty() {
        let _ = writeln!(
            out,
            "shared: {}",
            list(f.shared.iter().map(Term::to_string).collect())
        );
    }
    if !f.free_moves.is_empty() {
        let _ = writeln!(out, "free moves (change nothing): {}", moves(&f.free_moves));
    }
    for (role, idle) in f.idle_moves().iter().enumerate() {
        let has_free = f.free_moves.iter().any(|(r, _)| *r == role);
        if idle.len() >= 2 && has_free {
            let _ = writeln!(
                out,
                "{} idle moves of {} (none can change the outcome; a free move is among them)",
                idle.len(),
                roles[role]
            );
        }
    }
    out
}
