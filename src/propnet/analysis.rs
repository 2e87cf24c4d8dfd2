//! What the network tells about goals beyond their values: how nearly a state satisfies each
//! role's best goal (a fuzzy reading of its rules), which facts are latches (once true they
//! stay true, or once false they stay false), and which goals the latches already decide.
//!
//! **Goal progress.** The gates that a role's highest goal reads, directly or not, are read as
//! fuzzy logic: an AND is the mean of its inputs (the share of a rule body that holds), an OR
//! the largest of them (the rule nearest to holding), a negated input `1 − x`. Bases, inputs,
//! gates outside that cone and gates of recursive blocks keep their exact values. In
//! tic-tac-toe, `(goal xplayer 100)` reads the eight lines, so a state with two of a line's
//! three marks is worth 2/3.
//!
//! **Latches**, proven from the network by three-valued (Kleene) logic: a base is a positive
//! latch when its `next` proposition is true whenever the base is, whatever every other base
//! and every move (unknown), and a negative latch when `next` is false whenever the base is.
//! Recursive blocks count as unknown and a cone larger than [`MAX_CONE`] gates is not tried,
//! so the test is sound but not complete.
//!
//! **Latched goals.** In a state, the bases that are true positive latches or false negative
//! latches are known for the rest of the game; every other base is unknown. A goal whose
//! proposition is then true by Kleene logic holds in every later state, the terminal one
//! included: the game's outcome for that role is proven (its value, when no higher goal can
//! still hold). Only goals that some state's latches can decide are ever evaluated: those
//! still unknown with every latch at the value it keeps are unknown in every state.

use super::net::Net;
use super::optimize::Lit;

/// The most gates a latch test reads (a larger `next` cone is left unproven).
pub const MAX_CONE: usize = 4096;

/// Kleene truth values.
const F: u8 = 0;
const T: u8 = 1;
const U: u8 = 2;

/// One base's latch kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latch {
    /// Once true, true in every later state.
    pub stays_true: bool,
    /// Once false, false in every later state.
    pub stays_false: bool,
}

/// The analysis of one net (made once, shared by a machine's clones).
pub(crate) struct Analysis {
    /// Per role: the literals of its highest goal value, and that value.
    top_goals: Vec<(Vec<Lit>, u8)>,
    /// The gates (not in blocks) that the top goals read, ascending (topological).
    progress_cone: Vec<u32>,
    /// Per counted node: in `progress_cone`.
    in_progress_cone: Vec<bool>,
    /// Per base: its latch kind.
    pub(crate) latches: Vec<Latch>,
    /// Per role: its goal literals with their values, when some goal of the role reads a
    /// latch (otherwise empty).
    latched_goals: Vec<Vec<(Lit, u8)>>,
    /// The gates (not in blocks) those goals read, ascending.
    latched_cone: Vec<u32>,
    /// Per counted node: whether it is a gate of a recursive block.
    in_block: Vec<bool>,
}

impl Analysis {
    /// Analyses `net`.
    pub(crate) fn new(net: &Net) -> Analysis {
        let n = net.n_counted();
        let mut in_block = vec![false; n];
        for &(s, e) in &net.blocks {
            for x in s..e {
                in_block[x as usize] = true;
            }
        }
        let top_goals: Vec<(Vec<Lit>, u8)> = net
            .goals
            .iter()
            .map(|g| {
                let top = g.iter().map(|&(_, v)| v).max().unwrap_or(0);
                let lits = g.iter().filter(|&&(_, v)| v == top).map(|&(l, _)| l);
                (lits.collect(), top)
            })
            .collect();
        let roots: Vec<Lit> = top_goals
            .iter()
            .flat_map(|(l, _)| l.iter().copied())
            .collect();
        let progress_cone = cone(net, &in_block, &roots, usize::MAX).unwrap_or_default();
        let mut in_progress_cone = vec![false; n];
        for &x in &progress_cone {
            in_progress_cone[x as usize] = true;
        }
        let mut analysis = Analysis {
            top_goals,
            progress_cone,
            in_progress_cone,
            latches: Vec::new(),
            latched_goals: vec![Vec::new(); net.goals.len()],
            latched_cone: Vec::new(),
            in_block,
        };
        let mut values = vec![U; n];
        analysis.latches = (0..net.n_bases)
            .map(|i| analysis.latch(net, i, &mut values))
            .collect();
        // The goals whose cone reads a latch.
        let is_latch =
            |x: usize| x >= 1 && x <= net.n_bases && analysis.latches[x - 1] != Latch::default();
        // With every latch at the value it keeps (true for those that stay true, false for
        // those that stay false) a goal that is still unknown is unknown in every state.
        let settled = |j: usize| {
            let l = analysis.latches[j];
            if l.stays_true {
                T
            } else if l.stays_false {
                F
            } else {
                U
            }
        };
        let mut all_cones = Vec::new();
        for (r, goals) in net.goals.iter().enumerate() {
            let roots: Vec<Lit> = goals.iter().map(|&(l, _)| l).collect();
            let Some(c) = cone(net, &analysis.in_block, &roots, usize::MAX) else {
                continue;
            };
            let reads_latch = roots.iter().any(|l| is_latch(l.node()))
                || c.iter().any(|&x| {
                    gate_inputs(net, x as usize)
                        .iter()
                        .any(|l| is_latch(l.node()))
                });
            if !reads_latch {
                continue;
            }
            for &x in &c {
                values[x as usize] = analysis.kleene_gate(net, x as usize, &values, &settled);
            }
            let decidable = roots
                .iter()
                .any(|&l| analysis.kleene_lit(net, l, &values, &settled) != U);
            if decidable {
                analysis.latched_goals[r] = goals.clone();
                all_cones.extend(c);
            }
        }
        all_cones.sort_unstable();
        all_cones.dedup();
        analysis.latched_cone = all_cones;
        analysis
    }

