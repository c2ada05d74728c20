//! A task group's slots (issue #16, memory): the newest allocation of each
//! slot, indexed by the slot's key (the allocation index, or the node for a
//! system job). An ordered map took about 17 bytes per entry at C1M; a
//! vector indexed by key takes 4. Keys are dense: an index is below the
//! group's count (or a canary's, just above it) and a node below the
//! cluster's size, and the loader's MAX_ALLOCATIONS budget counts both, so
//! the vector is never longer than the allocations the group may have.
//! A slot is never emptied once filled (the scheduler only replaces its
//! allocation), so iteration is in key order, as the map's was.

use crate::model::ids::AllocId;

/// An empty slot.
const EMPTY: AllocId = AllocId(u32::MAX);

#[derive(Clone, Debug, Default)]
pub struct Slots(Vec<AllocId>);

impl Slots {
    /// The allocation in slot `key`, if it has one.
    pub fn get(&self, key: &u32) -> Option<&AllocId> {
        self.0.get(*key as usize).filter(|&&id| id != EMPTY)
    }

    pub fn contains_key(&self, key: &u32) -> bool {
        self.get(key).is_some()
    }

    /// Puts `id` in slot `key`, returning the allocation it replaces.
    pub fn insert(&mut self, key: u32, id: AllocId) -> Option<AllocId> {
        assert!(id != EMPTY, "alloc #{} is the empty slot's marker", id.0);
        let at = key as usize;
        if at >= self.0.len() {
            self.0.resize(at + 1, EMPTY);
        }
        Some(std::mem::replace(&mut self.0[at], id)).filter(|&old| old != EMPTY)
    }

    /// The filled slots in key order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, AllocId)> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|&(_, &id)| id != EMPTY)
            .map(|(key, &id)| (key as u32, id))
    }

    /// The filled slots with keys below `end`, in key order.
    pub fn below(&self, end: u32) -> impl Iterator<Item = (u32, AllocId)> + '_ {
        self.iter().take_while(move |&(key, _)| key < end)
    }

    /// The allocations of the filled slots, in key order.
    pub fn values(&self) -> impl Iterator<Item = &AllocId> + '_ {
        self.0.iter().filter(|&&id| id != EMPTY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_as_the_ordered_map_it_replaces() {
        let mut slots = Slots::default();
        let mut map = BTreeMap::new();
        for (key, id) in [(3, 10), (0, 11), (7, 12), (3, 13), (1, 14), (7, 15)] {
            assert_eq!(slots.insert(key, AllocId(id)), map.insert(key, AllocId(id)));
        }
        let pairs: Vec<(u32, AllocId)> = map.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(slots.iter().collect::<Vec<_>>(), pairs);
        assert_eq!(
            slots.values().collect::<Vec<_>>(),
            map.values().collect::<Vec<_>>()
        );
        assert_eq!(
            slots.below(3).collect::<Vec<_>>(),
            map.range(..3).map(|(&k, &v)| (k, v)).collect::<Vec<_>>()
        );
        for key in 0..10 {
            assert_eq!(slots.get(&key), map.get(&key));
            assert_eq!(slots.contains_key(&key), map.contains_key(&key));
        }
    }
}
