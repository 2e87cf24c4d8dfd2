//! Factoring: a game's base facts and moves split into independent components (sub-games).
//!
//! After Günther, Schiffel and Thielscher ("Factoring General Games", 2009) and the Stanford
//! GGP notes (ch. 11/14), on the ground rules ([`GroundProgram`]) rather than the GDL:
//!
//! - **Shared facts.** A base fact whose `next` depends, through any chain of rules, on no
//!   move and on shared facts only is *shared*: its course is fixed from the initial state
//!   whatever anyone plays (whose turn it is, a step counter, which of several games in
//!   series is on). Every component may read shared facts; they tie none together.
//! - **Components.** The other facts and the moves are joined whenever one's dynamics read
//!   the other: `next f` with every non-shared fact and move it reads (through views), and a
//!   move `(does r m)` with every non-shared fact its `legal` reads. What is left apart are
//!   the components: a component's next state and the legality of its moves depend on its own
//!   facts and moves and the shared facts only.
//! - **Free moves** touch no component: nothing but their own legality reads them (a `noop`).
//! - **Relevance.** The components each role's `goal` and `terminal` read (through views).
//!   A component neither reads is a sub-game that cannot change the outcome or the length of
//!   the match: its moves are as good as a free move.
//!
//! The ground rules over-approximate what can happen (negations of dynamic relations are
//! kept as links, every rule instance the relaxed model allows is there), so two things
//! found independent are independent; the converse need not hold. Moves whose arguments pick
//! one move on each of two boards at once (ggp.org's `ticTacToeParallel`) tie the boards into
//! one component: splitting a move into its parts is not attempted.

use std::collections::HashMap;

use petgraph::unionfind::UnionFind;

use crate::machine::{Component, Factoring};
use ggp_gdl::gdl::Term;

use super::{AtomId, GroundProgram, GroundRule};

/// Splits a ground program into components; `roles` in the order of the game's roles.
pub fn factoring(prog: &GroundProgram, roles: &[Term]) -> Factoring {
    Analysis::new(prog, roles).run()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Base,
    Input,
    Next,
    Legal,
    Goal,
    Terminal,
    View,
}

/// The working state of [`factoring`].
struct Analysis<'a> {
    prog: &'a GroundProgram,
    roles: &'a [Term],
    kind: Vec<Kind>,
    /// Each atom's rules (indices into `prog.rules`) with it as head.
    defs: Vec<Vec<u32>>,
    /// `next f` → `true f`.
    base_of_next: HashMap<u32, u32>,
    /// `legal r m` → `does r m`.
    input_of_legal: HashMap<u32, u32>,
}

