//! The HTTP echo example's parsing and writing modules, compiled into this test
//! binary (`main.rs`) so their unit tests run under `cargo test` (an example
//! built as a test would not also be built as the binary that
//! `tests/examples/http_echo.rs` drives), and property tests of them.

use crate::{chunked, limits, request};
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

/// What decoding a chunked wire comes to.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The body, and the bytes of the wire it took.
    Body(Vec<u8>, usize),
    Refused(request::HttpError),
    /// The wire ended before the body did.
    Incomplete,
}

/// Decodes `wire` fed in pieces cut at `cuts` (ascending), the way the
/// connection feeds it: unconsumed bytes stay in front of the next read's.
fn decode_cut(wire: &[u8], cuts: &[usize]) -> Outcome {
    let mut dec = chunked::Chunked::new();
    let mut pending = Vec::new();
    let mut consumed = 0;
    let mut from = 0;
    for &to in cuts.iter().chain([&wire.len()]) {
        pending.extend_from_slice(&wire[from..to]);
        from = to;
        match dec.feed(&pending) {
            Ok(used) => {
                pending.drain(..used);
                consumed += used;
            }
            Err(e) => return Outcome::Refused(e),
        }
        if dec.is_done() {
            return Outcome::Body(dec.into_body(), consumed);
        }
    }
    Outcome::Incomplete
}

fn decode_whole(wire: &[u8]) -> Outcome {
    decode_cut(wire, &[])
}

fn refusal(wire: &[u8]) -> u16 {
    match decode_whole(wire) {
        Outcome::Refused(e) => e.status,
        other => panic!("{:?} not refused: {other:?}", String::from_utf8_lossy(wire)),
    }
}

/// How a chunk-size line is padded.
#[derive(Debug, Clone, Copy)]
enum Pad {
    /// With this many leading zeros.
    Zeros(usize),
    /// To this many bytes longer than its limit (negative: shorter), with
    /// leading zeros or with a long extension.
    OverLimit(isize, PadWith),
}

#[derive(Debug, Clone, Copy)]
enum PadWith {
    Zeros,
    Extension,
}

