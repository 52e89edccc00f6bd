//! A bounded table that forgets the entry used least recently.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A map of at most `capacity` entries that forgets the least recently used one to make
/// room. Each access is O(log n).
#[derive(Debug, Clone)]
pub struct LruMap<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    order: BTreeMap<u64, K>,
    clock: u64,
}

impl<K: Hash + Eq + Copy, V> LruMap<K, V> {
    /// An empty map holding at most `capacity` (at least 1) entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: BTreeMap::new(),
            clock: 0,
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `key`'s value without marking it used.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(v, _)| v)
    }

    /// `key`'s value, marked as the most recently used, made by `make` if absent (which
    /// forgets the least recently used entry when the map is full).
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        self.clock += 1;
        let stamp = self.clock;
        if let Some((_, used)) = self.entries.get_mut(&key) {
            self.order.remove(used);
            *used = stamp;
        } else {
            if self.entries.len() >= self.capacity
                && let Some((_, oldest)) = self.order.pop_first()
            {
                self.entries.remove(&oldest);
            }
            self.entries.insert(key, (make(), stamp));
        }
        self.order.insert(stamp, key);
        &mut self.entries.get_mut(&key).expect("just inserted").0
    }

    /// Forgets `key`.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (value, used) = self.entries.remove(key)?;
        self.order.remove(&used);
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_map_forgets_the_least_recently_used() {
        let mut m = LruMap::new(3);
        for k in 0..3 {
            *m.get_or_insert_with(k, || 0) += k;
        }
        *m.get_or_insert_with(0, || 99) += 10; // 0 is now the newest
        m.get_or_insert_with(3, || 3); // forgets 1
        assert_eq!(m.len(), 3);
        assert_eq!(m.peek(&1), None);
        assert_eq!(m.peek(&0), Some(&10));
        assert_eq!(m.peek(&2), Some(&2));
        m.get_or_insert_with(4, || 4); // forgets 2
        assert_eq!(m.peek(&2), None);
        assert_eq!(m.remove(&0), Some(10));
        assert_eq!(m.len(), 2);
        assert_eq!(m.order.len(), 2);
    }
}
