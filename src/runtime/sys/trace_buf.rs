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
//! Every `start` begins a new generation, published in one atomic with the
//! on/off state ([`GEN`], 0 while off), so an event that sees a trace on also
//! sees which. A buffer whose chunk belongs to an older generation resets it
//! at its next event, so no event of one trace reaches the next. `stop`
//! copies each buffer's current chunk up to its published length (`Acquire`,
//! pairing with the owner's `Release` store of the length), under the lock;
//! the chunk stays the M's, which may still be writing a slot beyond that
//! length (an event racing with `stop` belongs to no trace).
//!
//! # Ownership of a chunk
//! A chunk is a `Box` in the free list, the writer's queue or the shared
//! slot, or a leaked `Box` owned by one buffer and listed in `active` (read by
//! `end` under the lock). It moves only under the lock, and a buffer takes
//! its `active` entry out before its chunk leaves it (to the queue when full,
//! or at the M's exit, [`TraceBuf::release`]).
//!
//! The ownership protocol is model-checked (`loom_trace_*` in
//! `runtime/loom_models.rs`; chunks of 2 events under loom).
//!
//! # Memory
//! At most [`MAX_CHUNKS`] chunks exist at once (16 MiB), freed when a
//! trace's writer is done. A thread whose chunk is full while none is free
//! waits for the writer to give one back (so a program that makes events
//! faster than the writer keeps them runs at the writer's pace and loses
//! none); only if the writer gives none back for [`WRITER_PATIENCE`] is the
//! event counted in [`Tracer::lost`] and reported in the trace, never
//! silently dropped. The writer looks for full chunks every
//! [`WRITER_PERIOD`]: an M does not wake it per chunk.
//!
//! # Clock
//! Timestamps are raw time-stamp-counter reads on x86_64 (12 ns on the
//! hosts goro is measured on; the kernel's clock source is the TSC there,
//! invariant across cores), converted to microseconds by the writer with the
//! rate measured at `start`; elsewhere `CLOCK_MONOTONIC` nanoseconds.
//!
//! A G's `Start` may share the clock read of the event its M recorded just
//! before (`sys/trace_clock.rs` says when); any event recorded drops that
//! read. A `Start` is never dated before its G became runnable (it takes the
//! later of the two). Every other event reads the clock
//! (docs/decisions/0039-trace-recording-cost.md).

use super::sync_prims::{const_unless_loom, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering, UnsafeCell};
use std::cell::Cell;
use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// How many slots (1 KiB) ahead of the one it writes a chunk's writer asks
/// for the cache line: a chunk's lines sit in the writer thread's cache,
/// which last read them, and stores that wait for a line fill the CPU's store
/// buffer and hold up the scheduler's next locked instruction
/// (docs/decisions/0039-trace-recording-cost.md).
const PREFETCH_AHEAD: usize = 32;
/// How long a thread waits for the writer to give a chunk back before
/// taking it for stuck (a disk that stopped answering: the program goes on,
/// and events that find no chunk are counted as lost).
const WRITER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);
/// How often the writer looks for full chunks while a trace is recorded.
pub(crate) const WRITER_PERIOD: std::time::Duration = std::time::Duration::from_millis(1);
/// Full chunks waiting that wake the writer before its period ends (a
/// quarter of them all: 4 MiB, 10 ms of the busiest ping-pong's events; 1
/// under loom, whose models have no period).
const WAKE_WRITER_AT: usize = if cfg!(loom) { 1 } else { MAX_CHUNKS / 4 };
/// Events per chunk: 64 KiB of 32-byte events (2 under loom, so the models
/// fill chunks in a few events).
pub(crate) const CHUNK_EVENTS: usize = if cfg!(loom) { 2 } else { 2048 };
/// Most chunks alive at once, across every buffer and the writer's queue.
pub(crate) const MAX_CHUNKS: usize = if cfg!(loom) { 3 } else { 256 };
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
    /// sysmon took `p` (`small`: 0 from a blocking call, 1 from a hog on the
    /// CPU, 2 from a G blocked in the kernel outside `goro::blocking`).
    Retake,
    /// sysmon's swapper swapped `g`'s stack out, keeping `arg` bytes.
    SwapOut,
    /// `g`'s stack, `arg` bytes, was copied back in as it starts to run.
    SwapIn,
    /// When the trace started, `g` was running on M `arg` (holding `p`;
    /// `small` 1: inside a blocking call), since before the trace: written
    /// by `start` for each M with a G, as Go's tracer writes every G's status
    /// at its start, so that a G that runs through the whole trace, recording
    /// nothing, is still drawn.
    Running,
}

