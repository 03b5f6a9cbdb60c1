//! The scheduler's execution-trace event sites: what the scheduler, the wait
//! layer and the poller call to record an event (`sys/trace_buf.rs` records,
//! `monitor/trace_json.rs` and `runtime/trace.rs` write the trace out).
//!
//! Every site is `if tracing::on() { tracing::... }`: with tracing off, one
//! `Relaxed` load of a flag and a predicted branch. The recording functions are
//! `#[cold]` and never inlined, so a site adds no code to the hot path but the
//! test. An event goes into the buffer of the M running the code, or, on a
//! thread without an M, into the shared chunk.
//!
//! Thread: any; each M writes only its own buffer.

use super::m::{current_m, M};
use crate::runtime::sys::sync_prims::AtomicU64;
use crate::runtime::sys::trace_buf::{self, Event, Kind, Source, Stop, NO_P, READIED};
use crate::runtime::sys::trace_clock;
use crate::runtime::task::g::{swap, GRef};
use std::sync::atomic::Ordering;

pub(crate) use trace_buf::on;

/// Records an event of `kind` from the current thread; returns its timestamp.
#[cold]
#[inline(never)]
pub(crate) fn emit(kind: Kind, g: u64, arg: u64, small: u8) -> u64 {
    match current_m() {
        Some(m) => emit_on(m, kind, g, arg, small),
        None => {
            let ts = trace_buf::now();
            trace_buf::record_shared(event(ts, NO_P, kind, g, arg, small));
            ts
        }
    }
}

/// Records an event of `kind` from M `m` (the calling thread's), on the P it
/// holds; returns its timestamp.
#[cold]
#[inline(never)]
pub(crate) fn emit_on(m: &M, kind: Kind, g: u64, arg: u64, small: u8) -> u64 {
    let ts = trace_buf::now();
    record_on(m, ts, kind, g, arg, small);
    ts
}

/// Records a take of `arg` Gs (`kind`: from the global queue, or stolen from
/// P `g`) by the current M, `first` the one it runs next. The take shares
/// the read of the `Stop` before it if that is still fresh (never dated
/// before `first` became runnable), and its next `Start` may share the
/// take's (`sys/trace_clock.rs`).
#[cold]
#[inline(never)]
pub(crate) fn took(kind: Kind, g: u64, arg: u64, first: GRef) {
    match current_m() {
        Some(m) => {
            room_first(m);
            let ts = shared_or_now(first);
            if record_on(m, ts, kind, g, arg, 0) {
                trace_clock::set_fresh(ts);
            }
        }
        None => {
            emit(kind, g, arg, 0);
        }
    }
}

/// Makes room for M `m`'s next event before its clock read, so that the
/// read comes after any wait for the tracer (which also drops a shared read).
fn room_first(m: &M) {
    if m.trace.make_room() {
        trace_clock::stale();
    }
}

/// The read this thread left fresh, but not before `g` became runnable;
/// else a new read.
fn shared_or_now(g: GRef) -> u64 {
    trace_clock::take_fresh().map_or_else(trace_buf::now, |ts| ts.max(g.trace_ready() & !READIED))
}

/// Records an event of `kind` at `ts` from M `m` (the calling thread's).
/// Returns false if the thread may have waited doing so (`TraceBuf::record`):
/// `ts` then dates nothing after it.
#[inline(always)]
fn record_on(m: &M, ts: u64, kind: Kind, g: u64, arg: u64, small: u8) -> bool {
    debug_assert!(
        current_m().is_some_and(|c| std::ptr::eq(c, m)),
        "goro: a trace event for M{} recorded on another thread",
        m.id()
    );
    let p = m.p_id().map_or(NO_P, |p| u16::try_from(p).unwrap_or(NO_P));
    let mut ev = event(ts, p, kind, g, arg, small);
    ev.m = u32::try_from(m.id()).unwrap_or(trace_buf::NO_M);
    trace_clock::stale(); // an event recorded: no other shares the read before it
    m.trace.record(ev)
}

/// Records an event about P `p` from a thread without an M (sysmon).
#[inline]
pub(crate) fn emit_for_p(kind: Kind, p: usize, arg: u64, small: u8) {
    trace_buf::record_shared_now(kind, u16::try_from(p).unwrap_or(NO_P), 0, arg, small);
}

fn event(ts: u64, p: u16, kind: Kind, g: u64, arg: u64, small: u8) -> Event {
    Event {
        ts,
        g,
        arg,
        m: trace_buf::NO_M,
        p,
        kind,
        small,
    }
}

/// `g` was made runnable by `source`: a flow starts here, ending where it runs.
#[cold]
#[inline(never)]
pub(crate) fn readied(g: GRef, source: Source) {
    let ts = emit(Kind::Ready, g.id(), 0, source as u8);
    g.set_trace_ready(ts | READIED);
}

/// `g` became runnable without a waker (created, or requeued by a yield).
#[cold]
#[inline(never)]
pub(crate) fn runnable(g: GRef) {
    g.set_trace_ready(trace_buf::now());
}

/// `g` starts running on M `m`. `shared`: `m` sets no stack up for it, so
/// the read of the event it recorded just before may date the start, if
/// that event left it (a `runnext` hand-off's `Stop`, or the take that found
/// `g`: module docs of `sys/trace_buf.rs`, Clock); never before `g` became
/// runnable.
#[cold]
#[inline(never)]
pub(crate) fn started(m: &M, g: GRef, shared: bool) {
    room_first(m);
    let ts = if shared { shared_or_now(g) } else { trace_buf::now() };
    record_on(m, ts, Kind::Start, g.id(), g.trace_ready(), 0);
    // SAFETY: this M owns `g`, about to run it (the caller's contract).
    if let Some(bytes) = unsafe { swap::swapped_len(&g) } {
        record_on(m, ts, Kind::SwapIn, g.id(), bytes as u64, 0);
    }
}

