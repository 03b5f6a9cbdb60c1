//! `examples/trace_svg`, run as a user runs it on traces written here: the summary's
//! numbers on a small trace worked out by hand, a trace cut short read up to its last
//! complete event, a window, a 200k-run trace drawn within a bounded size, and bad
//! input refused with a message and exit status 1. Every SVG must be well-formed XML.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Two Ps over 0..1000 µs, events out of time order, as the recorder flushes them.
///
/// P0: G1 0..100 (park, chan receive), G3 100..300 (park, sleep), G2 300..400,
/// G1 420..500 (park, chan receive), G1 900..1000 (exit): busy 580.
/// P1: G2 10..200, G1 250..300 (into a blocking call 300..400 on M3), G3 600..700
/// (park, chan receive, never readied again): busy 340.
/// Latencies (ts − ready_ts): 0 10 100 20 40 | 5 20 100.
/// Waits: G1 chan receive 100→230 and 500→860 (130 + 360), G3 sleep 300→500 (200),
/// G3 chan receive from 700: still open.
const SMALL: &str = r#"[
{"ph":"M","name":"process_name","pid":1,"args":{"name":"goro"}},
{"ph":"M","name":"thread_name","pid":1,"tid":0,"args":{"name":"P0"}},
{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"P1"}},
{"ph":"M","name":"thread_name","pid":1,"tid":10003,"args":{"name":"M3 blocking"}},
{"ph":"M","name":"thread_name","pid":1,"tid":20000,"args":{"name":"runtime"}},
{"ph":"M","name":"thread_sort_index","pid":1,"tid":0,"args":{"sort_index":0}},
{"ph":"X","cat":"g","name":"G3 <fetch & \"parse\">","pid":1,"tid":0,"ts":100,"dur":200,"args":{"g":3,"m":1,"ready_ts":90,"end":"park","reason":"sleep"}},
{"ph":"X","cat":"g","name":"G1 main","pid":1,"tid":0,"ts":0,"dur":100,"args":{"g":1,"m":1,"ready_ts":0,"end":"park","reason":"chan receive"}},
{"ph":"X","cat":"g","name":"G2 worker","pid":1,"tid":1,"ts":10,"dur":190,"args":{"g":2,"m":2,"ready_ts":5,"end":"yield"}},
{"ph":"X","cat":"g","name":"G1 main","pid":1,"tid":1,"ts":250,"dur":50,"args":{"g":1,"m":3,"ready_ts":230,"end":"blocking"}},
{"ph":"X","cat":"blocking","name":"G1 blocking","pid":1,"tid":10003,"ts":300,"dur":100,"args":{"g":1,"m":3}},
{"ph":"X","cat":"g","name":"G2 worker","pid":1,"tid":0,"ts":300,"dur":100,"args":{"g":2,"m":1,"ready_ts":200,"end":"preempt"}},
{"ph":"X","cat":"g","name":"G1 main","pid":1,"tid":0,"ts":900,"dur":100,"args":{"g":1,"m":1,"ready_ts":860,"end":"exit"}},
{"ph":"X","cat":"g","name":"G3 <fetch & \"parse\">","pid":1,"tid":1,"ts":600,"dur":100,"args":{"g":3,"m":2,"ready_ts":500,"end":"park","reason":"chan receive"}},
{"ph":"i","s":"t","pid":1,"tid":1,"ts":5,"name":"steal","args":{"victim":0,"count":2}},
{"ph":"i","s":"t","pid":1,"tid":20000,"ts":850,"name":"netpoll","args":{"ready":1}},
{"ph":"i","s":"t","pid":1,"tid":20000,"ts":500,"name":"timer","args":{"g":3}},
{"ph":"i","s":"t","pid":1,"tid":20000,"ts":350,"name":"retake","args":{"p":1,"why":"syscall"}},
{"ph":"i","s":"t","pid":1,"tid":0,"ts":95,"name":"global queue","args":{"count":3}},
{"ph":"i","s":"t","pid":1,"tid":1,"ts":200,"name":"P idle"},
{"ph":"i","s":"t","pid":1,"tid":1,"ts":210,"name":"gc pause"},
{"ph":"s","cat":"ready","name":"ready","id":1,"pid":1,"tid":0,"ts":90},
{"ph":"f","bp":"e","cat":"ready","name":"ready","id":1,"pid":1,"tid":0,"ts":100},
{"ph":"s","cat":"ready","name":"ready","id":2,"pid":1,"tid":20000,"ts":860},
{"ph":"f","bp":"e","cat":"ready","name":"ready","id":2,"pid":1,"tid":0,"ts":900},
{"ph":"X","cat":"g","name":"G1 main","pid":1,"tid":0,"ts":420,"dur":80,"args":{"g":1,"m":1,"ready_ts":400,"end":"park","reason":"chan receive"}},
{"ph":"M","name":"goro_trace","pid":1,"args":{"events":27,"lost":0}}
]
"#;

