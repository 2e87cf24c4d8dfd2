//! Interned symbols: every constant, function, relation and variable name becomes a `Sym(u32)`.
//!
//! The table is process-wide, so a `Sym` prints itself anywhere and compares in one instruction.
//! GDL's reserved words are interned first, in a fixed order, so they are compile-time constants,
//! and they are matched case-insensitively: `TRUE`, `True` and `true` all give [`Sym::TRUE`].
//! Every other symbol keeps its spelling. The table is hand-written (about 60 lines) rather than
//! taken from an interner crate because the keyword ids must be fixed constants.

use std::fmt;
use std::sync::{LazyLock, RwLock};

use hashbrown::HashMap;

/// An interned symbol.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(u32);

/// The reserved words, in the order of their ids.
const KEYWORDS: [&str; 16] = [
    "role", "init", "true", "does", "next", "legal", "goal", "terminal", "base", "input",
    "distinct", "not", "or", "sees", "random", "<=",
];

impl Sym {
    /// `role`
    pub const ROLE: Sym = Sym(0);
    /// `init`
    pub const INIT: Sym = Sym(1);
    /// `true`
    pub const TRUE: Sym = Sym(2);
    /// `does`
    pub const DOES: Sym = Sym(3);
    /// `next`
    pub const NEXT: Sym = Sym(4);
    /// `legal`
    pub const LEGAL: Sym = Sym(5);
    /// `goal`
    pub const GOAL: Sym = Sym(6);
    /// `terminal`
    pub const TERMINAL: Sym = Sym(7);
    /// `base`
    pub const BASE: Sym = Sym(8);
    /// `input`
    pub const INPUT: Sym = Sym(9);
    /// `distinct`
    pub const DISTINCT: Sym = Sym(10);
    /// `not`
    pub const NOT: Sym = Sym(11);
    /// `or`
    pub const OR: Sym = Sym(12);
    /// `sees` (GDL-II)
    pub const SEES: Sym = Sym(13);
    /// `random` (GDL-II)
    pub const RANDOM: Sym = Sym(14);
    /// `<=`
    pub const IMPLIES: Sym = Sym(15);

    /// Interns `text`. Reserved words are matched case-insensitively.
    pub fn new(text: &str) -> Sym {
        if let Some(i) = KEYWORDS.iter().position(|k| k.eq_ignore_ascii_case(text)) {
            return Sym(i as u32);
        }
        if let Some(&sym) = TABLE.read().expect("symbol table lock").ids.get(text) {
            return sym;
        }
        let mut table = TABLE.write().expect("symbol table lock");
        if let Some(&sym) = table.ids.get(text) {
            return sym;
        }
        let sym = Sym(table.names.len() as u32);
        let name: &'static str = Box::leak(text.to_string().into_boxed_str());
        table.names.push(name);
        table.ids.insert(name, sym);
        sym
    }

    /// The symbol for `text` if it has been interned, without interning it.
    pub fn lookup(text: &str) -> Option<Sym> {
        if let Some(i) = KEYWORDS.iter().position(|k| k.eq_ignore_ascii_case(text)) {
            return Some(Sym(i as u32));
        }
        TABLE
            .read()
            .expect("symbol table lock")
            .ids
            .get(text)
            .copied()
    }

    /// The spelling of this symbol.
    pub fn name(self) -> &'static str {
        TABLE.read().expect("symbol table lock").names[self.0 as usize]
    }

    /// Whether this is one of GDL's reserved words.
    pub fn is_keyword(self) -> bool {
        (self.0 as usize) < KEYWORDS.len()
    }

    /// The raw id, for dense tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

struct Table {
    names: Vec<&'static str>,
    ids: HashMap<&'static str, Sym>,
}

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(|| {
    let names: Vec<&'static str> = KEYWORDS.to_vec();
    let ids = names
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, Sym(i as u32)))
        .collect();
    RwLock::new(Table { names, ids })
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_case_insensitive_and_fixed() {
        assert_eq!(Sym::new("TRUE"), Sym::TRUE);
        assert_eq!(Sym::new("Legal"), Sym::LEGAL);
        assert_eq!(Sym::new("<="), Sym::IMPLIES);
        assert_eq!(Sym::TERMINAL.name(), "terminal");
        assert!(Sym::NOT.is_keyword());
    }

    #[test]
    fn other_symbols_keep_their_spelling() {
        let a = Sym::new("Cell");
        let b = Sym::new("cell");
        assert_ne!(a, b);
        assert_eq!(a.name(), "Cell");
        assert_eq!(Sym::new("Cell"), a);
        assert!(!a.is_keyword());
    }
}
