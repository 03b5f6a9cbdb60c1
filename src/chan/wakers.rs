//! The receive futures waiting on one channel (`recv_async`, `stream`): their
//! wakers, oldest first.
//!
//! A receive future is never handed a value. It registers here when it finds
//! nothing to receive, and is woken (its entry removed) when something becomes
//! available to receive: a value buffered, a sender queued, the channel
//! closed. Once polled it takes what is there itself, so a future dropped
//! between its wake-up and its poll loses no value; it passes its wake-up on
//! to the next entry instead (`Chan::cancel_recv`).
//!
//! Everything here is touched only under the channel's lock (it is part of the
//! channel's `State`).

use std::collections::BTreeMap;
use std::task::Waker;

/// Waiting receive futures by registration number: the smallest is the oldest.
/// On the heap once the channel's first receive future waits: a channel no
/// async code uses carries one null pointer.
pub(crate) struct AsyncReceivers(Option<Box<Registry>>);

struct Registry {
    waiting: BTreeMap<u64, Waker>,
    next_id: u64,
}

impl AsyncReceivers {
    pub(crate) const fn new() -> Self {
        AsyncReceivers(None)
    }

    /// Registers the future whose registration is `id` with `waker`: refreshes
    /// its waker if it is still waiting, else queues it anew (at the back).
    /// Returns its registration, whether it was queued anew, and the waker it
    /// replaced (for the caller to drop once the channel's lock is released:
    /// a waker's drop may run any code, even this channel's).
    pub(crate) fn register(&mut self, id: Option<u64>, waker: &Waker) -> (u64, bool, Option<Waker>) {
        let r = self.0.get_or_insert_with(|| {
            Box::new(Registry {
                waiting: BTreeMap::new(),
                next_id: 0,
            })
        });
        if let Some(w) = id.and_then(|id| r.waiting.get_mut(&id)) {
            let replaced = (!w.will_wake(waker)).then(|| std::mem::replace(w, waker.clone()));
            return (id.expect("found by id"), false, replaced);
        }
        let id = r.next_id;
        r.next_id += 1;
        r.waiting.insert(id, waker.clone());
        (id, true, None)
    }

    /// Takes the future `id` out, with its waker (to drop once the channel's
    /// lock is released); `None` if it was not waiting (already woken).
    pub(crate) fn remove(&mut self, id: u64) -> Option<Waker> {
        self.0.as_mut().and_then(|r| r.waiting.remove(&id))
    }

    /// Takes the oldest waiting future out, to be woken. Inlined down to a
    /// null check on the channel's paths when no async code uses it.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Waker> {
        let r = self.0.as_mut()?;
        if r.waiting.is_empty() {
            return None;
        }
        r.pop_oldest()
    }

    /// Takes every waiting future out, to be woken (the channel closed).
    pub(crate) fn take_all(&mut self) -> impl Iterator<Item = Waker> {
        self.0
            .as_mut()
            .map(|r| std::mem::take(&mut r.waiting))
            .unwrap_or_default()
            .into_values()
    }
}

impl Registry {
    #[cold]
    #[inline(never)]
    fn pop_oldest(&mut self) -> Option<Waker> {
        self.waiting.pop_first().map(|(_, w)| w)
    }
}
