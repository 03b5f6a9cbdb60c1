//! The request head: parsed with `httparse`, checked against the server's limits,
//! and reduced to what the connection loop needs (method, path, how the body is
//! framed, whether the connection stays open).
//!
//! Framing follows RFC 9112 §6: `Transfer-Encoding: chunked` (the last coding)
//! frames the body, else `Content-Length`, else there is none. What a proxy in
//! front could frame another way is refused, since those ambiguities are what
//! request smuggling is built on; each is a 400 and a closed connection:
//! - a line of the head ending in a bare LF (RFC 9112 §2.2 lets a server accept
//!   it; a proxy may not), and anything `httparse` refuses: a CR not followed
//!   by LF, whitespace between a field name and its colon, a folded (obs-fold)
//!   or indented field line, a control byte in a value;
//! - both `Transfer-Encoding` and `Content-Length`;
//! - `Content-Length` values that disagree or are not plain decimal digits
//!   (a list of equal values is one value; an empty list element is refused);
//! - `chunked` anywhere but as the final coding, or more than once (across
//!   fields too);
//! - a framing field whose value is empty or blank;
//! - an HTTP/1.1 request without exactly one valid `Host` (RFC 9112 §3.2):
//!   a proxy and this server could route it to different hosts.
//!
//! A transfer coding other than `chunked` (with `chunked` last or absent) is
//! 501: understood framing, unimplemented coding. An HTTP/1.0 request with
//! `Transfer-Encoding` is answered and its connection closed (RFC 9112 §6.1);
//! its `Expect` is ignored (RFC 9110 §10.1.1).

use std::fmt;
use std::mem::MaybeUninit;

/// Largest request head (request line and headers) accepted; beyond it, 431.
pub const MAX_HEAD: usize = 16 * 1024;
/// Largest request body accepted (after chunked decoding); beyond it, 413.
pub const MAX_BODY: usize = 1024 * 1024;
/// Most header fields in one head; more is answered like an oversized head.
const MAX_HEADERS: usize = 100;
/// Header slots on the stack. A typical head has fewer fields; one with more is
/// parsed again with `MAX_HEADERS` slots on the heap. (A 100-slot array made
/// `parse_head`'s frame 3.4 KiB, and under load its first touches were cache
/// misses on a page of the goroutine's stack that nothing else used.)
const STACK_HEADERS: usize = 24;

/// A request the server refuses: the status to answer with, and why. The
/// connection is closed after answering, since the rest of its bytes can no
/// longer be trusted to start a new request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    pub reason: &'static str,
}

impl HttpError {
    pub const fn new(status: u16, reason: &'static str) -> Self {
        HttpError { status, reason }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status, self.reason)
    }
}

/// The methods this server implements; any other token is answered with 405.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Other,
}

/// How the body after the head is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    None,
    Length(usize),
    Chunked,
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: Method,
    pub path: String,
    /// Bytes of the head, up to and including the blank line.
    pub len: usize,
    pub body: Body,
    /// Whether the connection stays open after the response (HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    pub keep_alive: bool,
    /// The client waits for `100 Continue` before it sends the body.
    pub expect_continue: bool,
}

