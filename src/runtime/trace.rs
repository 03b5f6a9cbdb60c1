//! The execution trace: which G ran on which P when, who readied whom, where
//! Gs waited, when Ps stole work or sat idle; goro's `runtime/trace`, written
//! as Chrome Trace Event JSON that Perfetto's UI (<https://ui.perfetto.dev>)
//! and chrome://tracing open. docs/TRACE.md shows how to read one, and
//! `examples/trace_svg.rs` draws one without a browser.
//!
//! ```
//! let file = std::fs::File::create(std::env::temp_dir().join("goro-doc.json"))?;
//! goro::runtime::trace::start(file)?;
//! goro::go!(|| goro::time::sleep(std::time::Duration::from_millis(1))).join().unwrap();
//! goro::runtime::trace::stop()?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! `GORO_TRACE=path` traces a whole run into `path`, written out when the
//! process exits (from `main`, `std::process::exit`, or the deadlock report).
//! That file stops at the soft `RLIMIT_FSIZE` (`sys/file_size.rs`): the trace
//! is cut there and the exit reports `File too large`, where the kernel would
//! have killed the process with `SIGXFSZ`.
//!
//! Recording costs each M a store per event into buffers of its own, and a
//! time-stamp read per G switch and per wake-up (`sys/trace_buf.rs`). The
//! writer thread (`goro-trace`) appends full buffers, raw, to an unnamed spill file (`sys/trace_spill.rs`)
//! and turns them into JSON when the trace stops, so the program shares no
//! CPU with JSON formatting while it is traced; memory stays bounded (16 MiB
//! of buffers). Where no spill file can be made, or once it cannot grow (a
//! full disk, `RLIMIT_FSIZE`), the writer formats as the buffers fill, after
//! what the file held. A thread that finds every buffer full waits for the
//! writer; once one has waited a second (a writer stuck behind a disk), every
//! event of that trace that finds no buffer is dropped at once, counted, and
//! the count written at the end of the trace (`"lost"`).
//!
//! Thread: `start` and `stop` serialise on `WRITING`; the writer thread owns
//! the JSON writer and the spill file.

use super::monitor::trace_json::Json;
use super::proc::p::PStatus;
use super::sys::file_size::Capped;
use super::sys::trace_buf::{self, Chunk, Event, TRACER, WRITER_PERIOD};
use super::sys::trace_spill::Spill;
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// The trace being written: its writer thread.
static WRITING: Mutex<Option<Writing>> = Mutex::new(None);

struct Writing {
    writer: JoinHandle<io::Result<()>>,
}

/// Starts tracing into `w`. The trace runs until [`stop`]; the runtime starts
/// if it has not.
///
/// # Errors
/// `AlreadyExists` if a trace is being written; an error writing `w`'s first
/// bytes.
pub fn start(w: impl Write + Send + 'static) -> io::Result<()> {
    // The runtime first: its start may begin the `GORO_TRACE` trace, which
    // takes `WRITING` itself.
    super::boot::started();
    let mut writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    if writing.is_some() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "goro: a trace is already being written",
        ));
    }
    let tpu = trace_buf::ticks_per_us(2_000_000);
    let t0 = trace_buf::now();
    let mut json = Json::new(w, t0, tpu)?;
    for snap in super::task::g::all_gs()
        .iter()
        .filter_map(|g| super::task::g::snapshot(g))
    {
        if let Some(name) = snap.name {
            json.set_name(snap.id, name);
        }
    }
    let spill = Spill::create().ok();
    if !TRACER.begin() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "goro: a trace is already being written",
        ));
    }
    record_running(t0);
    let writer = std::thread::Builder::new()
        .name("goro-trace".into())
        .spawn(move || write_out(json, spill))
        .inspect_err(|_| TRACER.end())?;
    *writing = Some(Writing { writer });
    Ok(())
}

/// Records, for each M running a G as the trace starts, that G as running
/// since `t0` (`Kind::Running`): a G that runs through the whole trace
/// records no event of its own. A status read as the M switches may be
/// stale; the M's own events then tell (`trace_json`).
fn record_running(t0: u64) {
    let ms = super::proc::state::sched()
        .allm
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for m in ms {
        let g = m.curg();
        if g == 0 {
            continue;
        }
        // The P it still holds: one taken meanwhile (sysmon, a resize) stays
        // in the M's record until its G switches out.
        let held = m.p().filter(|p| {
            let st = p.state();
            st.status() == PStatus::Running && st.m().is_some_and(|owner| std::ptr::eq(owner, m))
        });
        let p = held.map_or(trace_buf::NO_P, |p| u16::try_from(p.id).unwrap_or(trace_buf::NO_P));
        trace_buf::record_shared(Event {
            ts: t0,
            g,
            arg: m.id() as u64,
            m: trace_buf::NO_M,
            p,
            kind: trace_buf::Kind::Running,
            small: u8::from(m.syscallg().is_some_and(|s| s.id() == g)),
        });
    }
}