/// A fresh folder for one test's files, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("goro-trace-svg-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(common::example_bin("trace_svg"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs the tool on `trace` writing `svg`; it must succeed. Returns the summary
/// with runs of spaces collapsed, and the SVG.
fn summarise(trace: &Path, svg: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec![trace.as_os_str(), "-o".as_ref(), svg.as_os_str()];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    let out = run(&args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summary = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n");
    (summary, std::fs::read_to_string(svg).unwrap())
}

fn has_line(summary: &str, line: &str) {
    assert!(summary.lines().any(|l| l == line), "no line {line:?} in:\n{summary}");
}

/// Checks that `svg` is well-formed XML (one root, balanced tags, quoted attributes,
/// no stray `<` or `&`) and returns its element count.
fn check_xml(svg: &str) -> usize {
    fn check_text(text: &str) {
        let mut rest = text;
        while let Some(amp) = rest.find('&') {
            let after = &rest[amp + 1..];
            let semi = after.find(';').unwrap_or_else(|| panic!("bare & in {text:?}"));
            let entity = &after[..semi];
            let known = ["amp", "lt", "gt", "quot", "apos"].contains(&entity)
                || entity
                    .strip_prefix('#')
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
            assert!(known, "bad entity &{entity}; in {text:?}");
            rest = &after[semi + 1..];
        }
    }
    let mut rest = svg.trim_start();
    if let Some(r) = rest.strip_prefix("<?xml") {
        rest = &r[r.find("?>").expect("unterminated XML declaration") + 2..];
    }
    let (mut stack, mut elements, mut roots) = (Vec::<&str>::new(), 0, 0);
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        assert!(
            !stack.is_empty() || text.trim().is_empty(),
            "text outside the root: {text:?}"
        );
        check_text(text);
        rest = &rest[lt + 1..];
        if let Some(r) = rest.strip_prefix('/') {
            let gt = r.find('>').expect("unterminated end tag");
            assert_eq!(stack.pop(), Some(r[..gt].trim()), "mismatched end tag");
            rest = &r[gt + 1..];
            continue;
        }
        let name_len = rest
            .find(|c: char| c.is_whitespace() || c == '/' || c == '>')
            .expect("unterminated tag");
        let name = &rest[..name_len];
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || "-_:.".contains(c)),
            "bad tag name {name:?}"
        );
        rest = &rest[name_len..];
        // Attributes: name="value" pairs, then `>` or `/>`.
        let self_closing = loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix("/>") {
                rest = r;
                break true;
            }
            if let Some(r) = rest.strip_prefix('>') {
                rest = r;
                break false;
            }
            let eq = rest.find('=').expect("attribute without a value");
            let attr = rest[..eq].trim();
            assert!(
                !attr.is_empty() && attr.chars().all(|c| c.is_alphanumeric() || "-_:".contains(c)),
                "bad attribute name {attr:?} in <{name}>"
            );
            let r = rest[eq + 1..].trim_start();
            let quote = r.chars().next().filter(|&q| q == '"' || q == '\'');
            let quote = quote.unwrap_or_else(|| panic!("unquoted attribute {attr} in <{name}>"));
            let end = r[1..].find(quote).expect("unterminated attribute value") + 1;
            let value = &r[1..end];
            assert!(!value.contains('<'), "< in attribute {attr}");
            check_text(value);
            rest = &r[end + 1..];
        };
        if stack.is_empty() {
            roots += 1;
        }
        elements += 1;
        if !self_closing {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed tags: {stack:?}");
    assert!(rest.trim().is_empty(), "text after the root");
    assert_eq!(roots, 1, "an XML document has one root element");
    elements
}