/// Parses the head at the start of `buf`: `Ok(None)` while it is incomplete.
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, HttpError> {
    // Uninitialised slots: zeroing 100 headers for every request cost more than
    // parsing a typical head.
    let mut slots = [const { MaybeUninit::uninit() }; STACK_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    match req.parse_with_uninit_headers(buf, &mut slots) {
        Err(httparse::Error::TooManyHeaders) => {
            let mut slots: Vec<_> = (0..MAX_HEADERS).map(|_| MaybeUninit::uninit()).collect();
            let mut req = httparse::Request::new(&mut []);
            let status = req.parse_with_uninit_headers(buf, &mut slots);
            head(buf, &req, status)
        }
        status => head(buf, &req, status),
    }
}

/// What one parse of the head at the start of `buf` (`req`, which said
/// `status`) comes to: the head, `None` while it is incomplete, or a refusal.
fn head(
    buf: &[u8],
    req: &httparse::Request<'_, '_>,
    status: httparse::Result<usize>,
) -> Result<Option<Head>, HttpError> {
    // First, so that the verdict on a head with a bare LF does not depend on
    // how much of it has arrived.
    if bare_lf_in_head(buf) {
        return Err(HttpError::new(400, "bare LF in request head"));
    }
    let len = match status {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Err(HttpError::new(431, "request header fields too large"))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::new(431, "too many header fields")),
        Err(_) => return Err(HttpError::new(400, "malformed request")),
    };
    if len > MAX_HEAD {
        return Err(HttpError::new(431, "request header fields too large"));
    }
    // A complete parse always fills these in.
    let (Some(method), Some(path), Some(version)) = (req.method, req.path, req.version) else {
        return Err(HttpError::new(400, "malformed request"));
    };
    let fields = Fields::read(req.headers)?;
    let body = fields.body()?;
    if version == 1 && fields.hosts != 1 {
        return Err(HttpError::new(400, "an HTTP/1.1 request needs exactly one Host"));
    }
    // HTTP/1.0 knows no expectations: its `Expect` is ignored.
    let expect_continue = version == 1 && fields.expect_continue;
    if version == 1 && fields.expect_other {
        return Err(HttpError::new(417, "expectation failed"));
    }
    Ok(Some(Head {
        method: match method {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            _ => Method::Other,
        },
        path: path.to_owned(),
        len,
        body,
        keep_alive: if version == 1 {
            !fields.connection_close
        } else {
            // HTTP/1.0 has no transfer codings: its framing is suspect.
            fields.connection_keep_alive && !fields.transfer_encoding
        },
        expect_continue,
    }))
}

/// Whether a line of the head at the start of `buf` (the leading empty lines
/// that RFC 9112 §2.2 lets a server skip included) ends in a bare LF. Looks at
/// the head's first [`MAX_HEAD`] bytes, up to its empty line, whether or not the
/// head is complete: a bare LF is found the same however the head arrives.
fn bare_lf_in_head(buf: &[u8]) -> bool {
    let buf = &buf[..buf.len().min(MAX_HEAD)];
    let mut start = 0;
    let mut request_line_seen = false;
    while let Some(lf) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + lf];
        let Some(content) = line.strip_suffix(b"\r") else {
            return true;
        };
        if content.is_empty() && request_line_seen {
            return false; // the head's end
        }
        request_line_seen |= !content.is_empty();
        start += lf + 1;
    }
    false
}

/// The header fields the server acts on.
#[derive(Default)]
struct Fields {
    content_length: Option<usize>,
    /// A `Transfer-Encoding` field was present.
    transfer_encoding: bool,
    /// The transfer coding last seen was `chunked`.
    chunked_last: bool,
    /// A coding came after `chunked` (another `chunked` included).
    chunked_not_final: bool,
    /// A coding other than `chunked` was seen.
    unknown_coding: bool,
    connection_close: bool,
    connection_keep_alive: bool,
    expect_continue: bool,
    /// An `Expect` other than `100-continue`.
    expect_other: bool,
    /// `Host` fields seen.
    hosts: usize,
}

