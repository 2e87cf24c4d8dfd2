//! A relation: a duplicate-free table of fixed-width tuples of ground terms, with hash indexes.
//!
//! Rows are appended to one flat `Vec`, so "the rows added since round k" is a plain range,
//! which is all semi-naive evaluation needs. Each index is a chained hash table over a key
//! drawn from the row: the values at chosen positions, which may lie inside function terms
//! (the `?x` of `(true (cell ?x ?y b))`). A row whose terms do not have the shape the index
//! expects is left out of it, so an index doubles as a filter on the functor.
//! Clearing keeps every allocation, so a relation that is refilled once per game state stops
//! allocating after the first few states.

use std::hash::{BuildHasher, Hasher};

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};

use ggp_gdl::gdl::{GTerm, Sym, TermPool};

/// Marks the end of an index chain.
const NIL: u32 = u32::MAX;

/// A place inside a row: the column, then the argument index at each nested function term.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    /// The column of the row.
    pub column: u8,
    /// Argument indices, outermost first.
    pub steps: Vec<u8>,
}

/// What an index keys on: the shapes it requires and the values it hashes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexSpec {
    /// Function terms a row must have, as (where, functor, arity), parents before children.
    pub shapes: Vec<(Path, Sym, u8)>,
    /// The places whose values form the key.
    pub keys: Vec<Path>,
}

impl IndexSpec {
    /// The key hash of a row, or `None` if the row does not have the required shapes.
    fn row_key(&self, row: &[GTerm], pool: &TermPool, hasher: &DefaultHashBuilder) -> Option<u64> {
        for (path, functor, arity) in &self.shapes {
            let t = walk(row, path, pool);
            if pool.functor(t) != *functor || pool.args(t).len() != *arity as usize {
                return None;
            }
        }
        let mut h = hasher.build_hasher();
        for path in &self.keys {
            h.write_u32(walk(row, path, pool).index() as u32);
        }
        Some(h.finish())
    }
}

/// The term at `path` in `row`. The caller has checked the shapes along the way.
fn walk(row: &[GTerm], path: &Path, pool: &TermPool) -> GTerm {
    let mut t = row[path.column as usize];
    for &i in &path.steps {
        t = pool.args(t)[i as usize];
    }
    t
}

/// Hashes a probe key: the values that [`IndexSpec::keys`] would read from a matching row.
pub fn key_hash(values: &[GTerm], hasher: &DefaultHashBuilder) -> u64 {
    let mut h = hasher.build_hasher();
    for v in values {
        h.write_u32(v.index() as u32);
    }
    h.finish()
}

#[derive(Clone)]
struct Index {
    spec: IndexSpec,
    /// Key hash to the newest row with that hash.
    heads: HashMap<u64, u32>,
    /// For each row, the previous row in its chain (or `NIL`).
    next: Vec<u32>,
}

/// A table of tuples.
#[derive(Clone)]
pub struct Relation {
    arity: usize,
    rows: Vec<GTerm>,
    len: usize,
    dedup: HashTable<u32>,
    indexes: Vec<Index>,
    hasher: DefaultHashBuilder,
}

impl Relation {
    /// An empty relation of the given arity.
    pub fn new(arity: usize) -> Relation {
        Relation {
            arity,
            rows: Vec::new(),
            len: 0,
            dedup: HashTable::new(),
            indexes: Vec::new(),
            hasher: DefaultHashBuilder::default(),
        }
    }

