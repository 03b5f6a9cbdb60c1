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
//! # Deadlines: one timer per direction, not one per wait
//! A wait may carry a deadline (runtime clock); its sudog's slot holds it. The
//! descriptor keeps at most one pending timer per direction for all its waits
//! (Go's `pollDesc` timers do the same job): `armed` is when that timer fires, and
//! it is never later than the deadline of any queued wait. A wait arms a new timer
//! only if its deadline is earlier than `armed` (or none is pending); a
//! connection whose idle timeout moves forward with every request therefore adds
//! one heap entry per timeout period, not one per read, and allocates nothing.
//! When the timer fires ([`Expire`]), it claims every wait whose deadline has come
//! as [`TIMED_OUT`] and, unless a still earlier timer is pending, arms the next
//! one at the earliest deadline left. Whoever sets `armed` to a time adds a timer
//! at that time, so a timer whose time is no longer `armed` (superseded by an
//! earlier one, or its waits served by another that fired) is redundant: it may
//! still fire, harmlessly, and heap compaction drops it (`is_live`), so
//! alternating long and short timeouts do not pile up entries. A timer from
//! before the descriptor was reused (its tag carries the sequence number) does
//! nothing. Timers are armed after the lock is released (no record lock is held
//! under a heap lock), from the scheduler side of the park.
//!
//! `armed` is written only under the lock. Compaction reads it without the lock
//! (Relaxed): the heap lock it holds was released by whoever added the timer
//! after storing its time in `armed`, so it sees that store or a later one.
//!
//! # Sticky conditions
//! When an event reports a condition the kernel raises once and then keeps (an
//! end of stream, a hang-up, a socket error, urgent data), the poller sets that
//! direction's `sticky` flag before bumping its generation; it stays set until
//! the descriptor is reused. The flag names the socket it was set for (the
//! sequence number from the event's token), so an event fetched just before its
//! socket closed cannot mark the next socket that reuses the descriptor, which
//! would silently turn the skip off for it. `Registered::stream_io` may skip a
//! syscall on a socket it saw drained only while the direction is not sticky:
//! an end of stream queued behind the data does not come as a new edge after
//! the read that drained the data, and a read stops short at urgent data with
//! more behind it.
//!
//! Orderings: generations are `SeqCst` (bump before the lock on one side, read
//! before the syscall and again under the lock on the other); `sticky` is `SeqCst`,
//! stored before the bump, so whoever reads the bumped generation sees it; queues
//! and `closing` are under the lock.

use crate::runtime::proc::m::current_g;
use crate::runtime::proc::state::{add_net_waiter, remove_net_waiter};
#[cfg(not(loom))]
use crate::runtime::proc::timers::Action;
use crate::runtime::proc::timers::Expire;
use crate::runtime::proc::waiter::{Claim, Waiter, TIMED_OUT};
use crate::runtime::sched::poll::ensure_poller;
#[cfg(not(loom))]
use crate::runtime::sched::timers::add_timer;
use crate::runtime::sys::sync_prims::AtomicU64;
use crate::runtime::task::ids::WaitReason;
use crate::runtime::wait::guarded::{pop_all, pop_all_into, Guarded};
use crate::runtime::wait::park::{OnDrop, Parker};
use crate::runtime::wait::waitq::{park_queued, Sudog, WaitQueue};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// A direction of I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read = 0,
    Write = 1,
}

struct Waits {
    /// Per direction; each sudog's slot holds its wait's deadline, if any.
    queues: [WaitQueue<u64>; 2],
    closing: bool,
}

/// One socket's readiness and waiters. See the module docs.
pub(crate) struct PollDesc {
    seq: AtomicU64,
    gens: [AtomicU64; 2],
    /// Per direction, [`sticky_mark`] of the socket (sequence number) for
    /// which the poller saw a sticky condition; 0 if none yet.
    sticky: [AtomicU64; 2],
    /// Per direction, when the pending deadline timer fires (0: none pending);
    /// written under the `waits` lock (module docs).
    armed: [AtomicU64; 2],
    waits: Guarded<Waits>,
    /// Under loom, the deadline timers armed so far as (when, tag): the loom
    /// models' stand-in for the timer heap, fired by a model thread
    /// ([`PollDesc::fire_model_timer`]).
    #[cfg(loom)]
    model_timers: crate::runtime::sys::sync_prims::Mutex<Vec<(u64, u64)>>,
}

/// The part of a sequence number that travels in an event's token (its top 16
/// bits, above the descriptor's address).
fn token_seq(seq: u64) -> u64 {
    seq & 0xffff
}

