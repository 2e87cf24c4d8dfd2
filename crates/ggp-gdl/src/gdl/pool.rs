//! Hash-consed ground terms: each distinct ground term is stored once and named by a `GTerm(u32)`.
//!
//! Engines keep relations as tuples of `GTerm`s, so comparing or hashing a nested term such as
//! `(cell (pos 1 2) b)` costs the same as comparing a constant.

use std::fmt;
use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::{Sym, Term};

/// A ground term interned in a [`TermPool`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct GTerm(u32);

impl GTerm {
    /// An id no stored term has, for use as a sentinel.
    pub const MAX: GTerm = GTerm(u32::MAX);

    /// The raw id, for dense tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The store of ground terms.
#[derive(Clone, Default)]
pub struct TermPool {
    functors: Vec<Sym>,
    /// Whether each term is a function applied to no arguments, `(f)`, rather than `f`.
    nullary: Vec<bool>,
    /// Start of each term's arguments in `args`; the end is the next term's start.
    starts: Vec<u32>,
    args: Vec<GTerm>,
    /// Each term's size: how many symbols it has written out as a tree (saturating), so that
    /// callers can bound what printing or converting it would cost; hash-consing lets a term
    /// twice the size of its argument cost one entry here.
    sizes: Vec<u32>,
    /// Each term's depth: 1 for a constant, one more than its deepest argument otherwise.
    depths: Vec<u32>,
    /// The largest size and the greatest depth of any stored term.
    largest: u32,
    deepest: u32,
    /// Each term with its 32-bit hash ([`TermPool::hash_of`]), so that growing the table
    /// rehashes from the entries alone: recomputing hashes from the terms' parts reads three
    /// arrays at random and took seconds on pools of millions of terms.
    table: HashTable<(GTerm, u32)>,
    hasher: DefaultHashBuilder,
}

/// The table hash of a term whose 32-bit hash is `h`.
fn table_hash(h: u32) -> u64 {
    u64::from(h) << 32 | u64::from(h)
}

impl TermPool {
    /// How many terms are stored.
    pub fn len(&self) -> usize {
        self.functors.len()
    }

    /// Whether no term is stored.
    pub fn is_empty(&self) -> bool {
        self.functors.is_empty()
    }

    /// A term's 32-bit hash, from its parts.
    fn hash_of(&self, functor: Sym, args: &[GTerm], nullary: bool) -> u32 {
        let h = self.hasher.hash_one((functor, args, nullary));
        (h ^ h >> 32) as u32
    }

    fn same(&self, t: GTerm, functor: Sym, args: &[GTerm], nullary: bool) -> bool {
        self.functors[t.index()] == functor
            && self.args(t) == args
            && self.nullary[t.index()] == nullary
    }

    /// The term `functor(args...)`, or the constant `functor` when `args` is empty, interning it.
    pub fn app(&mut self, functor: Sym, args: &[GTerm]) -> GTerm {
        self.intern_parts(functor, args, false)
    }

    /// The function term `(functor)` with no arguments, which GDL keeps apart from the
    /// constant `functor`.
    pub fn nullary(&mut self, functor: Sym) -> GTerm {
        self.intern_parts(functor, &[], true)
    }

    /// Whether `t` is a function applied to no arguments, `(f)`.
    pub fn is_nullary(&self, t: GTerm) -> bool {
        self.nullary[t.index()]
    }

    fn intern_parts(&mut self, functor: Sym, args: &[GTerm], nullary: bool) -> GTerm {
        if let Some(t) = self.find_parts(functor, args, nullary) {
            return t;
        }
        let hash = self.hash_of(functor, args, nullary);
        let t = GTerm(self.functors.len() as u32);
        let (mut size, mut depth) = (1u32, 0u32);
        for &a in args {
            size = size.saturating_add(self.sizes[a.index()]);
            depth = depth.max(self.depths[a.index()]);
        }
        let depth = depth + 1;
        self.sizes.push(size);
        self.depths.push(depth);
        self.largest = self.largest.max(size);
        self.deepest = self.deepest.max(depth);
        self.functors.push(functor);
        self.nullary.push(nullary);
        self.starts.push(self.args.len() as u32);
        self.args.extend_from_slice(args);
        self.table
            .insert_unique(table_hash(hash), (t, hash), |&(_, h)| table_hash(h));
        t
    }

    /// How many symbols `t` has written out as a tree (saturating at `u32::MAX`).
    pub fn size(&self, t: GTerm) -> u32 {
        self.sizes[t.index()]
    }

    /// The depth of `t`: 1 for a constant, one more than its deepest argument otherwise.
    pub fn depth(&self, t: GTerm) -> u32 {
        self.depths[t.index()]
    }

    /// The largest [`size`](Self::size) of any stored term (0 when empty).
    pub fn largest_size(&self) -> u32 {
        self.largest
    }

    /// The greatest [`depth`](Self::depth) of any stored term (0 when empty).
    pub fn greatest_depth(&self) -> u32 {
        self.deepest
    }

    /// The constant `sym`, interning it.
    pub fn constant(&mut self, sym: Sym) -> GTerm {
        self.app(sym, &[])
    }

    /// The term `functor(args...)` if it is already stored.
    pub fn find_app(&self, functor: Sym, args: &[GTerm]) -> Option<GTerm> {
        self.find_parts(functor, args, false)
    }