    /// Whether any role has a top goal to measure progress towards.
    pub(crate) fn has_progress(&self) -> bool {
        self.top_goals.iter().any(|(l, _)| !l.is_empty())
    }

    /// Whether some goal reads a latch.
    pub(crate) fn has_latched_goals(&self) -> bool {
        self.latched_goals.iter().any(|g| !g.is_empty())
    }

    /// Per role, the fuzzy degree (0..1) to which the state satisfies its highest goal, into
    /// `out` (cleared first). `counts` are the state's exact node values (lazy gates fresh);
    /// `scratch` is per-node space.
    pub(crate) fn progress(
        &self,
        net: &Net,
        counts: &[u32],
        scratch: &mut Vec<f32>,
        out: &mut Vec<f64>,
    ) {
        scratch.resize(net.n_counted(), 0.0);
        let value = |scratch: &[f32], l: Lit| -> f32 {
            let x = l.node();
            let v = if self.in_progress_cone[x] {
                scratch[x]
            } else if counts[x] >> 31 != 0 {
                1.0
            } else {
                0.0
            };
            if l.neg() { 1.0 - v } else { v }
        };
        for &x in &self.progress_cone {
            let x = x as usize;
            let g = x - net.first_gate as usize;
            let ins = gate_inputs(net, x);
            let v = if net.gate_and[g] {
                if ins.is_empty() {
                    1.0
                } else {
                    ins.iter().map(|&l| value(scratch, l)).sum::<f32>() / ins.len() as f32
                }
            } else {
                ins.iter().map(|&l| value(scratch, l)).fold(0.0, f32::max)
            };
            scratch[x] = v;
        }
        out.clear();
        out.extend(self.top_goals.iter().map(|(lits, _)| {
            f64::from(lits.iter().map(|&l| value(scratch, l)).fold(0.0, f32::max))
        }));
    }