impl Kind {
    const ALL: [Kind; 18] = [
        Kind::Create,
        Kind::Start,
        Kind::Stop,
        Kind::Ready,
        Kind::Steal,
        Kind::GlobalTake,
        Kind::Netpoll,
        Kind::Timers,
        Kind::BlockingEnter,
        Kind::BlockingExit,
        Kind::PAcquire,
        Kind::PRelease,
        Kind::MPark,
        Kind::MWake,
        Kind::Retake,
        Kind::SwapOut,
        Kind::SwapIn,
        Kind::Running,
    ];

    /// The kind whose `as u8` is `code`.
    pub(crate) fn from_u8(code: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(code)).copied()
    }
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
            .map(|slot| slot.with(|ev| unsafe { (*ev).assume_init() }))
    }

    /// Writes `ev` in the next slot; false if the chunk is full. Only the
    /// chunk's writer calls this.
    #[inline(always)]
    fn push(&self, ev: Event) -> bool {
        let i = self.len.load(Ordering::Relaxed);
        if i == CHUNK_EVENTS {
            return false;
        }
        self.events[i].with_mut(|slot| {
            let slot = slot.cast::<Event>();
            // SAFETY: slot `i` is at or past `len`: no reader looks at it, and
            // this thread is the chunk's only writer. Field by field: a copy of
            // the whole event from the stack would reload its small fields as
            // one wide value, which the CPU cannot forward from narrow stores.
            unsafe {
                std::ptr::addr_of_mut!((*slot).ts).write(ev.ts);
                std::ptr::addr_of_mut!((*slot).g).write(ev.g);
                std::ptr::addr_of_mut!((*slot).arg).write(ev.arg);
                std::ptr::addr_of_mut!((*slot).m).write(ev.m);
                std::ptr::addr_of_mut!((*slot).p).write(ev.p);
                std::ptr::addr_of_mut!((*slot).kind).write(ev.kind);
                std::ptr::addr_of_mut!((*slot).small).write(ev.small);
            }
        });
        self.len.store(i + 1, Ordering::Release);
        if let Some(ahead) = self.events.get(i + PREFETCH_AHEAD) {
            prefetch_for_write(std::ptr::from_ref(ahead).cast());
        }
        true
    }

    fn reset(&self, gen: u64) {
        self.gen.set(gen);
        self.len.store(0, Ordering::Relaxed);
    }
}

/// The generation of the trace being recorded, 0 while none is: the one
/// load on every event site's path while tracing is off. One value, so an
/// event that sees a trace on also sees which one. On a line of its own: the
/// tracer's lock, which the writer takes often, must not share it.
#[cfg(not(loom))]
static GEN: Padded = Padded(AtomicU64::new(0));
#[cfg(loom)]
loom::lazy_static! {
    static ref GEN: Padded = Padded(AtomicU64::new(0));
}

#[repr(align(64))]
struct Padded(AtomicU64);

/// Whether events are being recorded.
#[inline(always)]
pub(crate) fn on() -> bool {
    generation() != 0
}

/// The generation of the trace being recorded, 0 while none is.
#[inline(always)]
pub(crate) fn generation() -> u64 {
    GEN.0.load(Ordering::Relaxed)
}

/// The tracer's shared state.
pub(crate) struct Tracer {
    /// Events that found no chunk.
    pub(crate) lost: AtomicU64,
    pub(crate) state: Mutex<State>,
    /// Signalled when many full chunks wait ([`Tracer::queue_full`]), a
    /// name is noted, and when the trace ends.
    pub(crate) ready: Condvar,
    /// Signalled when a chunk is given back while a thread waits for one,
    /// and when the trace ends.
    freed: Condvar,
}

