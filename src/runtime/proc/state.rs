//! `Sched`: the runtime's global state; [`sched`], the started runtime.
//!
//! One per process, created on first use (or by `Config::init`) and never torn
//! down: Ms keep running for the life of the process, as in Go. The entry
//! points, above the scheduler (a spawn, a channel, a deadline or timer, a
//! socket's registration, a dump, stats, gomaxprocs, a trace, `Config::init`),
//! start it through the root's `boot::started`; everything they lead to then
//! uses [`sched`], which assumes it, or [`try_sched`] where "not started" has
//! an answer (a plain thread's wait before any of those).
//!
//! What lives here: the Ps (`allp`), the global run queue, idle P/M bookkeeping
//! ([`crate::runtime::queue::idle`]), the poller and its `lastpoll`/`poll_until` handshake, the
//! stack pool, the list of all Ms, and process-wide counters. Which thread may touch
//! what is documented on each type.

use super::config::MAX_PROCS;
use super::config::{Godebug, Resolved};
use super::m::M;
use super::observers::SysmonLink;
use super::p::P;
use super::waiter::Waiter;
use crate::runtime::queue::globrunq::GlobalRunq;
use crate::runtime::queue::idle::Idle;
use crate::runtime::sys::epoll::Poller;
use crate::runtime::task::gfree::GFreePool;
use crate::runtime::task::stack_pool::StackPool;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static SCHED: OnceLock<Sched> = OnceLock::new();

/// Process-wide counters not tied to a P.
#[derive(Default)]
pub(crate) struct Counters {
    /// Gs spawned from plain threads or by Gs without a P (blocking calls,
    /// retaken hogs); the rest count on their P.
    pub(crate) spawned_outside: AtomicU64,
    /// Gs that finished on an M without a P (their P was retaken meanwhile).
    pub(crate) completed_outside: AtomicU64,
    pub(crate) netpoll_ready: AtomicU64,
    pub(crate) syscall_handoffs: AtomicU64,
    pub(crate) preempt_retakes: AtomicU64,
    pub(crate) blocking_retakes: AtomicU64,
}

/// What the layers above the records give them at start-up, for the calls
/// they make into them.
pub(crate) struct Hooks {
    /// The poll descriptors' handler of a poll's events (`netpoll::on_events`):
    /// collects the waiters to wake.
    pub(crate) net_events: fn(&[libc::epoll_event], &mut Vec<Waiter>),
    /// What a new M's thread runs, holding its first P (`schedule::run`);
    /// returns when the M exits.
    pub(crate) m_main: fn(&'static M),
}

pub(crate) struct Sched {
    pub(crate) config: Resolved,
    /// Every P ever made, by id; `procs` of them are in use. Ps are made when
    /// GOMAXPROCS first grows past them and never freed (a P beyond `procs` is
    /// `Dead`), so `&'static P` references stay valid across resizes.
    allp: Box<[OnceLock<&'static P>]>,
    /// GOMAXPROCS. Changed only under a stop-the-world (`procresize.rs`); readers
    /// without a P may see the old value for a moment, which only makes them look
    /// at a `Dead` P's empty queue or miss a new empty one.
    procs: AtomicUsize,
    pub(crate) global: GlobalRunq,
    pub(crate) idle: Idle<&'static M>,
    /// Runtime clock (ns) when the poller last returned; 0 while an M is blocked in it.
    pub(crate) lastpoll: AtomicU64,
    /// When the M blocked in the poller will wake up by itself (0: never/not blocked).
    pub(crate) poll_until: AtomicU64,
    pub(crate) poller: Poller,
    pub(crate) hooks: Hooks,
    pub(crate) stacks: StackPool,
    pub(crate) gfree: GFreePool,
    /// Ms with a thread (`threads=` in schedtrace), oldest first.
    pub(crate) allm: Mutex<Vec<&'static M>>,
    /// Records of Ms whose thread exited, for reuse.
    mfree: Mutex<Vec<&'static M>>,
    next_m_id: AtomicI64,
    pub(crate) next_goid: AtomicU64,
    pub(crate) counters: Counters,
    pub(crate) godebug: Godebug,
    pub(crate) cores: Vec<core_affinity::CoreId>,
    pub(crate) sysmon: SysmonLink,
    /// Serialises stop-the-world operations (`set_gomaxprocs`).
    pub(crate) stw: Mutex<()>,
    /// A stop-the-world is collecting the Ps: Ms give theirs up at their next
    /// scheduling point (Go's `gcwaiting`).
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    /// Ps a stop-the-world still waits for (`stopwait` in scheddetail).
    pub(crate) stopwait: AtomicUsize,
    pub(crate) started: Instant,
}

/// The runtime if it has started.
pub(crate) fn try_sched() -> Option<&'static Sched> {
    SCHED.get()
}

/// The runtime, which has started: every path to here began at an entry point
/// that started it (module docs).
#[inline]
pub(crate) fn sched() -> &'static Sched {
    match SCHED.get() {
        Some(s) => s,
        None => not_started(),
    }
}

#[cold]
#[inline(never)]
fn not_started() -> ! {
    debug_assert!(
        false,
        "goro: the runtime used before it started (an entry point that does not start it)"
    );
    crate::runtime::sys::fatal::die("fatal error: goro: the runtime used before it started\n")
}

