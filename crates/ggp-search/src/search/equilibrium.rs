//! Exact play of small two-player games with simultaneous moves.
//!
//! [`Equilibrium::solve`] works out the value of every state reachable from a start state by
//! backward induction: a terminal state is worth its goals; any other state is a matrix game
//! whose entries are the values of the states its joint moves lead to. Where those entries'
//! goals always add up to the same sum (a constant-sum stage), the state is worth that game's
//! value, which a saddle point or else linear programming gives (the `microlp` crate). Where
//! they do not (a game like the prisoner's dilemma), the state is worth the one pair of moves
//! that survives iterated elimination of strictly dominated moves, a subgame-perfect
//! equilibrium that every rational pair of players reaches. A table keeps each state once.
//! The solve gives up, saying why, at its deadline, past a number of states, or at a stage
//! that is neither constant-sum nor settled by dominance (a game like chicken, whose
//! equilibria differ in what each side gets).
//!
//! [`EquilibriumPlayer`] then plays, in each state, an optimal mixed strategy of its matrix
//! game (at a constant-sum stage: whatever the other does, it scores the game's value in
//! expectation, and no strategy can promise more) or the move that dominance leaves. In a game
//! like colonelBlotto, where each pure strategy is beaten by another, this is what search that
//! settles on one move cannot give (Bošanský, Lisý, Lanctot, Čermák, Winands, "Algorithms for
//! computing strategies in two-player simultaneous move games", 2016: backward induction with
//! a matrix game solved at each stage). Once it has seen the other's moves in the match, it
//! plays the move of the optimal strategy's support that scores best against them, where one
//! scores more than the mix: against an optimal opponent every such move scores the value, so
//! only an opponent that leans one way is affected, and it is answered.

use std::time::Instant;

use hashbrown::HashMap;
use microlp::{ComparisonOp, OptimizationDirection, Problem};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::machine::{MachineError, StateMachine};

use super::{Choice, Player, SearchConfig, SearchError, goal_or_zero, past};

/// The longest chain of states the solve follows (a deeper game is not small).
const MAX_DEPTH: usize = 1000;
/// Tolerance when comparing values (goals are integers from 0 to 100).
const EPSILON: f64 = 1e-7;

/// Why a solve stopped without a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unsolved {
    /// The deadline came first (after so many states were solved).
    #[error("the deadline came ({0} states solved)")]
    Deadline(usize),
    /// More states than allowed.
    #[error("more than {0} states")]
    TooBig(usize),
    /// A stage that is not constant-sum where more than one pair of moves survives iterated
    /// elimination of strictly dominated moves.
    #[error("a state's matrix game is not constant-sum and not settled by dominance")]
    NoEquilibrium,
    /// A role without a legal move in a state that is not terminal.
    #[error("a role has no legal move in a state that is not terminal")]
    NoMove,
    /// The states lead back to one on the current line, or further than [`MAX_DEPTH`].
    #[error("a line of play returns to a state or is longer than {MAX_DEPTH} moves")]
    TooDeep,
    /// The game is not for two roles.
    #[error("the game has {0} roles, not two")]
    Roles(usize),
    /// The linear program of a matrix game failed.
    #[error("linear programming failed: {0}")]
    Lp(String),
    /// The engine failed.
    #[error(transparent)]
    Machine(#[from] MachineError),
}

/// The values of a two-player game's states, for both roles.
pub struct Equilibrium<M: StateMachine> {
    /// The value of each state solved for roles 0 and 1; `NaN` while it is being solved.
    values: HashMap<M::State, [f64; 2]>,
}

impl<M: StateMachine> Equilibrium<M> {
    /// Solves every state reachable from `start` before `deadline` and within `max_states`
    /// states.
    ///
    /// # Errors
    /// Why the game was not solved ([`Unsolved`]).
    pub fn solve(
        machine: &mut M,
        start: &M::State,
        deadline: Instant,
        max_states: usize,
    ) -> Result<Equilibrium<M>, Unsolved> {
        let mut table = Equilibrium {
            values: HashMap::new(),
        };
        table.extend(machine, start, deadline, max_states)?;
        Ok(table)
    }