/// What the tracer's lock guards.
pub(crate) struct State {
    /// The generation the next trace takes.
    next_gen: u64,
    /// Full chunks waiting for the writer, oldest first.
    pub(crate) full: VecDeque<Box<Chunk>>,
    // Boxed: a chunk keeps its address as it moves between the lists and a
    // buffer, since `active` points at it.
    #[allow(clippy::vec_box)]
    free: Vec<Box<Chunk>>,
    /// Chunks alive (owned by buffers, queued, or free).
    allocated: usize,
    /// Each buffer's current chunk in this generation (keyed by the buffer's
    /// address), for `end`.
    active: Vec<(usize, NonNull<Chunk>)>,
    /// The chunk of threads without an M.
    shared: Option<Box<Chunk>>,
    /// Names of Gs created during the trace, for the writer.
    pub(crate) names: Vec<(u64, String)>,
    /// Set by `end`: the events of the buffers' current chunks, and the
    /// writer's sign that the trace is over.
    pub(crate) last: Option<Vec<Vec<Event>>>,
    /// When `end` ran (clock ticks): where runs still going then end.
    pub(crate) ended_at: u64,
    /// Threads waiting in [`Tracer::take_chunk_waiting`].
    waiting: usize,
    /// The generation in which a wait for a free chunk timed out: the
    /// writer is stuck, and from then on an event without a chunk is lost
    /// at once.
    stuck_gen: u64,
}

// SAFETY: the chunk pointers in `active` are dereferenced only under the
// lock, and point to chunks owned by live buffers (a buffer takes its entry
// out, under the lock, before its chunk leaves it).
unsafe impl Send for State {}

#[cfg(not(loom))]
pub(crate) static TRACER: Tracer = Tracer::new();
#[cfg(loom)]
loom::lazy_static! {
    pub(crate) static ref TRACER: Tracer = Tracer::new();
}

