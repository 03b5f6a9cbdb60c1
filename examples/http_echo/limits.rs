//! The server's limits on time and on connections, as Go's `http.Server` sets
//! them: how long a request's head, its body, a response's write and the wait
//! between requests may take, and how many connections are served at once.
//!
//! A deadline is fixed when its phase starts and bytes arriving do not move it,
//! so a client that trickles a byte at a time is closed when the phase's time
//! is up, not kept alive by its trickle.
//!
//! The connection count lives in one atomic: the accept loop takes a slot
//! ([`Slots::try_take`]), the connection's goroutine gives it back when it
//! ends (the [`Slot`] guard, on every exit path, panics included).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time limits for one connection.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// From a request's first byte (for a connection's first request, from
    /// the accept) to the end of its head.
    pub header: Duration,
    /// From the end of a request's head to the end of its body.
    pub body: Duration,
    /// For writing out the answers buffered at one time, the 503 included.
    pub write: Duration,
    /// Between the end of an answer and the next request's first byte.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            header: Duration::from_secs(10),
            body: Duration::from_secs(30),
            write: Duration::from_secs(30),
            idle: Duration::from_secs(30),
        }
    }
}

/// File descriptors kept back from connections, beyond those open when the
/// server starts, out of a limit of `nofile`: at least 16, or a sixteenth of
/// the limit when that is more. Half of them may hold connections being
/// refused with a 503; the rest are for the runtime's own needs (`/proc`
/// reads for a goroutine dump, a thread's signal stack).
pub fn spare_fds(nofile: u64) -> u64 {
    (nofile / 16).max(16)
}

/// The default `--max-conns`: the soft `RLIMIT_NOFILE`, less the descriptors
/// open at start (the standard streams, the listener, the poller, ...: 8 in a
/// plain start), less [`spare_fds`]; at least 1. With 8 open at start, 256
/// descriptors give 232 connections, 1024 give 952, 65536 give 61432.
pub fn default_max_conns() -> usize {
    let nofile = open_files_limit();
    let taken = open_fds() + spare_fds(nofile);
    usize::try_from(nofile.saturating_sub(taken).max(1)).unwrap_or(usize::MAX)
}

/// How many descriptors the process has open (`/proc/self/fd`, less the one
/// reading it); 0 if that cannot be read.
fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count().saturating_sub(1) as u64)
}

/// The soft limit on open files (`RLIMIT_NOFILE`); an unlimited or unknown
/// limit counts as 2^20, Linux's default ceiling (`fs.nr_open`).
fn open_files_limit() -> u64 {
    const CEILING: u64 = 1 << 20;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` writes one `rlimit` through a pointer to a live,
    // properly aligned local.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    if !ok || lim.rlim_cur == libc::RLIM_INFINITY {
        CEILING
    } else {
        lim.rlim_cur.min(CEILING)
    }
}

/// Connections being served, and how many may be (`--max-conns`); plus the
/// connections being refused with a lingering drain, bounded by half the
/// spare descriptors so that refusing a flood cannot itself run the process
/// out of them (beyond, a refusal holds its descriptor only for the calls
/// that answer it: [`Admission::RefuseAtOnce`]).
#[derive(Debug)]
pub struct Slots {
    max: usize,
    max_refusing: usize,
    serving: AtomicUsize,
    refusing: AtomicUsize,
}

/// Which counter a [`Slot`] holds a place in.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Serving,
    Refusing,
}

/// One place in [`Slots`], given back when dropped.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    kind: Kind,
}

/// What the accept loop does with a new connection.
#[derive(Debug)]
pub enum Admission {
    /// Serve it.
    Serve(Slot),
    /// Answer 503 and close, after a lingering drain.
    Refuse(Slot),
    /// Answer 503 and close at once, waiting for nothing: too many are
    /// already being refused.
    RefuseAtOnce,
}

impl Slots {
    pub fn new(max: usize) -> Arc<Slots> {
        let nofile = open_files_limit();
        let max_refusing = usize::try_from(spare_fds(nofile) / 2).unwrap_or(8);
        Arc::new(Slots {
            max,
            max_refusing,
            serving: AtomicUsize::new(0),
            refusing: AtomicUsize::new(0),
        })
    }

    /// A place for a new connection, in the first counter with room.
    pub fn admit(self: &Arc<Self>) -> Admission {
        if let Some(slot) = self.try_take(Kind::Serving) {
            Admission::Serve(slot)
        } else if let Some(slot) = self.try_take(Kind::Refusing) {
            Admission::Refuse(slot)
        } else {
            Admission::RefuseAtOnce
        }
    }

    fn try_take(self: &Arc<Self>, kind: Kind) -> Option<Slot> {
        let (count, max) = self.counter(kind);
        // Relaxed: the count guards no other data; only the bound matters.
        count
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1))
            .ok()
            .map(|_| Slot {
                slots: Arc::clone(self),
                kind,
            })
    }

    fn counter(&self, kind: Kind) -> (&AtomicUsize, usize) {
        match kind {
            Kind::Serving => (&self.serving, self.max),
            Kind::Refusing => (&self.refusing, self.max_refusing),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.counter(self.kind).0.fetch_sub(1, Ordering::Relaxed);
    }
}
