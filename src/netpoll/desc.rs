//! Poll descriptors: what a goroutine waiting on a socket parks on (Go's
//! `pollDesc`).
//!
//! # No lost readiness
//! Each direction (read, write) has a readiness *generation*, bumped by the poller
//! for every edge-triggered event, and a queue of parked sudogs. An I/O attempt
//! reads the generation before its syscall; on `EAGAIN` it parks only if the
//! generation is still the same (checked under the descriptor's lock). The poller
//! bumps the generation first, then takes the lock and wakes everyone queued. So a
//! readiness edge that lands between "would block" and "parked" is never missed:
//! either the waiter sees the new generation and retries, or it is in the queue
//! when the poller looks. A waker may wake a waiter whose syscall will still say
//! `EAGAIN` (several readers, one edge): the I/O loop simply waits again.
//!
//! # Lifetime
//! Descriptors are pooled and never freed, like Go's `pollCache`. The epoll event
//! carries the descriptor's address plus a 16-bit sequence number that changes
//! each time the descriptor is reused, so an event that was already fetched when
//! its socket closed is recognised as stale and ignored.
//!
//! # Ended directions
//! When an event says a direction has reached a state that every later attempt
//! returns from at once (end of stream, a hang-up, a socket error), the poller
//! sets that direction's `ended` flag before bumping its generation; it stays set
//! until the descriptor is reused. `Registered::stream_io` may skip a syscall on
//! a socket it saw drained only while the direction has not ended: the end of
//! stream does not come as a new edge after the read that drained the data.
//!
//! Orderings: generations are `SeqCst` (bump before the lock on one side, read
//! before the syscall and again under the lock on the other); `ended` is `SeqCst`,
//! stored before the bump, so whoever reads the bumped generation sees it; queues
//! and `closing` are under the lock.

use crate::runtime::g::WaitReason;
use crate::runtime::m::current_g;
use crate::runtime::park::Waiter;
use crate::runtime::sync_prims::{AtomicBool, AtomicU64};
use crate::runtime::waitq::{block, Sudog, WaitQueue};
use crate::runtime::wake::ensure_poller;
use crate::sync::guarded::{pop_all, Guarded};
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A direction of I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read = 0,
    Write = 1,
}

struct Waits {
    queues: [WaitQueue<()>; 2],
    closing: bool,
}

/// One socket's readiness and waiters. See the module docs.
pub(crate) struct PollDesc {
    seq: AtomicU64,
    gens: [AtomicU64; 2],
    ended: [AtomicBool; 2],
    waits: Guarded<Waits>,
}

/// Gs (and threads) parked on any descriptor: the scheduler polls the network
/// only while this is non-zero.
static WAITERS: AtomicU32 = AtomicU32::new(0);

pub(crate) fn waiters() -> u32 {
    WAITERS.load(Ordering::SeqCst)
}

static POOL: Mutex<Vec<&'static PollDesc>> = Mutex::new(Vec::new());

/// The error a wait on a closing descriptor returns (Go's `ErrNetClosing`).
pub(crate) fn closed_error() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "use of closed network connection")
}