/// A chunk-size line: `size` in hex (upper or lower case), the extensions
/// (name, optional value; quoted when it is not a token), CRLF; padded.
fn size_line(size: usize, pad: Pad, upper: bool, exts: &[(String, Option<String>)]) -> Vec<u8> {
    let mut line = if upper {
        format!("{size:X}")
    } else {
        format!("{size:x}")
    };
    for (name, value) in exts {
        line.push_str(&format!(";{name}"));
        match value {
            Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric()) => line.push_str(&format!("={v}")),
            Some(v) => line.push_str(&format!(" = \"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))),
            None => {}
        }
    }
    let short = |over: isize, fixed: usize| (chunked::MAX_SIZE_LINE as isize + over - fixed as isize).max(0) as usize;
    match pad {
        Pad::Zeros(n) => line = "0".repeat(n) + &line,
        Pad::OverLimit(over, PadWith::Zeros) => line = "0".repeat(short(over, line.len() + 2)) + &line,
        Pad::OverLimit(over, PadWith::Extension) => {
            let n = short(over, line.len() + 2 + ";pad=".len());
            line = format!("{line};pad={}", "p".repeat(n));
        }
    }
    line.push_str("\r\n");
    line.into_bytes()
}

/// A chunk extension: a token name, maybe a value (a token, or any printable
/// text, which is sent quoted).
fn ext() -> impl Strategy<Value = (String, Option<String>)> {
    ("[a-zA-Z0-9!#$%&'*+.^_`|~-]{1,8}", prop::option::of("[ -~]{0,8}"))
}

/// A chunked wire with extensions, leading zeros, trailers, then a pipelined
/// request. Now and then a size line is padded to a few bytes around its limit,
/// up to `max_over` bytes over.
fn chunked_wire(max_over: isize) -> impl Strategy<Value = Vec<u8>> {
    let chunk = (
        prop::collection::vec(any::<u8>(), 1..40),
        prop_oneof![
            4 => (0usize..3).prop_map(Pad::Zeros),
            1 => (-3..=max_over, prop_oneof![Just(PadWith::Zeros), Just(PadWith::Extension)])
                .prop_map(|(over, with)| Pad::OverLimit(over, with)),
        ],
        any::<bool>(),
        prop::collection::vec(ext(), 0..3),
    );
    (
        prop::collection::vec(chunk, 0..4),
        prop::collection::vec(ext(), 0..2),
        prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,8}", "[ -~]{0,12}"), 0..3),
    )
        .prop_map(|(chunks, last_exts, trailers)| {
            let mut wire = Vec::new();
            for (data, pad, upper, exts) in chunks {
                wire.extend_from_slice(&size_line(data.len(), pad, upper, &exts));
                wire.extend_from_slice(&data);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(&size_line(0, Pad::Zeros(0), false, &last_exts));
            for (name, value) in trailers {
                wire.extend_from_slice(format!("{name}: {}\r\n", value.trim()).as_bytes());
            }
            wire.extend_from_slice(b"\r\nGET / HTTP/1.1\r\n\r\n");
            wire
        })
}

/// A chunked wire, then maybe broken: a byte replaced, inserted or removed,
/// from the bytes framing turns on.
fn maybe_broken_wire() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        prop::sample::select(b"\r\n\0 \t;=\"\\:0aZ@\x7f\x80".to_vec()),
        any::<u8>(),
    ];
    (chunked_wire(0), 0usize..3, any::<prop::sample::Index>(), byte).prop_map(|(mut wire, how, at, byte)| {
        let at = at.index(wire.len());
        match how {
            0 => wire[at] = byte,
            1 => wire.insert(at, byte),
            _ => {
                wire.remove(at);
            }
        }
        wire
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The decoder's verdict does not depend on how the wire is split across
    /// reads: valid or not, fed cut at any one point, cut at random points, or
    /// byte by byte, it decodes (or refuses, with the same reason) as it does
    /// fed whole.
    #[test]
    fn chunked_outcome_is_the_same_however_the_wire_is_split(
        wire in prop_oneof![chunked_wire(4), maybe_broken_wire()],
        mut cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let whole = decode_whole(&wire);
        for cut in 0..=wire.len() {
            prop_assert_eq!(&decode_cut(&wire, &[cut]), &whole, "cut at {}", cut);
        }
        let mut cuts: Vec<usize> = cuts.drain(..).map(|i| i.index(wire.len() + 1)).collect();
        cuts.sort_unstable();
        prop_assert_eq!(&decode_cut(&wire, &cuts), &whole, "cuts {:?}", cuts);
        let every: Vec<usize> = (1..wire.len()).collect();
        prop_assert_eq!(&decode_cut(&wire, &every), &whole, "byte by byte");
    }

    /// Valid wires, extensions, quoted values, leading zeros and trailers
    /// included, decode and stop before the pipelined request.
    #[test]
    fn valid_chunked_wires_decode(wire in chunked_wire(0)) {
        let next = b"GET / HTTP/1.1\r\n\r\n".len();
        match decode_whole(&wire) {
            Outcome::Body(_, used) => prop_assert_eq!(used, wire.len() - next),
            other => prop_assert!(false, "{:?}: {:?}", String::from_utf8_lossy(&wire), other),
        }
    }
}

/// Every line of chunked framing ends in CRLF: a bare LF in the size line (in
/// the size or inside an extension), after chunk data, in a trailer line or as
/// the final line is refused, as is a CR not followed by LF.
#[test]
fn chunked_bare_lf_and_lone_cr_are_refused() {
    let wires: [&[u8]; 14] = [
        b"5\nhello\r\n0\r\n\r\n",
        b"5;a\nhello\r\n0\r\n\r\n",
        b"5;a=b\nhello\r\n0\r\n\r\n",
        b"5;a=\"b\nc\"\r\nhello\r\n0\r\n\r\n",
        b"5;\n\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        b"5\r\nhello\r\n0\n\r\n",
        b"5\r\nhello\r\n0\r\nX-T: 1\n\r\n",
        b"5\r\nhello\r\n0\r\n\n",
        b"5\rhello\r\n0\r\n\r\n",
        b"5\r\nhello\rX0\r\n\r\n",
        b"5\r\nhello\r\n0\r\nX-T: 1\rX\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\rX",
        b"\n",
    ];
    for wire in wires {
        assert_eq!(refusal(wire), 400, "{:?}", String::from_utf8_lossy(wire));
    }
}

/// The size line's length limit holds whether the line arrives in one read or
/// split: leading zeros (accepted) can make an otherwise valid line too long.
#[test]
fn chunked_over_long_size_lines_are_refused_in_one_read_or_split() {
    let limit = chunked::MAX_SIZE_LINE;
    let line = |len: usize| {
        let mut l = "0".repeat(len - 3).into_bytes();
        l.extend_from_slice(b"5\r\n");
        l.extend_from_slice(b"hello\r\n0\r\n\r\n");
        l
    };
    let fits = line(limit);
    assert_eq!(decode_whole(&fits), Outcome::Body(b"hello".to_vec(), fits.len()));
    let long = line(limit + 1);
    for cuts in [
        vec![],
        vec![1],
        vec![limit / 2],
        vec![limit - 1],
        (1..long.len()).collect(),
    ] {
        match decode_cut(&long, &cuts) {
            Outcome::Refused(e) => assert_eq!((e.status, e.reason), (400, "chunk size line too long")),
            other => panic!("{} cuts: {other:?}", cuts.len()),
        }
    }
    // Long through its extensions, and never ending.
    let mut ext = b"5;".to_vec();
    ext.resize(limit + 10, b'a');
    ext.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
    assert_eq!(refusal(&ext), 400);
    assert_eq!(refusal(&vec![b'0'; limit + 1]), 400);
}

/// Chunk sizes: leading zeros are fine; an empty size, a size that overflows,
/// and bytes that are not hex digits are not.
#[test]
fn chunked_sizes_are_hex_digits_that_fit() {
    assert_eq!(
        decode_whole(b"000a\r\n0123456789\r\n00\r\n\r\n"),
        Outcome::Body(b"0123456789".to_vec(), 24)
    );
    assert_eq!(
        decode_whole(b"A\r\n0123456789\r\n0\r\n\r\n"),
        Outcome::Body(b"0123456789".to_vec(), 20)
    );
    for wire in [
        &b"\r\nhello\r\n0\r\n\r\n"[..],
        b";a=b\r\n",
        b" 5\r\n",
        b"+5\r\n",
        b"0x5\r\n",
        b"5g\r\n",
        b"10000000000000000\r\n",
        b"00000000000000000fffffffffffffffff\r\n",
    ] {
        assert_eq!(refusal(wire), 400, "{:?}", String::from_utf8_lossy(wire));
    }
    // Large but representable: over the body limit.
    assert_eq!(refusal(b"00000000000000000ffffffffffffffff\r\n"), 413);
}

/// Chunk extensions follow RFC 9112 §7.1.1: `;` name, optionally `=` and a
/// token or quoted string, with whitespace only around `;` and `=`. Controls
/// (NUL, CR, DEL, ...) and other stray bytes are refused.
#[test]
fn chunked_extensions_are_held_to_the_grammar() {
    for line in [
        &b"5;a"[..],
        b"5;a=b",
        b"5;a=b;c",
        b"5 ; a = b ; c",
        b"5\t;\ta\t=\t\"q \\\" \\\\ \t\x80\"",
        b"5;a=\"\";b=\"x\";c",
        b"5;!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~",
    ] {
        let mut wire = line.to_vec();
        wire.extend_from_slice(b"\r\nhello\r\n0;last=1\r\n\r\n");
        assert_eq!(
            decode_whole(&wire),
            Outcome::Body(b"hello".to_vec(), wire.len()),
            "{:?}",
            String::from_utf8_lossy(line)
        );
    }
    for line in [
        &b"5;"[..],
        b"5;;a",
        b"5;=b",
        b"5;a=",
        b"5;a b",
        b"5;a ",
        b"5;a=b ",
        b"5 ",
        b"5 a",
        b"5;a\0",
        b"5;a=b\0",
        b"5;a=\"b\0\"",
        b"5;a=\"b\x7f\"",
        b"5;a=\"b\\\n\"",
        b"5;a=\"b",
        b"5;a=\"b\"c",
        b"5;a@b",
        b"5;a=b@",
        b"5;a=b\"",
        b"5;a\x7f",
        b"5;a\r\r",
        b"5;a=b\rX",
        b"5;\xff",
    ] {
        let mut wire = line.to_vec();
        wire.extend_from_slice(b"\r\nhello\r\n0\r\n\r\n");
        assert_eq!(refusal(&wire), 400, "{:?}", String::from_utf8_lossy(line));
    }
}

/// Trailer fields are `name: value` lines: no colon, whitespace before the
/// colon, an obs-fold (a line starting with whitespace), an empty name and
/// controls in the value are refused.
#[test]
fn chunked_malformed_trailers_are_refused() {
    let ok = b"0\r\nX-A: 1\r\nX-B:\r\nX-C: a b\t\x80\r\n\r\n";
    assert_eq!(decode_whole(ok), Outcome::Body(vec![], ok.len()));
    for trailers in [
        &b"no colon\r\n"[..],
        b"X-A : 1\r\n",
        b"X-A\t: 1\r\n",
        b"X-A: 1\r\n folded\r\n",
        b"X-A: 1\r\n\tfolded\r\n",
        b" X-A: 1\r\n",
        b": 1\r\n",
        b"X-A: a\0b\r\n",
        b"X-A: a\x7fb\r\n",
        b"X@A: 1\r\n",
    ] {
        let mut wire = b"0\r\n".to_vec();
        wire.extend_from_slice(trailers);
        wire.extend_from_slice(b"\r\n");
        assert_eq!(refusal(&wire), 400, "{:?}", String::from_utf8_lossy(trailers));
    }
}

fn refused(head: &[u8]) -> u16 {
    match request::parse_head(head) {
        Err(e) => e.status,
        Ok(h) => panic!("{:?} accepted: {h:?}", String::from_utf8_lossy(head)),
    }
}

/// A request head whose lines end in a bare LF is refused, wherever the bare LF
/// is (request line, a field line, the empty line, a leading empty line), and
/// as soon as it has arrived: every prefix holding it is refused the same way.
#[test]
fn heads_with_bare_lf_are_refused_however_they_arrive() {
    let heads: [&[u8]; 6] = [
        b"GET / HTTP/1.1\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n\n",
        b"GET / HTTP/1.1\n\n",
        b"\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\nContent-Length: 3\r\n\r\nabc",
    ];
    for head in heads {
        let shown = String::from_utf8_lossy(head);
        let bare = (0..head.len())
            .find(|&i| head[i] == b'\n' && (i == 0 || head[i - 1] != b'\r'))
            .unwrap();
        for cut in 0..=head.len() {
            match request::parse_head(&head[..cut]) {
                Ok(None) => assert!(cut <= bare, "{shown:?} cut at {cut}"),
                Err(e) => {
                    assert!(cut > bare, "{shown:?} cut at {cut}");
                    assert_eq!((e.status, e.reason), (400, "bare LF in request head"), "{shown:?}");
                }
                Ok(Some(h)) => panic!("{shown:?} cut at {cut}: {h:?}"),
            }
        }
    }
    // CRLF throughout, leading empty lines included, and LFs in the body: fine.
    let ok = b"\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n\n\n";
    assert_eq!(request::parse_head(ok).unwrap().unwrap().body, request::Body::Length(2));
}

/// Other line-level ambiguities in the head: a CR not followed by LF,
/// whitespace between a field name and its colon, obs-fold (a line starting
/// with whitespace), here in and around the framing fields.
#[test]
fn heads_with_lone_cr_folds_or_spaced_names_are_refused() {
    for head in [
        &b"GET / HTTP/1.1\rHost: x\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nContent-Length: 3\rX: y\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length : 3\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip,\r\n\tchunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\n 0\r\n\r\n",
        b"POST / HTTP/1.1\r\n Transfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 3\0\r\n\r\n",
    ] {
        assert_eq!(refused(head), 400, "{:?}", String::from_utf8_lossy(head));
    }
}

/// Framing fields that disagree or that a proxy could read another way: 400;
/// a transfer coding the server does not implement: 501. Whichever field comes
/// first.
#[test]
fn ambiguous_framing_fields_are_refused() {
    let cases: [(&[u8], u16); 14] = [
        (b"Content-Length: 3\r\nContent-Length: 4\r\n", 400),
        (b"Content-Length: 3, 4\r\n", 400),
        (b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", 400),
        (b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", 400),
        (b"Transfer-Encoding: gzip\r\nContent-Length: 3\r\n", 400),
        (b"Content-Length: 0\r\nTransfer-Encoding: gzip, chunked\r\n", 400),
        (b"Transfer-Encoding: chunked, chunked\r\n", 400),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400),
        (b"Transfer-Encoding: chunked, gzip\r\n", 400),
        (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n", 400),
        (b"Transfer-Encoding: gzip\r\n", 501),
        (b"Transfer-Encoding: gzip, chunked\r\n", 501),
        (b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 501),
        (b"Transfer-Encoding: chunked;x=1\r\n", 501),
    ];
    for (fields, status) in cases {
        let mut head = b"POST / HTTP/1.1\r\nHost: x\r\n".to_vec();
        head.extend_from_slice(fields);
        head.extend_from_slice(b"\r\n");
        assert_eq!(refused(&head), status, "{:?}", String::from_utf8_lossy(fields));
        // A refusal for framing beats one for Expect.
        let mut with_expect = b"POST / HTTP/1.1\r\nExpect: nothing\r\n".to_vec();
        with_expect.extend_from_slice(fields);
        with_expect.extend_from_slice(b"\r\n");
        assert_eq!(refused(&with_expect), status, "{:?}", String::from_utf8_lossy(fields));
    }
    // Agreeing repeats, list syntax and case are fine.
    for (fields, body) in [
        (
            &b"Content-Length: 3\r\nContent-Length: 3\r\n"[..],
            request::Body::Length(3),
        ),
        (b"Content-Length: 3, 3\r\n", request::Body::Length(3)),
        (b"Transfer-Encoding: CHUNKED\r\n", request::Body::Chunked),
        (b"Transfer-Encoding: ,chunked ,\r\n", request::Body::Chunked),
    ] {
        let mut head = b"POST / HTTP/1.1\r\nHost: x\r\n".to_vec();
        head.extend_from_slice(fields);
        head.extend_from_slice(b"\r\n");
        assert_eq!(request::parse_head(&head).unwrap().unwrap().body, body);
    }
}

#[test]
fn descriptors_kept_spare_are_at_least_16_or_a_sixteenth() {
    assert_eq!(limits::spare_fds(256), 16);
    assert_eq!(limits::spare_fds(1024), 64);
    assert_eq!(limits::spare_fds(65536), 4096);
    assert_eq!(limits::spare_fds(8), 16);
    assert!(limits::default_max_conns() >= 1);
}

#[test]
fn slots_serve_up_to_the_cap_refuse_a_few_more_and_come_back_when_dropped() {
    let slots = limits::Slots::new(2);
    let a = slots.admit();
    let b = slots.admit();
    assert!(matches!(a, limits::Admission::Serve(_)));
    assert!(matches!(b, limits::Admission::Serve(_)));
    let refused: Vec<_> = std::iter::from_fn(|| match slots.admit() {
        limits::Admission::Refuse(slot) => Some(slot),
        _ => None,
    })
    .take(1 << 20)
    .collect();
    assert!(!refused.is_empty(), "nothing beyond the cap was answered 503");
    assert!(matches!(slots.admit(), limits::Admission::RefuseAtOnce));
    drop(a);
    let c = slots.admit();
    assert!(matches!(c, limits::Admission::Serve(_)));
    drop(refused);
    assert!(matches!(slots.admit(), limits::Admission::Refuse(_)));
}