/// `g` stopped running on M `m`, for `why` (a park's wait reason is the G's).
/// Its clock read may date the next `Start` (a `runnext` hand-off).
#[cold]
#[inline(never)]
pub(crate) fn stopped(m: &M, g: GRef, why: Stop) {
    let reason = if why == Stop::Park { g.wait_reason() as u64 } else { 0 };
    let ts = trace_buf::now();
    if record_on(m, ts, Kind::Stop, g.id(), reason, why as u8) {
        trace_clock::set_fresh(ts);
    }
    if matches!(why, Stop::Yield | Stop::Preempt) {
        g.set_trace_ready(ts); // runnable as it stops
    }
}

/// A G was created: `g`, with `name`, by the current G or thread.
#[cold]
#[inline(never)]
pub(crate) fn created(g: GRef, name: Option<&str>) {
    if let Some(name) = name {
        trace_buf::note_name(g.id(), name);
    }
    let creator = super::m::current_g().map_or(0, |c| c.id());
    let ts = emit(Kind::Create, g.id(), creator, 0);
    g.set_trace_ready(ts); // runnable as it is created
}

/// `g` yielded on M `m`: asked to by sysmon (a preemption), or of its own.
#[cold]
#[inline(never)]
pub(crate) fn yielded(m: &M, g: GRef) {
    let preempted = m.preempting.load(Ordering::Relaxed);
    m.preempting.store(false, Ordering::Relaxed);
    stopped(m, g, if preempted { Stop::Preempt } else { Stop::Yield });
}

/// The G of this M yields because sysmon asked it to.
#[cold]
#[inline(never)]
pub(crate) fn preempting(m: &M) {
    m.preempting.store(true, Ordering::Relaxed);
}

/// `g` enters a blocking call on M `m`: its run on the P ends, its call on the
/// M begins.
#[cold]
#[inline(never)]
pub(crate) fn blocking_entered(m: &M, g: GRef) {
    stopped(m, g, Stop::Blocking);
    emit_on(m, Kind::BlockingEnter, g.id(), 0, 0);
}

/// Why a running P was taken from its M (a [`Kind::Retake`]'s `small`; 0 is
/// a P taken from a blocking call).
#[derive(Clone, Copy)]
#[repr(u8)]
pub(crate) enum TakenFrom {
    /// sysmon: a G on the CPU without a switch for a slice.
    Hog = 1,
    /// sysmon: as long, but in the kernel outside `goro::blocking`.
    Blocked = 2,
    /// A stop-the-world changing GOMAXPROCS.
    Resize = 3,
}

/// A taker is about to commit taking M `m`'s running P (the handshake of
/// `sched/ownership.rs` holds it `Retaking`: an M that enters the runtime
/// waits for the verdict): dates the cut of its G's run now and leaves the
/// date for the M, which reads it once it finds its P gone ([`lost_p`]), so
/// the M always finds it. Returns the date, 0 while tracing is off: for
/// [`retook_from`] once the take succeeded, for [`retake_undone`] if not (the
/// M, having seen its P still held just before the taker's first step, made
/// its own transition and left the runtime before the taker's check).
#[inline]
pub(crate) fn retaking(m: &M) -> u64 {
    if !on() {
        return 0;
    }
    let ts = trace_buf::now();
    m.retaken_at.store(ts, Ordering::Relaxed);
    ts
}

/// The take dated `ts` by [`retaking`] did not happen: the M keeps its P,
/// and the date is withdrawn from `retaken_at` (the M's) unless a later
/// taker's replaced it; 0 (nothing dated) leaves it alone.
#[cold]
pub(crate) fn retake_undone(retaken_at: &AtomicU64, ts: u64) {
    if ts != 0 {
        let _ = retaken_at.compare_exchange(ts, 0, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// P `p` was taken from M `m`, whose G goes on running without it (`why`),
/// at `ts` ([`retaking`]'s date; 0: tracing came on since, now): the instant
/// on the taker's track. The time on `m` is recorded by `m` itself, in its
/// own stream, when it finds the P gone ([`lost_p`]).
#[cold]
#[inline(never)]
pub(crate) fn retook_from(p: usize, why: TakenFrom, ts: u64) {
    let ts = if ts == 0 { trace_buf::now() } else { ts };
    let p16 = u16::try_from(p).unwrap_or(NO_P);
    trace_buf::record_shared(event(ts, p16, Kind::Retake, 0, 0, why as u8));
}

/// M `m`, entering the runtime, found that its P `p` was taken while its G
/// ran user code: marks in `m`'s stream where that run left the P (at the
/// date [`retaking`] left), before anything else the G records, such as its
/// stop or a blocking call. Called whether tracing is on or not, so that no
/// date outlives its take.
#[cold]
#[inline(never)]
pub(crate) fn lost_p(m: &M, p: usize) {
    let ts = m.retaken_at.swap(0, Ordering::Relaxed);
    if ts != 0 && on() {
        let mut ev = event(ts, u16::try_from(p).unwrap_or(NO_P), Kind::Retake, 0, 0, 1);
        ev.m = u32::try_from(m.id()).unwrap_or(trace_buf::NO_M);
        trace_clock::stale();
        m.trace.record(ev);
    }
}