impl PollDesc {
    /// A descriptor from the pool (or a new one), ready for a fresh socket.
    pub(crate) fn get() -> &'static PollDesc {
        let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let pd = pooled.unwrap_or_else(|| Box::leak(Box::new(PollDesc::new())));
        pd.waits.lock().closing = false;
        for ended in &pd.ended {
            ended.store(false, Ordering::SeqCst);
        }
        pd
    }

    /// A descriptor with no waiters and no readiness yet.
    pub(crate) fn new() -> PollDesc {
        PollDesc {
            seq: AtomicU64::new(0),
            gens: [AtomicU64::new(0), AtomicU64::new(0)],
            ended: [AtomicBool::new(false), AtomicBool::new(false)],
            waits: Guarded::new(Waits {
                queues: [WaitQueue::new(), WaitQueue::new()],
                closing: false,
            }),
        }
    }

    /// The epoll event data for this descriptor: address and sequence tag.
    pub(crate) fn token(&'static self) -> u64 {
        let addr = self as *const PollDesc as u64;
        assert!(
            addr >> 48 == 0,
            "goro: poll descriptor address does not fit the 48-bit token"
        );
        addr | ((self.seq.load(Ordering::Relaxed) & 0xffff) << 48)
    }

    /// The descriptor an event's token names, unless it was reused since.
    pub(crate) fn from_token(token: u64) -> Option<&'static PollDesc> {
        let addr = token & ((1 << 48) - 1);
        // SAFETY: tokens are made by `token` from a leaked, never-freed descriptor.
        let pd = unsafe { (addr as *const PollDesc).as_ref() }?;
        (pd.seq.load(Ordering::Relaxed) & 0xffff == token >> 48).then_some(pd)
    }

    /// The readiness generation of `dir`, read before an I/O attempt.
    pub(crate) fn gen(&self, dir: Dir) -> u64 {
        self.gens[dir as usize].load(Ordering::SeqCst)
    }

    /// Poller side, before [`PollDesc::notify`]: `dir` has ended (module docs).
    pub(crate) fn set_ended(&self, dir: Dir) {
        self.ended[dir as usize].store(true, Ordering::SeqCst);
    }

    /// Has `dir` ended (end of stream, hang-up or error)? Read after [`PollDesc::gen`].
    pub(crate) fn ended(&self, dir: Dir) -> bool {
        self.ended[dir as usize].load(Ordering::SeqCst)
    }

    /// Poller side: `dir` became ready. Returns the waiters to wake.
    pub(crate) fn notify(&self, dir: Dir, woken: &mut Vec<Waiter>) {
        self.gens[dir as usize].fetch_add(1, Ordering::SeqCst);
        let mut w = self.waits.lock();
        woken.extend(pop_all(&mut w.queues[dir as usize], true));
    }

    /// Parks the caller until `dir` is ready again after generation `seen`, the
    /// descriptor is closed (error), or `timeout` passes (`TimedOut`).
    pub(crate) fn wait(&self, dir: Dir, seen: u64, timeout: Option<Duration>) -> io::Result<()> {
        let mut w = self.waits.lock();
        if w.closing {
            return Err(closed_error());
        }
        if self.gen(dir) != seen {
            return Ok(());
        }
        let sg = Sudog::new(None);
        w.queues[dir as usize].push(&sg);
        WAITERS.fetch_add(1, Ordering::SeqCst);
        if current_g().is_none() && !cfg!(loom) {
            ensure_poller();
        }
        let woken = block(&sg, w, WaitReason::IoWait, timeout, |sg| {
            self.waits.lock().queues[dir as usize].remove(sg);
        });
        WAITERS.fetch_sub(1, Ordering::SeqCst);
        if !woken {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "socket operation timed out"));
        }
        if !sg.success() {
            return Err(closed_error());
        }
        Ok(())
    }

    /// The socket is closing: wake every waiter with an error and retire the
    /// descriptor (its sequence changes, so in-flight events for it are ignored).
    pub(crate) fn close(&'static self) {
        self.shut();
        self.seq.fetch_add(1, Ordering::Relaxed);
        POOL.lock().unwrap_or_else(|e| e.into_inner()).push(self);
    }

    /// Marks the descriptor closing and wakes every waiter with an error.
    pub(super) fn shut(&self) {
        let mut w = self.waits.lock();
        w.closing = true;
        let mut woken = pop_all(&mut w.queues[0], false);
        woken.extend(pop_all(&mut w.queues[1], false));
        drop(w);
        woken.into_iter().for_each(Waiter::wake);
    }
}

/// For the loom models: nobody is queued in either direction.
#[cfg(all(test, loom))]
impl PollDesc {
    pub(super) fn no_waiters(&self) -> bool {
        let w = self.waits.lock();
        w.queues.iter().all(|q| q.is_empty())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Closing a descriptor wakes a G parked on it with an error (Go's
    /// ErrNetClosing), and a later wait fails at once.
    #[test]
    fn close_wakes_a_parked_waiter_with_an_error() {
        let pd = PollDesc::get();
        let seen = pd.gen(Dir::Read);
        let waiter = crate::spawn(move || pd.wait(Dir::Read, seen, None));
        while waiters() == 0 {
            crate::yield_now();
        }
        pd.close();
        let err = waiter.join().unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotConnected);
    }

    /// A readiness edge between the I/O attempt and the park is not lost.
    #[test]
    fn an_edge_before_the_park_is_not_lost() {
        let pd = PollDesc::get();
        let seen = pd.gen(Dir::Write);
        let mut woken = Vec::new();
        pd.notify(Dir::Write, &mut woken); // the edge lands first
        assert!(woken.is_empty());
        assert!(
            pd.wait(Dir::Write, seen, Some(Duration::from_secs(5))).is_ok(),
            "returns at once"
        );
        pd.close();
    }
}