impl<'a> Analysis<'a> {
    fn new(prog: &'a GroundProgram, roles: &'a [Term]) -> Analysis<'a> {
        let k = &prog.keywords;
        let kind: Vec<Kind> = prog
            .atoms
            .iter()
            .map(|&(rel, _)| match rel {
                r if r == k.true_ => Kind::Base,
                r if r == k.does => Kind::Input,
                r if r == k.next => Kind::Next,
                r if r == k.legal => Kind::Legal,
                r if r == k.goal => Kind::Goal,
                r if r == k.terminal => Kind::Terminal,
                _ => Kind::View,
            })
            .collect();
        let mut defs = vec![Vec::new(); prog.atoms.len()];
        for (i, rule) in prog.rules.iter().enumerate() {
            defs[rule.head.index()].push(i as u32);
        }
        let mut base_of_next = HashMap::new();
        let mut input_of_legal = HashMap::new();
        for (i, kd) in kind.iter().enumerate() {
            let atom = AtomId(i as u32);
            match kd {
                Kind::Next => {
                    if let Some(b) = prog.find_true(prog.args(atom)[0]) {
                        base_of_next.insert(i as u32, b.0);
                    }
                }
                Kind::Legal => {
                    let args = prog.args(atom);
                    let t = prog
                        .pool
                        .find_app(ggp_gdl::gdl::Sym::DOES, &[args[0], args[1]]);
                    if let Some(d) = t.and_then(|t| prog.find(k.does, t)) {
                        input_of_legal.insert(i as u32, d.0);
                    }
                }
                _ => {}
            }
        }
        Analysis {
            prog,
            roles,
            kind,
            defs,
            base_of_next,
            input_of_legal,
        }
    }

    fn body(&self, rule: u32) -> impl Iterator<Item = u32> + '_ {
        self.body_of(&self.prog.rules[rule as usize])
    }

    /// Atoms that depend on some move: the least set holding the inputs, the head of every
    /// rule with such an atom in its body, and `true f` for every such `next f`.
    fn moved(&self) -> Vec<bool> {
        let n = self.kind.len();
        let mut readers: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, rule) in self.prog.rules.iter().enumerate() {
            for a in self.body(i as u32) {
                readers[a as usize].push(rule.head.0);
            }
        }
        let mut moved = vec![false; n];
        let mut work: Vec<u32> = Vec::new();
        for (i, k) in self.kind.iter().enumerate() {
            if *k == Kind::Input {
                moved[i] = true;
                work.push(i as u32);
            }
        }
        while let Some(a) = work.pop() {
            let mut spread = |b: u32, work: &mut Vec<u32>| {
                if !moved[b as usize] {
                    moved[b as usize] = true;
                    work.push(b);
                }
            };
            for &h in &readers[a as usize] {
                spread(h, &mut work);
            }
            if let Some(&b) = self.base_of_next.get(&a) {
                spread(b, &mut work);
            }
        }
        moved
    }

    /// Atoms the dynamics read: `next` and `legal` atoms and every derived atom they read
    /// (views, and `legal`, `goal` or `terminal` where a rule reads those).
    fn dynamic(&self) -> Vec<bool> {
        let mut seen = vec![false; self.kind.len()];
        let mut work: Vec<u32> = Vec::new();
        for (i, k) in self.kind.iter().enumerate() {
            if matches!(k, Kind::Next | Kind::Legal) {
                seen[i] = true;
                work.push(i as u32);
            }
        }
        self.close_over_views(&mut seen, &mut work);
        seen
    }

    /// Marks in `seen` every derived atom the atoms in `work` read, through derived atoms.
    fn close_over_views(&self, seen: &mut [bool], work: &mut Vec<u32>) {
        while let Some(a) = work.pop() {
            for &rule in &self.defs[a as usize] {
                for b in self.body(rule) {
                    if !seen[b as usize]
                        && !matches!(self.kind[b as usize], Kind::Base | Kind::Input)
                    {
                        seen[b as usize] = true;
                        work.push(b);
                    }
                }
            }
        }
    }

    /// The base atoms the `starts` read, through derived atoms.
    fn bases_read(&self, starts: impl Iterator<Item = u32>) -> Vec<u32> {
        let mut seen = vec![false; self.kind.len()];
        let mut work: Vec<u32> = starts.collect();
        for &a in &work {
            seen[a as usize] = true;
        }
        let mut bases = Vec::new();
        while let Some(a) = work.pop() {
            for &rule in &self.defs[a as usize] {
                for b in self.body(rule) {
                    if seen[b as usize] {
                        continue;
                    }
                    seen[b as usize] = true;
                    match self.kind[b as usize] {
                        Kind::Base => bases.push(b),
                        Kind::Input => {}
                        _ => work.push(b),
                    }
                }
            }
        }
        bases
    }

    fn run(&self) -> Factoring {
        let prog = self.prog;
        let n = self.kind.len();
        let moved = self.moved();
        let dynamic = self.dynamic();
        let mut sets: UnionFind<u32> = UnionFind::new(n);
        for rule in &prog.rules {
            let h = rule.head.0;
            if !dynamic[h as usize] || !moved[h as usize] {
                continue;
            }
            for a in self.body_of(rule) {
                if moved[a as usize] {
                    sets.union(h, a);
                }
            }
        }
        for (&next, &base) in &self.base_of_next {
            sets.union(next, base);
        }
        for (&legal, &input) in &self.input_of_legal {
            sets.union(legal, input);
        }
        // Number the classes that hold a moved base fact, in the order of their first fact.
        let mut number: HashMap<u32, usize> = HashMap::new();
        let mut components: Vec<Component> = Vec::new();
        let mut shared = Vec::new();
        for (i, &is_moved) in moved.iter().enumerate() {
            if self.kind[i] != Kind::Base {
                continue;
            }
            let fact = prog.pool.term(prog.args(AtomId(i as u32))[0]);
            if !is_moved {
                shared.push(fact);
                continue;
            }
            let root = sets.find_mut(i as u32);
            let c = *number.entry(root).or_insert_with(|| {
                components.push(Component {
                    facts: Vec::new(),
                    moves: Vec::new(),
                });
                components.len() - 1
            });
            components[c].facts.push(fact);
        }
        let mut free_moves = Vec::new();
        for i in 0..n {
            if self.kind[i] != Kind::Input {
                continue;
            }
            let args = prog.args(AtomId(i as u32));
            let role_term = prog.pool.term(args[0]);
            let Some(role) = self.roles.iter().position(|r| *r == role_term) else {
                continue;
            };
            let mv = (role, prog.pool.term(args[1]));
            match number.get(&sets.find_mut(i as u32)) {
                Some(&c) => components[c].moves.push(mv),
                None => free_moves.push(mv),
            }
        }
        let reads = |starts: Vec<u32>, sets: &mut UnionFind<u32>| -> Vec<usize> {
            let mut cs: Vec<usize> = self
                .bases_read(starts.into_iter())
                .into_iter()
                .filter(|&b| moved[b as usize])
                .filter_map(|b| number.get(&sets.find_mut(b)).copied())
                .collect();
            cs.sort_unstable();
            cs.dedup();
            cs
        };
        let mut goal_reads = Vec::with_capacity(self.roles.len());
        for role in self.roles {
            let starts: Vec<u32> = (0..n)
                .filter(|&i| {
                    self.kind[i] == Kind::Goal
                        && prog.pool.term(prog.args(AtomId(i as u32))[0]) == *role
                })
                .map(|i| i as u32)
                .collect();
            goal_reads.push(reads(starts, &mut sets));
        }
        let terminal: Vec<u32> = (0..n)
            .filter(|&i| self.kind[i] == Kind::Terminal)
            .map(|i| i as u32)
            .collect();
        let terminal_reads = reads(terminal, &mut sets);
        Factoring {
            components,
            shared,
            free_moves,
            goal_reads,
            terminal_reads,
        }
    }

    fn body_of(&self, rule: &GroundRule) -> impl Iterator<Item = u32> + '_ {
        self.prog.lits[rule.start as usize..rule.end as usize]
            .iter()
            .map(|l| l.atom.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propnet::{Budget, ground};
    use ggp_gdl::gdl::Description;

    fn factor_text(text: &str) -> Factoring {
        let d = Description::from_text(text).expect("a valid sheet");
        let prog = ground(&d, &Budget::default()).expect("grounds");
        factoring(&prog, d.roles())
    }

    fn factor_sheet(name: &str) -> Factoring {
        let path = format!(
            "{}/../../../shared/games/base/{name}.kif",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("the corpus beside the checkout");
        factor_text(&text)
    }

    fn facts(f: &Factoring, c: usize) -> Vec<String> {
        let mut v: Vec<String> = f.components[c]
            .facts
            .iter()
            .map(|t| t.to_string())
            .collect();
        v.sort();
        v
    }

    /// Two switches flipped by their own moves; the goal reads only the first; whose turn
    /// it is alternates by itself; `wait` changes nothing.
    const TWO_SWITCHES: &str = "
        (role p)
        (init (step 0))
        (<= (next (step 1)) (true (step 0)))
        (<= (next (step 2)) (true (step 1)))
        (<= (legal p flipa) (true (step ?s)))
        (<= (legal p flipb) (true (step ?s)))
        (legal p wait)
        (<= (next a) (does p flipa) (not (true a)))
        (<= (next a) (true a) (not (does p flipa)))
        (<= (next b) (does p flipb) (not (true b)))
        (<= (next b) (true b) (not (does p flipb)))
        (<= terminal (true (step 2)))
        (<= (goal p 100) (true a))
        (<= (goal p 0) (not (true a)))
    ";

    #[test]
    fn splits_independent_switches_and_finds_the_one_that_counts() {
        let f = factor_text(TWO_SWITCHES);
        assert_eq!(f.components.len(), 2, "{f:?}");
        let a = f
            .components
            .iter()
            .position(|c| c.facts.iter().any(|t| t.to_string() == "a"))
            .unwrap();
        let b = 1 - a;
        assert_eq!(facts(&f, a), ["a"]);
        assert_eq!(facts(&f, b), ["b"]);
        assert_eq!(
            f.components[a].moves,
            [(0, Term::Const(ggp_gdl::gdl::Sym::new("flipa")))]
        );
        assert_eq!(
            f.components[b].moves,
            [(0, Term::Const(ggp_gdl::gdl::Sym::new("flipb")))]
        );
        assert_eq!(f.goal_reads, [vec![a]]);
        assert!(f.terminal_reads.is_empty());
        assert_eq!(f.irrelevant(), [b]);
        let mut shared: Vec<String> = f.shared.iter().map(|t| t.to_string()).collect();
        shared.sort();
        assert_eq!(shared, ["(step 0)", "(step 1)", "(step 2)"]);
        assert_eq!(
            f.free_moves,
            [(0, Term::Const(ggp_gdl::gdl::Sym::new("wait")))]
        );
        assert!(f.prunes_moves());
    }

    #[test]
    fn a_move_that_reads_both_switches_joins_them() {
        let text = format!("{TWO_SWITCHES} (<= (legal p swap) (true a) (true b))");
        let f = factor_text(&text);
        assert_eq!(f.components.len(), 1, "{f:?}");
        assert_eq!(f.relevant(), [0]);
    }

    #[test]
    fn a_turn_that_moves_change_is_not_shared() {
        // The step advances only when `flipb` is played: it joins b's component, and as
        // both flips' legality reads the step, everything is one component.
        let text = TWO_SWITCHES.replace(
            "(<= (next (step 1)) (true (step 0)))",
            "(<= (next (step 1)) (true (step 0)) (does p flipb))
             (<= (next (step 0)) (true (step 0)) (not (does p flipb)))",
        );
        let f = factor_text(&text);
        assert_eq!(f.components.len(), 1, "{f:?}");
        assert_eq!(f.relevant(), [0]);
        assert!(f.shared.is_empty());
    }

    #[test]
    fn board_games_that_do_not_factor_give_one_relevant_part() {
        // Columns of connect four and cells of tic-tac-toe are independent in their
        // dynamics; the goal reads them all, so nothing is pruned.
        for name in ["ticTacToe", "connectFour"] {
            let f = factor_sheet(name);
            assert!(f.irrelevant().is_empty(), "{name}: {f:?}");
            assert_eq!(f.free_moves.len(), 2, "{name}: the two noops");
            assert!(!f.prunes_moves(), "{name}: one noop per role");
        }
        let f = factor_sheet("ticTacToe");
        assert_eq!(f.components.len(), 1);
        assert_eq!(f.components[0].moves.len(), 18);
        let f = factor_sheet("connectFour");
        assert_eq!(f.components.len(), 8, "one per column");
    }

    #[test]
    fn moves_that_play_on_two_boards_at_once_tie_them() {
        for name in [
            "ticTacToeParallel",
            "blocksWorldParallel",
            "asteroidsParallel",
            "blockerParallel",
            "ticTacToeSerial",
            "duplicateStateSmall",
        ] {
            let f = factor_sheet(name);
            assert_eq!(f.components.len(), 1, "{name}: {f:?}");
            assert_eq!(f.relevant(), [0], "{name}");
        }
    }

    #[test]
    fn parallel_games_with_separate_moves_split() {
        let f = factor_sheet("snakeParallel");
        assert_eq!(f.components.len(), 2);
        assert_eq!(f.relevant().len(), 2);
        // Lights On in parallel: each light is its own sub-game; the goal reads all.
        let f = factor_sheet("lightsOnParallel");
        assert_eq!(f.components.len(), 16);
        assert!(f.components.iter().all(|c| c.moves.len() == 1));
        assert_eq!(f.relevant().len(), 16);
        assert!(!f.prunes_moves());
    }

    #[test]
    fn turtle_brain_sub_games_that_cannot_count_are_found() {
        // Three lights-on games in series, the goal reads all three: nothing to prune.
        let f = factor_sheet("factoringEasyTurtleBrain");
        assert_eq!(f.components.len(), 3);
        assert_eq!(f.relevant().len(), 3);
        assert!(f.shared.iter().any(|t| t.to_string() == "(seriesGame 0)"));
        // The medium and impossible ones add sub-games the goal never reads; with no free
        // move to stand for their moves, nothing is pruned.
        for name in [
            "factoringMediumTurtleBrain",
            "factoringImpossibleTurtleBrain",
        ] {
            let f = factor_sheet(name);
            assert_eq!(f.components.len(), 21, "{name}");
            assert_eq!(f.relevant().len(), 10, "{name}");
            assert_eq!(f.idle_moves()[0].len(), 44, "{name}");
            assert!(!f.prunes_moves(), "{name}");
        }
        // Placing queens is idle in queens08lg (only quitting loses), but running out of
        // safe squares forces the quit: with no free move, nothing is pruned.
        let f = factor_sheet("queens08lg");
        assert_eq!(f.irrelevant().len(), 1);
        assert!(!f.prunes_moves());
        // Decoy moves that change nothing are pruned to one.
        let f = factor_sheet("point_grab");
        assert!(f.prunes_moves());
        assert_eq!(f.free_moves.len(), 16);
    }

    #[test]
    fn mutually_assured_destruction_keeps_every_light() {
        // Every light must be on at once: the goal reads all twenty, none may be pruned.
        let f = factor_sheet("factoringMutuallyAssuredDestruction");
        assert_eq!(f.components.len(), 20);
        assert!(f.irrelevant().is_empty());
        assert!(!f.prunes_moves());
    }
}
