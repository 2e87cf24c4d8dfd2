//! The solver: score bounds per node, tightened bottom up after each iteration.
//!
//! See the module documentation of [`super`] for the rules; this file is where they are
//! computed ([`Tree::tighten`]) and read at the root ([`Tree::move_bounds`]).

use super::tree::Tree;

impl<S: Clone + Eq, Mv: Copy + Eq> Tree<S, Mv> {
    /// Recomputes node `id`'s bounds from its children; true if they changed.
    ///
    /// With a single mover m: m is sure of the best `low` among the children and can get at
    /// most the best `high` (1 while a child is missing). If a child gives m 100 for sure, m
    /// plays it and the node takes that child's bounds. Otherwise the other roles' bounds
    /// range over the children m may still prefer (those whose `high` for m reaches m's sure
    /// value) and the missing ones. In a simultaneous position each role is sure of the best,
    /// over its moves, of the worst `low` over the others' replies (0 while a reply is
    /// missing), and can get at most the best `high` of any child.
    pub(super) fn tighten(&mut self, id: usize) -> bool {
        let node = &self.nodes[id];
        if node.settled() {
            return false;
        }
        let n_roles = node.low.len();
        let complete = node.children.len() as u64 == node.n_joint;
        let kids = || node.children.iter().map(|&(_, c)| &self.nodes[c as usize]);
        let (unseen_low, unseen_high) = if complete { (1.0, 0.0) } else { (0.0, 1.0) };
        let mut low = vec![0.0; n_roles];
        let mut high = vec![0.0; n_roles];
        match node.mover() {
            Some(m) => {
                if let Some(win) = kids().find(|c| c.low[m] >= 1.0) {
                    low.copy_from_slice(&win.low);
                    high.copy_from_slice(&win.high);
                } else {
                    let sure = kids().map(|c| c.low[m]).fold(0.0, f64::max);
                    for r in 0..n_roles {
                        let candidates = || kids().filter(|c| c.high[m] >= sure);
                        low[r] = candidates().map(|c| c.low[r]).fold(unseen_low, f64::min);
                        high[r] = candidates().map(|c| c.high[r]).fold(unseen_high, f64::max);
                    }
                    low[m] = sure;
                    high[m] = kids().map(|c| c.high[m]).fold(unseen_high, f64::max);
                }
            }
            None => {
                for r in 0..n_roles {
                    let n_moves = node.moves[r].len();
                    let replies = node.n_joint / n_moves as u64;
                    let mut worst = vec![(0u64, f64::INFINITY); n_moves];
                    for &(key, c) in &node.children {
                        let w = &mut worst[node.index_in(key, r)];
                        w.0 += 1;
                        w.1 = w.1.min(self.nodes[c as usize].low[r]);
                    }
                    low[r] = worst
                        .iter()
                        .filter(|w| w.0 == replies)
                        .map(|w| w.1)
                        .fold(0.0, f64::max);
                    high[r] = kids().map(|c| c.high[r]).fold(unseen_high, f64::max);
                }
            }
        }
        // Bounds only tighten; keep the old ones where a recomputation is looser.
        for r in 0..n_roles {
            low[r] = low[r].max(node.low[r]);
            high[r] = high[r].min(node.high[r]).max(low[r]);
        }
        let changed = *low != *node.low || *high != *node.high;
        if changed {
            let node = &mut self.nodes[id];
            node.low = low.into();
            node.high = high.into();
        }
        changed
    }

    /// For each of `role`'s moves at the root: how many joint moves, at most, until `role`'s
    /// sure win after it, as far as the tree shows (`None` when the move is not a sure win,
    /// or the tree does not tell within `budget` nodes read in all). A won race is won sooner
    /// (connectFourSimultaneous ends with the first line on either board).
    pub(super) fn root_win_lengths(&self, role: usize, budget: usize) -> Vec<Option<u32>> {
        // The others choose the reply: a win counts at its slowest.
        self.root_lengths(role, budget, u32::max, |tree, child, left| {
            tree.win_length(child, role, left)
        })
    }

