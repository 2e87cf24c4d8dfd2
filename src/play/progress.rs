//! How far a computer's search has got, readable from another thread while it thinks.
//!
//! A [`Progress`] is shared by a game's computer searches and whoever shows how far they
//! have got (the terminal's progress line, the web page's thinking indicator). The searches
//! add their work to its counter as they go ([`SearchConfig::progress`]): finished playouts
//! for the Monte Carlo searches, positions searched for alpha-beta. The game records which of
//! the two the search under way counts ([`Work`], from [`Player::work`]) before it starts, so
//! that a reader names it ("1,234 positions") without waiting for the search.
//!
//! [`SearchConfig::progress`]: ggp_search::search::SearchConfig::progress
//! [`Player::work`]: ggp_search::search::Player::work

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ggp_search::search::Work;

/// A shared count of a search's work and what it counts (a clone shares both).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    count: Arc<AtomicU64>,
    positions: Arc<AtomicBool>,
}

impl Progress {
    /// A count of 0 playouts.
    pub fn new() -> Progress {
        Progress::default()
    }

    /// The counter the searches add to (for [`ggp_search::search::SearchConfig::progress`]).
    pub fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.count)
    }

    /// The work counted so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Sets the count back to 0.
    pub fn reset(&self) {
        self.count.store(0, Ordering::Relaxed);
    }

    /// What the search under way (or the last one) counts.
    pub fn work(&self) -> Work {
        if self.positions.load(Ordering::Relaxed) {
            Work::Positions
        } else {
            Work::Playouts
        }
    }

    /// Records what the search about to start counts.
    pub fn set_work(&self, work: Work) {
        self.positions
            .store(work == Work::Positions, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_count_and_the_work() {
        let progress = Progress::new();
        let reader = progress.clone();
        assert_eq!((reader.count(), reader.work()), (0, Work::Playouts));
        progress.counter().fetch_add(5, Ordering::Relaxed);
        progress.set_work(Work::Positions);
        assert_eq!((reader.count(), reader.work()), (5, Work::Positions));
        reader.reset();
        assert_eq!(progress.count(), 0);
    }
}
