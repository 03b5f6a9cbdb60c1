//! Writing responses: status line, the fixed headers (`Date`, `Content-Length`,
//! `Content-Type`, `Connection: close` when closing) and the body, appended to
//! the connection's output buffer so pipelined responses go out in one write.

use std::cell::RefCell;

/// A response about to be written.
pub struct Response<'a> {
    pub status: u16,
    pub content_type: &'static str,
    pub body: &'a [u8],
    /// Extra header lines, each ending in CRLF (e.g. `Allow: ...\r\n`).
    pub extra: &'static str,
}

impl<'a> Response<'a> {
    pub fn new(status: u16, content_type: &'static str, body: &'a [u8]) -> Self {
        Response {
            status,
            content_type,
            body,
            extra: "",
        }
    }

    pub fn text(status: u16, body: &'a str) -> Self {
        Response::new(status, "text/plain; charset=utf-8", body.as_bytes())
    }

    /// Appends the response to `out`; `head_only` answers a HEAD request (the
    /// headers of the GET, without its body).
    pub fn write_to(&self, out: &mut Vec<u8>, keep_alive: bool, head_only: bool) {
        // Plain appends: `write!` through `fmt` cost more than the rest of the head.
        let mut num = [0; 20]; // room for any u64 in decimal
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(decimal(self.status.into(), &mut num));
        out.push(b' ');
        out.extend_from_slice(reason(self.status).as_bytes());
        out.extend_from_slice(b"\r\nDate: ");
        write_date(out);
        out.extend_from_slice(b"\r\nContent-Type: ");
        out.extend_from_slice(self.content_type.as_bytes());
        out.extend_from_slice(b"\r\nContent-Length: ");
        out.extend_from_slice(decimal(self.body.len() as u64, &mut num));
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(self.extra.as_bytes());
        if !keep_alive {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        if !head_only {
            out.extend_from_slice(self.body);
        }
    }
}

/// `n` in decimal, written into the end of `buf`.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// The interim response a client sending `Expect: 100-continue` waits for.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The reason phrase of a status the server sends (RFC 9110, and RFC 6585
/// for 431).
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        417 => "Expectation Failed",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

goro::local! {
    /// The `Date` value of the current second, per goroutine (formatting it for
    /// every response would cost more than the rest of the head). A goroutine
    /// local, not a thread local: a goroutine may move to another thread at
    /// each wait (docs/decisions/0001-thread-local-rule.md).
    static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

/// Appends now as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), cached per
/// second and goroutine.
fn write_date(out: &mut Vec<u8>) {
    let secs = unix_seconds();
    DATE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.0 != secs {
            *cache = (secs, imf_fixdate(secs));
        }
        out.extend_from_slice(cache.1.as_bytes());
    });
}

/// Seconds since the Unix epoch from the coarse real-time clock: the last
/// kernel tick's time, read from memory without a time-stamp-counter read; a
/// `Date` header needs only the second.
fn unix_seconds() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    if r == 0 {
        u64::try_from(ts.tv_sec).unwrap_or(0)
    } else {
        0
    }
}

fn imf_fixdate(unix_secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_secs / 86_400;
    let secs = unix_secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[month as usize - 1],
        year,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01, by the
/// proleptic Gregorian calendar (Howard Hinnant's days-to-civil algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_match_known_instants() {
        assert_eq!(imf_fixdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(imf_fixdate(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(imf_fixdate(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(imf_fixdate(1_795_219_199), "Fri, 20 Nov 2026 23:59:59 GMT");
    }

    #[test]
    fn decimals_of_edge_values() {
        let mut buf = [0; 20];
        for n in [0, 7, 10, 99, 100, 1_048_576, u64::MAX] {
            assert_eq!(decimal(n, &mut buf), n.to_string().as_bytes());
        }
    }

    /// Every status the server's sources answer with (a literal after
    /// `HttpError::new(`, `Response::text(`, `Response::new(` or `Err(`) has
    /// its registered reason phrase.
    #[test]
    fn every_status_sent_has_its_reason_phrase() {
        const REGISTERED: [(u16, &str); 12] = [
            (200, "OK"),
            (400, "Bad Request"),
            (404, "Not Found"),
            (405, "Method Not Allowed"),
            (408, "Request Timeout"),
            (409, "Conflict"),
            (413, "Content Too Large"),
            (417, "Expectation Failed"),
            (431, "Request Header Fields Too Large"),
            (500, "Internal Server Error"),
            (501, "Not Implemented"),
            (503, "Service Unavailable"),
        ];
        for (status, phrase) in REGISTERED {
            assert_eq!(reason(status), phrase, "status {status}");
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut files = vec![root.join("http_echo.rs")];
        for entry in std::fs::read_dir(root.join("http_echo")).unwrap() {
            files.push(entry.unwrap().path());
        }
        let mut sent = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for call in ["HttpError::new(", "Response::text(", "Response::new(", "Err("] {
                for (at, _) in text.match_indices(call) {
                    let rest = &text.as_bytes()[at + call.len()..];
                    if rest.len() > 3 && rest[..3].iter().all(u8::is_ascii_digit) && !rest[3].is_ascii_digit() {
                        let status: u16 = std::str::from_utf8(&rest[..3]).unwrap().parse().unwrap();
                        sent.push((status, file.display().to_string()));
                    }
                }
            }
        }
        assert!(sent.iter().any(|(s, _)| *s == 503), "the scan found the statuses");
        for (status, file) in sent {
            assert!(
                REGISTERED.iter().any(|(s, _)| *s == status),
                "{file} answers {status}, which has no reason phrase here"
            );
        }
    }

    #[test]
    fn head_only_keeps_the_length_and_drops_the_body() {
        let mut out = Vec::new();
        Response::text(200, "hi").write_to(&mut out, false, true);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(text.contains("Content-Length: 2\r\n"));
        assert!(text.ends_with("Connection: close\r\n\r\n"));
    }
}
