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
    table: HashTable<GTerm>,
    hasher: DefaultHashBuilder,
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

    fn hash_of(&self, functor: Sym, args: &[GTerm], nullary: bool) -> u64 {
        self.hasher.hash_one((functor, args, nullary))
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
        let hash = self.hash_of(functor, args, nullary);
        if let Some(&t) = self
            .table
            .find(hash, |&t| self.same(t, functor, args, nullary))
        {
            return t;
        }
        let t = GTerm(self.functors.len() as u32);
        self.functors.push(functor);
        self.nullary.push(nullary);
        self.starts.push(self.args.len() as u32);
        self.args.extend_from_slice(args);
        let Self {
            table,
            functors,
            nullary: nullaries,
            starts,
            args: all_args,
            hasher,
        } = self;
        table.insert_unique(hash, t, |&u| {
            let i = u.index();
            let start = starts[i] as usize;
            let end = starts.get(i + 1).map_or(all_args.len(), |&e| e as usize);
            hasher.hash_one((functors[i], &all_args[start..end], nullaries[i]))
        });
        t
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
            .find(hash, |&t| self.same(t, functor, args, nullary))
            .copied()
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
        assert_eq!(pool.find(&parse_term("(f)").unwrap()), Some(paren_f));
    }
}
