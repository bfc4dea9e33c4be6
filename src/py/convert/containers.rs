//! What a walk over parameters' containers checks on its way down: how deep it may go, and
//! which lists and dicts it has met (one met twice is shared between parameters).

use crate::argspec::Unhandled;

/// Nesting deeper than this is left to ansible-core (and stops reference cycles).
pub(crate) const MAX_DEPTH: usize = 64;

/// Why a list or dict met twice is refused: ansible-core's deep copy keeps such sharing, which
/// the engine's values cannot.
pub(crate) const SHARED: Unhandled = Unhandled::SharedContainer;

/// The containers met so far: a short array searched in order (parameters hold a few; no
/// allocation), a hash set past that.
#[derive(Default)]
pub(crate) struct SeenContainers {
    few: [usize; SeenContainers::FEW],
    count: usize,
    many: rustc_hash::FxHashSet<usize>,
}

impl SeenContainers {
    const FEW: usize = 32;

    /// Adds `address`; false if it was there already.
    pub(crate) fn insert(&mut self, address: usize) -> bool {
        let few = &self.few[..self.count.min(Self::FEW)];
        if few.contains(&address) || (!self.many.is_empty() && self.many.contains(&address)) {
            return false;
        }
        if self.count < Self::FEW {
            self.few[self.count] = address;
            self.count += 1;
        } else {
            self.many.insert(address);
        }
        true
    }

    /// Every address added.
    pub(crate) fn addresses(&self) -> impl Iterator<Item = usize> + '_ {
        self.few[..self.count.min(Self::FEW)]
            .iter()
            .copied()
            .chain(self.many.iter().copied())
    }
}
