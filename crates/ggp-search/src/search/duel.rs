//! Fast games between two players from the initial state, seats taking turns: the start-clock
//! trial that chooses a setting by how it plays this game, not by its name (MCTS: its learnt
//! heuristic valuing cut playouts against the same as a prior).
//!
//! Game `g` seats player A as role `g mod n` and player B in every other seat. Each role with a
//! choice searches for the same time slice; a role with a single legal move (a `noop` while the
//! other side moves) plays it at once. A game that has not ended after `max_plies` plies,
//! or when the trial's time is up, counts as a draw. A's score in a game is
//! `0.5 + (A's goal − the other seats' mean goal) / 200`: its goal over 100 in a two-player
//! constant-sum game, and 0.5 when everybody gets the same.

use std::time::{Duration, Instant};

use ggp_engine::machine::StateMachine;

use super::{Player, SearchConfig, SearchError, goal_or_zero};

/// Which player of a duel a seat holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The player whose score is measured.
    A,
    /// Its opponent, in every other seat.
    B,
}

/// How a duel is played.
#[derive(Debug, Clone)]
pub struct DuelPlan {
    /// Games to play (A's seat moving round the roles).
    pub games: usize,
    /// A game longer than this many plies is a draw.
    pub max_plies: usize,
    /// Think time of every move (and of each player's start).
    pub slice: Duration,
    /// No game goes on past this; an unfinished game is a draw.
    pub until: Instant,
    /// The seed of game `g`'s players is `seed + g + 1`.
    pub seed: u64,
    /// Iterations (or nodes) a move may take besides the slice, when limited: a player's own
    /// budget, which makes a trial repeatable on any machine.
    pub iterations: Option<u64>,
}

impl DuelPlan {
    /// A plan whose games fit in the time from now to `until`: each move gets that time over
    /// `games × 1.5 × expected_plies` (games between searches last longer than random ones),
    /// at least `min_slice`.
    pub fn fitted(
        games: usize,
        max_plies: usize,
        expected_plies: f64,
        until: Instant,
        min_slice: Duration,
        seed: u64,
    ) -> DuelPlan {
        let left = until.saturating_duration_since(Instant::now());
        let expected = expected_plies.clamp(2.0, max_plies as f64);
        let moves = (games as f64 * 1.5 * expected) as u32;
        DuelPlan {
            games,
            max_plies,
            slice: (left / moves.max(1)).max(min_slice),
            until,
            seed,
            iterations: None,
        }
    }
}

/// What a duel found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DuelResult {
    /// A's mean score, 0 to 1 (0.5 when no game was played).
    pub score: f64,
    /// Games played (finished or not).
    pub games: usize,
    /// Games that ended (not cut by the ply limit or the time).
    pub finished: usize,
}

impl DuelResult {
    /// A's games won net of games lost: `(score − ½) × 2 × games`, a draw or an unfinished
    /// game counting nothing and a goal margin counting its share of a win (1.0 is one game
    /// won outright with the others drawn).
    pub fn net_wins(&self) -> f64 {
        (self.score - 0.5) * 2.0 * self.games as f64
    }
}

/// Plays the duel `plan` describes; `make(side, config)` builds a fresh player for a seat.
///
/// # Errors
/// The engine or a player failed.
pub fn duel<M: StateMachine>(
    machine: &mut M,
    plan: &DuelPlan,
    mut make: impl FnMut(Side, SearchConfig) -> Box<dyn Player<M>>,
) -> Result<DuelResult, SearchError> {
    let n_roles = machine.roles().len();
    let mut result = DuelResult {
        score: 0.0,
        games: 0,
        finished: 0,
    };
    for game in 0..plan.games {
        if Instant::now() >= plan.until {
            break;
        }
        let a_role = game % n_roles.max(1);
        let mut state = machine.initial_state();
        let config = SearchConfig {
            seed: plan.seed.wrapping_add(game as u64 + 1),
            threads: 1,
            max_iterations: plan.iterations,
            progress: None,
        };
        let mut players: Vec<Box<dyn Player<M>>> = (0..n_roles)
            .map(|r| make(if r == a_role { Side::A } else { Side::B }, config.clone()))
            .collect();
        for (r, p) in players.iter_mut().enumerate() {
            p.start(machine, r, Instant::now() + plan.slice)?;
        }
        let mut score = 0.5;
        let started = Instant::now();
        let mut plies = 0;
        'plies: for _ in 0..plan.max_plies {
            if machine.is_terminal(&state)? {
                score = a_score(machine, &state, a_role)?;
                result.finished += 1;
                break;
            }
            if Instant::now() >= plan.until {
                break;
            }
            let mut joint = Vec::with_capacity(n_roles);
            for (r, p) in players.iter_mut().enumerate() {
                let legal = machine.legal_moves(&state, r)?;
                let mv = match legal.as_slice() {
                    // A role without a move (a sheet that breaks GDL's promise, see
                    // `random_step`): the game ends here, unfinished.
                    [] => break 'plies,
                    [only] => *only,
                    _ => p.choose(machine, &state, Instant::now() + plan.slice)?.mv,
                };
                joint.push(mv);
            }
            state = machine.next_state(&state, &joint)?;
            plies += 1;
        }
        tracing::info!(
            "duel game {game}: A as role {a_role} scored {score:.2} in {plies} plies, {:.2} s, {} ms a move",
            started.elapsed().as_secs_f64(),
            plan.slice.as_millis()
        );
        result.score += score;
        result.games += 1;
    }
    result.score = if result.games > 0 {
        result.score / result.games as f64
    } else {
        0.5
    };
    Ok(result)
}

/// A's score in a terminal state (see the module documentation).
fn a_score<M: StateMachine>(
    machine: &mut M,
    state: &M::State,
    a_role: usize,
) -> Result<f64, SearchError> {
    let n_roles = machine.roles().len();
    let own = f64::from(goal_or_zero(machine, state, a_role)?);
    if n_roles < 2 {
        return Ok(own / 100.0);
    }
    let mut others = 0.0;
    for r in (0..n_roles).filter(|&r| r != a_role) {
        others += f64::from(goal_or_zero(machine, state, r)?);
    }
    let others = others / (n_roles - 1) as f64;
    Ok((0.5 + (own - others) / 200.0).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::DuelResult;

    fn result(score: f64, games: usize) -> DuelResult {
        DuelResult {
            score,
            games,
            finished: games,
        }
    }

    #[test]
    fn net_wins_count_whole_games() {
        // One win and three draws in four games; a win and a loss; one win of two.
        assert!((result(0.625, 4).net_wins() - 1.0).abs() < 1e-12);
        assert!(result(0.5, 2).net_wins().abs() < 1e-12);
        assert!((result(0.75, 2).net_wins() - 1.0).abs() < 1e-12);
        // A goal margin of 24 points over three games is less than one game.
        assert!((result(0.54, 3).net_wins() - 0.24).abs() < 1e-12);
        // No game played.
        assert_eq!(result(0.5, 0).net_wins(), 0.0);
    }
}
