//! `TcpListener` and `TcpStream` on the netpoller.

use super::sockaddr;
use crate::netpoll::{Dir, Registered};
use std::fmt;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A TCP server socket. `accept` parks the goroutine until a connection arrives.
pub struct TcpListener {
    inner: Registered<std::net::TcpListener>,
}

/// A TCP connection. Reads and writes park the goroutine while the socket is not
/// ready. `Read` and `Write` are implemented for `TcpStream` and `&TcpStream`.
pub struct TcpStream {
    inner: Registered<std::net::TcpStream>,
}

impl TcpListener {
    /// Binds to `addr` (the first address that works) and listens.
    ///
    /// # Errors
    /// Resolution, bind or listen errors, as std's.
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<TcpListener> {
        let l = std::net::TcpListener::bind(addr)?;
        // std listens with a backlog of 128; a burst of connections overflows that
        // (each overflow costs the client a 1 s SYN retry). Go asks for the
        // system's maximum; calling listen(2) again raises it (the kernel caps
        // the value at net.core.somaxconn).
        // SAFETY: listen(2) on a socket we own.
        if unsafe { libc::listen(l.as_raw_fd(), libc::c_int::MAX) } < 0 {
            return Err(io::Error::last_os_error());
        }
        TcpListener::try_from(l)
    }

    /// Accepts a connection, parking until one arrives.
    ///
    /// # Errors
    /// Accept errors; the listener stays usable after them (for `EMFILE`/`ENFILE`,
    /// see [`TcpListener::incoming`], which backs off and retries).
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (s, peer) = self.inner.io(Dir::Read, |l| l.accept())?;
        Ok((TcpStream::try_from(s)?, peer))
    }

    /// An endless iterator of accepted connections. When the process is out of file
    /// descriptors (`EMFILE`/`ENFILE`) it waits and retries — 5 ms, doubling up to
    /// 1 s, as Go's HTTP server does — instead of yielding the error, so an accept
    /// loop survives fd exhaustion; other errors are yielded.
    pub fn incoming(&self) -> Incoming<'_> {
        Incoming { listener: self }
    }

    /// The address it is bound to.
    ///
    /// # Errors
    /// As std's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// Another handle to the same socket (a duplicated descriptor).
    ///
    /// # Errors
    /// As std's `try_clone`.
    pub fn try_clone(&self) -> io::Result<TcpListener> {
        TcpListener::try_from(self.inner.get_ref().try_clone()?)
    }
}

impl TryFrom<std::net::TcpListener> for TcpListener {
    type Error = io::Error;

    /// Takes over a std listener (switched to non-blocking mode).
    fn try_from(l: std::net::TcpListener) -> io::Result<TcpListener> {
        l.set_nonblocking(true)?;
        Ok(TcpListener {
            inner: Registered::new(l)?,
        })
    }
}

/// Iterator over accepted connections; see [`TcpListener::incoming`].
pub struct Incoming<'a> {
    listener: &'a TcpListener,
}