    fn find_parts(&self, functor: Sym, args: &[GTerm], nullary: bool) -> Option<GTerm> {
        let hash = self.hash_of(functor, args, nullary);
        self.table
            .find(table_hash(hash), |&(t, h)| {
                h == hash && self.same(t, functor, args, nullary)
            })
            .map(|&(t, _)| t)
    }

    /// The functor of `t` (the symbol itself for a constant).
    pub fn functor(&self, t: GTerm) -> Sym {
        self.functors[t.index()]
    }

    /// The arguments of `t` (empty for a constant).
    pub fn args(&self, t: GTerm) -> &[GTerm] {
        let i = t.index();
        let start = self.starts[i] as usize;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.args.len(), |&e| e as usize);
        &self.args[start..end]
    }

    /// Interns a term; `None` if it holds a variable.
    pub fn intern(&mut self, term: &Term) -> Option<GTerm> {
        match term {
            Term::Const(s) => Some(self.constant(*s)),
            Term::Var(_) => None,
            Term::App(f, args) if args.is_empty() => Some(self.nullary(*f)),
            Term::App(f, args) => {
                let args: Option<Vec<GTerm>> = args.iter().map(|a| self.intern(a)).collect();
                Some(self.app(*f, &args?))
            }
        }
    }

    /// The stored id of a ground term, without interning; `None` if it is not stored or not
    /// ground.
    pub fn find(&self, term: &Term) -> Option<GTerm> {
        match term {
            Term::Const(s) => self.find_app(*s, &[]),
            Term::Var(_) => None,
            Term::App(f, args) if args.is_empty() => self.find_parts(*f, &[], true),
            Term::App(f, args) => {
                let args: Option<Vec<GTerm>> = args.iter().map(|a| self.find(a)).collect();
                self.find_app(*f, &args?)
            }
        }
    }

    /// The term named by `t`, as an owned tree.
    pub fn term(&self, t: GTerm) -> Term {
        let args = self.args(t);
        if args.is_empty() && !self.is_nullary(t) {
            Term::Const(self.functor(t))
        } else {
            Term::App(
                self.functor(t),
                args.iter().map(|&a| self.term(a)).collect(),
            )
        }
    }

    /// Something that prints `t` as compact KIF.
    pub fn display(&self, t: GTerm) -> impl fmt::Display + '_ {
        Shown { pool: self, t }
    }
}

struct Shown<'a> {
    pool: &'a TermPool,
    t: GTerm,
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args = self.pool.args(self.t);
        if args.is_empty() && !self.pool.is_nullary(self.t) {
            return write!(f, "{}", self.pool.functor(self.t));
        }
        write!(f, "({}", self.pool.functor(self.t))?;
        for &a in args {
            write!(f, " {}", self.pool.display(a))?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gdl::parse_term;

    #[test]
    fn terms_survive_the_table_growing() {
        // Enough terms for the table to grow many times; every term keeps its id and is
        // found again from its parts, and terms with the same parts in another order differ.
        let mut pool = TermPool::default();
        let f = Sym::new("f");
        let consts: Vec<GTerm> = (0..300)
            .map(|i| pool.constant(Sym::new(&format!("c{i}"))))
            .collect();
        let mut made = Vec::new();
        for (i, &a) in consts.iter().enumerate() {
            for &b in &consts[..i] {
                made.push(((a, b), pool.app(f, &[a, b])));
            }
        }
        let distinct: std::collections::HashSet<GTerm> = made.iter().map(|m| m.1).collect();
        assert_eq!(distinct.len(), made.len());
        for &((a, b), t) in &made {
            assert_eq!(pool.find_app(f, &[a, b]), Some(t));
            assert_eq!(pool.app(f, &[a, b]), t);
            assert_eq!(pool.args(t), &[a, b]);
            assert_ne!(pool.find_app(f, &[b, a]), Some(t));
        }
        assert_eq!(pool.len(), consts.len() + made.len());
    }

    #[test]
    fn same_term_same_id() {
        let mut pool = TermPool::default();
        let a = pool
            .intern(&parse_term("(cell (pos 1 2) b)").unwrap())
            .unwrap();
        let b = pool
            .intern(&parse_term("(cell (pos 1 2) b)").unwrap())
            .unwrap();
        let c = pool
            .intern(&parse_term("(cell (pos 2 1) b)").unwrap())
            .unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(pool.display(c).to_string(), "(cell (pos 2 1) b)");
        assert_eq!(
            pool.find(&parse_term("(pos 1 2)").unwrap()),
            Some(pool.args(a)[0])
        );
        assert_eq!(pool.find(&parse_term("(pos 3 3)").unwrap()), None);
        assert_eq!(pool.intern(&parse_term("(cell ?x)").unwrap()), None);
        assert_eq!(pool.term(a), parse_term("(cell (pos 1 2) b)").unwrap());
        // `(f)` and `f` are different terms.
        let f = pool.intern(&parse_term("f").unwrap()).unwrap();
        let paren_f = pool.intern(&parse_term("(f)").unwrap()).unwrap();
        assert_ne!(f, paren_f);
        assert_eq!(pool.display(paren_f).to_string(), "(f)");
        assert_eq!((pool.size(a), pool.depth(a)), (5, 3));
        assert_eq!((pool.size(f), pool.depth(f)), (1, 1));
        assert_eq!((pool.size(paren_f), pool.depth(paren_f)), (1, 1));
        assert_eq!((pool.largest_size(), pool.greatest_depth()), (5, 3));
        assert_eq!(pool.find(&parse_term("(f)").unwrap()), Some(paren_f));
    }
}
