//! `Registered<S>`: a non-blocking socket registered with the poller, and the I/O
//! loop every `goro::net` operation runs in.
//!
//! The loop is Go's `fd.Read` pattern: read the readiness generation, try the
//! syscall, and on `EAGAIN` park on the poll descriptor until the next edge (or
//! the operation's deadline), then try again. `EINTR` is retried. From a plain
//! thread the same loop blocks the thread instead of parking a G.
//!
//! Drop order: deregister from epoll, retire the poll descriptor (waking anyone
//! still parked on it with an error), then the socket closes its fd — exactly
//! once, when the last owner goes.

use super::desc::{Dir, PollDesc};
use crate::runtime::sched::sched;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A non-blocking socket and its poll descriptor.
pub(crate) struct Registered<S: AsRawFd> {
    io: S,
    pd: &'static PollDesc,
    /// Per-direction operation timeout in ns, 0 for none (std's `set_*_timeout`).
    timeouts: [AtomicU64; 2],
}

impl<S: AsRawFd> Registered<S> {
    /// Registers `io`, which must already be in non-blocking mode.
    pub(crate) fn new(io: S) -> io::Result<Self> {
        let pd = PollDesc::get();
        if let Err(e) = sched().poller.register(io.as_raw_fd(), pd) {
            pd.close();
            return Err(e);
        }
        Ok(Registered {
            io,
            pd,
            timeouts: [AtomicU64::new(0), AtomicU64::new(0)],
        })
    }

    pub(crate) fn get_ref(&self) -> &S {
        &self.io
    }

    /// Runs the non-blocking `op` until it does not say `WouldBlock`, parking on
    /// the poller between tries; bounded by the direction's timeout
    /// (`ErrorKind::TimedOut`).
    pub(crate) fn io<R>(&self, dir: Dir, mut op: impl FnMut(&S) -> io::Result<R>) -> io::Result<R> {
        crate::runtime::preempt::check();
        let deadline = self.timeout(dir).map(|d| Instant::now() + d);
        loop {
            let seen = self.pd.gen(dir);
            match op(&self.io) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait(dir, seen, deadline)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// Parks until `dir` is ready after generation `seen`, or `deadline`.
    pub(crate) fn wait(&self, dir: Dir, seen: u64, deadline: Option<Instant>) -> io::Result<()> {
        let left = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Err(io::Error::new(io::ErrorKind::TimedOut, "socket operation timed out")),
            },
        };
        self.pd.wait(dir, seen, left)
    }

    /// The readiness generation of `dir` (read before a syscall that may block).
    pub(crate) fn gen(&self, dir: Dir) -> u64 {
        self.pd.gen(dir)
    }

    pub(crate) fn timeout(&self, dir: Dir) -> Option<Duration> {
        match self.timeouts[dir as usize].load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// Sets `dir`'s timeout; `Some(ZERO)` is rejected, as std does.
    pub(crate) fn set_timeout(&self, dir: Dir, d: Option<Duration>) -> io::Result<()> {
        let ns = match d {
            None => 0,
            Some(d) if d.is_zero() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "cannot set a 0 duration timeout",
                ));
            }
            Some(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1),
        };
        self.timeouts[dir as usize].store(ns, Ordering::Relaxed);
        Ok(())
    }
}

impl<S: AsRawFd> Drop for Registered<S> {
    fn drop(&mut self) {
        sched().poller.deregister(self.io.as_raw_fd());
        self.pd.close();
        // `io` drops after this: its fd closes now, once.
    }
}
