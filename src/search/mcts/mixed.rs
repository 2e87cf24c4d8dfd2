//! The move at a simultaneous root: drawn from a mixed strategy of the root's payoff matrix.
//!
//! Where we and exactly one other role choose at once (nature aside), decoupled UCT's most
//! visited move is a pure strategy, and a pure strategy is what a searching opponent reads
//! and answers. In set B's chickentictactoe (the role in control loses the cell if the other
//! names it too) Sancho named our cell on both of our turns in control; in roshambo2 ggp
//! threw paper six times and Sancho scissors each time; in set A's colonelBlotto our
//! near-even splits lost to Sancho's uneven ones from both seats (8aa1430's records in
//! `docs/experiments/breadth-runs/`).
//!
//! After the search the root's children hold what each joint move led to: our mean reward
//! over the iterations that went through the child, or its exact value once settled. That is
//! a matrix game, our moves against the other's ([`root_matrix`]). Cells few iterations
//! reached are noisy, so each is shrunk toward an additive estimate (our move's mean plus
//! the other's move's mean less the root's) by [`PRIOR_VISITS`] pseudo-visits; a joint move
//! with no child (the roles chose in step, `docs/experiments/simultaneous-lockstep.md`) has
//! that estimate alone, which knows no more than the moves' means. The game is
//! read as zero-sum on our reward (what the other can hold us to), and its maximin strategy
//! is found by regret matching+ on the matrix, full information and deterministic
//! ([`Matrix::solve`]; Tammelin, "Solving Large Imperfect Information Games Using CFR+",
//! 2014). Weights under [`MIN_WEIGHT`] are the solve's residue and are dropped; the move is
//! drawn from the rest.
//!
//! This is not the regret matching removed from the tree (`docs/experiments/regret-matching.md`):
//! the tree stays decoupled UCT, and the regrets here are exact on the estimated matrix, not
//! sampled along playouts. Where one move is best against every reply (gt_prisoner's
//! defect), the maximin strategy is that move alone.
//!
//! The solve is hand-written: it is a few lines of arithmetic on a dense matrix, and a
//! linear-programming crate would bring a general solver for one small zero-sum game.

use rand::Rng;

use super::parallel::MoveSummary;
use super::tree::Tree;

/// Pseudo-visits of a cell's additive estimate.
const PRIOR_VISITS: f64 = 10.0;
/// Strategy weights below this are dropped before the draw.
const MIN_WEIGHT: f64 = 0.03;
/// Cell updates the solve may spend (some tens of milliseconds).
const SOLVE_WORK: usize = 40_000_000;
/// The most and the fewest solve iterations.
const MAX_ITERATIONS: usize = 10_000;
const MIN_ITERATIONS: usize = 50;
/// A larger matrix is not solved (the most visited move is played).
pub(super) const MAX_CELLS: usize = 1 << 18;

/// A zero-sum matrix game: the row player's payoffs, row-major.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Matrix {
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) cells: Vec<f64>,
}

impl Matrix {
    fn at(&self, i: usize, j: usize) -> f64 {
        self.cells[i * self.cols + j]
    }

    /// The row player's maximin strategy, approximately, and what it is sure of against
    /// every column: regret matching+ with alternating updates and linearly weighted
    /// averages, for at most `iterations` rounds.
    pub(super) fn solve(&self, iterations: usize) -> (Vec<f64>, f64) {
        let (m, n) = (self.rows, self.cols);
        let mut x = vec![1.0 / m as f64; m];
        let mut y = vec![1.0 / n as f64; n];
        let (mut rx, mut ry) = (vec![0.0; m], vec![0.0; n]);
        let (mut avg_x, mut avg_y) = (vec![0.0; m], vec![0.0; n]);
        let mut u = vec![0.0; m];
        let mut w = vec![0.0; n];
        for t in 1..=iterations.max(1) {
            // The rows against the columns' current strategy.
            for (i, ui) in u.iter_mut().enumerate() {
                *ui = (0..n).map(|j| self.at(i, j) * y[j]).sum();
            }
            let v: f64 = x.iter().zip(&u).map(|(a, b)| a * b).sum();
            for (r, ui) in rx.iter_mut().zip(&u) {
                *r = (*r + ui - v).max(0.0);
            }
            regret_strategy(&rx, &mut x);
            let weight = t as f64;
            for (a, xi) in avg_x.iter_mut().zip(&x) {
                *a += weight * xi;
            }
            // The columns (minimising) against the rows' new strategy.
            w.iter_mut().for_each(|wj| *wj = 0.0);
            for (i, xi) in x.iter().enumerate() {
                for (j, wj) in w.iter_mut().enumerate() {
                    *wj += xi * self.at(i, j);
                }
            }
            let v: f64 = y.iter().zip(&w).map(|(a, b)| a * b).sum();
            for (r, wj) in ry.iter_mut().zip(&w) {
                *r = (*r + v - wj).max(0.0);
            }
            regret_strategy(&ry, &mut y);
            for (a, yj) in avg_y.iter_mut().zip(&y) {
                *a += weight * yj;
            }
        }
        normalise(&mut avg_x);
        let sure = (0..n)
            .map(|j| (0..m).map(|i| avg_x[i] * self.at(i, j)).sum::<f64>())
            .fold(f64::INFINITY, f64::min);
        (avg_x, sure)
    }