    /// The number of columns.
    pub fn arity(&self) -> usize {
        self.arity
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[GTerm] {
        &self.rows[i * self.arity..(i + 1) * self.arity]
    }

    /// All rows, oldest first.
    pub fn rows(&self) -> impl Iterator<Item = &[GTerm]> {
        (0..self.len).map(|i| self.row(i))
    }

    /// The hasher that probe keys must be hashed with.
    pub fn hasher(&self) -> &DefaultHashBuilder {
        &self.hasher
    }

    /// Adds an index and returns its number; an identical existing index is reused.
    pub fn add_index(&mut self, spec: IndexSpec, pool: &TermPool) -> usize {
        if let Some(i) = self.indexes.iter().position(|ix| ix.spec == spec) {
            return i;
        }
        let mut index = Index {
            spec,
            heads: HashMap::new(),
            next: Vec::new(),
        };
        for i in 0..self.len {
            let row = &self.rows[i * self.arity..(i + 1) * self.arity];
            link(&mut index, i as u32, row, pool, &self.hasher);
        }
        self.indexes.push(index);
        self.indexes.len() - 1
    }

    /// How well an index with `spec` would narrow a probe: the number of rows with the required
    /// shapes, and the number of distinct keys among them.
    pub fn selectivity(&self, spec: &IndexSpec, pool: &TermPool) -> (usize, usize) {
        let mut keys = hashbrown::HashSet::new();
        let mut matching = 0;
        for row in self.rows() {
            if let Some(key) = spec.row_key(row, pool, &self.hasher) {
                matching += 1;
                keys.insert(key);
            }
        }
        (matching, keys.len())
    }

    /// Whether the relation holds `row`.
    pub fn contains(&self, row: &[GTerm]) -> bool {
        let hash = self.hasher.hash_one(row);
        self.dedup
            .find(hash, |&i| self.row(i as usize) == row)
            .is_some()
    }

    /// Adds `row` unless present; returns whether it was new.
    pub fn insert(&mut self, row: &[GTerm], pool: &TermPool) -> bool {
        debug_assert_eq!(row.len(), self.arity);
        let hash = self.hasher.hash_one(row);
        let arity = self.arity;
        let rows = &self.rows;
        if self
            .dedup
            .find(hash, |&i| {
                &rows[i as usize * arity..(i as usize + 1) * arity] == row
            })
            .is_some()
        {
            return false;
        }
        let id = self.len as u32;
        self.rows.extend_from_slice(row);
        self.len += 1;
        let (rows, hasher) = (&self.rows, &self.hasher);
        self.dedup.insert_unique(hash, id, |&i| {
            hasher.hash_one(&rows[i as usize * arity..(i as usize + 1) * arity])
        });
        for index in &mut self.indexes {
            link(index, id, row, pool, &self.hasher);
        }
        true
    }

    /// Removes every row, keeping the indexes' definitions and all allocations.
    pub fn clear(&mut self) {
        self.rows.clear();
        self.len = 0;
        self.dedup.clear();
        for index in &mut self.indexes {
            index.heads.clear();
            index.next.clear();
        }
    }

    /// The rows of index `index` whose key hashes to `hash`, newest first. Rows whose key only
    /// collides are included; the caller matches each row in full anyway.
    pub fn probe(&self, index: usize, hash: u64) -> Chain<'_> {
        let ix = &self.indexes[index];
        Chain {
            next: &ix.next,
            at: ix.heads.get(&hash).copied().unwrap_or(NIL),
        }
    }
}

fn link(index: &mut Index, id: u32, row: &[GTerm], pool: &TermPool, hasher: &DefaultHashBuilder) {
    index.next.resize(id as usize + 1, NIL);
    if let Some(key) = index.spec.row_key(row, pool, hasher) {
        let prev = index.heads.insert(key, id).unwrap_or(NIL);
        index.next[id as usize] = prev;
    }
}

/// The row numbers on one index chain.
pub struct Chain<'a> {
    next: &'a [u32],
    at: u32,
}

impl Iterator for Chain<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.at == NIL {
            return None;
        }
        let here = self.at;
        self.at = self.next[here as usize];
        Some(here as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ggp_gdl::gdl::parse_term;

    #[test]
    fn dedups_and_indexes_inside_terms() {
        let mut pool = TermPool::default();
        let mut t = |s: &str| pool.intern(&parse_term(s).unwrap()).unwrap();
        let c11 = t("(cell 1 1 b)");
        let c12 = t("(cell 1 2 x)");
        let c21 = t("(cell 2 1 b)");
        let ctl = t("(control x)");
        let one = t("1");
        let mut rel = Relation::new(1);
        // Index (true (cell ?x ?y ?z)) on ?x.
        let path = |steps: Vec<u8>| Path { column: 0, steps };
        let spec = IndexSpec {
            shapes: vec![(path(vec![]), Sym::new("cell"), 3)],
            keys: vec![path(vec![0])],
        };
        let ix = rel.add_index(spec.clone(), &pool);
        assert_eq!(rel.add_index(spec, &pool), ix);
        for row in [c11, c12, ctl, c21, c11] {
            rel.insert(&[row], &pool);
        }
        assert_eq!(rel.len(), 4);
        assert!(rel.contains(&[ctl]));
        let hits: Vec<GTerm> = rel
            .probe(ix, key_hash(&[one], rel.hasher()))
            .map(|i| rel.row(i)[0])
            .collect();
        assert_eq!(hits, vec![c12, c11]);
        rel.clear();
        assert_eq!(rel.probe(ix, key_hash(&[one], rel.hasher())).count(), 0);
        rel.insert(&[c21], &pool);
        assert_eq!(rel.len(), 1);
    }
}
