//! The execution tracer's recording side: compact events written into
//! per-thread chunks, handed to the trace writer when full. It knows nothing
//! of G, M or P: an event carries their ids as numbers.
//!
//! # Who writes what
//! Each M owns one [`TraceBuf`] and is the only thread to write it: an event is
//! a timestamp read, a plain write into the current chunk's next slot and a
//! `Release` store of the chunk's length (no locked instruction). A full chunk
//! goes to the writer's queue under [`Tracer`]'s lock, once per
//! [`CHUNK_EVENTS`] events. Threads without an M (sysmon, plain threads that
//! ready a G) write into one shared chunk under that lock ([`record_shared`]).
//!
//! # Generations
//! Every `start` begins a new generation. A buffer whose chunk belongs to an
//! older generation takes a fresh one at its next event, so no event of one
//! trace reaches the next. `stop` copies each buffer's current chunk up to its
//! published length (`Acquire`, pairing with the writer's `Release` store of
//! the length), under the lock; the chunk stays the M's, which may still be
//! writing a slot beyond that length (an event racing with `stop` belongs to
//! no trace), and resets it at the next generation.
//!
//! # Memory
//! At most [`MAX_CHUNKS`] chunks exist at once (16 MiB); an event that finds
//! none free is counted in [`Tracer::lost`] and reported in the trace, never
//! silently dropped.
//!
//! # Clock
//! Timestamps are raw time-stamp-counter reads on x86_64 (a few ns; the
//! kernel's clock source is the TSC on the hosts goro targets, invariant
//! across cores), converted to microseconds by the writer with the rate
//! measured at `start`; elsewhere `CLOCK_MONOTONIC` nanoseconds.

use std::cell::{Cell, UnsafeCell};
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Events per chunk: 64 KiB of 32-byte events.
pub(crate) const CHUNK_EVENTS: usize = 2048;
/// Most chunks alive at once, across every buffer and the writer's queue.
pub(crate) const MAX_CHUNKS: usize = 256;
/// The `m` of events recorded by threads without an M.
pub(crate) const NO_M: u32 = u32::MAX;
/// The `p` of events recorded without a P.
pub(crate) const NO_P: u16 = u16::MAX;
/// Set in a `Start` event's `arg` when a `Ready` event (a flow start) made
/// the G runnable.
pub(crate) const READIED: u64 = 1 << 63;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// A G was created: `g`, by the G running on this M (`arg`, 0 if none).
    Create,
    /// `g` starts running on `p`; `arg` is when it became runnable (ticks,
    /// top bit set if a [`Kind::Ready`] event made it so).
    Start,
    /// `g` stops running: `small` is a [`Stop`], `arg` its wait reason.
    Stop,
    /// `g` was made runnable by this thread: `small` is a [`Source`].
    Ready,
    /// `p` stole `arg` Gs from P `x`.
    Steal,
    /// `p` took `arg` Gs from the global queue.
    GlobalTake,
    /// A poll of the network readied `arg` Gs.
    Netpoll,
    /// `arg` timers fired on `p`.
    Timers,
    /// The G of this M entered a blocking call (`g`).
    BlockingEnter,
    /// The G of this M left its blocking call (`g`).
    BlockingExit,
    /// This M took `p`.
    PAcquire,
    /// This M gave `p` up.
    PRelease,
    /// This M parks (no work).
    MPark,
    /// This M was woken.
    MWake,
    /// sysmon took `p` (`small`: 0 from a blocking call, 1 from a hog).
    Retake,
}

/// Why a G stopped running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Stop {
    Park,
    Yield,
    Preempt,
    Exit,
    Blocking,
}

/// Who readied a G.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Source {
    /// A G, or a plain thread.
    Thread,
    /// The network poller.
    Netpoll,
    /// A timer.
    Timer,
}

/// One event: 32 bytes.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub(crate) struct Event {
    pub ts: u64,
    pub g: u64,
    pub arg: u64,
    pub m: u32,
    pub p: u16,
    pub kind: Kind,
    pub small: u8,
}

/// A chunk of events recorded by one thread.
pub(crate) struct Chunk {
    /// The trace generation it belongs to.
    gen: Cell<u64>,
    /// Events written and published (`Release` by the writer thread).
    len: AtomicUsize,
    events: Box<[UnsafeCell<MaybeUninit<Event>>]>,
}

// SAFETY: a chunk is written by one thread at a time (its buffer's owner, or
// the shared chunk under the tracer's lock); others read only the slots below
// `len`, published with `Release` and read with `Acquire`, or read `gen` under
// the tracer's lock, which every writer of `gen` holds.
unsafe impl Sync for Chunk {}
// SAFETY: as above; a chunk moves between threads only through the lock.
unsafe impl Send for Chunk {}

