//! The execution trace: which G ran on which P when, who readied whom, where
//! Gs waited, when Ps stole work or sat idle; goro's `runtime/trace`, written
//! as Chrome Trace Event JSON that Perfetto's UI (<https://ui.perfetto.dev>)
//! and chrome://tracing open. docs/TRACE.md shows how to read one, and
//! `examples/trace_svg.rs` draws one without a browser.
//!
//! ```
//! let file = std::fs::File::create(std::env::temp_dir().join("goro-doc.json"))?;
//! goro::runtime::trace::start(std::io::BufWriter::new(file))?;
//! goro::go!(|| goro::time::sleep(std::time::Duration::from_millis(1))).join().unwrap();
//! goro::runtime::trace::stop()?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! `GORO_TRACE=path` traces a whole run into `path`, written out when the
//! process exits (from `main`, `std::process::exit`, or the deadlock report).
//!
//! Recording costs each M a time-stamp read and a store per event, into
//! buffers of its own (`trace_buf.rs`); the writer thread (`goro-trace`)
//! turns full buffers into JSON as they fill, so memory stays bounded (16 MiB
//! of buffers). Events that find no buffer are counted and the count is
//! written at the end of the trace (`"lost"`).
//!
//! Thread: `start` and `stop` serialise on [`WRITING`]; the writer thread owns
//! the JSON writer.

use super::monitor::trace_json::Json;
use super::sys::trace_buf::{self, Event, TRACER};
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

/// The trace being written: its writer thread.
static WRITING: Mutex<Option<Writing>> = Mutex::new(None);

struct Writing {
    writer: JoinHandle<io::Result<()>>,
}

/// What `stop` hands the writer thread: the events of the buffers' last
/// chunks.
static LAST: Mutex<Option<Vec<Vec<Event>>>> = Mutex::new(None);

/// How long the writer waits for a full buffer before it flushes what it wrote.
const WRITER_PAUSE: Duration = Duration::from_millis(100);

/// Starts tracing into `w` (buffer it: the trace is written a line per
/// event). The trace runs until [`stop`]; the runtime starts if it has not.
///
/// # Errors
/// `AlreadyExists` if a trace is being written; an error writing `w`'s first
/// bytes.
pub fn start(w: impl Write + Send + 'static) -> io::Result<()> {
    let mut writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    if writing.is_some() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "goro: a trace is already being written",
        ));
    }
    super::sched::state::sched();
    let tpu = trace_buf::ticks_per_us(2_000_000);
    let t0 = trace_buf::now();
    let mut json = Json::new(w, t0, tpu)?;
    for snap in super::task::g::all_gs().iter().filter_map(|g| g.snapshot()) {
        if let Some(name) = snap.name {
            json.set_name(snap.id, name);
        }
    }
    if !TRACER.begin() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "goro: a trace is already being written",
        ));
    }
    let writer = std::thread::Builder::new()
        .name("goro-trace".into())
        .spawn(move || write_out(json))
        .inspect_err(|_| {
            TRACER.end();
        })?;
    *writing = Some(Writing { writer });
    Ok(())
}

/// Stops tracing, writes out every recorded event and the trace's end, and
/// flushes the writer.
///
/// # Errors
/// `NotFound` if no trace is being written; the first error writing the trace.
pub fn stop() -> io::Result<()> {
    let mut writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(Writing { writer }) = writing.take() else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "goro: no trace is being written",
        ));
    };
    let last = TRACER.end();
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(last);
    {
        let _state = TRACER.lock();
        TRACER.ready.notify_all();
    }
    match writer.join() {
        Ok(result) => result,
        Err(_) => Err(io::Error::other("goro: the trace writer panicked")),
    }
}

/// The writer thread: JSON for each full chunk as it comes, then for the last
/// chunks that `stop` collected.
fn write_out<W: Write>(mut json: Json<W>) -> io::Result<()> {
    // The runtime's own: the deadlock check does not wait for it.
    let _runtime_thread = super::sys::os_threads::register();
    let mut failed: Option<io::Error> = None;
    loop {
        let (chunks, names) = {
            let mut state = TRACER.lock();
            while state.full.is_empty() && trace_buf::on() && state.names.is_empty() {
                state = TRACER
                    .ready
                    .wait_timeout(state, WRITER_PAUSE)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                if state.full.is_empty() && failed.is_none() {
                    drop(state);
                    if let Err(e) = json.flush() {
                        failed = Some(e);
                    }
                    state = TRACER.lock();
                }
            }
            (std::mem::take(&mut state.full), std::mem::take(&mut state.names))
        };
        for (g, name) in names {
            json.set_name(g, name);
        }
        for chunk in chunks {
            write_events(&mut json, chunk.events(), &mut failed);
            TRACER.recycle(chunk);
        }
        if !trace_buf::on() {
            if let Some(last) = LAST.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let rest = std::mem::take(&mut TRACER.lock().full);
                for chunk in rest {
                    write_events(&mut json, chunk.events(), &mut failed);
                    TRACER.recycle(chunk);
                }
                for events in last {
                    write_events(&mut json, events.into_iter(), &mut failed);
                }
                if let Some(e) = failed {
                    return Err(e);
                }
                json.finish(TRACER.lost.load(Ordering::Relaxed))?;
                return Ok(());
            }
        }
    }
}

/// Writes `events` unless writing already failed; the first error is kept.
fn write_events<W: Write>(json: &mut Json<W>, events: impl Iterator<Item = Event>, failed: &mut Option<io::Error>) {
    if failed.is_some() {
        return;
    }
    for ev in events {
        if let Err(e) = json.event(&ev) {
            *failed = Some(e);
            return;
        }
    }
}

/// `GORO_TRACE=path`: starts tracing into `path` at the runtime's start, and
/// arranges for the trace to be written out at the process's exit.
pub(crate) fn start_from_env() {
    let Some(path) = std::env::var_os("GORO_TRACE").filter(|p| !p.is_empty()) else {
        return;
    };
    let file = match std::fs::File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("goro: GORO_TRACE={}: {e}; not tracing", path.to_string_lossy());
            return;
        }
    };
    if let Err(e) = start(io::BufWriter::with_capacity(1 << 20, file)) {
        eprintln!("goro: GORO_TRACE: {e}");
        return;
    }
    extern "C" fn at_exit() {
        finish_at_exit();
    }
    // SAFETY: `at_exit` is a plain `extern "C"` function that never unwinds
    // (`finish_at_exit` catches what it calls).
    unsafe { libc::atexit(at_exit) };
}

/// Writes out a trace still running as the process exits (the `GORO_TRACE`
/// trace; the deadlock report and SIGQUIT exit through `exit` too).
fn finish_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Err(e) = stop() {
            if e.kind() != io::ErrorKind::NotFound {
                eprintln!("goro: writing the trace: {e}");
            }
        }
    });
}
