//! `sched`: the runtime's global state, and its start-up.
//!
//! One per process, created on first use (or by `Config::init`) and never torn
//! down: Ms keep running for the life of the process, as in Go.
//!
//! What lives here: the Ps (`allp`), the global run queue, idle P/M bookkeeping
//! ([`super::idle`]), the poller and its `lastpoll`/`poll_until` handshake, the
//! stack pool, the list of all Ms, and process-wide counters. Which thread may touch
//! what is documented on each type.

use super::config::{Config, Resolved};
use super::g::GRef;
use super::gfree::GFreePool;
use super::globrunq::GlobalRunq;
use super::idle::Idle;
use super::m::M;
use super::p::P;
use super::stack::StackPool;
use super::trace::Godebug;
use crate::netpoll::Poller;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static SCHED: OnceLock<Sched> = OnceLock::new();

/// Process-wide counters not tied to a P.
#[derive(Default)]
pub(crate) struct Counters {
    /// Gs spawned from plain threads (Gs spawned by Gs count on their P).
    pub(crate) spawned_outside: AtomicU64,
    pub(crate) netpoll_ready: AtomicU64,
    pub(crate) syscall_handoffs: AtomicU64,
    pub(crate) preempt_retakes: AtomicU64,
}

pub(crate) struct Sched {
    pub(crate) config: Resolved,
    pub(crate) allp: Box<[P]>,
    pub(crate) global: GlobalRunq,
    pub(crate) idle: Idle<&'static M>,
    /// Runtime clock (ns) when the poller last returned; 0 while an M is blocked in it.
    pub(crate) lastpoll: AtomicU64,
    /// When the M blocked in the poller will wake up by itself (0: never/not blocked).
    pub(crate) poll_until: AtomicU64,
    pub(crate) poller: Poller,
    pub(crate) stacks: StackPool,
    pub(crate) gfree: GFreePool,
    pub(crate) allm: Mutex<Vec<&'static M>>,
    next_m_id: AtomicI64,
    pub(crate) next_goid: AtomicU64,
    pub(crate) counters: Counters,
    pub(crate) godebug: Godebug,
    /// Every live G, kept only under `GODEBUG=scheddetail=1` (it costs a lock per
    /// spawn and exit).
    pub(crate) allgs: Option<Mutex<HashMap<u64, GRef>>>,
    pub(crate) cores: Vec<core_affinity::CoreId>,
    /// Strides for the random steal order (numbers coprime with gomaxprocs).
    pub(crate) steal_strides: Vec<usize>,
    pub(crate) started: Instant,
}

/// The runtime, started with the default configuration if nobody started it yet.
#[inline]
pub(crate) fn sched() -> &'static Sched {
    match SCHED.get() {
        Some(s) => s,
        None => {
            start(Config::new());
            SCHED.get().expect("runtime started")
        }
    }
}

/// Starts the runtime with `config`. Returns false if it was already running.
pub(crate) fn start(config: Config) -> bool {
    let mut ours = false;
    let s = SCHED.get_or_init(|| {
        ours = true;
        Sched::new(config.resolve())
    });
    if ours {
        super::trace::start(s);
    }
    ours
}

impl Sched {
    fn new(config: Resolved) -> Sched {
        super::signal::install();
        super::panics::install_hook();
        let godebug = Godebug::from_env();
        let poller = Poller::new().unwrap_or_else(|e| {
            eprintln!("goro: fatal: cannot create the epoll poller: {e}");
            std::process::abort()
        });
        Sched {
            allp: (0..config.procs).map(P::new).collect(),
            global: GlobalRunq::new(),
            idle: Idle::new(config.procs),
            lastpoll: AtomicU64::new(1),
            poll_until: AtomicU64::new(0),
            poller,
            stacks: StackPool::new(),
            gfree: GFreePool::new(),
            allm: Mutex::new(Vec::new()),
            next_m_id: AtomicI64::new(0),
            next_goid: AtomicU64::new(1),
            counters: Counters::default(),
            allgs: godebug.scheddetail.then(|| Mutex::new(HashMap::new())),
            godebug,
            cores: if config.pin_threads {
                core_affinity::get_core_ids().unwrap_or_default()
            } else {
                Vec::new()
            },
            steal_strides: super::schedule::coprimes(config.procs),
            started: Instant::now(),
            config,
        }
    }

    pub(crate) fn gomaxprocs(&self) -> usize {
        self.allp.len()
    }

    /// Registers a new M.
    pub(crate) fn new_m(&self) -> &'static M {
        let m: &'static M = Box::leak(Box::new(M::new(self.next_m_id.fetch_add(1, Ordering::Relaxed))));
        self.allm.lock().unwrap_or_else(|e| e.into_inner()).push(m);
        m
    }

    /// Runtime clock: nanoseconds since the runtime started.
    pub(crate) fn nanotime(&self) -> u64 {
        self.started.elapsed().as_nanos().min(u64::MAX as u128 - 1) as u64
    }
}
