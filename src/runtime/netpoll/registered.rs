//! `Registered<S>`: a non-blocking socket registered with the poller, and the I/O
//! loop every `goro::net` operation runs in.
//!
//! The loop is Go's `fd.Read` pattern: read the readiness generation, try the
//! syscall, and on `EAGAIN` park on the poll descriptor until the next edge (or
//! the operation's deadline), then try again. `EINTR` is retried. From a plain
//! thread the same loop blocks the thread instead of parking a G.
//!
//! # Short transfers end the burst (stream sockets)
//! A stream read that returns fewer bytes than asked for has emptied the socket's
//! receive queue, and a short write has filled its send queue: the next attempt
//! would only say `EAGAIN`. [`Registered::stream_io`] remembers the readiness
//! generation read before such a short transfer, and while the generation is
//! still that one, the next operation parks at once instead of making the
//! syscall (Tokio does the same). No edge is lost: the kernel signals every byte
//! that arrives after the read that drained the queue (and, after a short write,
//! the moment enough send-buffer space is free again), and that edge bumps the
//! generation; an edge that was already in flight bumps it too, which only
//! costs one `EAGAIN` syscall. What is not
//! signalled again is a state that was already there: an end of stream or error
//! queued behind the data, or data behind an urgent byte (a read stops short at
//! the urgent mark). So the skip also requires that the direction has seen no
//! such sticky condition (`PollDesc::sticky`, set by the poller from
//! `EPOLLRDHUP`/`EPOLLPRI`/`EPOLLHUP`/`EPOLLERR` before it bumps the
//! generation). Saves one of the three syscalls of a request/response exchange.
//!
//! Drop order: deregister from epoll, retire the poll descriptor (waking anyone
//! still parked on it with an error), then the socket closes its fd — exactly
//! once, when the last owner goes.

use super::desc::{Dir, PollDesc};
use crate::runtime::proc::state::sched;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A non-blocking socket and its poll descriptor.
pub(crate) struct Registered<S: AsRawFd> {
    io: S,
    pd: &'static PollDesc,
    /// Per-direction operation timeout in ns, 0 for none (std's `set_*_timeout`).
    timeouts: [AtomicU64; 2],
    /// Per direction, 1 + the generation a short transfer drained the socket at,
    /// 0 for none (module docs). Relaxed: a mark only ever says "drained as of
    /// generation g", which stays true whoever reads it, until the generation moves.
    drained: [AtomicU64; 2],
}

impl<S: AsRawFd> Registered<S> {
    /// Registers `io`, which must already be in non-blocking mode.
    pub(crate) fn new(io: S) -> io::Result<Self> {
        let pd = PollDesc::get();
        if let Err(e) = sched().poller.register(io.as_raw_fd(), pd.token()) {
            pd.close();
            return Err(e);
        }
        Ok(Registered {
            io,
            pd,
            timeouts: [AtomicU64::new(0), AtomicU64::new(0)],
            drained: [AtomicU64::new(0), AtomicU64::new(0)],
        })
    }

    pub(crate) fn get_ref(&self) -> &S {
        &self.io
    }

    /// Runs the non-blocking `op` until it does not say `WouldBlock`, parking on
    /// the poller between tries; bounded by the direction's timeout
    /// (`ErrorKind::TimedOut`).
    pub(crate) fn io<R>(&self, dir: Dir, op: impl FnMut(&S) -> io::Result<R>) -> io::Result<R> {
        self.run(dir, op, |_| false)
    }

    /// As [`Registered::io`], for a stream transfer of `want` bytes: one that moves
    /// fewer marks the socket drained in `dir` (module docs).
    pub(crate) fn stream_io(
        &self,
        dir: Dir,
        want: usize,
        op: impl FnMut(&S) -> io::Result<usize>,
    ) -> io::Result<usize> {
        self.run(dir, op, |&n| n > 0 && n < want)
    }

    /// The I/O loop: `short` says whether a result drained the socket.
    fn run<R>(&self, dir: Dir, mut op: impl FnMut(&S) -> io::Result<R>, short: impl Fn(&R) -> bool) -> io::Result<R> {
        crate::runtime::sched::preempt::check();
        let drained = &self.drained[dir as usize];
        // Taken from the clock at the first wait, so an operation that does not
        // block reads no clock; later waits of the same operation keep it.
        let mut deadline = None;
        let mut park = |seen| {
            if deadline.is_none() {
                deadline = self.timeout(dir).and_then(|t| sched().deadline_in(t));
            }
            self.wait(dir, seen, deadline)
        };
        loop {
            let seen = self.pd.gen(dir);
            if drained.load(Ordering::Relaxed) == seen + 1 && !self.pd.sticky(dir) {
                park(seen)?;
                continue;
            }
            match op(&self.io) {
                Ok(r) if short(&r) => {
                    drained.store(seen + 1, Ordering::Relaxed);
                    return Ok(r);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => park(seen)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }

    /// Parks until `dir` is ready after generation `seen`, or the runtime clock
    /// reaches `deadline` (`Sched::deadline_in`; `TimedOut`).
    pub(crate) fn wait(&self, dir: Dir, seen: u64, deadline: Option<u64>) -> io::Result<()> {
        self.pd.wait(dir, seen, deadline)
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