    /// Solves `start` and the states after it that are not in the table yet. On an error the
    /// table may hold states marked as being solved; it is then not to be used.
    fn extend(
        &mut self,
        machine: &mut M,
        start: &M::State,
        deadline: Instant,
        max_states: usize,
    ) -> Result<[f64; 2], Unsolved> {
        let roles = machine.roles().len();
        if roles != 2 {
            return Err(Unsolved::Roles(roles));
        }
        let mut solver = Solver {
            machine,
            table: self,
            deadline,
            max_states,
            steps: 0,
        };
        solver.value(start, 0)
    }

    /// How many states are solved.
    pub fn states(&self) -> usize {
        self.values.len()
    }

    /// The value of `state` for role number `role`, if it was solved.
    pub fn value(&self, state: &M::State, role: usize) -> Option<f64> {
        let v = self.values.get(state)?;
        if v[0].is_nan() {
            return None;
        }
        Some(v[role])
    }

    /// The matrix game of `state` and the two roles' moves, if every state after it is solved.
    fn matrix(
        &self,
        machine: &mut M,
        state: &M::State,
    ) -> Result<Option<Stage<M::Move>>, MachineError> {
        let rows = machine.legal_moves(state, 0)?;
        let cols = machine.legal_moves(state, 1)?;
        let mut payoffs = Vec::with_capacity(rows.len() * cols.len());
        for &a in &rows {
            for &b in &cols {
                let next = machine.next_state_unchecked(state, &[a, b])?;
                match (self.value(&next, 0), self.value(&next, 1)) {
                    (Some(v0), Some(v1)) => payoffs.push([v0, v1]),
                    _ => return Ok(None),
                }
            }
        }
        Ok(Some(Stage {
            rows,
            cols,
            payoffs,
        }))
    }
}

/// One state's matrix game.
struct Stage<Mv> {
    rows: Vec<Mv>,
    cols: Vec<Mv>,
    /// Both roles' values of each joint move, row-major (role 0's moves are the rows).
    payoffs: Vec<[f64; 2]>,
}

impl<Mv> Stage<Mv> {
    /// The sum that every entry's two values add up to, if they all add up to one.
    fn constant_sum(&self) -> Option<f64> {
        let first = self.payoffs.first()?;
        let sum = first[0] + first[1];
        self.payoffs
            .iter()
            .all(|p| (p[0] + p[1] - sum).abs() < EPSILON)
            .then_some(sum)
    }

    /// Role 0's values, row-major.
    fn row_payoffs(&self) -> Vec<f64> {
        self.payoffs.iter().map(|p| p[0]).collect()
    }

    /// The value of the stage for both roles, found before `deadline`: the matrix game's value
    /// at a constant-sum stage, else the pair of moves that dominance leaves.
    fn value(&self, deadline: Instant) -> Result<[f64; 2], Unsolved> {
        let (rows, cols) = (self.rows.len(), self.cols.len());
        if let Some(sum) = self.constant_sum() {
            let v = game_value(&self.row_payoffs(), rows, cols, deadline)?;
            return Ok([v, sum - v]);
        }
        let (i, j) = self.dominance().ok_or(Unsolved::NoEquilibrium)?;
        Ok(self.payoffs[i * cols + j])
    }