impl Tracer {
    const_unless_loom! {
        fn new() -> Tracer {
            Tracer {
                lost: AtomicU64::new(0),
                state: Mutex::new(State {
                    next_gen: 1,
                    full: VecDeque::new(),
                    free: Vec::new(),
                    allocated: 0,
                    active: Vec::new(),
                    shared: None,
                    names: Vec::new(),
                    last: None,
                    ended_at: 0,
                    waiting: 0,
                    stuck_gen: 0,
                }),
                ready: Condvar::new(),
                freed: Condvar::new(),
            }
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new generation; false if one is on. Called by `start` under
    /// its own serialisation, with no writer running: what an ended trace
    /// left undrained (its writer never started) is discarded.
    pub(crate) fn begin(&self) -> bool {
        let mut state = self.lock();
        if on() {
            return false;
        }
        let undrained: Vec<Box<Chunk>> = state.full.drain(..).collect();
        state.free.extend(undrained);
        state.names.clear();
        state.last = None;
        detect_prefetchw();
        let gen = state.next_gen;
        state.next_gen += 1;
        self.lost.store(0, Ordering::Relaxed);
        GEN.0.store(gen, Ordering::Release);
        true
    }

    /// Ends the generation: no new event is recorded, and the events of every
    /// buffer's current chunk are copied into `State::last` for the writer.
    pub(crate) fn end(&self) {
        let mut state = self.lock();
        let gen = GEN.0.swap(0, Ordering::Release);
        let mut rest = Vec::new();
        for (_, chunk) in std::mem::take(&mut state.active) {
            // SAFETY: `active` holds chunks of live buffers (above); the
            // owner writes only slots at or past the published length.
            let chunk = unsafe { chunk.as_ref() };
            rest.push(chunk.events().collect());
        }
        if let Some(shared) = &state.shared {
            if shared.gen.get() == gen {
                rest.push(shared.events().collect());
            }
        }
        state.last = Some(rest);
        state.ended_at = now();
        self.ready.notify_all();
        self.freed.notify_all();
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

    /// A chunk for generation `gen`, waiting for the writer to give one back
    /// if [`MAX_CHUNKS`] are alive: a program that records faster than the
    /// writer keeps up is slowed to its pace, and loses no event. `None` if
    /// the trace ended meanwhile (the event belongs to none), or, the event
    /// counted as lost, if the writer gave none back for [`WRITER_PATIENCE`]
    /// (then, for the rest of the trace, at once).
    fn take_chunk_waiting(mut state: MutexGuard<'_, State>, gen: u64) -> (MutexGuard<'_, State>, Option<Box<Chunk>>) {
        let mut waited = std::time::Duration::ZERO;
        loop {
            if let Some(chunk) = Tracer::take_chunk(&mut state, gen) {
                return (state, Some(chunk));
            }
            if GEN.0.load(Ordering::Relaxed) != gen {
                return (state, None);
            }
            if state.stuck_gen == gen || waited >= WRITER_PATIENCE {
                state.stuck_gen = gen;
                TRACER.lost.fetch_add(1, Ordering::Relaxed);
                return (state, None);
            }
            TRACER.ready.notify_one();
            state.waiting += 1;
            let began = std::time::Instant::now();
            state = match TRACER.freed.wait_timeout(state, WRITER_PATIENCE - waited) {
                Ok((state, _)) => state,
                Err(e) => e.into_inner().0,
            };
            waited += began.elapsed();
            state.waiting -= 1;
        }
    }

    /// Gives a chunk back to the free list (the writer, once written out).
    pub(crate) fn recycle(&self, chunk: Box<Chunk>) {
        let mut state = self.lock();
        state.free.push(chunk);
        if state.waiting > 0 {
            self.freed.notify_all();
        }
    }

    /// Frees the chunks nobody uses (the writer, when its trace is written).
    pub(crate) fn trim(&self) {
        let mut state = self.lock();
        state.allocated -= state.free.len();
        state.free = Vec::new();
    }

    /// Queues the full `chunk` for the writer, which looks every
    /// [`WRITER_PERIOD`]; wakes it at once only if [`WAKE_WRITER_AT`] chunks
    /// wait. A wake-up per chunk would cost the recording M a system call
    /// every [`CHUNK_EVENTS`] events, and draw the writer onto the M's CPU
    /// (the kernel places a woken thread beside its waker).
    fn queue_full(state: &mut State, chunk: Box<Chunk>) {
        state.full.push_back(chunk);
        if state.full.len() >= WAKE_WRITER_AT {
            TRACER.ready.notify_one();
        }
    }

    /// Queues `chunk` for the writer if it belongs to the trace being
    /// recorded, else frees it for reuse.
    fn retire(state: &mut State, chunk: Box<Chunk>) {
        let gen = GEN.0.load(Ordering::Relaxed);
        if gen != 0 && chunk.gen.get() == gen {
            Tracer::queue_full(state, chunk);
        } else {
            state.free.push(chunk);
        }
    }
}

/// An M's event buffer: touched only by its M's thread, which hands its chunk
/// back ([`TraceBuf::release`]) before the thread exits.
pub(crate) struct TraceBuf {
    /// The generation of `chunk`; 0 before the first event.
    gen: Cell<u64>,
    /// The current chunk, owned by this buffer (a leaked `Box`, rebuilt when
    /// the chunk leaves it); listed in `State::active` while its generation
    /// is recorded.
    chunk: Cell<Option<NonNull<Chunk>>>,
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

    /// Records `ev`. Only the owning M's thread calls it. Returns false if
    /// that took the tracer's lock (a new chunk), where the thread may have
    /// waited, up to [`WRITER_PATIENCE`] for a free chunk.
    #[inline]
    pub(crate) fn record(&self, ev: Event) -> bool {
        let gen = generation();
        if gen != 0 && self.gen.get() == gen {
            if let Some(chunk) = self.chunk.get() {
                // SAFETY: the chunk is this buffer's until this thread hands
                // it over (under the lock, below); `end` only reads it.
                if unsafe { chunk.as_ref() }.push(ev) {
                    return true;
                }
            }
        }
        self.record_slow(Some(ev), gen);
        false
    }

    /// Makes sure the next [`TraceBuf::record`] has a slot without the
    /// tracer's lock. Returns true if that took the lock (the thread may have
    /// waited): a caller about to read the clock for an event calls it first,
    /// so that the read comes after any wait.
    #[inline]
    pub(crate) fn make_room(&self) -> bool {
        let gen = generation();
        if gen != 0 && self.gen.get() == gen {
            if let Some(chunk) = self.chunk.get() {
                // SAFETY: as in `record`: this buffer's chunk.
                if unsafe { chunk.as_ref() }.len.load(Ordering::Relaxed) < CHUNK_EVENTS {
                    return false;
                }
            }
        }
        self.record_slow(None, gen);
        true
    }

    /// A new generation, a full chunk, or no chunk: under the lock; `ev`, if
    /// any, goes into the new chunk.
    #[cold]
    #[inline(never)]
    fn record_slow(&self, ev: Option<Event>, gen: u64) {
        if gen == 0 {
            return;
        }
        let mut state = TRACER.lock();
        if GEN.0.load(Ordering::Relaxed) != gen {
            return; // the trace ended meanwhile
        }
        let me = self as *const TraceBuf as usize;
        let reused = self.chunk.take().and_then(|old| {
            // SAFETY: the buffer's own chunk, from `Box::leak` below; it
            // leaves the buffer here, and `active` no longer lists it once
            // the `retain` runs (a chunk of an ended generation is not
            // listed: `end` emptied the list).
            let old = unsafe { Box::from_raw(old.as_ptr()) };
            if old.gen.get() == gen {
                state.active.retain(|&(buf, _)| buf != me);
                Tracer::queue_full(&mut state, old);
                None
            } else {
                old.reset(gen);
                Some(old)
            }
        });
        let (mut state, next) = match reused {
            Some(chunk) => (state, Some(chunk)),
            None => Tracer::take_chunk_waiting(state, gen),
        };
        self.gen.set(gen);
        if let Some(chunk) = next {
            if let Some(ev) = ev {
                let pushed = chunk.push(ev);
                debug_assert!(pushed);
            }
            let chunk = NonNull::from(Box::leak(chunk));
            state.active.push((me, chunk));
            self.chunk.set(Some(chunk));
        }
    }

    /// The M's thread exits: its chunk goes to the writer (if recorded in
    /// this trace) or back to the free list.
    pub(crate) fn release(&self) {
        let Some(chunk) = self.chunk.take() else {
            return;
        };
        let mut state = TRACER.lock();
        let me = self as *const TraceBuf as usize;
        state.active.retain(|&(buf, _)| buf != me);
        // SAFETY: the buffer's own chunk (a leaked `Box`), no longer listed in
        // `active`; nothing else points at it.
        let chunk = unsafe { Box::from_raw(chunk.as_ptr()) };
        Tracer::retire(&mut state, chunk);
        self.gen.set(0);
    }
}

/// Records `ev` from a thread without an M, into the shared chunk.
#[cold]
#[inline(never)]
pub(crate) fn record_shared(mut ev: Event) {
    ev.m = NO_M;
    let mut state = TRACER.lock();
    let gen = GEN.0.load(Ordering::Relaxed);
    if gen == 0 {
        return;
    }
    if let Some(chunk) = &state.shared {
        if chunk.gen.get() == gen && chunk.push(ev) {
            return;
        }
    }
    if let Some(old) = state.shared.take() {
        Tracer::retire(&mut state, old);
    }
    let (mut state, chunk) = Tracer::take_chunk_waiting(state, gen);
    if let Some(chunk) = chunk {
        chunk.push(ev);
        if let Some(old) = state.shared.replace(chunk) {
            Tracer::retire(&mut state, old); // filled while this waited
        }
    }
}

/// Records an event from a thread without an M (sysmon: a retake of P `p`,
/// its stack swapper's swap-out of G `g`), stamped now.
#[cold]
#[inline(never)]
pub(crate) fn record_shared_now(kind: Kind, p: u16, g: u64, arg: u64, small: u8) {
    record_shared(Event {
        ts: now(),
        g,
        arg,
        m: NO_M,
        p,
        kind,
        small,
    });
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

/// Whether the CPU has `prefetchw` (AMD's since the K6, Intel's since
/// Broadwell); read when a trace begins.
#[cfg(all(target_arch = "x86_64", not(loom)))]
static PREFETCHW: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Learns whether the CPU has `prefetchw` ([`prefetch_for_write`]).
fn detect_prefetchw() {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        use core::arch::x86_64::__cpuid;
        let has = __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0;
        PREFETCHW.store(has, Ordering::Relaxed);
    }
}

/// Asks for the cache line at `at`, to be written soon: for writing where
/// the CPU can (`prefetchw` takes the line from the writer thread's cache,
/// which last read it, in one step; a plain prefetch shares it, and the store
/// still has to take it over).
#[inline(always)]
fn prefetch_for_write(at: *const i8) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        if PREFETCHW.load(Ordering::Relaxed) {
            // SAFETY: a prefetch never faults, whatever `at` is, and reads and
            // writes nothing the program sees; the CPU has the instruction
            // (`detect_prefetchw`).
            unsafe { core::arch::asm!("prefetchw [{0}]", in(reg) at, options(nostack, preserves_flags, readonly)) };
        } else {
            // SAFETY: as above; `sse`, all it needs, is part of x86_64.
            unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(at) };
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = at;
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
    if on() {
        state.names.push((g, name.to_owned()));
        TRACER.ready.notify_one();
    }
}