    /// Per role, the goal value the state's latches prove (`None`: not proven), into `out`
    /// (cleared first). `bits` is the state; `scratch` is per-node space.
    pub(crate) fn latched_goals(
        &self,
        net: &Net,
        bits: &[u64],
        scratch: &mut Vec<u8>,
        out: &mut Vec<Option<u8>>,
    ) {
        out.clear();
        out.resize(net.goals.len(), None);
        if !self.has_latched_goals() {
            return;
        }
        scratch.resize(net.n_counted(), U);
        let base = |i: usize| -> u8 {
            let on = bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1);
            let l = self.latches[i];
            if on && l.stays_true {
                T
            } else if !on && l.stays_false {
                F
            } else {
                U
            }
        };
        for &x in &self.latched_cone {
            let v = self.kleene_gate(net, x as usize, scratch, &base);
            scratch[x as usize] = v;
        }
        for (r, goals) in self.latched_goals.iter().enumerate() {
            if goals.is_empty() {
                continue;
            }
            let vals: Vec<(u8, u8)> = goals
                .iter()
                .map(|&(l, v)| (self.kleene_lit(net, l, scratch, &base), v))
                .collect();
            // The highest value proven true, when no higher one may still hold.
            out[r] = vals
                .iter()
                .filter(|&&(k, _)| k == T)
                .map(|&(_, v)| v)
                .max()
                .filter(|&best| vals.iter().all(|&(k, v)| v <= best || k == F));
        }
    }

    /// Whether base `i` is a latch (see the module documentation).
    fn latch(&self, net: &Net, i: usize, values: &mut [u8]) -> Latch {
        let next = net.next[i];
        let Some(c) = cone(net, &self.in_block, &[next], MAX_CONE) else {
            return Latch::default();
        };
        let mut test = |fixed: u8| {
            let base = |j: usize| if j == i { fixed } else { U };
            for &x in &c {
                values[x as usize] = self.kleene_gate(net, x as usize, values, &base);
            }
            self.kleene_lit(net, next, values, &base)
        };
        Latch {
            stays_true: test(T) == T,
            stays_false: test(F) == F,
        }
    }

    /// The Kleene value of a literal, reading gates from `values` (those of the cone just
    /// evaluated) and bases from `base`.
    fn kleene_lit(&self, net: &Net, l: Lit, values: &[u8], base: &impl Fn(usize) -> u8) -> u8 {
        let x = l.node();
        let v = if x == 0 {
            F
        } else if x <= net.n_bases {
            base(x - 1)
        } else if x < net.first_gate as usize || self.in_block[x] {
            U
        } else {
            values[x]
        };
        match (v, l.neg()) {
            (T, true) => F,
            (F, true) => T,
            (v, _) => v,
        }
    }

    /// The Kleene value of gate `x` from its inputs.
    fn kleene_gate(&self, net: &Net, x: usize, values: &[u8], base: &impl Fn(usize) -> u8) -> u8 {
        let and = net.gate_and[x - net.first_gate as usize];
        let (absorbing, neutral) = if and { (F, T) } else { (T, F) };
        let mut out = neutral;
        for &l in gate_inputs(net, x) {
            match self.kleene_lit(net, l, values, base) {
                v if v == absorbing => return absorbing,
                U => out = U,
                _ => {}
            }
        }
        out
    }
}

/// The input literals of gate node `x`.
fn gate_inputs(net: &Net, x: usize) -> &[Lit] {
    let g = x - net.first_gate as usize;
    &net.gate_ins[net.gate_start[g] as usize..net.gate_start[g + 1] as usize]
}