    /// The solve's iterations for this size: [`SOLVE_WORK`] cell updates, within
    /// [`MIN_ITERATIONS`] and [`MAX_ITERATIONS`].
    pub(super) fn iterations(&self) -> usize {
        (SOLVE_WORK / (2 * self.cells.len()).max(1)).clamp(MIN_ITERATIONS, MAX_ITERATIONS)
    }
}

/// The strategy proportional to the positive regrets; uniform when none is positive.
fn regret_strategy(regrets: &[f64], out: &mut [f64]) {
    let total: f64 = regrets.iter().sum();
    if total > 0.0 {
        for (o, r) in out.iter_mut().zip(regrets) {
            *o = r / total;
        }
    } else {
        let uniform = 1.0 / out.len() as f64;
        out.iter_mut().for_each(|o| *o = uniform);
    }
}

fn normalise(p: &mut [f64]) {
    let total: f64 = p.iter().sum();
    if total > 0.0 {
        p.iter_mut().for_each(|x| *x /= total);
    }
}

/// The root's matrix game for `role` (rows: `ours`, the moves the caller still considers)
/// against `other` (columns: `theirs`), from every tree's root children (see the module
/// documentation). `merged` are our root moves' summaries, parallel to `ours`.
pub(super) fn root_matrix<S: Clone + Eq, Mv: Copy + Eq>(
    trees: &[Tree<S, Mv>],
    role: usize,
    other: usize,
    ours: &[Mv],
    theirs: &[Mv],
    merged: &[MoveSummary],
) -> Matrix {
    let (rows, cols) = (ours.len(), theirs.len());
    let mut visits = vec![0.0; rows * cols];
    let mut sums = vec![0.0; rows * cols];
    let mut exact: Vec<Option<f64>> = vec![None; rows * cols];
    for tree in trees {
        let root = &tree.nodes[0];
        let index = |moves: &[Mv], r: usize, key: u64| {
            let mv = root.moves[r][root.index_in(key, r)];
            moves.iter().position(|&m| m == mv)
        };
        for &(key, child) in &root.children {
            let (Some(i), Some(j)) = (index(ours, role, key), index(theirs, other, key)) else {
                continue;
            };
            let child = &tree.nodes[child as usize];
            let k = i * cols + j;
            if let Some(value) = child.value() {
                exact[k] = Some(value[role]);
            } else if let Some(stats) = child.stats.get(role) {
                for s in stats {
                    visits[k] += f64::from(s.visits);
                    sums[k] += s.sum;
                }
            }
        }
    }
    let (total_sum, total_visits) = merged
        .iter()
        .fold((0.0, 0.0), |(s, v), m| (s + m.sum, v + m.visits as f64));
    let overall = if total_visits > 0.0 {
        total_sum / total_visits
    } else {
        0.5
    };
    let row_mean: Vec<f64> = merged
        .iter()
        .map(|m| if m.visits > 0 { m.mean() } else { overall })
        .collect();
    let col_mean: Vec<f64> = (0..cols)
        .map(|j| {
            let (mut s, mut v) = (0.0, 0.0);
            for i in 0..rows {
                let k = i * cols + j;
                match exact[k] {
                    Some(x) => (s, v) = (s + x, v + 1.0),
                    None => (s, v) = (s + sums[k], v + visits[k]),
                }
            }
            if v > 0.0 { s / v } else { overall }
        })
        .collect();
    let cells = (0..rows * cols)
        .map(|k| {
            let (i, j) = (k / cols, k % cols);
            exact[k].unwrap_or_else(|| {
                let prior = (row_mean[i] + col_mean[j] - overall).clamp(0.0, 1.0);
                (sums[k] + PRIOR_VISITS * prior) / (visits[k] + PRIOR_VISITS)
            })
        })
        .collect();
    Matrix { rows, cols, cells }
}

/// Our mixed strategy at a simultaneous root: `moves[rows[k]]` with weight `weights[k]`, and
/// what it is sure of (0..1) by the estimated matrix.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Mixed {
    pub(super) rows: Vec<usize>,
    pub(super) weights: Vec<f64>,
    pub(super) value: f64,
}

