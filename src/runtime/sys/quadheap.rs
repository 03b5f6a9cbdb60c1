//! A 4-ary min-heap keyed by `(deadline, sequence)`: the timers' heap (Go's timer
//! heap is 4-ary too).
//!
//! Against std's binary heap: half the depth (a 100,000-timer heap is 9 levels,
//! not 17), and the four children of a node sit next to each other, so a sift
//! touches fewer cache lines. With many sleeping goroutines the timer heap is
//! the scheduler's largest working set (docs/decisions/0019-timer-heaps.md).

/// `(deadline, insertion sequence)`: earlier first, FIFO among equal deadlines.
pub(crate) type Key = (u64, u64);

const ARITY: usize = 4;

pub(crate) struct QuadHeap<V> {
    items: Vec<(Key, V)>,
}

impl<V> Default for QuadHeap<V> {
    fn default() -> Self {
        QuadHeap { items: Vec::new() }
    }
}

impl<V> QuadHeap<V> {
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn peek_key(&self) -> Option<Key> {
        self.items.first().map(|(k, _)| *k)
    }

    pub(crate) fn push(&mut self, key: Key, value: V) {
        self.items.push((key, value));
        self.sift_up(self.items.len() - 1);
    }

    /// Whether any item passes `test` (in no particular order).
    pub(crate) fn any(&self, mut test: impl FnMut(Key, &V) -> bool) -> bool {
        self.items.iter().any(|(k, v)| test(*k, v))
    }

    /// Removes the smallest key.
    pub(crate) fn pop(&mut self) -> Option<(Key, V)> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let min = std::mem::replace(&mut self.items[0], last);
        self.sift_down(0);
        Some(min)
    }

    /// Keeps the items `keep` accepts, restores the heap order in O(n), and returns
    /// the others (so the caller can drop them where it chooses).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(Key, &V) -> bool) -> Vec<V> {
        let mut removed = Vec::new();
        let mut i = 0;
        while i < self.items.len() {
            if keep(self.items[i].0, &self.items[i].1) {
                i += 1;
            } else {
                removed.push(self.items.swap_remove(i).1);
            }
        }
        for i in (0..self.items.len().div_ceil(ARITY)).rev() {
            self.sift_down(i);
        }
        removed
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.items[i].0 >= self.items[parent].0 {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.items.len();
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                return;
            }
            let last = (first + ARITY).min(n);
            let mut min = first;
            for c in first + 1..last {
                if self.items[c].0 < self.items[min].0 {
                    min = c;
                }
            }
            if self.items[min].0 >= self.items[i].0 {
                return;
            }
            self.items.swap(i, min);
            i = min;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Random pushes, pops and retains against a sorted model.
    #[test]
    fn matches_a_sorted_model() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut heap = QuadHeap::default();
        let mut model: Vec<(Key, u64)> = Vec::new();
        for seq in 0..20_000u64 {
            match next() % 10 {
                0..=5 => {
                    let key = (next() % 500, seq);
                    heap.push(key, seq);
                    model.push((key, seq));
                }
                6..=8 => {
                    model.sort_unstable();
                    let want = (!model.is_empty()).then(|| model.remove(0));
                    assert_eq!(heap.pop(), want);
                }
                _ => {
                    let m = next() % 7;
                    let removed = heap.retain(|_, v| v % 7 != m);
                    assert!(removed.iter().all(|v| v % 7 == m));
                    model.retain(|(_, v)| v % 7 != m);
                }
            }
            assert_eq!(heap.len(), model.len());
            assert_eq!(heap.peek_key(), model.iter().map(|(k, _)| *k).min());
        }
    }
}