/// What `sticky` holds for the socket with sequence number `seq`: never 0, the
/// "none yet" of a fresh descriptor.
fn sticky_mark(seq: u64) -> u64 {
    token_seq(seq) + 1
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
        {
            let mut w = pd.waits.lock();
            w.closing = false;
            pd.armed.iter().for_each(|a| a.store(0, Ordering::Relaxed));
        }
        pd
    }

    /// A descriptor with no waiters and no readiness yet.
    pub(crate) fn new() -> PollDesc {
        PollDesc {
            seq: AtomicU64::new(0),
            gens: [AtomicU64::new(0), AtomicU64::new(0)],
            sticky: [AtomicU64::new(0), AtomicU64::new(0)],
            armed: [AtomicU64::new(0), AtomicU64::new(0)],
            waits: Guarded::new(Waits {
                queues: [WaitQueue::new(), WaitQueue::new()],
                closing: false,
            }),
            #[cfg(loom)]
            model_timers: crate::runtime::sys::sync_prims::Mutex::new(Vec::new()),
        }
    }

    /// The epoll event data for this descriptor: address and sequence tag.
    pub(crate) fn token(&'static self) -> u64 {
        let addr = self as *const PollDesc as u64;
        assert!(
            addr >> 48 == 0,
            "goro: poll descriptor address does not fit the 48-bit token"
        );
        addr | (token_seq(self.seq.load(Ordering::Relaxed)) << 48)
    }

    /// The descriptor an event's token names, unless it was reused since.
    pub(crate) fn from_token(token: u64) -> Option<&'static PollDesc> {
        let addr = token & ((1 << 48) - 1);
        // SAFETY: tokens are made by `token` from a leaked, never-freed descriptor.
        let pd = unsafe { (addr as *const PollDesc).as_ref() }?;
        (token_seq(pd.seq.load(Ordering::Relaxed)) == token >> 48).then_some(pd)
    }

    /// The readiness generation of `dir`, read before an I/O attempt.
    pub(crate) fn gen(&self, dir: Dir) -> u64 {
        self.gens[dir as usize].load(Ordering::SeqCst)
    }

    /// Poller side, before [`PollDesc::notify`]: `dir` has a sticky condition
    /// (module docs). `token` is the event's, so a stale event marks the socket
    /// it was for, which the descriptor no longer serves.
    pub(crate) fn set_sticky(&self, dir: Dir, token: u64) {
        self.sticky[dir as usize].store(sticky_mark(token >> 48), Ordering::SeqCst);
    }

    /// Has `dir` had a sticky condition (end of stream, hang-up, error, urgent
    /// data)? Read after [`PollDesc::gen`].
    pub(crate) fn sticky(&self, dir: Dir) -> bool {
        self.sticky[dir as usize].load(Ordering::SeqCst) == sticky_mark(self.seq.load(Ordering::Relaxed))
    }

    /// Poller side: `dir` became ready. Returns the waiters to wake.
    pub(crate) fn notify(&self, dir: Dir, woken: &mut Vec<Waiter>) {
        self.gens[dir as usize].fetch_add(1, Ordering::SeqCst);
        let mut w = self.waits.lock();
        pop_all_into(&mut w.queues[dir as usize], true, woken);
    }

    /// Parks the caller until `dir` is ready again after generation `seen`, the
    /// descriptor is closed (error), or the runtime clock reaches `deadline`
    /// (`TimedOut`; see `Sched::deadline_in`).
    pub(crate) fn wait(&'static self, dir: Dir, seen: u64, deadline: Option<u64>) -> io::Result<()> {
        let mut w = self.waits.lock();
        if w.closing {
            return Err(closed_error());
        }
        if self.gen(dir) != seen {
            return Ok(());
        }
        let parker = Parker::new();
        let claim = Claim::new(parker.waiter());
        let sg = Sudog::new(deadline);
        sg.bind(&claim, 0);
        let i = dir as usize;
        w.queues[i].push(&sg);
        let armed = self.armed[i].load(Ordering::Relaxed);
        let arm = deadline.filter(|&d| armed == 0 || d < armed);
        if let Some(d) = arm {
            self.armed[i].store(d, Ordering::Relaxed);
        }
        add_net_waiter();
        if current_g().is_none() && !cfg!(loom) {
            ensure_poller();
        }
        let tag = self.deadline_tag(dir);
        let unlock = OnDrop::new(move || {
            drop(w);
            if let Some(when) = arm {
                self.arm(when, tag);
            }
        });
        park_queued(&sg, parker, WaitReason::IoWait, unlock, &|f| {
            f(&mut self.waits.lock().queues[i])
        });
        remove_net_waiter();
        if claim.winner() == TIMED_OUT {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "socket operation timed out"));
        }
        if !sg.success() {
            return Err(closed_error());
        }
        Ok(())
    }

    /// Adds the deadline timer `armed` announced (after the lock is released:
    /// module docs); under loom, queues it for the model's timer thread.
    fn arm(&'static self, when: u64, tag: u64) {
        #[cfg(not(loom))]
        add_timer(when, Action::Expire(self, tag));
        #[cfg(loom)]
        self.model_timers.lock().unwrap().push((when, tag));
    }

    /// What a deadline timer of `dir` is armed with: the direction and the
    /// descriptor's current sequence number.
    fn deadline_tag(&self, dir: Dir) -> u64 {
        self.seq.load(Ordering::Relaxed) << 1 | dir as u64
    }

    /// The deadline timer armed with `tag` is due at `now`: ends every wait on its
    /// direction whose deadline has come (returned, to wake) and says when to arm
    /// the next timer, if one is needed (module docs). Nothing, if the descriptor
    /// was reused since the timer was armed.
    fn expire_due(&self, tag: u64, now: u64) -> (Vec<Waiter>, Option<u64>) {
        let mut w = self.waits.lock();
        // Checked under the lock: a reuse resets `armed` under it.
        if !self.same_socket(tag) {
            return (Vec::new(), None);
        }
        let i = (tag & 1) as usize;
        let mut next: Option<u64> = None;
        let expired = w.queues[i].claim_where(TIMED_OUT, |deadline| match deadline {
            Some(&d) if d <= now => true,
            Some(&d) => {
                next = Some(next.map_or(d, |n| n.min(d)));
                false
            }
            None => false,
        });
        if self.armed[i].load(Ordering::Relaxed) > now {
            // An earlier timer than any left deadline is still pending.
            return (expired, None);
        }
        self.armed[i].store(next.unwrap_or(0), Ordering::Relaxed);
        (expired, next)
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

    /// Was the timer tagged `tag` armed for the socket the descriptor serves now?
    fn same_socket(&self, tag: u64) -> bool {
        self.seq.load(Ordering::Relaxed) << 1 == tag & !1
    }
}

