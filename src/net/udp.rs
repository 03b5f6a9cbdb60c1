//! `UdpSocket` on the netpoller.

use crate::netpoll::{Dir, Registered};
use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// A UDP socket. Receives (and sends on a full buffer) park the goroutine.
pub struct UdpSocket {
    inner: Registered<std::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds to `addr`.
    ///
    /// # Errors
    /// As std's.
    pub fn bind<A: ToSocketAddrs>(addr: A) -> io::Result<UdpSocket> {
        UdpSocket::try_from(std::net::UdpSocket::bind(addr)?)
    }

    /// Sends `buf` to `addr`; returns the bytes sent.
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn send_to<A: ToSocketAddrs>(&self, buf: &[u8], addr: A) -> io::Result<usize> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to send to"))?;
        self.inner.io(Dir::Write, |s| s.send_to(buf, addr))
    }

    /// Receives one datagram, parking until one arrives; returns its size and sender.
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.inner.io(Dir::Read, |s| s.recv_from(buf))
    }

    /// Sets the default peer for `send` / `recv`.
    ///
    /// # Errors
    /// As std's.
    pub fn connect<A: ToSocketAddrs>(&self, addr: A) -> io::Result<()> {
        self.inner.get_ref().connect(addr)
    }

    /// Sends to the connected peer.
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.inner.io(Dir::Write, |s| s.send(buf))
    }

    /// Receives from the connected peer, parking until a datagram arrives.
    ///
    /// # Errors
    /// As std's, or `TimedOut`.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.io(Dir::Read, |s| s.recv(buf))
    }

    /// The local address.
    ///
    /// # Errors
    /// As std's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().local_addr()
    }

    /// The connected peer's address.
    ///
    /// # Errors
    /// As std's.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().peer_addr()
    }

    /// Bounds each receive. Expiry: `ErrorKind::TimedOut`.
    ///
    /// # Errors
    /// `InvalidInput` for a zero duration, as std.
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Read, d)
    }

    /// Bounds each send. Expiry: `ErrorKind::TimedOut`.
    ///
    /// # Errors
    /// `InvalidInput` for a zero duration, as std.
    pub fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        self.inner.set_timeout(Dir::Write, d)
    }

    /// Another handle to the same socket (a duplicated descriptor).
    ///
    /// # Errors
    /// As std's `try_clone`.
    pub fn try_clone(&self) -> io::Result<UdpSocket> {
        UdpSocket::try_from(self.inner.get_ref().try_clone()?)
    }
}

impl TryFrom<std::net::UdpSocket> for UdpSocket {
    type Error = io::Error;

    /// Takes over a std socket (switched to non-blocking mode).
    fn try_from(s: std::net::UdpSocket) -> io::Result<UdpSocket> {
        s.set_nonblocking(true)?;
        Ok(UdpSocket {
            inner: Registered::new(s)?,
        })
    }
}

impl AsRawFd for UdpSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.get_ref().as_raw_fd()
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local", &self.local_addr().ok())
            .finish()
    }
}
