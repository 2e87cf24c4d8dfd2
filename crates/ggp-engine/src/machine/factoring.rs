//! A game split into independent sub-games ([`Factoring`]): what an engine that analyses its
//! ground rules tells the searches (the propnet computes it as it builds,
//! [`StateMachine::factoring`](super::StateMachine::factoring)). Terms only, so that any
//! engine can give it and any search read it.

use std::collections::HashMap;

use ggp_gdl::gdl::Term;

/// One independent sub-game: its facts and moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The base facts, in the grounder's order.
    pub facts: Vec<Term>,
    /// The moves: (role number, move term).
    pub moves: Vec<(usize, Term)>,
}

/// A game split into independent components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Factoring {
    /// The components, ordered by their first fact in the grounder's order.
    pub components: Vec<Component>,
    /// Facts whose course no move changes (control, step counters), read by any component.
    pub shared: Vec<Term>,
    /// Moves that touch no component: (role number, move term).
    pub free_moves: Vec<(usize, Term)>,
    /// Per role, the components its `goal` rules read, ascending.
    pub goal_reads: Vec<Vec<usize>>,
    /// The components `terminal` reads, ascending.
    pub terminal_reads: Vec<usize>,
}

impl Factoring {
    /// Whether any role's goal or the terminal condition reads component `c`.
    pub fn is_relevant(&self, c: usize) -> bool {
        self.terminal_reads.contains(&c) || self.goal_reads.iter().any(|g| g.contains(&c))
    }

    /// The components neither goal nor terminal reads.
    pub fn irrelevant(&self) -> Vec<usize> {
        (0..self.components.len())
            .filter(|&c| !self.is_relevant(c))
            .collect()
    }

    /// The components some goal or the terminal condition reads.
    pub fn relevant(&self) -> Vec<usize> {
        (0..self.components.len())
            .filter(|&c| self.is_relevant(c))
            .collect()
    }

    /// Per role, the moves that cannot change the outcome: free moves and the moves of
    /// components neither goal nor terminal reads. All of a role's idle moves are the same
    /// move as far as the outcome goes.
    pub fn idle_moves(&self) -> Vec<Vec<Term>> {
        let mut idle = vec![Vec::new(); self.goal_reads.len()];
        let irrelevant = self.irrelevant();
        let moves = irrelevant
            .iter()
            .flat_map(|&c| &self.components[c].moves)
            .chain(&self.free_moves);
        for (role, mv) in moves {
            if let Some(list) = idle.get_mut(*role) {
                list.push(mv.clone());
            }
        }
        idle
    }

    /// Whether some role has two or more idle moves and a free move to stand for them, so
    /// that a search could prune the others.
    pub fn prunes_moves(&self) -> bool {
        self.idle_moves()
            .iter()
            .enumerate()
            .any(|(role, m)| m.len() >= 2 && self.free_moves.iter().any(|(r, _)| *r == role))
    }

    /// Each move's component (`None`: a free move), keyed by (role number, move term).
    pub fn move_components(&self) -> HashMap<(usize, Term), Option<usize>> {
        let mut map = HashMap::new();
        for (c, comp) in self.components.iter().enumerate() {
            for (r, m) in &comp.moves {
                map.insert((*r, m.clone()), Some(c));
            }
        }
        for (r, m) in &self.free_moves {
            map.insert((*r, m.clone()), None);
        }
        map
    }
}