impl Expire for PollDesc {
    fn expire(&'static self, tag: u64, now: u64) {
        let (expired, next) = self.expire_due(tag, now);
        if let Some(when) = next {
            self.arm(when, tag);
        }
        expired.into_iter().for_each(Waiter::wake);
    }

    fn is_live(&self, when: u64, tag: u64) -> bool {
        self.same_socket(tag) && self.armed[(tag & 1) as usize].load(Ordering::Relaxed) == when
    }
}

/// The poller's events (`sys/epoll.rs`): bumps the readiness of each event's
/// descriptor and collects in `woken` the waiters to wake. Events for a
/// descriptor reused since are ignored (module docs).
pub(crate) fn on_events(events: &[libc::epoll_event], woken: &mut Vec<Waiter>) {
    for ev in events {
        let token = ev.u64;
        let Some(pd) = PollDesc::from_token(token) else {
            continue;
        };
        let bits = ev.events as libc::c_int;
        let hangup = bits & (libc::EPOLLHUP | libc::EPOLLERR) != 0;
        let read_sticky = libc::EPOLLRDHUP | libc::EPOLLPRI | libc::EPOLLHUP | libc::EPOLLERR;
        if bits & (libc::EPOLLIN | read_sticky) != 0 {
            if bits & read_sticky != 0 {
                pd.set_sticky(Dir::Read, token);
            }
            pd.notify(Dir::Read, woken);
        }
        if bits & (libc::EPOLLOUT | libc::EPOLLHUP | libc::EPOLLERR) != 0 {
            if hangup {
                pd.set_sticky(Dir::Write, token);
            }
            pd.notify(Dir::Write, woken);
        }
    }
}

/// For the loom models: nobody is queued in either direction.
#[cfg(all(test, loom))]
impl PollDesc {
    pub(super) fn no_waiters(&self) -> bool {
        let w = self.waits.lock();
        w.queues.iter().all(|q| q.is_empty())
    }