impl Iterator for Incoming<'_> {
    type Item = io::Result<TcpStream>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut backoff = Duration::from_millis(5);
        loop {
            match self.listener.accept() {
                Ok((s, _)) => return Some(Ok(s)),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    crate::time::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl TcpStream {
    /// Connects to `addr` (each resolved address in turn), parking until the
    /// connection is established.
    ///
    /// # Errors
    /// Resolution errors, or the last address's connect error.
    pub fn connect<A: ToSocketAddrs>(addr: A) -> io::Result<TcpStream> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match connect_one(&a) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to connect to")))
    }

    /// Bounds each read (`None`: no bound). Expiry: `ErrorKind::TimedOut`.
    ///
    /// # Errors
    /// `InvalidInput` for a zero duration, as std.
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, d)
    }

    /// Bounds each write (`None`: no bound). Expiry: `ErrorKind::TimedOut`.
    ///
    /// # Errors
    /// `InvalidInput` for a zero duration, as std.
    pub fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, d)
    }

    /// The read timeout.
    ///
    /// # Errors
    /// Never; `io::Result` as std's.
    pub fn read_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.inner.timeout(Dir::Read))
    }

    /// The write timeout.
    ///
    /// # Errors
    /// Never; `io::Result` as std's.
    pub fn write_timeout(&self) -> io::Result<Option<Duration>> {
        Ok(self.inner.timeout(Dir::Write))
    }

    /// Shuts down one or both directions; a goroutine parked reading wakes (end
    /// of file).
    ///
    /// # Errors
    /// As std's.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.get_ref().shutdown(how)
    }

    /// Another handle to the same connection (a duplicated descriptor).
    ///
    /// # Errors
    /// As std's `try_clone`.
    pub fn try_clone(&self) -> io::Result<TcpStream> {
        TcpStream::try_from(self.inner.get_ref().try_clone()?)
    }

    /// The remote address.
    ///
    /// # Errors
    /// As std's.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().peer_addr()
    }

    /// The local address.
    ///
    /// # Errors
    /// As std's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// Sets `TCP_NODELAY`.
    ///
    /// # Errors
    /// As std's.
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.inner.get_ref().set_nodelay(on)
    }

    /// Reads `TCP_NODELAY`.
    ///
    /// # Errors
    /// As std's.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.get_ref().nodelay()
    }

    /// Reads data without consuming it, parking until some is available.
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.io(Dir::Read, |s| s.peek(buf))
    }
}

/// Non-blocking connect: start it, park until the socket is writable, then ask
/// the kernel how it went.
fn connect_one(addr: &SocketAddr) -> io::Result<TcpStream> {
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall; the result is checked before use.
    let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket that nothing else owns.
    let std_stream = std::net::TcpStream::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let stream = TcpStream {
        inner: Registered::new(std_stream)?,
    };
    let (storage, len) = sockaddr::to_c(addr);
    let seen = stream.inner.gen(Dir::Write);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    let r = unsafe { libc::connect(fd, std::ptr::addr_of!(storage).cast(), len) };
    if r == 0 {
        return Ok(stream);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::EINPROGRESS) {
        return Err(err);
    }
    let deadline = stream.inner.timeout(Dir::Write).map(|d| std::time::Instant::now() + d);
    let mut seen = seen;
    loop {
        stream.inner.wait(Dir::Write, seen, deadline)?;
        seen = stream.inner.gen(Dir::Write);
        if let Some(e) = stream.inner.get_ref().take_error()? {
            return Err(e);
        }
        if stream.inner.get_ref().peer_addr().is_ok() {
            return Ok(stream);
        }
    }
}

impl TryFrom<std::net::TcpStream> for TcpStream {
    type Error = io::Error;

    /// Takes over a std stream (switched to non-blocking mode).
    fn try_from(s: std::net::TcpStream) -> io::Result<TcpStream> {
        s.set_nonblocking(true)?;
        Ok(TcpStream {
            inner: Registered::new(s)?,
        })
    }
}

impl Read for &TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.io(Dir::Read, |mut s| s.read(buf))
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        self.inner.io(Dir::Read, |mut s| s.read_vectored(bufs))
    }
}

impl Write for &TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.io(Dir::Write, |mut s| s.write(buf))
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.inner.io(Dir::Write, |mut s| s.write_vectored(bufs))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }

    fn read_vectored(&mut self, bufs: &mut [IoSliceMut<'_>]) -> io::Result<usize> {
        (&*self).read_vectored(bufs)
    }
}

impl Write for TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        (&*self).write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.get_ref().as_raw_fd()
    }
}

impl AsRawFd for TcpListener {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.get_ref().as_raw_fd()
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local", &self.local_addr().ok())
            .field("peer", &self.peer_addr().ok())
            .finish()
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local", &self.local_addr().ok())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn open_fds() -> usize {
        std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
    }

    /// Thousands of sockets opened and dropped: every fd is closed (and
    /// deregistered) exactly once — the count returns to where it was.
    #[test]
    fn sockets_do_not_leak_descriptors() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let before = open_fds();
        for _ in 0..2000 {
            let c = TcpStream::connect(addr).unwrap();
            let (s, _) = l.accept().unwrap();
            let c2 = c.try_clone().unwrap();
            drop((c, s, c2));
        }
        assert_eq!(open_fds(), before);
    }
}
