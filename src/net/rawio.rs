//! The four stream transfers (`recv`, `send`, `readv`, and `sendmsg` for
//! vectored writes) as direct system calls.
//!
//! libc's wrappers for these calls are POSIX cancellation points. Around each
//! call glibc switches the thread's cancellation state on and off, and each
//! switch is an atomic compare-and-swap. No goro M is ever cancelled, so that
//! work is wasted: two locked instructions per transfer
//! (docs/decisions/0026-raw-socket-syscalls.md). Go also issues its socket
//! reads and writes as raw syscalls. glibc's `syscall` stub is not a cancellation
//! point, and it still sets `errno`, so errors read as usual with
//! `io::Error::last_os_error`. One consequence: these calls bypass libc's
//! symbols, so an `LD_PRELOAD` shim that interposes `recv`/`send` does not see
//! them.
//!
//! The semantics are std's, except that vectored writes also suppress
//! `SIGPIPE`. Both kinds of send pass `MSG_NOSIGNAL`, so a write to a closed
//! peer returns `EPIPE` and raises no signal, even in a program whose start-up
//! did not ignore `SIGPIPE` (std's `write_vectored` uses `writev`, which raises
//! it there). Vectored calls pass at most `UIO_MAXIOV` buffers, as std does.
//!
//! No state; any thread may call these.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::RawFd;

/// The result of a transfer syscall: its byte count, or the `errno` it set.
fn transferred(r: libc::c_long) -> io::Result<usize> {
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// `recv(fd, buf, 0)`.
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the whole
    // call, and recvfrom accepts a null source address and length.
    transferred(unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            libc::c_long::from(fd),
            buf.as_mut_ptr(),
            buf.len(),
            0 as libc::c_long,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    })
}

/// `send(fd, buf, MSG_NOSIGNAL)`.
pub(crate) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole
    // call, and sendto accepts a null destination address.
    transferred(unsafe {
        libc::syscall(
            libc::SYS_sendto,
            libc::c_long::from(fd),
            buf.as_ptr(),
            buf.len(),
            libc::c_long::from(libc::MSG_NOSIGNAL),
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::c_long,
        )
    })
}

/// The most buffers one vectored call passes the kernel (as std does).
const MAX_IOV: usize = libc::UIO_MAXIOV as usize;

/// How many of `n` buffers one vectored call passes.
fn iov_count(n: usize) -> libc::c_long {
    n.min(MAX_IOV) as libc::c_long
}

/// What one vectored call over buffers of lengths `lens` can move: only the
/// first [`MAX_IOV`] buffers count (moving less than all of them is then not a
/// short transfer).
pub(crate) fn vectored_len(lens: impl Iterator<Item = usize>) -> usize {
    lens.take(MAX_IOV).sum()
}

/// `readv(fd, bufs)`.
pub(crate) fn readv(fd: RawFd, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
    // SAFETY: `IoSliceMut` is ABI-compatible with `iovec` (std guarantees it on
    // Unix), each one is valid for writes of its length, and the count passed
    // never exceeds `bufs.len()`.
    transferred(unsafe {
        libc::syscall(
            libc::SYS_readv,
            libc::c_long::from(fd),
            bufs.as_mut_ptr(),
            iov_count(bufs.len()),
        )
    })
}

/// `sendmsg(fd, {bufs}, MSG_NOSIGNAL)`: `writev` without the signal.
pub(crate) fn send_vectored(fd: RawFd, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    // SAFETY: an all-zero msghdr is valid (no address, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` is ABI-compatible with `iovec` (std guarantees it on Unix);
    // sendmsg only reads through the pointer.
    msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov_count(bufs.len()) as _;
    // SAFETY: `msg` points at `bufs`, each valid for reads of its length, and
    // both outlive the call; the count never exceeds `bufs.len()`.
    transferred(unsafe {
        libc::syscall(
            libc::SYS_sendmsg,
            libc::c_long::from(fd),
            &msg as *const libc::msghdr,
            libc::c_long::from(libc::MSG_NOSIGNAL),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn transfers_move_bytes_and_report_errno() {
        let (a, b) = UnixStream::pair().unwrap();
        assert_eq!(send(a.as_raw_fd(), b"hello").unwrap(), 5);
        assert_eq!(
            send_vectored(a.as_raw_fd(), &[IoSlice::new(b" wo"), IoSlice::new(b"rld")]).unwrap(),
            6
        );
        let mut head = [0; 3];
        assert_eq!(recv(b.as_raw_fd(), &mut head).unwrap(), 3);
        assert_eq!(&head, b"hel");
        let (mut x, mut y) = ([0; 4], [0; 8]);
        let n = readv(b.as_raw_fd(), &mut [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)]).unwrap();
        assert_eq!(n, 8);
        assert_eq!(&x, b"lo w");
        assert_eq!(&y[..4], b"orld");
        b.set_nonblocking(true).unwrap();
        let err = recv(b.as_raw_fd(), &mut head).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(b);
        let err = send(a.as_raw_fd(), b"x").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EPIPE));
        assert_eq!(recv(-1, &mut head).unwrap_err().raw_os_error(), Some(libc::EBADF));
    }

    /// Blocks SIGPIPE in this thread, runs `f`, and says whether `f` raised
    /// it (consuming it). A blocked signal stays pending even though the test
    /// harness ignores SIGPIPE, and a write's SIGPIPE goes to the writing
    /// thread, so this sees exactly what `f` did.
    fn raises_sigpipe(f: impl FnOnce()) -> bool {
        // SAFETY: sigset_t is plain data, set up by sigemptyset/sigaddset; the
        // mask change is this thread's own and restored before returning.
        unsafe {
            let mut pipe: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut pipe);
            libc::sigaddset(&mut pipe, libc::SIGPIPE);
            let mut old: libc::sigset_t = std::mem::zeroed();
            assert_eq!(libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old), 0);
            f();
            let mut pending: libc::sigset_t = std::mem::zeroed();
            libc::sigpending(&mut pending);
            let raised = libc::sigismember(&pending, libc::SIGPIPE) == 1;
            if raised {
                let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero);
            }
            assert_eq!(libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()), 0);
            raised
        }
    }

    #[test]
    fn a_vectored_write_to_a_closed_peer_raises_no_sigpipe() {
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        let mut err = None;
        assert!(!raises_sigpipe(
            || err = send_vectored(a.as_raw_fd(), &[IoSlice::new(b"x")]).err()
        ));
        assert_eq!(err.and_then(|e| e.raw_os_error()), Some(libc::EPIPE));
        // The check can fail: std's `writev` raises the signal.
        use std::io::Write;
        assert!(raises_sigpipe(|| assert!((&a)
            .write_vectored(&[IoSlice::new(b"x")])
            .is_err())));
    }
}