    /// For the loom models: fires the earliest deadline timer armed so far, as
    /// the timer heap would once the runtime clock reached its time. False if
    /// none is pending.
    pub(super) fn fire_model_timer(&'static self) -> bool {
        let next = {
            let mut timers = self.model_timers.lock().unwrap();
            let earliest = (0..timers.len()).min_by_key(|&i| timers[i]);
            earliest.map(|i| timers.swap_remove(i))
        };
        match next {
            Some((when, tag)) => {
                self.expire(tag, when);
                true
            }
            None => false,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::runtime::proc::state::sched;
    use std::time::Duration;

    /// A sticky condition marks the socket the event was for: an event fetched
    /// before the descriptor was retired and reused does not mark the new socket.
    #[test]
    fn a_stale_event_does_not_make_the_next_socket_sticky() {
        let pd: &'static PollDesc = Box::leak(Box::new(PollDesc::new()));
        let stale = pd.token();
        pd.shut();
        pd.seq.fetch_add(1, Ordering::Relaxed); // retired and reused, as `close` does
        pd.set_sticky(Dir::Read, stale);
        assert!(
            !pd.sticky(Dir::Read),
            "the old socket's end of stream marked the new one"
        );
        pd.set_sticky(Dir::Write, pd.token());
        assert!(pd.sticky(Dir::Write));
        assert!(!pd.sticky(Dir::Read));
    }

    /// Closing a descriptor wakes a G parked on it with an error (Go's
    /// ErrNetClosing), and a later wait fails at once.
    #[test]
    fn close_wakes_a_parked_waiter_with_an_error() {
        let pd = PollDesc::get();
        let seen = pd.gen(Dir::Read);
        let waiter = crate::go!(move || pd.wait(Dir::Read, seen, None));
        while crate::runtime::proc::state::net_waiters() == 0 {
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
            pd.wait(Dir::Write, seen, sched().deadline_in(Duration::from_secs(5)))
                .is_ok(),
            "returns at once"
        );
        pd.close();
    }

    /// Waits with different deadlines on one direction of one descriptor: a
    /// later wait with an earlier deadline arms an earlier timer, each wait ends
    /// at its own deadline (not before), in deadline order, and the timer that
    /// ends the first re-arms for the second.
    #[test]
    fn waits_sharing_a_direction_time_out_at_their_own_deadlines() {
        let pd = PollDesc::get();
        let seen = pd.gen(Dir::Read);
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let waiter = |ms: u64| {
            let order = order.clone();
            crate::go!(move || {
                let start = std::time::Instant::now();
                let err = pd
                    .wait(Dir::Read, seen, sched().deadline_in(Duration::from_millis(ms)))
                    .unwrap_err();
                assert_eq!(err.kind(), io::ErrorKind::TimedOut);
                assert!(start.elapsed() >= Duration::from_millis(ms), "{ms} ms wait ended early");
                order.lock().unwrap().push(ms);
            })
        };
        let long = waiter(300);
        while pd.waits.lock().queues[0].is_empty() {
            crate::yield_now();
        }
        let short = waiter(30);
        short.join().unwrap();
        long.join().unwrap();
        assert_eq!(*order.lock().unwrap(), [30, 300]);
        // Both timers have fired (one of them re-armed for the long wait).
        assert!(pd.armed.iter().all(|a| a.load(Ordering::Relaxed) == 0));
        pd.close();
    }

    /// A wait with an earlier deadline supersedes the pending timer: compaction
    /// may drop the superseded one, never the one now armed.
    #[test]
    fn only_the_armed_deadline_timer_is_live() {
        let pd = PollDesc::get();
        let tag = pd.deadline_tag(Dir::Read);
        let seen = pd.gen(Dir::Read);
        let late = sched().deadline_in(Duration::from_secs(60)).unwrap();
        let early = late - 30_000_000_000;
        let queued = |n: usize| pd.waits.lock().queues[0].len() == n;
        let first = crate::go!(move || pd.wait(Dir::Read, seen, Some(late)));
        while !queued(1) {
            crate::yield_now();
        }
        assert!(pd.is_live(late, tag));
        let second = crate::go!(move || pd.wait(Dir::Read, seen, Some(early)));
        while !queued(2) {
            crate::yield_now();
        }
        assert!(pd.is_live(early, tag));
        assert!(!pd.is_live(late, tag), "superseded");
        let mut woken = Vec::new();
        pd.notify(Dir::Read, &mut woken);
        woken.into_iter().for_each(Waiter::wake);
        assert!(first.join().unwrap().is_ok() && second.join().unwrap().is_ok());
        pd.close();
    }

    /// A timer armed before the descriptor was closed and reused does nothing
    /// to the next socket's waits.
    #[test]
    fn a_timer_from_before_reuse_is_ignored() {
        let pd = PollDesc::new();
        let old = pd.deadline_tag(Dir::Read);
        pd.seq.fetch_add(1, Ordering::Relaxed); // what `close` does
        assert!(!pd.same_socket(old));
        assert!(pd.same_socket(pd.deadline_tag(Dir::Read)));
        let (expired, next) = pd.expire_due(old, u64::MAX);
        assert!(expired.is_empty() && next.is_none());
    }
}
