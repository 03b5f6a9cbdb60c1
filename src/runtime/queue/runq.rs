//! A P's local run queue: the `runnext` slot plus a bounded lock-free ring.
//!
//! This is Go's `runqput` / `runqget` / `runqgrab` algorithm (src/runtime/proc.go),
//! written again for Rust's memory model.
//!
//! # Who may touch what
//! - The **owner** is the M currently holding the P. Only the owner calls
//!   [`RunQueue::push`], [`RunQueue::pop`] and [`RunQueue::steal_into`] (the last on
//!   its *own* queue, naming a victim). Only the owner writes `tail` and the slots
//!   at and after `tail`.
//! - **Thieves** (other Ms, each the owner of another P) read a victim's `head`,
//!   `tail` and slots and advance the victim's `head` with a CAS; they may also take
//!   the victim's `runnext` with a CAS.
//! - Anyone may read [`RunQueue::ring_len`] / [`RunQueue::is_empty`] as a hint.
//!   The owner may [`RunQueue::peek`] at what it would pop next, also a hint: a
//!   thief may take it meanwhile (the runtime only prefetches through it).
//!
//! # Orderings
//! - The owner publishes a slot with `tail.store(Release)`; a thief reads `tail`
//!   with `Acquire`, so the slot contents it then reads are the published ones.
//! - Consumers (owner pop, thief grab) advance `head` with a `Release` CAS; the
//!   owner reads `head` with `Acquire` before reusing slots, so a thief's read of a
//!   slot happens-before the owner overwrites it.
//! - A thief may read a slot the owner is concurrently overwriting (after the
//!   thief's `head` snapshot went stale). The slots are atomics, so this is a
//!   benign race, and the thief's `head` CAS then fails and it retries: a value read
//!   through a stale snapshot is never used.
//! - `runnext` changes only by `swap`/CAS (`AcqRel`): the G pointer handed over
//!   carries its contents with it.
//!
//! # Capacity
//! 256 slots, as Go. Under loom the ring shrinks to 4 so the full-ring and
//! wrap-around cases are reachable in a model.

use crate::runtime::sys::sync_prims::{AtomicPtr, AtomicU32, Ordering};
use std::ptr::{self, NonNull};

/// Slots in the ring (Go: `len(p.runq)`).
#[cfg(not(loom))]
pub const RING_CAP: u32 = 256;
/// Slots in the ring, shrunk under loom so the overflow paths are reachable.
#[cfg(loom)]
pub const RING_CAP: u32 = 4;

/// What [`RunQueue::pop`] returns besides the item: whether it came from
/// `runnext` (and so inherits the current time slice, Go's `inheritTime`).
pub type Popped<T> = (NonNull<T>, bool);

/// `runnext` + a 256-slot ring of pointers to `T` (in the runtime, `T` is a G).
pub struct RunQueue<T> {
    /// Next slot to consume. Advanced by the owner and by thieves (CAS).
    head: AtomicU32,
    /// Next slot to fill. Written only by the owner.
    tail: AtomicU32,
    /// The ring. Slot `i % RING_CAP` holds the item at logical index `i`.
    slots: Box<[AtomicPtr<T>]>,
    /// The item to run next, ahead of the ring. Null when empty.
    runnext: AtomicPtr<T>,
}

// SAFETY: the queue only stores raw pointers; handing the pointees between threads
// is the caller's contract (in the runtime a G is touched only by the M that popped
// it). All shared state is atomic.
unsafe impl<T> Send for RunQueue<T> {}
// SAFETY: as above; every field is an atomic or an immutable boxed slice of atomics.
unsafe impl<T> Sync for RunQueue<T> {}