    /// The pair of moves (row, column) left by iterated elimination of strictly dominated
    /// moves, each role judging by its own values; several left count as one where every pair
    /// left is worth the same to both roles.
    fn dominance(&self) -> Option<(usize, usize)> {
        let cols = self.cols.len();
        let value = |i: usize, j: usize, role: usize| self.payoffs[i * cols + j][role];
        let mut left_rows: Vec<usize> = (0..self.rows.len()).collect();
        let mut left_cols: Vec<usize> = (0..cols).collect();
        loop {
            let before = left_rows.len() + left_cols.len();
            left_rows = undominated(&left_rows, &left_cols, |i, j| value(i, j, 0));
            left_cols = undominated(&left_cols, &left_rows, |j, i| value(i, j, 1));
            if left_rows.len() + left_cols.len() == before {
                break;
            }
        }
        let (&i, &j) = (left_rows.first()?, left_cols.first()?);
        let same = left_rows.iter().all(|&r| {
            left_cols.iter().all(|&c| {
                (0..2).all(|role| (value(r, c, role) - value(i, j, role)).abs() < EPSILON)
            })
        });
        same.then_some((i, j))
    }
}

/// The moves of `mine` that no other of `mine` beats strictly against every move of `theirs`,
/// `value(m, t)` being the chooser's value of its move `m` against the other's `t`.
fn undominated(
    mine: &[usize],
    theirs: &[usize],
    value: impl Fn(usize, usize) -> f64,
) -> Vec<usize> {
    mine.iter()
        .copied()
        .filter(|&m| {
            !mine
                .iter()
                .any(|&k| theirs.iter().all(|&t| value(k, t) > value(m, t) + EPSILON))
        })
        .collect()
}

/// The backward induction over one solve.
struct Solver<'a, M: StateMachine> {
    machine: &'a mut M,
    table: &'a mut Equilibrium<M>,
    deadline: Instant,
    max_states: usize,
    /// Joint moves followed, for looking at the clock now and then.
    steps: u64,
}

impl<M: StateMachine> Solver<'_, M> {
    /// The value of `state` for both roles, `depth` moves into the solve.
    fn value(&mut self, state: &M::State, depth: usize) -> Result<[f64; 2], Unsolved> {
        if let Some(&v) = self.table.values.get(state) {
            return if v[0].is_nan() {
                Err(Unsolved::TooDeep)
            } else {
                Ok(v)
            };
        }
        if depth > MAX_DEPTH {
            return Err(Unsolved::TooDeep);
        }
        if self.table.values.len() >= self.max_states {
            return Err(Unsolved::TooBig(self.max_states));
        }
        if self.machine.is_terminal(state)? {
            let v = [
                f64::from(goal_or_zero(self.machine, state, 0)?),
                f64::from(goal_or_zero(self.machine, state, 1)?),
            ];
            self.table.values.insert(state.clone(), v);
            return Ok(v);
        }
        self.table.values.insert(state.clone(), [f64::NAN; 2]);
        let rows = self.machine.legal_moves(state, 0)?;
        let cols = self.machine.legal_moves(state, 1)?;
        if rows.is_empty() || cols.is_empty() {
            return Err(Unsolved::NoMove);
        }
        let mut payoffs = Vec::with_capacity(rows.len() * cols.len());
        for &a in &rows {
            for &b in &cols {
                self.steps += 1;
                if self.steps.is_multiple_of(256) && past(self.deadline) {
                    return Err(Unsolved::Deadline(self.table.values.len()));
                }
                let next = self.machine.next_state_unchecked(state, &[a, b])?;
                payoffs.push(self.value(&next, depth + 1)?);
            }
        }
        let stage = Stage {
            rows,
            cols,
            payoffs,
        };
        let v = match stage.value(self.deadline) {
            Err(Unsolved::Deadline(_)) => Err(Unsolved::Deadline(self.table.values.len())),
            other => other,
        }?;
        self.table.values.insert(state.clone(), v);
        Ok(v)
    }
}

/// The value to the row player of the matrix game `payoffs` (`rows` × `cols`, row-major, the
/// row player's payoffs; the column player gets the rest of a constant sum), found before
/// `deadline`.
fn game_value(
    payoffs: &[f64],
    rows: usize,
    cols: usize,
    deadline: Instant,
) -> Result<f64, Unsolved> {
    if let Some(v) = saddle_point(payoffs, rows, cols) {
        return Ok(v);
    }
    Ok(row_strategy(payoffs, rows, cols, deadline)?.0)
}