#[test]
fn small_trace_summary_has_the_numbers_worked_out_by_hand() {
    let dir = TempDir::new("small");
    let trace = dir.write("small.json", SMALL);
    let (summary, svg) = summarise(&trace, &dir.0.join("small.svg"), &[]);
    assert!(summary.starts_with("trace: "), "{summary}");
    let first = summary.lines().next().unwrap();
    let want = format!("small.json: 27 events, {} bytes, closed with `]`", SMALL.len());
    assert!(first.ends_with(&want), "{first}");
    has_line(&summary, "span: 0.0µs .. 1.000ms (1.000ms)");
    has_line(
        &summary,
        "Gs seen: 3; G slices: 8 (park 4, yield 1, preempt 1, exit 1, blocking 1); blocking-call slices: 1",
    );
    has_line(&summary, "P0 580.0µs / 1.000ms 58.0% 5 slices");
    has_line(&summary, "P1 340.0µs / 1.000ms 34.0% 3 slices");
    has_line(&summary, "steals: 1, Gs moved 2");
    // Sorted: 0 5 10 20 20 40 100 100; nearest rank: p50 the 4th, p99 the 8th.
    has_line(
        &summary,
        "ready→running latency (8 runs): p50 20.0µs p99 100.0µs max 100.0µs",
    );
    has_line(&summary, "reason total count mean max open");
    has_line(&summary, "chan receive 490.0µs 2 245.0µs 360.0µs 1");
    has_line(&summary, "sleep 200.0µs 1 200.0µs 200.0µs 0");
    let order = |s: &str| summary.find(s).unwrap();
    assert!(
        order("chan receive 490") < order("sleep 200"),
        "by total, largest first"
    );
    has_line(&summary, "blocking calls: 1, total 100.0µs, max 100.0µs");
    has_line(
        &summary,
        "instants: netpoll 1 (Gs ready 1), timer 1, retake 1 (syscall 1), global queue 1 (Gs 3), \
         P idle 1, P busy 0, M park 0, M wake 0",
    );
    has_line(&summary, "other instants: \"gc pause\" 1");
    has_line(
        &summary,
        "wake-up arrows: 2 starts, 2 ends, 0 unmatched in the whole trace",
    );
    has_line(&summary, "lost events: 0 (the recorder wrote 27)");
    has_line(&summary, "dropped: nothing");

    let elements = check_xml(&svg);
    assert!(summary.ends_with("elements)"), "{summary}");
    assert!(summary.contains(&format!(", {elements} elements)")), "{summary}");
    assert!(
        svg.contains("small.json — 0.0µs .. 1.000ms"),
        "title with file and span"
    );
    for label in [">P0<", ">P1<", ">M3 blocking<", ">netpoll<", ">timer<", ">retake<"] {
        assert!(svg.contains(label), "no lane or row {label}");
    }
    // One rectangle with a tooltip per run: 8 on Ps, 1 in the blocking call.
    assert_eq!(svg.matches("<title>G").count(), 9);
    assert!(svg.contains("G1 main on P0: 80.0µs from 420.0µs, park (chan receive)"));
    // The legend: G1 ran longest (100 + 50 + 100 + 80).
    assert!(svg.contains(">G1 main 330.0µs<"), "legend");
    assert!(svg.contains("1 steals, 2 Gs moved"), "steal mark");
    assert!(
        svg.contains("G3 &lt;fetch &amp; &quot;parse&quot;&gt; on P1"),
        "names escaped"
    );
}

