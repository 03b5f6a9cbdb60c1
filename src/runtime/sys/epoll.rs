//! The epoll backend: the epoll fd, the wake-up eventfd and the timed wait. It
//! deals in tokens, the `u64` each fd is registered with; what a token names
//! (a poll descriptor, `netpoll/desc.rs`) is its registrar's business.
//!
//! Threads: [`Poller::poll`] is called by one M at a time (the runtime guarantees it
//! through `sched.lastpoll`); [`Poller::wake`] by anyone.
//!
//! `wake` coalesces: `pending` is set by the first waker and cleared by the poller
//! after it drained the eventfd, so a burst of wakes costs one `write(2)` (Go's
//! `netpollWakeSig`). A wake that finds `pending` already set needs no write: either
//! the eventfd is still readable, or the poller is between draining it and clearing
//! `pending` — awake, about to return and re-examine the scheduler's state, which
//! the waker updated (under the relevant locks) before calling `wake`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Token of the eventfd in the epoll set.
const WAKE_TOKEN: u64 = u64::MAX;
/// Events one poll takes at most
/// (docs/decisions/0027-netpoll-shared-poller.md).
pub(crate) const EVENTS_PER_POLL: usize = 32;

/// Room for the events of one poll.
pub(crate) type Events = [libc::epoll_event; EVENTS_PER_POLL];

/// An empty [`Events`].
pub(crate) fn events() -> Events {
    [libc::epoll_event { events: 0, u64: 0 }; EVENTS_PER_POLL]
}

pub(crate) struct Poller {
    epfd: OwnedFd,
    eventfd: OwnedFd,
    pending: AtomicBool,
    /// Set once `epoll_pwait2` returned ENOSYS.
    no_pwait2: AtomicBool,
}

impl Poller {
    pub(crate) fn new() -> io::Result<Poller> {
        // SAFETY: plain syscalls; results checked before use.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: epfd is a fresh fd we own.
        let epfd = unsafe { OwnedFd::from_raw_fd(epfd) };
        // SAFETY: as above.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: efd is a fresh fd we own.
        let eventfd = unsafe { OwnedFd::from_raw_fd(efd) };
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: WAKE_TOKEN,
        };
        // SAFETY: both fds are open; ev is a valid epoll_event.
        if unsafe { libc::epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, eventfd.as_raw_fd(), &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Poller {
            epfd,
            eventfd,
            pending: AtomicBool::new(false),
            no_pwait2: AtomicBool::new(false),
        })
    }

    /// Registers `fd` once, edge-triggered for both directions, with `token`
    /// (never `u64::MAX`, the wake-up's).
    pub(crate) fn register(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let events = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLPRI | libc::EPOLLET;
        let mut ev = libc::epoll_event {
            events: events as u32,
            u64: token,
        };
        // SAFETY: both fds are open; `ev` is a valid epoll_event.
        if unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Removes `fd` from the set (before it is closed).
    pub(crate) fn deregister(&self, fd: RawFd) {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: a valid epoll_event; an error (fd already gone) changes nothing.
        unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) };
    }

    /// Waits for events for at most `timeout` (`None`: no limit; zero: just look)
    /// and returns the sockets' events in `events`, each with its token (`u64`)
    /// and epoll bits (`events`). The caller wakes the Gs waiting on them (Go's
    /// netpoll returns a list the same way, so an M can take a P before readying
    /// them onto it). Returns early when [`Poller::wake`] is called.
    pub(crate) fn poll<'e>(&self, timeout: Option<Duration>, events: &'e mut Events) -> &'e [libc::epoll_event] {
        let n = self.wait(events, timeout);
        let mut sockets = 0;
        for i in 0..n {
            if events[i].u64 == WAKE_TOKEN {
                // Only a blocking poll consumes the wake-up: it is meant for the M
                // blocked in the poller, and a non-blocking poll elsewhere must not
                // swallow it (Go's netpoll does the same).
                if timeout != Some(Duration::ZERO) {
                    self.drain_wake();
                }
                continue;
            }
            events[sockets] = events[i];
            sockets += 1;
        }
        &events[..sockets]
    }

    fn wait(&self, events: &mut [libc::epoll_event], timeout: Option<Duration>) -> usize {
        let epfd = self.epfd.as_raw_fd();
        let max = events.len() as libc::c_int;
        if !self.no_pwait2.load(Ordering::Relaxed) {
            let ts = timeout.map(|d| libc::timespec {
                tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            });
            let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: events is a valid buffer of `max` entries; ts_ptr is null or
            // points to a live timespec; null sigmask means "don't change it".
            let r = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    epfd,
                    events.as_mut_ptr(),
                    max,
                    ts_ptr,
                    std::ptr::null::<libc::sigset_t>(),
                    0,
                )
            };
            if r >= 0 {
                return r as usize;
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::ENOSYS) => self.no_pwait2.store(true, Ordering::Relaxed),
                _ => return 0, // EINTR and friends: the caller loops anyway.
            }
        }
        let ms = timeout.map_or(-1, |d| {
            let ms = d.as_nanos().div_ceil(1_000_000);
            ms.min(i32::MAX as u128) as libc::c_int
        });
        // SAFETY: events is a valid buffer of `max` entries.
        let r = unsafe { libc::epoll_wait(epfd, events.as_mut_ptr(), max, ms) };
        r.max(0) as usize
    }

    /// Interrupts a blocked [`Poller::poll`] (or makes the next one return at once).
    pub(crate) fn wake(&self) {
        if self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        super::trace_clock::stale(); // a system call
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd. EAGAIN (counter
        // saturated) still leaves the fd readable, which is all we need.
        unsafe { libc::write(self.eventfd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    fn drain_wake(&self) {
        let mut buf: u64 = 0;
        // SAFETY: reading 8 bytes into a live u64 from our non-blocking eventfd.
        unsafe { libc::read(self.eventfd.as_raw_fd(), (&mut buf as *mut u64).cast(), 8) };
        self.pending.store(false, Ordering::Release);
    }
}