impl<T> Default for RunQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RunQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        RunQueue {
            head: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            slots: (0..RING_CAP).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
            runnext: AtomicPtr::new(ptr::null_mut()),
        }
    }

    #[inline]
    fn slot(&self, i: u32) -> &AtomicPtr<T> {
        &self.slots[(i % RING_CAP) as usize]
    }

    /// Items in the ring, not counting `runnext` (Go's `runqtail - runqhead`): a
    /// hint, exact only for the owner.
    pub fn ring_len(&self) -> u32 {
        loop {
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Acquire);
            // A consistent snapshot has head unchanged across the tail read.
            if self.head.load(Ordering::Acquire) == h {
                return t.wrapping_sub(h).min(RING_CAP);
            }
        }
    }

    /// True if the ring and `runnext` are both empty (Go's `runqempty`).
    pub fn is_empty(&self) -> bool {
        // Go's trick: a concurrent pop of runnext followed by a push to the ring can
        // make a naive read see "empty" while an item is always present. Re-read
        // tail to make sure head, tail and runnext were observed together.
        loop {
            let h = self.head.load(Ordering::SeqCst);
            let t = self.tail.load(Ordering::SeqCst);
            let next = self.runnext.load(Ordering::SeqCst);
            if self.tail.load(Ordering::SeqCst) == t {
                return h == t && next.is_null();
            }
        }
    }

    /// Owner only. Puts `item` in `runnext` (`next == true`; the item it displaces
    /// goes to the tail of the ring) or at the tail of the ring. When the ring is
    /// full, half of it plus the new item are handed to `spill` in one batch, oldest
    /// first (Go's `runqputslow`): the caller moves them to the global queue.
    pub fn push(&self, item: NonNull<T>, next: bool, mut spill: impl FnMut(&[NonNull<T>])) {
        let mut item = item;
        if next {
            let old = self.runnext.swap(item.as_ptr(), Ordering::AcqRel);
            match NonNull::new(old) {
                None => return,
                Some(old) => item = old,
            }
        }
        loop {
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Relaxed);
            if t.wrapping_sub(h) < RING_CAP {
                self.slot(t).store(item.as_ptr(), Ordering::Relaxed);
                self.tail.store(t.wrapping_add(1), Ordering::Release);
                return;
            }
            if self.spill_half(h, t, item, &mut spill) {
                return;
            }
            // A thief advanced head first: the ring has room now; retry.
        }
    }

    /// Moves the oldest half of a full ring plus `item` to `spill`. Returns false if
    /// a thief raced us for `head` (then nothing moved and `spill` was not called).
    fn spill_half(&self, h: u32, t: u32, item: NonNull<T>, spill: &mut impl FnMut(&[NonNull<T>])) -> bool {
        let n = (t.wrapping_sub(h) / 2) as usize;
        let mut batch = [NonNull::dangling(); RING_CAP as usize / 2 + 1];
        for (i, b) in batch.iter_mut().take(n).enumerate() {
            let g = self.slot(h.wrapping_add(i as u32)).load(Ordering::Relaxed);
            // Null only if the snapshot is stale, and then the CAS below fails.
            *b = NonNull::new(g).unwrap_or(NonNull::dangling());
        }
        if self
            .head
            .compare_exchange(h, h.wrapping_add(n as u32), Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        batch[n] = item;
        spill(&batch[..=n]);
        true
    }

    /// Owner only. Takes `runnext` if set (inherits the time slice), else the
    /// oldest item of the ring.
    pub fn pop(&self) -> Option<Popped<T>> {
        let next = self.runnext.load(Ordering::Acquire);
        if !next.is_null()
            && self
                .runnext
                .compare_exchange(next, ptr::null_mut(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            // SAFETY: checked non-null just above.
            return Some((unsafe { NonNull::new_unchecked(next) }, true));
        }
        // If the CAS failed a thief took runnext: fall through to the ring.
        self.pop_ring().map(|item| (item, false))
    }

    /// Owner only. The item that [`RunQueue::pop`] would return `n` pops from
    /// now (0: next), without taking anything: a hint, since thieves may take
    /// items meanwhile and a stale slot may be read.
    pub fn peek(&self, n: u32) -> Option<NonNull<T>> {
        let next = self.runnext.load(Ordering::Relaxed);
        let n = if next.is_null() {
            n
        } else if n == 0 {
            return NonNull::new(next);
        } else {
            n - 1
        };
        let h = self.head.load(Ordering::Acquire);
        let t = self.tail.load(Ordering::Relaxed);
        if t.wrapping_sub(h) <= n {
            return None;
        }
        NonNull::new(self.slot(h.wrapping_add(n)).load(Ordering::Relaxed))
    }

    /// Owner only. The oldest item of the ring, ignoring `runnext`.
    pub fn pop_ring(&self) -> Option<NonNull<T>> {
        loop {
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Relaxed);
            if h == t {
                return None;
            }
            let item = self.slot(h).load(Ordering::Relaxed);
            if self
                .head
                .compare_exchange(h, h.wrapping_add(1), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return Some(NonNull::new(item).expect("runq: null slot inside the live range"));
            }
        }
    }

    /// Owner of `self` only. Steals the oldest half of `victim`'s ring into this
    /// queue, which must be at most half full, and returns one of the stolen items
    /// to run now, plus how many were taken. With `steal_runnext`, an empty ring
    /// makes it take the victim's `runnext` instead, if `before_runnext` agrees:
    /// the runtime pauses there so
    /// a running owner gets the chance to run its own `runnext` first, and says no
    /// if the owner made progress meanwhile.
    pub fn steal_into(
        &self,
        victim: &RunQueue<T>,
        steal_runnext: bool,
        before_runnext: impl FnOnce() -> bool,
    ) -> Option<(NonNull<T>, u32)> {
        let t = self.tail.load(Ordering::Relaxed);
        let n = self.grab(victim, t, steal_runnext, before_runnext);
        if n == 0 {
            return None;
        }
        let last = n - 1;
        let item =
            NonNull::new(self.slot(t.wrapping_add(last)).load(Ordering::Relaxed)).expect("runq: stolen slot is null");
        if last > 0 {
            let h = self.head.load(Ordering::Acquire);
            assert!(
                t.wrapping_sub(h).wrapping_add(last) < RING_CAP,
                "runq: steal overflowed the thief's ring"
            );
            self.tail.store(t.wrapping_add(last), Ordering::Release);
        }
        Some((item, n))
    }

    /// Go's `runqgrab`: copies half of `victim`'s ring into `self`'s slots starting
    /// at `into` (not yet published) and returns how many.
    fn grab(&self, victim: &RunQueue<T>, into: u32, steal_runnext: bool, before_runnext: impl FnOnce() -> bool) -> u32 {
        let mut before_runnext = Some(before_runnext);
        loop {
            let h = victim.head.load(Ordering::Acquire);
            let t = victim.tail.load(Ordering::Acquire);
            let avail = t.wrapping_sub(h);
            let n = avail - avail / 2;
            if n == 0 {
                if !steal_runnext {
                    return 0;
                }
                let next = victim.runnext.load(Ordering::Acquire);
                if next.is_null() {
                    return 0;
                }
                if let Some(pause) = before_runnext.take() {
                    if !pause() {
                        return 0;
                    }
                }
                if victim
                    .runnext
                    .compare_exchange(next, ptr::null_mut(), Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    continue;
                }
                self.slot(into).store(next, Ordering::Relaxed);
                return 1;
            }
            if n > RING_CAP / 2 {
                // h and t were read at different times: inconsistent, retry.
                continue;
            }
            for i in 0..n {
                let item = victim.slot(h.wrapping_add(i)).load(Ordering::Relaxed);
                self.slot(into.wrapping_add(i)).store(item, Ordering::Relaxed);
            }
            if victim
                .head
                .compare_exchange(h, h.wrapping_add(n), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return n;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, Ordering as O};
    use std::sync::{Arc, Mutex};

    /// Items are addresses inside a leaked array, so each is distinct.
    fn items(n: usize) -> Vec<NonNull<u64>> {
        let v: &'static mut [u64] = Box::leak((0..n as u64).collect::<Vec<_>>().into_boxed_slice());
        v.iter_mut().map(NonNull::from).collect()
    }

    fn val(p: NonNull<u64>) -> u64 {
        // SAFETY: points into the leaked array of `items`.
        unsafe { *p.as_ptr() }
    }

    fn no_spill(_: &[NonNull<u64>]) {
        panic!("unexpected spill");
    }

    #[test]
    fn fills_to_capacity_and_pops_fifo() {
        let q = RunQueue::new();
        let it = items(RING_CAP as usize);
        for &i in &it {
            q.push(i, false, no_spill);
        }
        assert_eq!(q.ring_len(), RING_CAP);
        for want in 0..RING_CAP as u64 {
            let (g, inherit) = q.pop().unwrap();
            assert_eq!((val(g), inherit), (want, false));
        }
        assert!(q.pop().is_none());
        assert!(q.is_empty());
    }

    #[test]
    fn peek_names_what_the_next_pops_return_without_taking_it() {
        let q = RunQueue::new();
        assert!(q.peek(0).is_none());
        let it = items(RING_CAP as usize + 3);
        // Move head near the end of the ring so the peeked slots wrap around.
        for &i in &it[..RING_CAP as usize - 1] {
            q.push(i, false, no_spill);
            q.pop().unwrap();
        }
        for &i in &it[RING_CAP as usize - 1..RING_CAP as usize + 2] {
            q.push(i, false, no_spill);
        }
        q.push(it[RING_CAP as usize + 2], true, no_spill);
        let mut peeked: Vec<_> = (0..5).map(|n| q.peek(n).map(val)).collect();
        assert_eq!(peeked.pop(), Some(None), "nothing four pops ahead");
        let popped: Vec<_> = (0..4).map(|_| q.pop().map(|(g, _)| val(g))).collect();
        assert_eq!(peeked, popped, "runnext first, then the ring in order");
        assert!(q.peek(0).is_none() && q.pop().is_none());
        // Without runnext (the case the scheduler peeks in), across the wrap.
        for &i in &it[..3] {
            q.push(i, false, no_spill);
        }
        assert_eq!(
            [0, 1, 2, 3].map(|n| q.peek(n).map(val)),
            [Some(0), Some(1), Some(2), None]
        );
        assert_eq!(q.pop().map(|(g, _)| val(g)), Some(0));
        assert_eq!([0, 1, 2].map(|n| q.peek(n).map(val)), [Some(1), Some(2), None]);
    }

    #[test]
    fn full_ring_spills_half_plus_new_in_one_batch() {
        let q = RunQueue::new();
        let it = items(RING_CAP as usize + 1);
        for &i in &it[..RING_CAP as usize] {
            q.push(i, false, no_spill);
        }
        let mut spilled = Vec::new();
        q.push(it[RING_CAP as usize], false, |b| {
            spilled.push(b.iter().map(|&g| val(g)).collect::<Vec<_>>())
        });
        assert_eq!(spilled.len(), 1, "one batch");
        let mut want: Vec<u64> = (0..RING_CAP as u64 / 2).collect();
        want.push(RING_CAP as u64);
        assert_eq!(spilled[0], want, "oldest half, then the new item");
        assert_eq!(q.ring_len(), RING_CAP / 2);
        assert_eq!(val(q.pop().unwrap().0), RING_CAP as u64 / 2);
    }

    #[test]
    fn runnext_displaces_to_tail_and_inherits() {
        let q = RunQueue::new();
        let it = items(3);
        q.push(it[0], false, no_spill);
        q.push(it[1], true, no_spill);
        q.push(it[2], true, no_spill); // displaces 1 to the tail
        assert_eq!(q.pop().map(|(g, inh)| (val(g), inh)), Some((2, true)));
        assert_eq!(q.pop().map(|(g, inh)| (val(g), inh)), Some((0, false)));
        assert_eq!(q.pop().map(|(g, inh)| (val(g), inh)), Some((1, false)));
        assert!(q.pop().is_none());
    }

    #[test]
    fn steal_takes_the_oldest_half() {
        let victim = RunQueue::new();
        let thief = RunQueue::new();
        let it = items(10);
        for &i in &it {
            victim.push(i, false, no_spill);
        }
        let (g, n) = thief.steal_into(&victim, false, || true).unwrap();
        assert_eq!(n, 5);
        assert_eq!(val(g), 4, "the thief runs the newest of what it took");
        let mut rest = Vec::new();
        while let Some((g, _)) = thief.pop() {
            rest.push(val(g));
        }
        assert_eq!(rest, vec![0, 1, 2, 3]);
        assert_eq!(victim.ring_len(), 5);
        assert_eq!(val(victim.pop().unwrap().0), 5);
    }

    /// A thief whose ring is half full (the stalled-P rescue) keeps its own items
    /// ahead of the stolen ones, and a full victim's half still fits.
    #[test]
    fn a_half_full_thief_appends_a_full_victims_half() {
        let victim = RunQueue::new();
        let thief = RunQueue::new();
        let half = RING_CAP as usize / 2;
        let it = items(RING_CAP as usize + half - 1);
        let (mine, theirs) = it.split_at(half - 1);
        for &i in mine {
            thief.push(i, false, no_spill);
        }
        for &i in theirs {
            victim.push(i, false, no_spill);
        }
        let (g, n) = thief
            .steal_into(&victim, true, || panic!("the ring was not empty"))
            .unwrap();
        assert_eq!(n as usize, half);
        assert_eq!(
            val(g),
            (half - 1 + half - 1) as u64,
            "the newest stolen one is returned"
        );
        let mut order = Vec::new();
        while let Some((g, _)) = thief.pop() {
            order.push(val(g));
        }
        let expect: Vec<u64> = (0..(half - 1 + half - 1) as u64).collect();
        assert_eq!(order, expect, "own items first, then the stolen ones, oldest first");
        assert_eq!(victim.ring_len() as usize, RING_CAP as usize - half);
    }

    #[test]
    fn runnext_is_stolen_only_when_asked_and_the_ring_is_empty() {
        let victim = RunQueue::new();
        let thief = RunQueue::new();
        let it = items(1);
        victim.push(it[0], true, no_spill);
        assert!(thief.steal_into(&victim, false, || panic!("no pause")).is_none());
        assert!(thief.steal_into(&victim, true, || false).is_none(), "the pause said no");
        let mut paused = false;
        let (g, n) = thief
            .steal_into(&victim, true, || {
                paused = true;
                true
            })
            .unwrap();
        assert!(paused, "pause before taking runnext");
        assert_eq!((val(g), n), (0, 1));
        assert!(victim.is_empty());
    }

    /// One owner pushing/popping (with spills) and two thieves: every item is
    /// consumed exactly once.
    #[test]
    fn concurrent_owner_and_thieves_consume_each_item_once() {
        const N: usize = 200_000;
        let q = Arc::new(RunQueue::<u64>::new());
        let it = items(N);
        let seen = Arc::new(Mutex::new(Vec::with_capacity(N)));
        let done = Arc::new(AtomicBool::new(false));
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let (q, seen, done) = (q.clone(), seen.clone(), done.clone());
                std::thread::spawn(move || {
                    let mine = RunQueue::new();
                    let mut got = Vec::new();
                    while !done.load(O::Acquire) || !q.is_empty() {
                        if mine.steal_into(&q, true, || true).is_some_and(|(g, _)| {
                            got.push(val(g));
                            true
                        }) {
                            while let Some((g, _)) = mine.pop() {
                                got.push(val(g));
                            }
                        }
                    }
                    seen.lock().unwrap().extend(got);
                })
            })
            .collect();
        let mut got = Vec::new();
        for (k, &i) in it.iter().enumerate() {
            q.push(i, k % 3 == 0, |batch| got.extend(batch.iter().map(|&g| val(g))));
            if k % 2 == 0 {
                if let Some((g, _)) = q.pop() {
                    got.push(val(g));
                }
            }
        }
        while let Some((g, _)) = q.pop() {
            got.push(val(g));
        }
        done.store(true, O::Release);
        for t in thieves {
            t.join().unwrap();
        }
        let mut all = seen.lock().unwrap().clone();
        all.extend(got);
        assert_eq!(all.len(), N, "every item consumed once");
        let distinct: HashSet<u64> = all.into_iter().collect();
        assert_eq!(distinct.len(), N, "no item consumed twice");
    }
}