impl Chunk {
    fn new(gen: u64) -> Box<Chunk> {
        Box::new(Chunk {
            gen: Cell::new(gen),
            len: AtomicUsize::new(0),
            events: (0..CHUNK_EVENTS)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        })
    }

    /// The published events.
    pub(crate) fn events(&self) -> impl Iterator<Item = Event> + '_ {
        let len = self.len.load(Ordering::Acquire);
        // SAFETY: slots below `len` were fully written before `len` was stored
        // with `Release`, and are not written again in this generation.
        self.events[..len]
            .iter()
            .map(|slot| unsafe { (*slot.get()).assume_init() })
    }

    /// Writes `ev` in the next slot; false if the chunk is full. Only the
    /// chunk's writer calls this.
    #[inline(always)]
    fn push(&self, ev: Event) -> bool {
        let i = self.len.load(Ordering::Relaxed);
        if i == CHUNK_EVENTS {
            return false;
        }
        // SAFETY: slot `i` is at or past `len`: no reader looks at it, and this
        // thread is the chunk's only writer.
        unsafe { (*self.events[i].get()).write(ev) };
        self.len.store(i + 1, Ordering::Release);
        true
    }

    fn reset(&self, gen: u64) {
        self.gen.set(gen);
        self.len.store(0, Ordering::Relaxed);
    }
}

/// Whether a trace is being recorded: the one load on every event site's
/// path while tracing is off.
pub(crate) static ON: AtomicBool = AtomicBool::new(false);

/// Whether events are being recorded.
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The tracer's shared state.
pub(crate) struct Tracer {
    /// The current trace's generation (changed under `state`).
    gen: AtomicU64,
    /// Events that found no chunk.
    pub(crate) lost: AtomicU64,
    pub(crate) state: Mutex<State>,
    /// Signalled when a full chunk is queued, and at stop.
    pub(crate) ready: Condvar,
}

/// What the tracer's lock guards.
pub(crate) struct State {
    /// Full chunks waiting for the writer, oldest first.
    pub(crate) full: VecDeque<Box<Chunk>>,
    // Boxed: a chunk keeps its address as it moves between the lists and a
    // buffer, since `active` points at it.
    #[allow(clippy::vec_box)]
    free: Vec<Box<Chunk>>,
    /// Chunks alive (owned by buffers, queued, or free).
    allocated: usize,
    /// Each buffer's current chunk in this generation (keyed by the buffer's
    /// address), for `stop`.
    active: Vec<(usize, *const Chunk)>,
    /// The chunk of threads without an M.
    shared: Option<Box<Chunk>>,
    /// Names of Gs created during the trace, for the writer.
    pub(crate) names: Vec<(u64, String)>,
}

// SAFETY: the raw chunk pointers in `active` are read only under the lock,
// and point to chunks owned by live buffers (a buffer hands its chunk back
// under the lock before it is dropped).
unsafe impl Send for State {}

pub(crate) static TRACER: Tracer = Tracer {
    gen: AtomicU64::new(0),
    lost: AtomicU64::new(0),
    state: Mutex::new(State {
        full: VecDeque::new(),
        free: Vec::new(),
        allocated: 0,
        active: Vec::new(),
        shared: None,
        names: Vec::new(),
    }),
    ready: Condvar::new(),
};

impl Tracer {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new generation; false if one is on. Called by `start` under
    /// its own serialisation.
    pub(crate) fn begin(&self) -> bool {
        let _state = self.lock();
        if ON.load(Ordering::Relaxed) {
            return false;
        }
        self.gen.fetch_add(1, Ordering::Relaxed);
        self.lost.store(0, Ordering::Relaxed);
        ON.store(true, Ordering::Release);
        true
    }

    /// Ends the generation: no new event is recorded, and the events of every
    /// buffer's current chunk are returned, copied.
    pub(crate) fn end(&self) -> Vec<Vec<Event>> {
        let mut state = self.lock();
        ON.store(false, Ordering::Release);
        let mut rest = Vec::new();
        for (_, chunk) in std::mem::take(&mut state.active) {
            // SAFETY: `active` holds chunks of live buffers (module docs).
            let chunk = unsafe { &*chunk };
            rest.push(chunk.events().collect());
        }
        if let Some(shared) = &state.shared {
            if shared.gen.get() == self.gen.load(Ordering::Relaxed) {
                rest.push(shared.events().collect());
            }
        }
        rest
    }

    /// A chunk for generation `gen`, or `None` (an event lost) if
    /// [`MAX_CHUNKS`] are alive.
    fn take_chunk(state: &mut State, gen: u64) -> Option<Box<Chunk>> {
        if let Some(chunk) = state.free.pop() {
            chunk.reset(gen);
            return Some(chunk);
        }
        if state.allocated < MAX_CHUNKS {
            state.allocated += 1;
            return Some(Chunk::new(gen));
        }
        None
    }