    /// For each of `role`'s moves at the root: how many joint moves, at least, until another
    /// role's sure win after it when `role` holds out, as far as the tree shows (`None` when
    /// no other role is sure of 100 after it, or the tree does not tell within `budget`
    /// nodes read in all). A lost race is lost later, leaving the other parts time to win.
    pub(super) fn root_loss_lengths(&self, role: usize, budget: usize) -> Vec<Option<u32>> {
        // The others choose the reply: a loss counts at its quickest.
        self.root_lengths(role, budget, u32::min, |tree, child, left| {
            let node = &tree.nodes[child];
            let winner = (0..node.low.len()).find(|&r| r != role && node.low[r] >= 1.0)?;
            tree.win_length(child, winner, left)
        })
    }

    /// Per move of `role` at the root: `length` of the children after it, plus one, combined
    /// over the others' replies by `reply`; `None` unless every reply has one.
    fn root_lengths(
        &self,
        role: usize,
        budget: usize,
        reply: fn(u32, u32) -> u32,
        length: impl Fn(&Self, usize, &mut usize) -> Option<u32>,
    ) -> Vec<Option<u32>> {
        let root = &self.nodes[0];
        let Some(moves) = root.moves.get(role) else {
            return Vec::new();
        };
        let mut left = budget;
        let mut lengths: Vec<Option<Option<u32>>> = vec![None; moves.len()];
        for &(key, child) in &root.children {
            let slot = &mut lengths[root.index_in(key, role)];
            let length = length(self, child as usize, &mut left).map(|n| n + 1);
            *slot = Some(match (*slot, length) {
                (None, length) => length,
                (Some(Some(a)), Some(b)) => Some(reply(a, b)),
                _ => None,
            });
        }
        let replies = root.n_joint / moves.len().max(1) as u64;
        let seen = |i: usize| {
            root.children
                .iter()
                .filter(|&&(key, _)| root.index_in(key, role) == i)
                .count() as u64
        };
        (0..moves.len())
            .map(|i| lengths[i].flatten().filter(|_| seen(i) == replies))
            .collect()
    }

    /// Joint moves until `role`'s sure win from node `id`, at most (`None`: not a sure win in
    /// the tree, a simultaneous choice on the way, or `left` ran out).
    fn win_length(&self, id: usize, role: usize, left: &mut usize) -> Option<u32> {
        let node = &self.nodes[id];
        if node.low.get(role).is_none_or(|&low| low < 1.0) || *left == 0 {
            return None;
        }
        *left -= 1;
        if node.moves.iter().all(Vec::is_empty) {
            return Some(0);
        }
        let mover = node.mover()?;
        let mut best: Option<u32> = None;
        for &(_, child) in &node.children {
            let length = self.win_length(child as usize, role, left);
            if mover == role {
                // Our choice: the quickest win among the children.
                best = match (best, length) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            } else {
                // Theirs: the slowest of our wins, every reply a win.
                best = Some(best.unwrap_or(0).max(length?));
            }
        }
        if mover != role && (node.children.len() as u64) < node.n_joint {
            return None;
        }
        best.map(|n| n + 1)
    }

    /// For each of `role`'s moves at node `id`: the least `low` and the greatest `high` for
    /// `role` over the others' replies (0 and 1 while a reply is missing).
    pub(super) fn move_bounds(&self, id: u32, role: usize) -> Vec<(f64, f64)> {
        let node = &self.nodes[id as usize];
        let Some(moves) = node.moves.get(role) else {
            return Vec::new();
        };
        let replies = node.n_joint / moves.len().max(1) as u64;
        let mut acc: Vec<(u64, f64, f64)> =
            vec![(0, f64::INFINITY, f64::NEG_INFINITY); moves.len()];
        for &(key, child) in &node.children {
            let c = &self.nodes[child as usize];
            let a = &mut acc[node.index_in(key, role)];
            a.0 += 1;
            a.1 = a.1.min(c.low[role]);
            a.2 = a.2.max(c.high[role]);
        }
        acc.into_iter()
            .map(|(n, lo, hi)| if n == replies { (lo, hi) } else { (0.0, 1.0) })
            .collect()
    }
}