#[test]
fn a_window_clips_runs_and_counts_what_falls_in_it() {
    let dir = TempDir::new("window");
    let trace = dir.write("small.json", SMALL);
    let (summary, svg) = summarise(
        &trace,
        &dir.0.join("w.svg"),
        &["--from", "0", "--to", "500", "--width", "800"],
    );
    has_line(
        &summary,
        "span: 0.0µs .. 500.0µs (500.0µs); a window of a trace spanning 0.0µs .. 1.000ms",
    );
    // P0: 100 + 200 + 100 + 80; P1: 190 + 50.
    has_line(&summary, "P0 480.0µs / 500.0µs 96.0% 4 slices");
    has_line(&summary, "P1 240.0µs / 500.0µs 48.0% 2 slices");
    // Runs starting in it: latencies 0 5 10 20 20 100.
    has_line(
        &summary,
        "ready→running latency (6 runs): p50 10.0µs p99 100.0µs max 100.0µs",
    );
    // The park at 500 ends in the window; G1's next ready is at 860.
    has_line(&summary, "chan receive 490.0µs 2 245.0µs 360.0µs 0");
    check_xml(&svg);
    assert!(svg.contains(r#"width="800""#));
}

#[test]
fn a_trace_cut_short_is_read_up_to_its_last_complete_event() {
    let dir = TempDir::new("cut");
    // Cut inside the last run (G1 420..500): no footer, no `]`, a partial object.
    let cut_at = SMALL
        .find(r#"{"ph":"X","cat":"g","name":"G1 main","pid":1,"tid":0,"ts":420"#)
        .unwrap()
        + 40;
    let trace = dir.write("cut.json", &SMALL[..cut_at]);
    let (summary, svg) = summarise(&trace, &dir.0.join("cut.svg"), &[]);
    assert!(summary
        .lines()
        .next()
        .unwrap()
        .ends_with(&format!("cut.json: 25 events, {cut_at} bytes, cut short")));
    has_line(
        &summary,
        "dropped: 40 bytes at the end (1 partial event; the file is cut short)",
    );
    has_line(&summary, "lost events: unknown: trace cut short");
    has_line(&summary, "P0 500.0µs / 1.000ms 50.0% 4 slices");
    // G1's park at 100 is followed by its run at 250 (ready 230); G3's at 700 is open.
    has_line(&summary, "chan receive 130.0µs 1 130.0µs 130.0µs 1");
    check_xml(&svg);

    // Cut right after a comma, and with only the `]` missing: nothing is dropped.
    let comma = SMALL.rfind(",\n").unwrap() + 1;
    for (name, text) in [
        ("comma.json", &SMALL[..comma]),
        ("open.json", SMALL.trim_end().trim_end_matches(']')),
    ] {
        let trace = dir.write(name, text);
        let (summary, svg) = summarise(&trace, &dir.0.join("c.svg"), &[]);
        has_line(&summary, "dropped: nothing, but the file ends without `]`");
        has_line(&summary, "P0 580.0µs / 1.000ms 58.0% 5 slices");
        check_xml(&svg);
    }
}

#[test]
fn two_hundred_thousand_runs_make_a_small_svg() {
    use std::fmt::Write as _;
    const RUNS: usize = 200_000;
    const PS: usize = 4;
    let dir = TempDir::new("big");
    let mut text = String::from("[\n");
    for p in 0..PS {
        let _ = writeln!(
            text,
            r#"{{"ph":"M","name":"thread_name","pid":1,"tid":{p},"args":{{"name":"P{p}"}}}},"#
        );
    }
    let reasons = ["chan receive", "select", "sleep", "IO wait"];
    for i in 0..RUNS {
        // Run k of each P at 2k µs for 1 µs, made runnable i % 10 µs before.
        let (p, ts, g) = (i % PS, (i / PS) as f64 * 2.0, i % 1000 + 1);
        let _ = writeln!(
            text,
            r#"{{"ph":"X","cat":"g","name":"G{g}","tid":{p},"ts":{ts},"dur":1,"args":{{"g":{g},"ready_ts":{},"end":"park","reason":"{}"}}}},"#,
            ts - (i % 10) as f64,
            reasons[i % 4]
        );
        if i % 50 == 0 {
            let _ = writeln!(
                text,
                r#"{{"ph":"i","s":"t","tid":{p},"ts":{ts},"name":"steal","args":{{"victim":{},"count":1}}}},"#,
                (p + 1) % PS
            );
        }
    }
    text.push_str(r#"{"ph":"M","name":"goro_trace","pid":1,"args":{"events":204004,"lost":0}}]"#);
    let trace = dir.write("big.json", &text);
    let (summary, svg) = summarise(&trace, &dir.0.join("big.svg"), &[]);
    has_line(
        &summary,
        "Gs seen: 1000; G slices: 200000 (park 200000); blocking-call slices: 0",
    );
    has_line(&summary, "P0 50.000ms / 99.999ms 50.0% 50000 slices");
    has_line(&summary, "steals: 4000, Gs moved 4000");
    // 20000 runs each at 0..=9 µs: the 100000th is the last 4, the 198000th a 9.
    has_line(
        &summary,
        "ready→running latency (200000 runs): p50 4.0µs p99 9.0µs max 9.0µs",
    );
    let elements = check_xml(&svg);
    assert!(elements <= 20_000, "{elements} elements");
    assert!(svg.len() <= 2 << 20, "{} bytes", svg.len());
}

#[test]
fn bad_input_is_refused_with_a_message_and_status_1() {
    let dir = TempDir::new("bad");
    let cases: [(&str, &[u8], &str); 10] = [
        (
            "words.json",
            b"hello world",
            "not a trace: expected a JSON array of events (`[`) at line 1, column 1",
        ),
        (
            "object.json",
            br#"{"traceEvents":[]}"#,
            "not a trace: expected a JSON array",
        ),
        ("empty.json", b"", "empty: not a trace"),
        ("binary.json", &[0, 159, 146, 150], "found byte 0x00"),
        (
            "syntax.json",
            b"[\n{\"ph\":\"X\",,}\n]",
            "not valid JSON at line 2, column 11",
        ),
        (
            "numbers.json",
            b"[1,2]",
            "event 1 at line 1, column 2: not an object but a number (1)",
        ),
        (
            "ts.json",
            b"[\n{\"ph\":\"M\",\"name\":\"x\"},\n{\"ph\":\"X\",\"cat\":\"g\",\"tid\":0,\"ts\":\"12\",\"dur\":3}]",
            "event 2 at line 3, column 1: `ts` must be a number, found a string (\"12\")",
        ),
        (
            "g.json",
            b"[{\"ph\":\"X\",\"cat\":\"g\",\"tid\":0,\"ts\":1,\"dur\":3,\"args\":{\"g\":-4}}]",
            "`args.g` must be a non-negative integer, found a number (-4)",
        ),
        (
            "huge.json",
            b"[{\"ph\":\"X\",\"cat\":\"g\",\"tid\":0,\"ts\":1e308,\"dur\":3,\"args\":{\"g\":4}}]",
            "`ts` must be a time within 31 years (in µs), found a number (1e+308)",
        ),
        ("after.json", b"[] []", "data after the closing `]` at line 1, column 4"),
    ];
    for (name, contents, message) in cases {
        let trace = dir.write(name, contents);
        let out = run(&[trace.as_os_str(), "-o".as_ref(), dir.0.join("x.svg").as_os_str()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.starts_with("trace_svg: ") && stderr.contains(message),
            "{name}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(!dir.0.join("x.svg").exists(), "{name}: no picture of bad input");
    }
    let missing = run(&[dir.0.join("missing.json").as_os_str()]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
    // A bad command line is a usage error.
    let trace = dir.write("ok.json", SMALL);
    for args in [
        &["--width", "ten"][..],
        &["--from", "9", "--to", "3"],
        &["--colour"],
        &[],
    ] {
        let mut argv: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        if !args.is_empty() {
            argv.insert(0, trace.as_os_str());
        }
        let out = run(&argv);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("usage: trace_svg"), "{args:?}: {stderr}");
    }
}