/// Stops tracing, writes out every recorded event and the trace's end, and
/// flushes the writer. The events are turned into JSON here (about four
/// million a second), so `stop` takes longer the more was recorded; called
/// from a goroutine, it waits as in [`crate::blocking`], its P free for
/// others. Events that found no buffer are not an error: the trace's last
/// record counts them (`"lost"`).
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
    TRACER.end();
    let result = match super::sched::syscall::blocking(|| writer.join()) {
        Ok(result) => result,
        Err(_) => Err(io::Error::other("goro: the trace writer panicked")),
    };
    TRACER.trim();
    result
}

/// Where the writer keeps full chunks until the trace ends.
struct Keep<W: Write> {
    json: Json<W>,
    /// The spill file while it works; without one, events are formatted as
    /// they come.
    spill: Option<Spill>,
    /// The first error writing the JSON: nothing more is written.
    json_failed: Option<io::Error>,
}

impl<W: Write> Keep<W> {
    /// Spills `chunk`'s events, or formats them if there is no spill file. A
    /// spill file that fails (a full disk, `RLIMIT_FSIZE`) is drained into the
    /// JSON, in order, and the trace goes on without it: what the file held,
    /// and `chunk`, reach the JSON. While the writer drains the file, and
    /// from then on while it formats (about four million events a second),
    /// it gives chunks back slower than a busy program fills them, and the
    /// program's threads wait for them (`sys/trace_buf.rs`: Memory).
    fn keep(&mut self, chunk: &Chunk) {
        if let Some(spill) = &mut self.spill {
            if spill.append(chunk.events()).is_ok() {
                return;
            }
            self.drain_spill();
        }
        self.write(chunk.events());
    }

    /// Formats what the spill file holds, and drops it.
    fn drain_spill(&mut self) {
        let Some(mut spill) = self.spill.take() else {
            return;
        };
        if self.json_failed.is_some() {
            return;
        }
        let json = &mut self.json;
        if let Err(e) = spill.read_back(|ev| json.event(ev)) {
            self.json_failed = Some(e);
        }
    }

    /// Formats `events` unless writing already failed.
    fn write(&mut self, events: impl Iterator<Item = Event>) {
        if self.json_failed.is_some() {
            return;
        }
        for ev in events {
            if let Err(e) = self.json.event(&ev) {
                self.json_failed = Some(e);
                return;
            }
        }
    }

    /// The trace ended at `ended_at`: the spilled events, then the buffers'
    /// last ones, in JSON, the runs still going then, and the trace's end.
    fn finish(mut self, last: Vec<Vec<Event>>, ended_at: u64) -> io::Result<()> {
        self.drain_spill();
        for events in last {
            self.write(events.into_iter());
        }
        if let Some(e) = self.json_failed {
            return Err(e);
        }
        self.json.finish(TRACER.lost.load(Ordering::Relaxed), ended_at)?;
        Ok(())
    }
}

/// The writer thread: keeps each full chunk as it comes, and writes the
/// whole trace out when it ends.
fn write_out<W: Write>(json: Json<W>, spill: Option<Spill>) -> io::Result<()> {
    // The runtime's own: the deadlock check does not wait for it.
    let _runtime_thread = super::sys::os_threads::register();
    let mut keep = Keep {
        json,
        spill,
        json_failed: None,
    };
    loop {
        let (chunks, names, last) = {
            let mut state = TRACER.lock();
            while state.full.is_empty() && state.names.is_empty() && state.last.is_none() {
                state = TRACER
                    .ready
                    .wait_timeout(state, WRITER_PERIOD)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            // `end` sets `last` under the lock after the trace's last full
            // chunk was queued: taken together, nothing comes after them.
            let full = std::mem::take(&mut state.full);
            let last = state.last.take().map(|events| (events, state.ended_at));
            (full, std::mem::take(&mut state.names), last)
        };
        for (g, name) in names {
            keep.json.set_name(g, name);
        }
        for chunk in chunks {
            keep.keep(&chunk);
            TRACER.recycle(chunk);
        }
        if let Some((last, ended_at)) = last {
            return keep.finish(last, ended_at);
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
        Ok(f) => Capped::new(f),
        Err(e) => {
            eprintln!("goro: GORO_TRACE={}: {e}; not tracing", path.to_string_lossy());
            return;
        }
    };
    if let Err(e) = start(file) {
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
    let _ = std::panic::catch_unwind(|| match stop() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => eprintln!("goro: writing the trace: {e}"),
        Ok(()) => {
            let lost = TRACER.lost.load(Ordering::Relaxed);
            if lost > 0 {
                eprintln!("goro: the trace lost {lost} events (no free buffer); it counts them");
            }
        }
    });
}