/// The value of a matrix game where a pure strategy of each side is optimal: the row
/// player's best worst case equals the column player's.
fn saddle_point(payoffs: &[f64], rows: usize, cols: usize) -> Option<f64> {
    let maximin = payoffs
        .chunks(cols)
        .map(|row| row.iter().copied().fold(f64::INFINITY, f64::min))
        .fold(f64::NEG_INFINITY, f64::max);
    let minimax = (0..cols)
        .map(|j| {
            (0..rows)
                .map(|i| payoffs[i * cols + j])
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .fold(f64::INFINITY, f64::min);
    ((minimax - maximin).abs() < EPSILON).then_some(maximin)
}

/// The value of the matrix game `payoffs` (as in [`game_value`]) and an optimal mixed strategy
/// of the row player, by linear programming: the largest `v` such that some probabilities `x`
/// over the rows give at least `v` against every column.
/// The solve stops at `deadline`.
fn row_strategy(
    payoffs: &[f64],
    rows: usize,
    cols: usize,
    deadline: Instant,
) -> Result<(f64, Vec<f64>), Unsolved> {
    let low = payoffs.iter().copied().fold(f64::INFINITY, f64::min);
    let high = payoffs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut problem = Problem::new(OptimizationDirection::Maximize);
    let v = problem.add_var(1.0, (low, high));
    let x: Vec<_> = (0..rows)
        .map(|_| problem.add_var(0.0, (0.0, 1.0)))
        .collect();
    for j in 0..cols {
        let mut terms: Vec<_> = (0..rows).map(|i| (x[i], payoffs[i * cols + j])).collect();
        terms.push((v, -1.0));
        problem.add_constraint(terms.as_slice(), ComparisonOp::Ge, 0.0);
    }
    let ones: Vec<_> = x.iter().map(|&xi| (xi, 1.0)).collect();
    problem.add_constraint(ones.as_slice(), ComparisonOp::Eq, 1.0);
    problem.set_time_limit(deadline.saturating_duration_since(Instant::now()));
    let outcome = problem.solve().map_err(|e| Unsolved::Lp(e.to_string()))?;
    let Some(solution) = outcome.solution().filter(|_| outcome.is_optimal()) else {
        return Err(Unsolved::Deadline(0));
    };
    let strategy = x
        .iter()
        .map(|&xi| solution.var_value(xi).max(0.0))
        .collect();
    Ok((solution.objective(), strategy))
}

/// A strategy of role number `role` in `stage`, found before `deadline`: probabilities over
/// its moves. At a constant-sum stage an optimal mixed strategy, or, given `reply` (what the
/// other role is expected to play, from its moves seen so far), the move of that strategy's
/// support that scores best against `reply` where one scores better than the mix; where a pure
/// strategy is optimal (a saddle point), the move that keeps the value and scores best against
/// `reply` (a uniformly random one when nothing is seen yet); where linear programming fails or
/// runs out of time, the move with the best worst case. At any other stage the move that
/// dominance leaves (the best worst case if dominance leaves several, which a solved stage does
/// not).
///
/// Keeping to the support is what makes the exploitation safe against an optimal opponent:
/// against any optimal strategy of the other role, each move in the support of an optimal
/// strategy scores the stage's value exactly, so a best reply among them gives up nothing to
/// such an opponent and gains where the other's moves lean one way.
fn stage_strategy<Mv>(
    stage: &Stage<Mv>,
    role: usize,
    reply: Option<&[f64]>,
    deadline: Instant,
) -> Vec<f64> {
    let (rows, cols) = (stage.rows.len(), stage.cols.len());
    // The role's own values, its moves as the rows: for the column player, transposed.
    let (own, rows, cols): (Vec<f64>, _, _) = if role == 0 {
        (stage.row_payoffs(), rows, cols)
    } else {
        let transposed = (0..cols)
            .flat_map(|j| (0..rows).map(move |i| (i, j)))
            .map(|(i, j)| stage.payoffs[i * cols + j][1])
            .collect();
        (transposed, cols, rows)
    };
    if stage.constant_sum().is_none() {
        if let Some((i, j)) = stage.dominance() {
            return pure(rows, if role == 0 { i } else { j });
        }
        tracing::warn!("equilibrium: a stage not settled by dominance; the best worst case");
    } else if saddle_point(&own, rows, cols).is_none() {
        match row_strategy(&own, rows, cols, deadline) {
            Ok((_, strategy)) => {
                return match reply.and_then(|r| best_in_support(&own, cols, &strategy, r)) {
                    Some(best) => pure(rows, best),
                    None => strategy,
                };
            }
            Err(why) => {
                tracing::warn!("equilibrium: the best worst case, no mixed strategy: {why}")
            }
        }
    }
    let uniform = vec![1.0 / cols as f64; cols];
    pure_maximin(&own, rows, cols, reply.unwrap_or(&uniform))
}

/// Our values against `reply` (probabilities over the other's moves), per row of `payoffs`.
fn against(payoffs: &[f64], cols: usize, reply: &[f64]) -> Vec<f64> {
    payoffs
        .chunks(cols)
        .map(|row| row.iter().zip(reply).map(|(v, p)| v * p).sum())
        .collect()
}

/// The row of `strategy`'s support that scores best against `reply`, if it scores more than
/// `strategy` itself does.
fn best_in_support(payoffs: &[f64], cols: usize, strategy: &[f64], reply: &[f64]) -> Option<usize> {
    let scores = against(payoffs, cols, reply);
    let mixed: f64 = scores.iter().zip(strategy).map(|(s, p)| s * p).sum();
    let best = (0..scores.len())
        .filter(|&i| strategy[i] > EPSILON)
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))?;
    (scores[best] > mixed + EPSILON).then_some(best)
}

