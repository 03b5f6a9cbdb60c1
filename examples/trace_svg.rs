//! Turns a goro execution trace into an SVG timeline and prints a plain-text
//! summary: a picture of the scheduler without a browser.
//!
//! ```text
//! cargo run --release --example trace_svg -- TRACE.json [-o OUT.svg] [--from US --to US] [--width PX]
//! ```
//!
//! **Input**: the Chrome Trace Event JSON that goro's tracer writes (`GORO_TRACE=path`,
//! `trace::start/stop`): a JSON array of event objects, not sorted by time.
//! Timestamps (`ts`, `dur`, `args.ready_ts`) are microseconds from the trace start.
//! - `"ph":"M"` metadata: `process_name`; `thread_name` per track (tid 0..N-1 are
//!   the Ps, named `P<n>`; tid 10000+m is M m while in a blocking call; tid 20000 is
//!   `runtime`); `goro_trace` last, with `args.events` and `args.lost`. Other metadata
//!   is ignored.
//! - `"ph":"X"` slices: `"cat":"g"` is a G's run on a P, named `G<id>` or
//!   `G<id> <name>`, with `args.g`, `args.ready_ts` (when it became runnable),
//!   `args.end` (`park`, `yield`, `preempt`, `exit`, `blocking`) and, for `park`,
//!   `args.reason` (the wait reason). `"cat":"blocking"` is the same shape on an M's
//!   track: a G inside a blocking call.
//! - `"ph":"s"`/`"f"` flow arrows from a wake-up to the run it caused (counted).
//! - `"ph":"i"` instants: `steal` (`victim`, `count`), `netpoll` (`ready`), `timer`,
//!   `retake` (`p`, `why`), `global queue` (`count`), `P idle`, `P busy`, `M park`,
//!   `M wake`; others are counted and not drawn.
//!
//! A file cut short (no closing `]`, a trailing comma, a partial last object: what a
//! killed process leaves) is read up to its last complete event, and the summary says
//! what was dropped. Input that is not such an array, or whose fields have the wrong
//! types, is refused with a message and exit status 1; a bad command line exits 2.
//!
//! **Summary** (stdout): the span, Gs and slices seen, per-P utilisation (busy time
//! over the span) and slice count, steals, ready→running latency (a slice's `ts`
//! minus its `ready_ts`: Go's scheduler-latency profile, nearest-rank p50/p99/max),
//! time per wait reason (from a run ending in `park` to that G's next `ready_ts`;
//! Gs still parked at the end are counted as `open`), time in blocking calls, the
//! instants, lost events and any dropped tail. `--from`/`--to` restrict both the
//! summary and the picture to a window: slices are clipped to it, latencies and waits
//! are counted when the run (or the park) falls in it.
//!
//! **Picture** (default `TRACE.svg`): a time axis, one lane per P (a thinner one per
//! M blocking track that occurs) with each G's runs in a colour hashed from its id
//! (legend: the 10 Gs with the most running time), idle time left blank, steals as a
//! red mark on the thief's lane with a line from the victim's, and netpoll, timer and
//! retake events as ticks in rows under the lanes. Runs narrower than the drawing's
//! resolution are merged per lane and pixel column (drawn fainter when the column is
//! partly idle), so a million runs still make a small file of at most ~20k elements.

#[path = "trace_svg/parse.rs"]
mod parse;
#[path = "trace_svg/summary.rs"]
mod summary;
#[path = "trace_svg/svg.rs"]
mod svg;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: trace_svg TRACE.json [-o OUT.svg] [--from US --to US] [--width PX]";

/// The command line.
struct Args {
    input: PathBuf,
    output: Option<PathBuf>,
    from: Option<f64>,
    to: Option<f64>,
    width: u32,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut input = None;
    let mut args = Args {
        input: PathBuf::new(),
        output: None,
        from: None,
        to: None,
        width: 1600,
    };
    while let Some(a) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value"));
        match a.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "-o" | "--output" => args.output = Some(PathBuf::from(value(&a)?)),
            "--from" | "--to" => {
                let v = value(&a)?;
                let us = v
                    .parse::<f64>()
                    .ok()
                    .filter(|us| us.is_finite())
                    .ok_or_else(|| format!("{a} {v:?}: not a number of microseconds"))?;
                if a == "--from" {
                    args.from = Some(us);
                } else {
                    args.to = Some(us);
                }
            }
            "--width" => {
                let v = value(&a)?;
                args.width = v
                    .parse::<u32>()
                    .ok()
                    .filter(|w| (300..=100_000).contains(w))
                    .ok_or_else(|| format!("--width {v:?}: a whole number of pixels from 300 to 100000"))?;
            }
            flag if flag.starts_with('-') && flag.len() > 1 => return Err(format!("unknown option {flag}")),
            path if input.is_none() => input = Some(PathBuf::from(path)),
            extra => return Err(format!("one trace at a time ({extra:?} is a second one)")),
        }
    }
    args.input = input.ok_or("no trace file given")?;
    if let (Some(from), Some(to)) = (args.from, args.to) {
        if from >= to {
            return Err(format!("--from {from} must be before --to {to}"));
        }
    }
    Ok(args)
}

/// `TRACE.json` → `TRACE.svg`, never the input itself.
fn default_output(input: &Path) -> PathBuf {
    let out = input.with_extension("svg");
    if out == input {
        let mut name = input.as_os_str().to_owned();
        name.push(".svg");
        PathBuf::from(name)
    } else {
        out
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("trace_svg: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trace_svg: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let name = args.input.display().to_string();
    let bytes = std::fs::read(&args.input).map_err(|e| format!("cannot read {name}: {e}"))?;
    let trace = parse::parse(&bytes).map_err(|e| format!("{name}: {e}"))?;
    let (start, end) = trace.span().unwrap_or((0.0, 0.0));
    let from = args.from.unwrap_or(start);
    let to = args.to.unwrap_or(end);
    if from >= to && (args.from.is_some() || args.to.is_some()) {
        return Err(format!(
            "the window {} .. {} is empty (the trace spans {} .. {})",
            fmt_us(from),
            fmt_us(to),
            fmt_us(start),
            fmt_us(end)
        ));
    }
    let window = summary::Window { from, to };
    let summary = summary::Summary::new(&trace, &window);
    let output = args.output.clone().unwrap_or_else(|| default_output(&args.input));
    let file_name = args
        .input
        .file_name()
        .map_or(name.clone(), |n| n.to_string_lossy().into_owned());
    let picture = svg::render(&trace, &summary, &window, &file_name, args.width);
    std::fs::write(&output, &picture.text).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    let mut report = summary.report(&name, &trace);
    report.push_str(&format!(
        "svg: {} ({} bytes, {} elements)\n",
        output.display(),
        picture.text.len(),
        picture.elements
    ));
    // A reader that stops early (`trace_svg t.json | head`) is not an error.
    match std::io::stdout().lock().write_all(report.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("writing the summary: {e}")),
        _ => Ok(()),
    }
}

/// A duration in microseconds, in a unit that suits it: `12.5µs`, `3.250ms`, `1.500s`.
pub fn fmt_us(us: f64) -> String {
    let a = us.abs();
    if a < 1e3 {
        format!("{us:.1}µs")
    } else if a < 1e6 {
        format!("{:.3}ms", us / 1e3)
    } else {
        format!("{:.3}s", us / 1e6)
    }
}
