//! The search over a game's turn-taking parts ([`ggp_engine::analysis::turn_taking`]): a game of
//! simultaneous moves that is several turn-taking games played at once (connectFourSimultaneous:
//! each role drops a disc on one board while the other drops one on the other board) is
//! searched one part at a time, as a turn-taking game, instead of as one tree of joint moves
//! (8 × 8 children a step there, each board's continuation split eight ways by the other's).
//!
//! A [`PartMachine`] is the game seen from one part: a role's moves are its legal moves in the
//! part; a role with none there has one move, its first legal one elsewhere, whose effect on
//! the other parts is undone (their facts are copied back from the state before the step,
//! [`StateMachine::copy_facts`]); facts of no part (shared ones, parts without moves) move on
//! as the rules say. The part ends where the whole game ends or no role has a move in it left;
//! goals are the whole game's. Any [`Player`] can search it, since it is a [`StateMachine`].
//!
//! The [`PartsPlayer`] keeps an MCTS player per part and, in each state, searches the part
//! where most of our legal moves lie (one, in the games that have parts). What it leaves out:
//! how the parts race (a win on one board ends the game whatever the other board holds), which
//! each part's search sees only through the held facts of the others.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_engine::analysis::{TurnTakingParts, turn_taking_parts};
use ggp_engine::machine::{Factoring, MachineError, StateMachine};
use ggp_gdl::gdl::Term;

use super::mcts::{MctsPlayer, MctsSettings};
use super::{Choice, Player, SearchConfig, SearchError};

/// Random games the start clock spends looking for parts, at most.
const PART_GAMES: usize = 20;
/// Joint moves of one such game, at most.
const PART_STEPS: usize = 200;

/// One part of a game as a game of its own (see the module's documentation).
pub struct PartMachine<M: StateMachine> {
    inner: M,
    /// The moves of the part (any role's).
    moves: Arc<HashSet<M::Move>>,
    /// The facts of the other parts, held as they stand.
    held: Arc<[u32]>,
    legal: Vec<M::Move>,
}

impl<M: StateMachine> PartMachine<M> {
    /// Part number `part` of `parts` (found on `factoring`), over `inner`; `None` if the
    /// engine cannot hold facts ([`StateMachine::copy_facts`]).
    pub fn new(
        mut inner: M,
        factoring: &Factoring,
        parts: &TurnTakingParts,
        part: usize,
    ) -> Option<PartMachine<M>> {
        let initial = inner.initial_state();
        if !inner.copy_facts(&mut initial.clone(), &initial, &[]) {
            return None;
        }
        let moves: HashSet<M::Move> = parts.parts[part]
            .iter()
            .flat_map(|&c| &factoring.components[c].moves)
            .filter_map(|(_, mv)| inner.find_move(mv))
            .collect();
        let mut held = Vec::new();
        let mut ids = Vec::new();
        let other_facts = parts
            .parts
            .iter()
            .enumerate()
            .filter(|&(p, _)| p != part)
            .flat_map(|(_, components)| components)
            .flat_map(|&c| &factoring.components[c].facts);
        for fact in other_facts {
            // A fact the engine has no place for is never true (optimized away): nothing to hold.
            if let Ok(state) = inner.state_from_terms(std::slice::from_ref(fact))
                && inner.fact_ids_into(&state, &mut ids)
            {
                held.extend_from_slice(&ids);
            }
        }
        held.sort_unstable();
        held.dedup();
        Some(PartMachine {
            inner,
            moves: Arc::new(moves),
            held: held.into(),
            legal: Vec::new(),
        })
    }