    /// Gives a chunk back to the free list (the writer, once written out).
    pub(crate) fn recycle(&self, chunk: Box<Chunk>) {
        self.lock().free.push(chunk);
    }
}

/// An M's event buffer: touched only by its M's thread. Ms are never freed,
/// so neither is a buffer: `Tracer`'s list of chunks in use stays valid.
pub(crate) struct TraceBuf {
    /// The generation of `chunk`; 0 before the first event.
    gen: Cell<u64>,
    chunk: Cell<Option<Box<Chunk>>>,
}

// SAFETY: a `TraceBuf` is used only by the thread of the M that owns it
// (module docs); the M struct that holds it is shared, the buffer is not.
unsafe impl Sync for TraceBuf {}

impl TraceBuf {
    pub(crate) fn new() -> TraceBuf {
        TraceBuf {
            gen: Cell::new(0),
            chunk: Cell::new(None),
        }
    }

    /// Records `ev`. Only the owning M's thread calls it.
    #[inline(never)]
    pub(crate) fn record(&self, ev: Event) {
        let gen = TRACER.gen.load(Ordering::Relaxed);
        if self.gen.get() == gen {
            // SAFETY: only this thread touches `chunk`; the borrow ends here.
            if let Some(chunk) = unsafe { &*self.chunk.as_ptr() } {
                if chunk.push(ev) {
                    return;
                }
            }
        }
        self.record_slow(ev, gen);
    }

    /// A new generation, a full chunk, or no chunk: under the lock.
    #[cold]
    fn record_slow(&self, ev: Event, gen: u64) {
        let mut state = TRACER.lock();
        if !ON.load(Ordering::Relaxed) || TRACER.gen.load(Ordering::Relaxed) != gen {
            return; // the trace ended meanwhile
        }
        let old = self.chunk.take();
        let me = self as *const TraceBuf as usize;
        state.active.retain(|&(buf, _)| buf != me);
        let next = match old {
            Some(chunk) if chunk.gen.get() != gen => {
                chunk.reset(gen);
                Some(chunk)
            }
            Some(full) => {
                state.full.push_back(full);
                TRACER.ready.notify_one();
                Tracer::take_chunk(&mut state, gen)
            }
            None => Tracer::take_chunk(&mut state, gen),
        };
        self.gen.set(gen);
        match next {
            Some(chunk) => {
                let pushed = chunk.push(ev);
                debug_assert!(pushed);
                state.active.push((me, &*chunk as *const Chunk));
                self.chunk.set(Some(chunk));
            }
            None => {
                TRACER.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Records `ev` from a thread without an M, into the shared chunk.
#[cold]
#[inline(never)]
pub(crate) fn record_shared(mut ev: Event) {
    ev.m = NO_M;
    let mut state = TRACER.lock();
    if !ON.load(Ordering::Relaxed) {
        return;
    }
    let gen = TRACER.gen.load(Ordering::Relaxed);
    if let Some(chunk) = &state.shared {
        if chunk.gen.get() == gen && chunk.push(ev) {
            return;
        }
    }
    if let Some(old) = state.shared.take() {
        if old.gen.get() == gen {
            state.full.push_back(old);
            TRACER.ready.notify_one();
        } else {
            state.free.push(old);
        }
    }
    match Tracer::take_chunk(&mut state, gen) {
        Some(chunk) => {
            chunk.push(ev);
            state.shared = Some(chunk);
        }
        None => {
            TRACER.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A timestamp in clock ticks ([`ticks_per_us`] converts).
#[inline(always)]
pub(crate) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions; every x86_64 CPU has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill in.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// The clock's rate, measured over `window_ns` of `CLOCK_MONOTONIC`: ticks
/// per microsecond.
pub(crate) fn ticks_per_us(window_ns: u64) -> f64 {
    if cfg!(not(target_arch = "x86_64")) {
        return 1000.0;
    }
    let (t0, m0) = (now(), monotonic_ns());
    let mut m1 = m0;
    while m1.wrapping_sub(m0) < window_ns {
        std::hint::spin_loop();
        m1 = monotonic_ns();
    }
    let t1 = now();
    (t1.wrapping_sub(t0)) as f64 * 1000.0 / (m1.wrapping_sub(m0)) as f64
}

/// Tells the writer G `g`'s name (a named G created while tracing).
#[cold]
pub(crate) fn note_name(g: u64, name: &str) {
    let mut state = TRACER.lock();
    if ON.load(Ordering::Relaxed) {
        state.names.push((g, name.to_owned()));
        TRACER.ready.notify_one();
    }
}