impl Fields {
    fn read(headers: &[httparse::Header<'_>]) -> Result<Fields, HttpError> {
        let mut f = Fields::default();
        for h in headers {
            let name = h.name;
            if name.eq_ignore_ascii_case("content-length") {
                f.add_content_length(h.value)?;
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                f.add_transfer_encoding(h.value)?;
            } else if name.eq_ignore_ascii_case("connection") {
                for token in list(h.value) {
                    f.connection_close |= token.eq_ignore_ascii_case(b"close");
                    f.connection_keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            } else if name.eq_ignore_ascii_case("host") {
                if !valid_host(h.value) {
                    return Err(HttpError::new(400, "invalid Host"));
                }
                f.hosts += 1;
            } else if name.eq_ignore_ascii_case("expect") {
                if trim(h.value).eq_ignore_ascii_case(b"100-continue") {
                    f.expect_continue = true;
                } else {
                    f.expect_other = true;
                }
            }
        }
        Ok(f)
    }

    fn add_content_length(&mut self, value: &[u8]) -> Result<(), HttpError> {
        // `Content-Length: 5, 5` and repeated equal fields are allowed; any
        // disagreement is not, nor an empty element (`,5`), which a lax parser
        // in front could read as 0.
        if list(value).next().is_none() {
            return Err(HttpError::new(400, "empty Content-Length"));
        }
        for token in value.split(|&b| b == b',').map(trim) {
            let n = parse_decimal(token).ok_or(HttpError::new(400, "bad Content-Length"))?;
            if self.content_length.is_some_and(|m| m != n) {
                return Err(HttpError::new(400, "conflicting Content-Length"));
            }
            self.content_length = Some(n);
        }
        Ok(())
    }

    fn add_transfer_encoding(&mut self, value: &[u8]) -> Result<(), HttpError> {
        self.transfer_encoding = true;
        if list(value).next().is_none() {
            return Err(HttpError::new(400, "empty Transfer-Encoding"));
        }
        // The codings of all the fields, in order, are one list (RFC 9110 §5.3).
        for token in list(value) {
            self.chunked_not_final |= self.chunked_last;
            self.chunked_last = token.eq_ignore_ascii_case(b"chunked");
            self.unknown_coding |= !self.chunked_last;
        }
        Ok(())
    }

    /// How the body is framed, once every field is read.
    fn body(&self) -> Result<Body, HttpError> {
        if self.transfer_encoding {
            return if self.content_length.is_some() {
                Err(HttpError::new(400, "both Transfer-Encoding and Content-Length"))
            } else if self.chunked_not_final {
                // RFC 9112 §6.3: the length cannot be determined reliably.
                Err(HttpError::new(
                    400,
                    "chunked is not the final transfer coding, or is repeated",
                ))
            } else if self.unknown_coding {
                Err(HttpError::new(501, "unsupported transfer coding"))
            } else {
                Ok(Body::Chunked)
            };
        }
        match self.content_length {
            Some(n) if n > MAX_BODY => Err(HttpError::new(413, "content too large")),
            Some(0) | None => Ok(Body::None),
            Some(n) => Ok(Body::Length(n)),
        }
    }
}

/// The non-empty elements of a comma-separated field value, trimmed.
fn list(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(trim).filter(|t| !t.is_empty())
}

/// `bytes` without leading and trailing OWS (SP, HTAB).
fn trim(bytes: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !ows(b));
    let end = bytes.iter().rposition(|b| !ows(b));
    match (start, end) {
        (Some(s), Some(e)) => &bytes[s..=e],
        _ => &[],
    }
}

/// A `Host` value (RFC 9110 §7.2: `uri-host [ ":" port ]`): empty (allowed
/// for an authority-less target) or the bytes of a reg-name, an IPv4 address
/// or a bracketed IP literal, with an optional decimal port. Whitespace,
/// `/`, `@`, `?`, `#` and control bytes are refused.
fn valid_host(value: &[u8]) -> bool {
    let value = trim(value);
    let (host, port) = match value.iter().rposition(|&b| b == b':') {
        // The colon of an IPv6 literal is inside the brackets.
        Some(i) if !value[i..].contains(&b']') => (&value[..i], Some(&value[i + 1..])),
        _ => (value, None),
    };
    let host_ok = match host {
        [b'[', inner @ .., b']'] => inner.iter().all(|&b| b.is_ascii_hexdigit() || b":.".contains(&b)),
        _ => host
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b)),
    };
    let port_ok = port.is_none_or(|p| p.iter().all(u8::is_ascii_digit));
    host_ok && port_ok && !(host.is_empty() && port.is_some())
}

/// A decimal length: digits only (no sign, no spaces), no overflow.
fn parse_decimal(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits
        .iter()
        .try_fold(0usize, |n, d| n.checked_mul(10)?.checked_add(usize::from(d - b'0')))
}