/// The pure strategy of row `row` of `rows`.
fn pure(rows: usize, row: usize) -> Vec<f64> {
    (0..rows)
        .map(|i| if i == row { 1.0 } else { 0.0 })
        .collect()
}

/// The row with the best worst case (ties: the best score against `reply`), as a strategy.
fn pure_maximin(payoffs: &[f64], rows: usize, cols: usize, reply: &[f64]) -> Vec<f64> {
    let scores = against(payoffs, cols, reply);
    let score = |i: usize| {
        let row = &payoffs[i * cols..(i + 1) * cols];
        let worst = row.iter().copied().fold(f64::INFINITY, f64::min);
        (worst, scores[i])
    };
    let best = (0..rows)
        .max_by(|&a, &b| {
            score(a)
                .partial_cmp(&score(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .unwrap_or(0);
    pure(rows, best)
}

/// Plays a solved game ([`Equilibrium`]) by an optimal mixed strategy in each state, or by the
/// best reply within that strategy's support to the other role's moves seen so far in the
/// match ([`stage_strategy`]).
pub struct EquilibriumPlayer<M: StateMachine> {
    table: Equilibrium<M>,
    role: usize,
    rng: Xoshiro256PlusPlus,
    /// The state of our last choice and the move we chose, to tell the other's move from the
    /// state that follows.
    last: Option<(M::State, M::Move)>,
    /// How often the other role has played each move in this match; where several of its
    /// moves lead to the same state, each gets a share.
    seen: HashMap<M::Move, f64>,
}

impl<M: StateMachine> EquilibriumPlayer<M> {
    /// A player of `table`'s game for the role it is started with.
    pub fn new(config: &SearchConfig, table: Equilibrium<M>) -> EquilibriumPlayer<M> {
        EquilibriumPlayer {
            table,
            role: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            last: None,
            seen: HashMap::new(),
        }
    }

    /// Counts the other role's move that led from our last choice's state to `state` (shared
    /// among its moves that lead there alike); nothing when it had one move, when every move
    /// leads there, or when none does (the match went on elsewhere).
    fn observe(&mut self, machine: &mut M, state: &M::State) -> Result<(), MachineError> {
        let Some((before, ours)) = self.last.take() else {
            return Ok(());
        };
        let theirs = machine.legal_moves(&before, 1 - self.role)?;
        let mut fits = Vec::new();
        for &mv in &theirs {
            let joint = if self.role == 0 {
                [ours, mv]
            } else {
                [mv, ours]
            };
            if machine.next_state_unchecked(&before, &joint)? == *state {
                fits.push(mv);
            }
        }
        if !fits.is_empty() && fits.len() < theirs.len() {
            let share = 1.0 / fits.len() as f64;
            for mv in fits {
                *self.seen.entry(mv).or_default() += share;
            }
        }
        Ok(())
    }

    /// What the other role has been seen to play among `moves`: each move's share of the
    /// times any of them was seen; `None` while none was.
    ///
    /// The other role is presumed to play an optimal strategy but for what it was seen to do.
    /// Against an optimal strategy every move of our optimal support scores the same, so the
    /// moves seen alone decide which of them to play. (A prior spread evenly over the other's
    /// moves, Laplace's rule, was measured instead: with many moves it outweighs a few seen
    /// ones, and the player kept to the one move best against an even spread; colonelBlotto
    /// lost three of four against Sancho, `docs/experiments/equilibrium.md`.)
    fn reply(&self, moves: &[M::Move]) -> Option<Vec<f64>> {
        let counts: Vec<f64> = moves
            .iter()
            .map(|mv| self.seen.get(mv).copied().unwrap_or(0.0))
            .collect();
        let total: f64 = counts.iter().sum();
        (total > 0.0).then(|| counts.iter().map(|c| c / total).collect())
    }

    /// Our move in `state` drawn from an optimal mixed strategy (found before `deadline`),
    /// with our value there.
    fn draw(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Option<(M::Move, f64)>, MachineError> {
        let Some(stage) = self.table.matrix(machine, state)? else {
            return Ok(None);
        };
        let Some(value) = self.table.value(state, self.role) else {
            return Ok(None);
        };
        let (moves, others) = if self.role == 0 {
            (&stage.rows, &stage.cols)
        } else {
            (&stage.cols, &stage.rows)
        };
        let reply = self.reply(others);
        let strategy = stage_strategy(&stage, self.role, reply.as_deref(), deadline);
        let total: f64 = strategy.iter().sum();
        let mut pick = rand::Rng::random::<f64>(&mut self.rng) * total;
        let mut chosen = moves[0];
        for (&mv, &p) in moves.iter().zip(&strategy) {
            if p > 0.0 {
                chosen = mv;
                if pick < p {
                    break;
                }
                pick -= p;
            }
        }
        let support = strategy.iter().filter(|&&p| p > EPSILON).count();
        tracing::debug!(
            "equilibrium: value {value:.2}, {support} of {} moves in the strategy{}",
            moves.len(),
            if reply.is_some() {
                ", the other's moves seen"
            } else {
                ""
            }
        );
        Ok(Some((chosen, value)))
    }
}

impl<M: StateMachine + Send> Player<M> for EquilibriumPlayer<M> {
    fn name(&self) -> String {
        "equilibrium".into()
    }

    fn start(&mut self, _: &mut M, role: usize, _: Instant) -> Result<(), SearchError> {
        self.role = role;
        self.last = None;
        self.seen.clear();
        Ok(())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        if self.table.value(state, 0).is_none() {
            // Not reached by the solve (the match began elsewhere than the solve did): solve it
            // now, in half of what is left of the clock.
            let now = Instant::now();
            let until = now + deadline.saturating_duration_since(now) / 2;
            if let Err(why) = self.table.extend(machine, state, until, usize::MAX) {
                tracing::warn!("equilibrium: a state outside the solve not solved: {why}");
                self.table.values.retain(|_, v| !v[0].is_nan());
            }
        }
        self.observe(machine, state)?;
        let choice = match self.draw(machine, state, deadline)? {
            Some((mv, value)) => Choice {
                mv,
                iterations: 0,
                value: Some(value),
                proven: true,
            },
            None => {
                // Still not solved: the first legal move, as the solve could not say better.
                let moves = machine.legal_moves(state, self.role)?;
                Choice::unsearched(moves.first().copied().ok_or(SearchError::NoMove)?)
            }
        };
        self.last = Some((state.clone(), choice.mv));
        Ok(choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Instant {
        Instant::now() + std::time::Duration::from_secs(60)
    }

    #[test]
    fn saddle_point_is_found_and_its_absence_noticed() {
        // Row 1 guarantees 3; column 0 holds the row player to 3.
        assert_eq!(saddle_point(&[3.0, 5.0, 1.0, 4.0], 2, 2), Some(3.0));
        // Matching pennies has no saddle point.
        assert_eq!(saddle_point(&[1.0, 0.0, 0.0, 1.0], 2, 2), None);
    }

    #[test]
    fn matching_pennies_is_worth_a_half_with_even_odds() {
        let (value, strategy) = row_strategy(&[1.0, 0.0, 0.0, 1.0], 2, 2, far()).unwrap();
        assert!((value - 0.5).abs() < 1e-6);
        assert!(
            strategy.iter().all(|p| (p - 0.5).abs() < 1e-6),
            "{strategy:?}"
        );
    }

    #[test]
    fn rock_paper_scissors_mixes_all_three_and_a_dominated_move_gets_nothing() {
        // Rock, paper, scissors and a fourth move that loses to everything.
        let payoffs = [
            50.0, 0.0, 100.0, 100.0, //
            100.0, 50.0, 0.0, 100.0, //
            0.0, 100.0, 50.0, 100.0, //
            0.0, 0.0, 0.0, 50.0,
        ];
        let (value, strategy) = row_strategy(&payoffs, 4, 4, far()).unwrap();
        assert!((value - 50.0).abs() < 1e-6);
        for p in &strategy[..3] {
            assert!((p - 1.0 / 3.0).abs() < 1e-6, "{strategy:?}");
        }
        assert!(strategy[3].abs() < 1e-6, "{strategy:?}");
        assert!((game_value(&payoffs, 4, 4, far()).unwrap() - 50.0).abs() < 1e-6);
    }

    #[test]
    fn the_column_player_gets_its_own_optimal_strategy() {
        // The row player prefers row 0 against column 0; the column player should mix so
        // that the row player cannot gain: value 2/3 by columns (1/3, 2/3).
        let stage = Stage {
            rows: vec![0, 1],
            cols: vec![0, 1],
            payoffs: vec![[2.0, 0.0], [0.0, 2.0], [0.0, 2.0], [1.0, 1.0]],
        };
        assert_eq!(stage.constant_sum(), Some(2.0));
        let strategy = stage_strategy(&stage, 1, None, far());
        assert!((strategy[0] - 1.0 / 3.0).abs() < 1e-6, "{strategy:?}");
        assert!((strategy[1] - 2.0 / 3.0).abs() < 1e-6, "{strategy:?}");
        let value = stage.value(far()).unwrap();
        assert!((value[0] - 2.0 / 3.0).abs() < 1e-6, "{value:?}");
        assert!((value[1] - 4.0 / 3.0).abs() < 1e-6, "{value:?}");
    }

    #[test]
    fn a_lean_in_the_others_moves_is_answered_within_the_optimal_support() {
        // Rock, paper, scissors, and a fourth move that loses to everything.
        let mut payoffs = Vec::new();
        for row in [[50.0, 0.0, 100.0, 100.0], [100.0, 50.0, 0.0, 100.0]]
            .into_iter()
            .chain([[0.0, 100.0, 50.0, 100.0], [0.0, 0.0, 0.0, 50.0]])
        {
            payoffs.extend(row.map(|v| [v, 100.0 - v]));
        }
        let rps = stage(4, 4, &payoffs);
        let mix = stage_strategy(&rps, 0, None, far());
        assert!(
            mix[..3].iter().all(|p| (p - 1.0 / 3.0).abs() < 1e-6),
            "{mix:?}"
        );
        // Rock seen most: paper, alone.
        let rocky = [0.5, 0.2, 0.2, 0.1];
        assert_eq!(stage_strategy(&rps, 0, Some(&rocky), far()), pure(4, 1));
        assert_eq!(stage_strategy(&rps, 1, Some(&rocky), far()), pure(4, 1));
        // Nothing to gain against an even spread over the three: the mix.
        let even = [1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0];
        let same = stage_strategy(&rps, 0, Some(&even), far());
        assert!(
            same[..3].iter().all(|p| (p - 1.0 / 3.0).abs() < 1e-6),
            "{same:?}"
        );
        // The fourth move, seen most: any of the three beats it; never the fourth itself.
        let fourth = stage_strategy(&rps, 0, Some(&[0.1, 0.1, 0.1, 0.7]), far());
        assert_eq!(fourth[3], 0.0, "{fourth:?}");
        // A saddle point (column 0 holds both rows to 50): of the two rows that keep 50, the
        // one better against what is seen; against nothing seen, the better on average.
        let saddle = stage(
            2,
            3,
            &[50.0, 100.0, 60.0, 50.0, 60.0, 90.0].map(|v| [v, 100.0 - v]),
        );
        assert_eq!(stage_strategy(&saddle, 0, None, far()), pure(2, 0));
        let right = [0.2, 0.2, 0.6];
        assert_eq!(stage_strategy(&saddle, 0, Some(&right), far()), pure(2, 1));
    }

    /// A stage of `rows` × `cols` with both roles' values, row-major.
    fn stage(rows: usize, cols: usize, payoffs: &[[f64; 2]]) -> Stage<usize> {
        Stage {
            rows: (0..rows).collect(),
            cols: (0..cols).collect(),
            payoffs: payoffs.to_vec(),
        }
    }

    #[test]
    fn the_prisoners_dilemma_is_settled_by_dominance_and_chicken_is_not() {
        // Moves: cooperate, defect. Defecting is better for each whatever the other does.
        let dilemma = stage(2, 2, &[[3.0, 3.0], [0.0, 5.0], [5.0, 0.0], [1.0, 1.0]]);
        assert_eq!(dilemma.constant_sum(), None);
        assert_eq!(dilemma.dominance(), Some((1, 1)));
        assert_eq!(dilemma.value(far()).unwrap(), [1.0, 1.0]);
        assert_eq!(stage_strategy(&dilemma, 0, None, far()), vec![0.0, 1.0]);
        assert_eq!(stage_strategy(&dilemma, 1, None, far()), vec![0.0, 1.0]);
        // Moves: swerve, straight. Each does best doing the opposite of the other: two
        // equilibria that differ in who gets what.
        let chicken = stage(2, 2, &[[5.0, 5.0], [1.0, 9.0], [9.0, 1.0], [0.0, 0.0]]);
        assert_eq!(chicken.dominance(), None);
        assert_eq!(chicken.value(far()), Err(Unsolved::NoEquilibrium));
        // Elimination in rounds: neither row is dominated until column 1 (worse for the
        // column player against both rows) is gone; then row 1 is.
        let rounds = stage(2, 2, &[[4.0, 1.0], [0.0, 0.0], [3.0, 2.0], [9.0, 0.0]]);
        assert_eq!(rounds.dominance(), Some((0, 0)));
        // Moves that tie for the row player leave one value where they tie for both roles,
        // and none where the column player's values differ.
        let ties = stage(2, 2, &[[2.0, 7.0], [2.0, 6.0], [2.0, 7.0], [2.0, 6.0]]);
        assert_eq!(ties.constant_sum(), None);
        assert_eq!(ties.value(far()).unwrap(), [2.0, 7.0]);
        let split = stage(2, 1, &[[2.0, 7.0], [2.0, 3.0]]);
        assert_eq!(split.dominance(), None);
    }
}