    /// Whether some role has a move of the part in `state`.
    fn part_open(&mut self, state: &M::State) -> Result<bool, MachineError> {
        for role in 0..self.inner.roles().len() {
            self.legal.clear();
            self.inner.legal_moves_into(state, role, &mut self.legal)?;
            if self.legal.iter().any(|mv| self.moves.contains(mv)) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl<M: StateMachine> StateMachine for PartMachine<M> {
    type State = M::State;
    type Move = M::Move;

    fn roles(&self) -> &[Term] {
        self.inner.roles()
    }

    fn initial_state(&self) -> M::State {
        self.inner.initial_state()
    }

    fn legal_moves_into(
        &mut self,
        state: &M::State,
        role: usize,
        out: &mut Vec<M::Move>,
    ) -> Result<(), MachineError> {
        self.legal.clear();
        self.inner.legal_moves_into(state, role, &mut self.legal)?;
        let before = out.len();
        out.extend(self.legal.iter().filter(|mv| self.moves.contains(mv)));
        if out.len() == before
            && let Some(&elsewhere) = self.legal.first()
        {
            out.push(elsewhere);
        }
        Ok(())
    }

    fn is_terminal(&mut self, state: &M::State) -> Result<bool, MachineError> {
        Ok(self.inner.is_terminal(state)? || !self.part_open(state)?)
    }

    fn goal_values(&mut self, state: &M::State, role: usize) -> Result<Vec<u8>, MachineError> {
        self.inner.goal_values(state, role)
    }

    fn next_state_unchecked(
        &mut self,
        state: &M::State,
        joint: &[M::Move],
    ) -> Result<M::State, MachineError> {
        let mut next = self.inner.next_state_unchecked(state, joint)?;
        self.inner.copy_facts(&mut next, state, &self.held);
        Ok(next)
    }

    fn move_term(&self, mv: M::Move) -> Term {
        self.inner.move_term(mv)
    }

    fn find_move(&self, term: &Term) -> Option<M::Move> {
        self.inner.find_move(term)
    }

    fn state_terms(&self, state: &M::State) -> Vec<Term> {
        self.inner.state_terms(state)
    }

    fn fact_ids_into(&self, state: &M::State, out: &mut Vec<u32>) -> bool {
        self.inner.fact_ids_into(state, out)
    }

    fn state_from_terms(&mut self, facts: &[Term]) -> Result<M::State, MachineError> {
        self.inner.state_from_terms(facts)
    }

    fn fork(&self) -> Option<PartMachine<M>> {
        Some(PartMachine {
            inner: self.inner.fork()?,
            moves: Arc::clone(&self.moves),
            held: Arc::clone(&self.held),
            legal: Vec::new(),
        })
    }
}

/// One part's machine and its search.
struct PartSearch<M: StateMachine> {
    machine: PartMachine<M>,
    player: MctsPlayer<PartMachine<M>>,
}

/// Plays a game of turn-taking parts part by part (see the module's documentation).
pub struct PartsPlayer<M: StateMachine> {
    parts: Vec<PartSearch<M>>,
    role: usize,
}

impl<M: StateMachine + Send + 'static> PartsPlayer<M> {
    /// The player for the game `machine` plays, if the game has turn-taking parts (looked for
    /// in random games until `until` at most) and the engine can search them; each part is
    /// searched by MCTS with `settings`, the memory for trees shared among the parts.
    ///
    /// # Errors
    /// The engine failed.
    pub fn find(
        machine: &mut M,
        config: &SearchConfig,
        settings: &MctsSettings,
        until: Instant,
    ) -> Result<Option<PartsPlayer<M>>, SearchError> {
        if machine.is_gdl2() {
            return Ok(None);
        }
        let Some(factoring) = machine.factoring() else {
            return Ok(None);
        };
        if factoring
            .components
            .iter()
            .filter(|c| !c.moves.is_empty())
            .count()
            < 2
        {
            return Ok(None);
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(config.seed);
        let Some(parts) =
            turn_taking_parts(machine, &factoring, &mut rng, PART_GAMES, PART_STEPS, until)?
        else {
            return Ok(None);
        };
        // The trees of all parts share the memory one search is given.
        let settings = MctsSettings {
            memory_bytes: settings.memory_bytes / parts.parts.len(),
            ..settings.clone()
        };
        let mut searches = Vec::new();
        for part in 0..parts.parts.len() {
            let Some(fork) = machine.fork() else {
                return Ok(None);
            };
            let Some(part_machine) = PartMachine::new(fork, &factoring, &parts, part) else {
                return Ok(None);
            };
            searches.push(PartSearch {
                machine: part_machine,
                player: MctsPlayer::with_settings(config.clone(), settings.clone()),
            });
        }
        Ok(Some(PartsPlayer {
            parts: searches,
            role: 0,
        }))
    }

    /// How many parts the game has.
    pub fn parts(&self) -> usize {
        self.parts.len()
    }
}

impl<M: StateMachine + Send + 'static> Player<M> for PartsPlayer<M> {
    fn name(&self) -> String {
        "parts".into()
    }

    /// Each part's search starts (and analyses its part) in an equal share of the start clock.
    fn start(
        &mut self,
        _machine: &mut M,
        role: usize,
        deadline: Instant,
    ) -> Result<(), SearchError> {
        self.role = role;
        let n = self.parts.len() as u32;
        for (i, part) in self.parts.iter_mut().enumerate() {
            let now = Instant::now();
            let share = deadline.saturating_duration_since(now) / (n - i as u32);
            part.player.start(&mut part.machine, role, now + share)?;
        }
        Ok(())
    }

    fn choose(
        &mut self,
        machine: &mut M,
        state: &M::State,
        deadline: Instant,
    ) -> Result<Choice<M::Move>, SearchError> {
        let legal = machine.legal_moves(state, self.role)?;
        match legal.as_slice() {
            [] => return Err(SearchError::NoMove),
            [only] => return Ok(Choice::unsearched(*only)),
            _ => {}
        }
        let in_part = |part: &PartSearch<M>| {
            legal
                .iter()
                .filter(|mv| part.machine.moves.contains(mv))
                .count()
        };
        let part = (0..self.parts.len())
            .max_by_key(|&p| in_part(&self.parts[p]))
            .ok_or(SearchError::NoMove)?;
        // The part's moves for us are among our legal moves (see `PartMachine`).
        let part = &mut self.parts[part];
        part.player.choose(&mut part.machine, state, deadline)
    }

    fn hidden_settings(&self) -> Option<MctsSettings> {
        self.parts.first().map(|p| p.player.hidden_settings())?
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use ggp_engine::propnet::{Budget, PropnetMachine};
    use ggp_gdl::gdl::Description;

    fn machine(name: &str) -> PropnetMachine {
        let path = format!(
            "{}/../../../shared/games/base/{name}.kif",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("the corpus beside the checkout");
        let description = Description::from_text(&text).unwrap();
        PropnetMachine::new(&description, &Budget::default()).unwrap()
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    fn config(iterations: u64) -> SearchConfig {
        SearchConfig {
            max_iterations: Some(iterations),
            ..SearchConfig::default()
        }
    }

    fn find(m: &mut PropnetMachine) -> Option<PartsPlayer<PropnetMachine>> {
        PartsPlayer::find(m, &config(500), &MctsSettings::default(), far()).unwrap()
    }

    fn terms<M: StateMachine>(m: &M, state: &M::State, board: &str) -> Vec<String> {
        let mut facts: Vec<String> = m
            .state_terms(state)
            .iter()
            .map(ToString::to_string)
            .filter(|f| f.ends_with(&format!("{board})")) || f.contains(&format!(" {board} ")))
            .collect();
        facts.sort();
        facts
    }

    fn term(text: &str) -> Term {
        ggp_gdl::gdl::parse_term(text).unwrap()
    }

    #[test]
    fn a_part_moves_its_board_and_holds_the_other() {
        let mut m = machine("connectFourSimultaneous");
        let player = find(&mut m).expect("two boards");
        assert_eq!(player.parts(), 2);
        // The part red drops into first: board 1.
        let red_drop = m.find_move(&term("(drop 4 1)")).unwrap();
        let mut part = player
            .parts
            .into_iter()
            .map(|p| p.machine)
            .find(|p| p.moves.contains(&red_drop))
            .unwrap();
        let s0 = part.initial_state();
        assert_eq!(
            part.legal_moves(&s0, 0).unwrap().len(),
            8,
            "red: board 1's columns"
        );
        let held = part.legal_moves(&s0, 1).unwrap();
        assert_eq!(held.len(), 1, "black holds: {held:?}");
        let s1 = part.next_state(&s0, &[red_drop, held[0]]).unwrap();
        // Board 2 is as it was (black's drop undone); board 1 has red's disc, and the turns
        // have passed on both boards, as the rules say.
        assert_eq!(terms(&part, &s1, "2"), vec!["(control red 2)".to_string()]);
        assert_eq!(
            terms(&part, &s1, "1"),
            vec![
                "(cell 4 1 1 red)".to_string(),
                "(control black 1)".to_string()
            ]
        );
        assert_eq!(part.legal_moves(&s1, 0).unwrap().len(), 1, "red holds");
        assert_eq!(part.legal_moves(&s1, 1).unwrap().len(), 8, "black: board 1");
        assert!(!part.is_terminal(&s1).unwrap());
    }

    #[test]
    fn games_without_turn_taking_parts_get_no_parts_player() {
        assert!(find(&mut machine("gt_prisoner")).is_none());
        assert!(find(&mut machine("connectFour")).is_none());
        assert!(find(&mut machine("chinook")).is_some());
    }

    #[test]
    fn the_parts_player_takes_a_win_on_its_board() {
        let mut m = machine("connectFourSimultaneous");
        // Red has three in a row on board 1 and drops there; black drops on board 2.
        let facts: Vec<Term> = [
            "(cell 1 1 1 red)",
            "(cell 2 1 1 red)",
            "(cell 3 1 1 red)",
            "(cell 8 1 1 black)",
            "(cell 8 2 1 black)",
            "(cell 7 1 1 black)",
            "(cell 1 1 2 black)",
            "(cell 2 1 2 red)",
            "(control red 1)",
            "(control black 2)",
        ]
        .iter()
        .map(|f| term(f))
        .collect();
        let state = m.state_from_terms(&facts).unwrap();
        let mut player = find(&mut m).unwrap();
        player.start(&mut m, 0, Instant::now()).unwrap();
        let choice = player.choose(&mut m, &state, far()).unwrap();
        assert_eq!(m.move_term(choice.mv).to_string(), "(drop 4 1)");
    }
}