/// The gates outside recursive blocks that `roots` read, directly or not (through such
/// gates), ascending; `None` when there are more than `max`.
fn cone(net: &Net, in_block: &[bool], roots: &[Lit], max: usize) -> Option<Vec<u32>> {
    let is_gate = |x: usize| x >= net.first_gate as usize && x < net.n_counted() && !in_block[x];
    let mut seen = hashbrown::HashSet::new();
    let mut stack: Vec<usize> = roots
        .iter()
        .map(|l| l.node())
        .filter(|&x| is_gate(x))
        .collect();
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        if seen.len() > max {
            return None;
        }
        stack.extend(
            gate_inputs(net, x)
                .iter()
                .map(|l| l.node())
                .filter(|&y| is_gate(y)),
        );
    }
    let mut out: Vec<u32> = seen.into_iter().map(|x| x as u32).collect();
    out.sort_unstable();
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::gdl::{Description, parse_term};
    use crate::machine::StateMachine;
    use crate::propnet::{Budget, PropnetMachine};

    /// A two-player game of six steps: `a` grows a count (leaving a latched mark per level)
    /// or rests; it wins when the mark 3 is reached. Its legal moves grow with the marks.
    pub(crate) const TOKENS: &str = "
        (role a) (role b)
        (init (step 0)) (init (count 0))
        (succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6)
        (<= (legal a grow) (true (step ?s)))
        (<= (legal a (rest ?k)) (true (mark ?k)))
        (<= (legal b noop) (true (step ?s)))
        (<= (next (count ?m)) (does a grow) (true (count ?n)) (succ ?n ?m))
        (<= (next (mark ?m)) (does a grow) (true (count ?n)) (succ ?n ?m))
        (<= (next (count ?n)) (does a (rest ?k)) (true (count ?n)))
        (<= (next (mark ?k)) (true (mark ?k)))
        (<= (next (step ?m)) (true (step ?s)) (succ ?s ?m))
        (<= terminal (true (step 6)))
        (<= (goal a 100) (true (mark 3)))
        (<= (goal a 0) (not (true (mark 3))))
        (<= (goal b 0) (true (mark 3)))
        (<= (goal b 100) (not (true (mark 3))))";

    fn machine(text: &str) -> PropnetMachine {
        let d = Description::from_text(text).expect("rules");
        PropnetMachine::new(&d, &Budget::default()).expect("the game grounds")
    }

    fn tic_tac_toe() -> PropnetMachine {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/games/base/ticTacToe.kif"
        );
        machine(&std::fs::read_to_string(path).expect("the corpus beside the repository"))
    }

    fn kind(m: &PropnetMachine, fact: &str) -> (bool, bool) {
        let fact = parse_term(fact).expect("a term");
        m.latches()
            .into_iter()
            .find(|l| l.0 == fact)
            .map_or((false, false), |l| (l.1, l.2))
    }

    fn state(m: &mut PropnetMachine, facts: &[&str]) -> crate::propnet::PropnetState {
        let facts: Vec<_> = facts
            .iter()
            .map(|f| parse_term(f).expect("a term"))
            .collect();
        m.state_from_terms(&facts).expect("known facts")
    }

    #[test]
    fn marks_are_latches_and_turns_are_not() {
        let mut m = tic_tac_toe();
        // A line of marks decides the goals.
        let start = m.initial_state();
        assert!(m.latched_goals_into(&start, &mut Vec::new()));
        // A mark stays; a blank, once filled, never comes back; whose turn it is changes.
        assert_eq!(kind(&m, "(cell 1 1 x)"), (true, false));
        assert_eq!(kind(&m, "(cell 2 3 o)"), (true, false));
        assert_eq!(kind(&m, "(cell 2 2 b)"), (false, true));
        assert_eq!(kind(&m, "(control xplayer)"), (false, false));
        let m = machine(TOKENS);
        assert_eq!(kind(&m, "(mark 2)"), (true, false));
        assert_eq!(kind(&m, "(count 2)"), (false, false));
        assert_eq!(kind(&m, "(step 3)"), (false, false));
    }

    #[test]
    fn pieces_that_move_are_no_latches_but_cannot_go_home() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/games/base/breakthroughSmall.kif"
        );
        let mut m = machine(&std::fs::read_to_string(path).expect("the corpus"));
        // The latches there decide no goal, so none is ever evaluated.
        let start = m.initial_state();
        assert!(!m.latched_goals_into(&start, &mut Vec::new()));
        // A pawn moves on, so no square keeps its pawn.
        assert!(m.latches().iter().all(|l| !l.1), "{:?}", m.latches());
        assert_eq!(kind(&m, "(cell 3 3 white)"), (false, false));
        assert_eq!(kind(&m, "(cell 3 4 black)"), (false, false));
        // Pawns only move forward: a pawn that left its first row never comes back.
        assert_eq!(kind(&m, "(cell 2 1 white)"), (false, true));
        assert_eq!(kind(&m, "(cell 2 6 black)"), (false, true));
    }

    #[test]
    fn a_latch_that_fixes_the_goal_proves_the_outcome() {
        let mut m = machine(TOKENS);
        let mut out = Vec::new();
        let start = m.initial_state();
        assert!(m.latched_goals_into(&start, &mut out));
        assert_eq!(out, [None, None]);
        let won = state(
            &mut m,
            &["(step 3)", "(count 3)", "(mark 1)", "(mark 2)", "(mark 3)"],
        );
        assert!(!m.is_terminal(&won).unwrap());
        assert!(m.latched_goals_into(&won, &mut out));
        assert_eq!(out, [Some(100), Some(0)]);
        let open = state(&mut m, &["(step 3)", "(count 2)", "(mark 1)", "(mark 2)"]);
        assert!(m.latched_goals_into(&open, &mut out));
        assert_eq!(out, [None, None]);
    }

    #[test]
    fn goal_progress_counts_the_marks_of_a_line() {
        let mut m = tic_tac_toe();
        let p = |m: &mut PropnetMachine, facts: &[&str]| {
            let mut all: Vec<String> = Vec::new();
            for x in 1..=3 {
                for y in 1..=3 {
                    let given = facts.iter().find(|f| f.starts_with(&format!("{x} {y} ")));
                    all.push(format!(
                        "(cell {})",
                        given.map_or(format!("{x} {y} b"), |f| f.to_string())
                    ));
                }
            }
            all.push("(control xplayer)".into());
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            let s = state(m, &refs);
            let mut out = Vec::new();
            assert!(m.goal_progress_into(&s, &mut out).unwrap());
            out
        };
        let empty = p(&mut m, &[]);
        let one = p(&mut m, &["1 1 x"]);
        let two = p(&mut m, &["1 1 x", "1 2 x"]);
        let line = p(&mut m, &["1 1 x", "1 2 x", "1 3 x"]);
        // xplayer's progress grows with its marks on a line and is whole with the line.
        assert!(
            empty[0] < one[0] && one[0] < two[0] && two[0] < line[0],
            "{empty:?} {one:?} {two:?} {line:?}"
        );
        assert!((line[0] - 1.0).abs() < 1e-6);
        // The other role's top goal is its own line: x's marks do not bring it nearer.
        assert!(two[1] <= empty[1] + 1e-6, "{empty:?} {two:?}");
    }
}