/// The strategy to draw our move from at the trees' root, where it applies: we and exactly
/// one other role have a choice there (`nature[r]`: role `r` is nature, whose choice makes
/// the matrix no longer ours against one other's), no move is sure to win (that one is
/// played), at least two of our moves can still reach the best value one is sure of, and the
/// matrix has at most [`MAX_CELLS`] cells. `moves` and `merged` are our root moves and their
/// summaries.
pub(super) fn root_strategy<S: Clone + Eq, Mv: Copy + Eq>(
    trees: &[Tree<S, Mv>],
    role: usize,
    moves: &[Mv],
    merged: &[MoveSummary],
    nature: &[bool],
) -> Option<Mixed> {
    let root = &trees.first()?.nodes[0];
    let mut choosers = (0..root.moves.len()).filter(|&r| root.moves[r].len() > 1);
    let (a, b) = (choosers.next()?, choosers.next()?);
    if choosers.next().is_some() || (a != role && b != role) {
        return None;
    }
    let other = if a == role { b } else { a };
    if nature.get(other).copied().unwrap_or(false) {
        return None;
    }
    let best_lower = merged.iter().map(|m| m.lower).fold(0.0, f64::max);
    if best_lower >= 1.0 {
        return None;
    }
    let rows: Vec<usize> = (0..merged.len())
        .filter(|&i| merged[i].upper >= best_lower)
        .collect();
    let theirs = &root.moves[other];
    if rows.len() < 2 || rows.len() * theirs.len() > MAX_CELLS {
        return None;
    }
    let ours: Vec<Mv> = rows.iter().map(|&i| moves[i]).collect();
    let summaries: Vec<MoveSummary> = rows.iter().map(|&i| merged[i]).collect();
    let matrix = root_matrix(trees, role, other, &ours, theirs, &summaries);
    let (weights, value) = matrix.solve(matrix.iterations());
    Some(Mixed {
        rows,
        weights,
        value,
    })
}

/// A row drawn from `strategy`, leaving out weights under [`MIN_WEIGHT`] (the heaviest row
/// if none is left).
pub(super) fn draw(strategy: &[f64], rng: &mut impl Rng) -> usize {
    let kept: f64 = strategy.iter().filter(|&&p| p >= MIN_WEIGHT).sum();
    let heaviest = (0..strategy.len())
        .max_by(|&a, &b| strategy[a].total_cmp(&strategy[b]))
        .unwrap_or(0);
    if kept <= 0.0 {
        return heaviest;
    }
    let mut target = rng.random::<f64>() * kept;
    for (i, &p) in strategy.iter().enumerate() {
        if p < MIN_WEIGHT {
            continue;
        }
        if target < p {
            return i;
        }
        target -= p;
    }
    heaviest
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn matrix(rows: usize, cols: usize, cells: &[f64]) -> Matrix {
        Matrix {
            rows,
            cols,
            cells: cells.to_vec(),
        }
    }

    #[test]
    fn matching_pennies_is_solved_half_and_half() {
        let (x, value) = matrix(2, 2, &[1.0, 0.0, 0.0, 1.0]).solve(2000);
        assert!((x[0] - 0.5).abs() < 0.02, "{x:?}");
        assert!((value - 0.5).abs() < 0.02, "{value}");
    }

    #[test]
    fn rock_paper_scissors_with_a_dominated_rock_leaves_it_out() {
        // Rock, paper, scissors, well: well beats rock and scissors and loses to paper, so
        // rock is never better than well; the equilibrium is a third each of the others.
        let a = [
            0.5, 0.0, 1.0, 0.0, //
            1.0, 0.5, 0.0, 1.0, //
            0.0, 1.0, 0.5, 0.0, //
            1.0, 0.0, 1.0, 0.5,
        ];
        let (x, value) = matrix(4, 4, &a).solve(10_000);
        assert!(x[0] < 0.01, "{x:?}");
        for &p in &x[1..] {
            assert!((p - 1.0 / 3.0).abs() < 0.02, "{x:?}");
        }
        assert!((value - 0.5).abs() < 0.01, "{value}");
    }

    #[test]
    fn a_dominant_move_is_played_alone() {
        // The prisoner's dilemma read as our reward: defecting gains whatever the other does.
        let (x, value) = matrix(2, 2, &[0.6, 0.0, 1.0, 0.2]).solve(1000);
        assert!(x[1] > 0.99, "{x:?}");
        assert!((value - 0.2).abs() < 0.01, "{value}");
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        assert!((0..100).all(|_| draw(&x, &mut rng) == 1));
    }

    #[test]
    fn a_saddle_point_is_found() {
        // Row 1 guarantees 0.4, and column 0 holds every row to at most that.
        let a = [0.3, 0.9, 0.4, 0.5, 0.2, 0.8];
        let (x, value) = matrix(3, 2, &a).solve(5000);
        assert!(x[1] > 0.97, "{x:?}");
        assert!((value - 0.4).abs() < 0.02, "{value}");
    }

    #[test]
    fn the_draw_follows_the_strategy_and_drops_residue() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let strategy = [0.5, 0.01, 0.49];
        let mut counts = [0usize; 3];
        for _ in 0..10_000 {
            counts[draw(&strategy, &mut rng)] += 1;
        }
        assert_eq!(counts[1], 0);
        assert!(counts[0] > 4500 && counts[2] > 4500, "{counts:?}");
    }

    #[test]
    fn iterations_shrink_with_the_matrix() {
        assert_eq!(matrix(2, 2, &[0.0; 4]).iterations(), MAX_ITERATIONS);
        let big = matrix(512, 512, &vec![0.0; 512 * 512]);
        assert_eq!(big.iterations(), SOLVE_WORK / (2 * 512 * 512));
    }
}
