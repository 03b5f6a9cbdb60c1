//! The HTTP echo example's parsing and writing modules, compiled into this test
//! so their unit tests run under `cargo test` (an example built as a test would
//! not also be built as the binary that `tests/http_echo.rs` drives).
#![allow(dead_code)] // the example's main uses what this test does not

#[path = "../examples/http_echo/chunked.rs"]
mod chunked;
#[path = "../examples/http_echo/request.rs"]
mod request;
#[path = "../examples/http_echo/response.rs"]
mod response;

use proptest::prelude::*;

/// Chunked wire format of `body`, cut into chunks of the given sizes (cycled).
fn chunk_encode(body: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut wire = Vec::new();
    let mut rest = body;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].clamp(1, rest.len());
        wire.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        wire.extend_from_slice(&rest[..n]);
        wire.extend_from_slice(b"\r\n");
        rest = &rest[n..];
        i += 1;
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes: the head parser answers `Ok` or a refusal, never panics, and
    /// a refusal carries one of the statuses the server documents.
    #[test]
    fn head_parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        if let Err(e) = request::parse_head(&bytes) {
            prop_assert!([400, 413, 417, 431, 501].contains(&e.status), "{e}");
        }
    }

    /// A valid head survives being cut short: every prefix is "incomplete",
    /// the whole is parsed with the right length and framing.
    #[test]
    fn valid_heads_parse_and_their_prefixes_are_incomplete(
        path in "/[a-z0-9/]{0,40}",
        len in 0usize..5000,
        extra in prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,15}", "[ -~]{0,40}"), 0..8),
    ) {
        let mut head = format!("POST {path} HTTP/1.1\r\nHost: x\r\n");
        for (name, value) in &extra {
            let lower = name.to_ascii_lowercase();
            if ["content-length", "transfer-encoding", "connection", "expect"].contains(&lower.as_str()) {
                continue;
            }
            head.push_str(&format!("{name}: {}\r\n", value.trim()));
        }
        head.push_str(&format!("Content-Length: {len}\r\n\r\n"));
        let bytes = head.as_bytes();
        for cut in 0..bytes.len() {
            prop_assert_eq!(request::parse_head(&bytes[..cut]), Ok(None));
        }
        let parsed = request::parse_head(bytes).unwrap().unwrap();
        prop_assert_eq!(parsed.len, bytes.len());
        prop_assert_eq!(parsed.path, path);
        let expected = if len == 0 { request::Body::None } else { request::Body::Length(len) };
        prop_assert_eq!(parsed.body, expected);
        prop_assert!(parsed.keep_alive);
    }

    /// Chunked decoding gives back the body whatever the chunk sizes and however
    /// the wire is split across reads, and stops exactly at the body's end.
    #[test]
    fn chunked_round_trips_across_any_split(
        body in prop::collection::vec(any::<u8>(), 0..3000),
        sizes in prop::collection::vec(1usize..700, 1..6),
        split in 1usize..64,
        next in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let wire = chunk_encode(&body, &sizes);
        let mut all = wire.clone();
        all.extend_from_slice(&next);
        let mut dec = chunked::Chunked::new();
        let mut pending = Vec::new();
        let mut consumed = 0;
        for piece in all.chunks(split) {
            pending.extend_from_slice(piece);
            let used = dec.feed(&pending).unwrap();
            pending.drain(..used);
            consumed += used;
            if dec.is_done() {
                break;
            }
        }
        prop_assert!(dec.is_done());
        prop_assert_eq!(consumed, wire.len());
        prop_assert_eq!(dec.into_body(), body);
    }

    /// Random bytes fed to the chunked decoder: a body, a refusal, or "more
    /// please" — never a panic, never more output than input.
    #[test]
    fn chunked_decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let mut dec = chunked::Chunked::new();
        if let Ok(used) = dec.feed(&bytes) {
            prop_assert!(used <= bytes.len());
        }
    }
}

/// A head with `n` header fields besides `Host`.
fn head_with_fields(n: usize) -> Vec<u8> {
    let mut head = b"POST /echo HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..n {
        head.extend_from_slice(format!("X-Field-{i}: {i}\r\n").as_bytes());
    }
    head.extend_from_slice(b"Content-Length: 3\r\n\r\nabc");
    head
}

/// Heads with more fields than the parser's stack slots are parsed again with
/// the full allowance (the fields after the slots still count: here the
/// `Content-Length` that comes last); past the allowance of 100 fields, 431.
#[test]
fn heads_with_many_fields_parse_up_to_the_limit() {
    for n in [0, 22, 23, 24, 60, 98] {
        let buf = head_with_fields(n);
        let head = request::parse_head(&buf).unwrap().expect("complete");
        assert_eq!(head.body, request::Body::Length(3), "{n} extra fields");
        assert_eq!(head.len, buf.len() - 3);
        // Every strict prefix of the head is incomplete, not refused.
        assert_eq!(request::parse_head(&buf[..head.len - 1]), Ok(None), "{n} extra fields");
    }
    let err = request::parse_head(&head_with_fields(99)).unwrap_err();
    assert_eq!(err.status, 431);
}

/// Framing fields that are present but empty or blank are refused, alone or
/// beside the other framing field: a proxy in front could frame them another
/// way (request smuggling, RFC 9112 §6).
#[test]
fn empty_framing_fields_are_refused() {
    let heads: [&[u8]; 6] = [
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:   \r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \t \r\nContent-Length: 3\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ,\r\n\r\n",
    ];
    for h in heads {
        let err = request::parse_head(h).expect_err(&String::from_utf8_lossy(h));
        assert_eq!(err.status, 400, "{}", String::from_utf8_lossy(h));
    }
}

/// An HTTP/1.0 request with `Transfer-Encoding` is answered, then its
/// connection closed (RFC 9112 §6.1), even if it asks to keep it alive.
#[test]
fn http_1_0_with_transfer_encoding_closes() {
    let h = b"POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n";
    let head = request::parse_head(h).unwrap().expect("complete");
    assert!(!head.keep_alive);
    let h = b"POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n";
    assert!(request::parse_head(h).unwrap().expect("complete").keep_alive);
}