/// Gs (and threads) parked on any poll descriptor: the scheduler polls the
/// network only while this is non-zero.
static NET_WAITERS: AtomicU32 = AtomicU32::new(0);

/// Gs (and threads) parked on the network now.
pub(crate) fn net_waiters() -> u32 {
    NET_WAITERS.load(Ordering::SeqCst)
}

/// A G or thread is about to park on a poll descriptor (counted before it
/// parks, under the descriptor's lock).
pub(crate) fn add_net_waiter() {
    NET_WAITERS.fetch_add(1, Ordering::SeqCst);
}

/// A G or thread is back from its park on a poll descriptor.
pub(crate) fn remove_net_waiter() {
    NET_WAITERS.fetch_sub(1, Ordering::SeqCst);
}

/// Makes the runtime with `make` if nobody has yet (`boot.rs`). Returns it, and
/// whether `make` ran.
pub(crate) fn init_once(make: impl FnOnce() -> Sched) -> (&'static Sched, bool) {
    let mut ours = false;
    let s = SCHED.get_or_init(|| {
        ours = true;
        make()
    });
    (s, ours)
}

impl Sched {
    /// The runtime's state; `boot.rs` makes the parts that come from above.
    pub(crate) fn new(config: Resolved, godebug: Godebug, poller: Poller, hooks: Hooks) -> Sched {
        let allp: Box<[OnceLock<&'static P>]> = (0..MAX_PROCS).map(|_| OnceLock::new()).collect();
        for (id, slot) in allp.iter().enumerate().take(config.procs) {
            let _ = slot.set(Box::leak(Box::new(P::new(id))));
        }
        Sched {
            allp,
            procs: AtomicUsize::new(config.procs),
            global: GlobalRunq::new(),
            idle: Idle::new(config.procs),
            lastpoll: AtomicU64::new(1),
            poll_until: AtomicU64::new(0),
            poller,
            hooks,
            stacks: StackPool::new(),
            gfree: GFreePool::new(),
            allm: Mutex::new(Vec::new()),
            mfree: Mutex::new(Vec::new()),
            next_m_id: AtomicI64::new(0),
            next_goid: AtomicU64::new(1),
            counters: Counters::default(),
            godebug,
            cores: if config.pin_threads {
                core_affinity::get_core_ids().unwrap_or_default()
            } else {
                Vec::new()
            },
            sysmon: SysmonLink::new(),
            stw: Mutex::new(()),
            stopping: std::sync::atomic::AtomicBool::new(false),
            stopwait: AtomicUsize::new(0),
            started: Instant::now(),
            config,
        }
    }

    pub(crate) fn gomaxprocs(&self) -> usize {
        self.procs.load(Ordering::Acquire)
    }

    /// Sets GOMAXPROCS; only under a stop-the-world, after making Ps up to `n`.
    pub(crate) fn set_procs(&self, n: usize) {
        self.procs.store(n, Ordering::Release);
    }

    /// P `id`, which must have been made.
    pub(crate) fn p(&self, id: usize) -> &'static P {
        self.allp[id].get().expect("goro: P used before it was made")
    }

    /// P `id`, made now if it never existed (a stop-the-world growing GOMAXPROCS).
    pub(crate) fn p_or_make(&self, id: usize) -> &'static P {
        self.allp[id].get_or_init(|| Box::leak(Box::new(P::new(id))))
    }

    /// The Ps in use: `0..gomaxprocs`.
    pub(crate) fn procs(&self) -> impl Iterator<Item = &'static P> + '_ {
        (0..self.gomaxprocs()).map(|i| self.p(i))
    }

    /// Every P ever made, in use or `Dead` (their counters still count).
    pub(crate) fn every_p(&self) -> impl Iterator<Item = &'static P> + '_ {
        self.allp.iter().map_while(|slot| slot.get().copied())
    }

    /// Registers a new M, reusing the record of one whose thread exited.
    pub(crate) fn new_m(&self) -> &'static M {
        let id = self.next_m_id.fetch_add(1, Ordering::Relaxed);
        let reused = self.mfree.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let m = match reused {
            Some(m) => {
                m.reuse(id);
                m
            }
            None => Box::leak(Box::new(M::new(id))),
        };
        self.allm.lock().unwrap_or_else(|e| e.into_inner()).push(m);
        m
    }

    /// The thread of `m` is exiting: it no longer counts, and its record may be reused.
    pub(crate) fn m_exited(&self, m: &'static M) {
        self.allm
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|x| !std::ptr::eq(*x, m));
        self.mfree.lock().unwrap_or_else(|e| e.into_inner()).push(m);
    }

    /// Runtime clock: nanoseconds since the runtime started.
    pub(crate) fn nanotime(&self) -> u64 {
        self.started.elapsed().as_nanos().min(u64::MAX as u128 - 1) as u64
    }

    /// The runtime-clock time `d` from now: when a timer for `d` fires. `None`
    /// if that is past the clock's range (never).
    pub(crate) fn deadline_in(&self, d: Duration) -> Option<u64> {
        u64::try_from(d.as_nanos())
            .ok()
            .and_then(|ns| self.nanotime().checked_add(ns))
    }
}
