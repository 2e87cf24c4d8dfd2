//! Scrambling: every symbol of a game renamed, consistently, as Tiltyard does.
//!
//! Every atom of the rules is given a new, made-up word, except GDL's reserved words (in any
//! case) and integers, so goal values and board indices stay numeric. Variables keep their
//! `?`. Players see the scrambled rules, role and moves; their replies are mapped back word by
//! word (a word is looked up as sent, then lowercased, and left alone if unknown), as
//! ggp-base's `MappingGdlScrambler` does.

use std::collections::{BTreeSet, HashMap, HashSet};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use ggp_gdl::gdl::Sym;
use ggp_gdl::kif::Sexp;

/// A consistent renaming of a game's symbols.
#[derive(Debug, Clone)]
pub struct Scrambler {
    forward: HashMap<String, String>,
    backward: HashMap<String, String>,
}

impl Scrambler {
    /// A renaming of every symbol in `rules`, drawn from `seed`.
    pub fn new(rules: &[Sexp], seed: u64) -> Scrambler {
        let mut atoms = BTreeSet::new();
        for rule in rules {
            collect_atoms(rule, &mut atoms);
        }
        let mut atoms: Vec<String> = atoms.into_iter().filter(|a| !keeps(a)).collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        atoms.shuffle(&mut rng);
        let mut used = HashSet::new();
        let mut forward = HashMap::new();
        let mut backward = HashMap::new();
        for atom in atoms {
            let word = loop {
                let word = made_up_word(&mut rng);
                if !keeps(&word) && used.insert(word.clone()) {
                    break word;
                }
            };
            let word = if atom.starts_with('?') {
                format!("?{word}")
            } else {
                word
            };
            backward.insert(word.clone(), atom.clone());
            forward.insert(atom, word);
        }
        Scrambler { forward, backward }
    }

    /// `sexp` with every known symbol renamed.
    pub fn scramble(&self, sexp: &Sexp) -> Sexp {
        map_atoms(sexp, &|text| self.forward.get(text).cloned())
    }

    /// `sexp` with every renamed symbol given its real name back.
    pub fn unscramble(&self, sexp: &Sexp) -> Sexp {
        map_atoms(sexp, &|text| {
            self.backward
                .get(text)
                .or_else(|| self.backward.get(&text.to_lowercase()))
                .cloned()
        })
    }
}

/// Whether an atom keeps its name: a reserved word or an integer.
fn keeps(text: &str) -> bool {
    Sym::lookup(text).is_some_and(Sym::is_keyword) || text.parse::<i64>().is_ok()
}

fn collect_atoms(sexp: &Sexp, out: &mut BTreeSet<String>) {
    match sexp {
        Sexp::Atom { text, .. } => {
            out.insert(text.clone());
        }
        Sexp::List { items, .. } => items.iter().for_each(|i| collect_atoms(i, out)),
    }
}

fn map_atoms(sexp: &Sexp, rename: &dyn Fn(&str) -> Option<String>) -> Sexp {
    match sexp {
        Sexp::Atom { text, pos } => Sexp::Atom {
            text: rename(text).unwrap_or_else(|| text.clone()),
            pos: *pos,
        },
        Sexp::List { items, pos } => Sexp::List {
            items: items.iter().map(|i| map_atoms(i, rename)).collect(),
            pos: *pos,
        },
    }
}

/// A pronounceable lowercase word of two to four syllables.
fn made_up_word(rng: &mut impl Rng) -> String {
    const ONSETS: [&str; 16] = [
        "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st",
    ];
    const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "ou"];
    let syllables = rng.random_range(2..=4);
    let mut word = String::new();
    for _ in 0..syllables {
        word.push_str(ONSETS[rng.random_range(0..ONSETS.len())]);
        word.push_str(VOWELS[rng.random_range(0..VOWELS.len())]);
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;
    use ggp_gdl::kif;

    #[test]
    fn renames_everything_but_keywords_and_numbers_consistently() {
        let rules = kif::parse(
            "(role xplayer) (<= (legal ?w (mark ?x 1)) (TRUE (cell ?x 1 b)) (not (true done)) (distinct ?w 10))",
        )
        .unwrap();
        let scrambler = Scrambler::new(&rules, 7);
        let scrambled: Vec<Sexp> = rules.iter().map(|r| scrambler.scramble(r)).collect();
        let text = scrambled
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        for gone in ["xplayer", "mark", "cell", "done", "?x ", "?w ", " b)"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        for kept in [
            "(role ",
            "(<= (legal ",
            "(TRUE (",
            "(not (true ",
            "(distinct ",
            " 1 ",
            " 10)",
        ] {
            assert!(text.contains(kept), "{kept} not in {text}");
        }
        // The same symbol gets the same word everywhere.
        let Sexp::List { items, .. } = &scrambled[0] else {
            panic!("a list")
        };
        let role_word = items[1].to_string();
        assert_eq!(text.matches(&role_word).count(), 1);
        let back: Vec<Sexp> = scrambled.iter().map(|s| scrambler.unscramble(s)).collect();
        assert_eq!(back, rules);
        // Replies are mapped back ignoring case; unknown words pass through.
        let reply = kif::parse_one(&format!("({} 3 zzz)", role_word.to_uppercase())).unwrap();
        assert_eq!(scrambler.unscramble(&reply).to_string(), "(xplayer 3 zzz)");
    }

    #[test]
    fn the_same_seed_gives_the_same_renaming() {
        let rules = kif::parse("(role a) (role b) (init (p c d e f g))").unwrap();
        let one = Scrambler::new(&rules, 3).scramble(&rules[2]);
        let two = Scrambler::new(&rules, 3).scramble(&rules[2]);
        assert_eq!(one, two);
        assert_ne!(one, Scrambler::new(&rules, 4).scramble(&rules[2]));
    }
}
