//! The G: a goroutine. Its identity, its status, and the coroutine it runs on.
//!
//! # Memory
//! A G is a header, pooled and reused (`gfree.rs`, Go's gFree lists). What a spawn
//! allocates is the task block it runs (`block.rs`): the closure and the join slot.
//! Between spawn and exit the header points at its task; at exit it drops the
//! scheduler's reference to the task ([`G::finish`]) and goes back to a free list.
//!
//! # Ownership
//! The scheduler reaches a G through [`GRef`] (a raw pointer). At any moment
//! exactly one party owns it:
//! - the spawner, until it pushes the G into a run queue;
//! - a run queue (local ring, `runnext` or the global queue), until an M pops it;
//! - the M that popped it, while the G runs and until the G has switched out;
//! - the waker, once the G is `Waiting`: whoever calls `ready` on it (exactly one).
//!
//! The queues hand a G over with release/acquire pairs, so the fields behind
//! [`G::ctx`] (the coroutine, its stack) are only ever touched by one thread at a
//! time even though the G migrates between Ms. That is what makes the
//! `unsafe impl Send` below sound although corosensei's `Coroutine` is `!Send`.
//!
//! `id`, `status`, `wait_reason` and `m` are atomics only so that `GODEBUG` traces
//! can read them from another thread; the scheduler is the only writer, and every
//! status transition goes through [`G::set_status`], [`G::owner_set_status`] (the
//! owner's own transitions) or [`G::cas_status`] (`ready`, the one a bug could race).
//!
//! `resume_sp` is a hint, not owned state: the G stores (`Relaxed`) roughly where
//! its stack pointer is each time it switches out, and an M about to run the G
//! ahead of it in a run queue reads it, without owning this G, to prefetch the
//! stack lines its resume will touch ([`G::prefetch_stack`]). Headers are never
//! freed, so such a read is always of valid memory; a stale value only makes a
//! prefetch useless.

use super::block::TaskRef;
use super::locals::LocalMap;
use super::stack::GStack;
use crate::runtime::sys::coarse_clock::coarse_now_ms;
use crate::runtime::sys::frames::Captured;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, UnsafeCell};
use std::fmt;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::ids::WaitReason;

mod inspect;
pub(crate) mod swap;
pub(crate) use inspect::{inspect, snapshot, Snapshot};

/// A G's status, numbered as Go's `_Grunnable`... so `scheddetail` prints the same
/// `status=N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Status {
    /// Go's "just allocated": never stored (a header is `Dead` until `init`
    /// makes it `Runnable`), kept so the numbers stay Go's.
    Idle = 0,
    /// In a run queue.
    Runnable = 1,
    /// Running on an M.
    Running = 2,
    /// In a blocking call (`goro::blocking`).
    Syscall = 3,
    /// Parked; some waker will `ready` it.
    Waiting = 4,
    /// Finished.
    Dead = 6,
}

/// Status bit set while a goroutine dump inspects a `Waiting` G (Go's
/// `_Gscan`): a `ready` meanwhile waits for it to clear ([`G::cas_status`]).
const SCAN: u8 = 0x80;

impl Status {
    fn from_u8(v: u8) -> Status {
        match v & !SCAN {
            0 => Status::Idle,
            1 => Status::Runnable,
            2 => Status::Running,
            3 => Status::Syscall,
            4 => Status::Waiting,
            _ => Status::Dead,
        }
    }
}

/// What a G asked the scheduler for when it switched out.
pub(crate) enum Switch {
    /// Nothing recorded (the G has not switched out since it was resumed).
    None,
    /// `yield_now`: requeue at the back of the global queue.
    Yield,
    /// Park: the G is `Waiting`. After the switch the scheduler moves the
    /// "unlock" value out of the parked G's frame with the thunk (a bitwise read
    /// onto the scheduler's own stack) and drops it there, releasing the waiter's
    /// lock; so no waker can ready a G that is still on its stack, and no
    /// reference into that stack is live while the release happens.
    Park(Unlock),
}

/// A parked G's "unlock" value: `data` points to a `U` in the G's frame, `take`
/// reads it out, marks the G off its stack and drops it (`park::park_g`).
#[derive(Clone, Copy)]
pub(crate) struct Unlock {
    pub(crate) take: unsafe fn(*mut (), &G),
    pub(crate) data: *mut (),
}

/// The coroutine type every G runs on.
type GCoroutine = Coroutine<(), (), (), GStack>;

/// The parts of a G only the thread that owns it (see module docs) may touch.
pub(crate) struct Context {
    /// Set by the coroutine on its first run; valid while the coroutine lives.
    yielder: *const Yielder<(), ()>,
    /// What the G asked for at its last switch-out.
    pub(crate) switch: Switch,
    /// The task this G runs, from spawn to exit.
    task: Option<TaskRef>,
    /// `lock_os_thread` nesting depth.
    pub(crate) lock_count: u32,
    /// Its goroutine-local values (`task::locals`).
    locals: LocalMap,
    /// A dump resumed it to record where it is parked (`inspect::inspect`).
    inspecting: bool,
    /// What that recorded.
    inspected: Option<Captured>,
    /// The live part of its stack while swapped out (`swap.rs`).
    swapped: Option<swap::Swapped>,
    /// Its wait's records, movable off its stack (`swap.rs`).
    site: swap::Site,
}

/// A goroutine header. See the module docs for who may touch what.
pub(crate) struct G {
    id: AtomicU64,
    /// Stack size to allocate on first run (read by the SIGSEGV handler).
    stack_size: AtomicUsize,
    /// Roughly where its stack pointer was when it last switched out (0 before
    /// its first switch): what a resume touches first. A hint for
    /// [`G::prefetch_stack`]; written by the G itself, read by anyone.
    resume_sp: AtomicUsize,
    status: AtomicU8,
    wait_reason: AtomicU8,
    /// Id of the M running it (or that last ran it), -1 before the first run.
    m: AtomicI64,
    /// `[lo, hi)` of the attached stack's guard page; read by the SIGSEGV handler on
    /// the thread running this G. Written only by that thread.
    pub(crate) guard: Cell<(usize, usize)>,
    /// Next G in the global run queue; only touched under that queue's lock.
    schedlink: AtomicPtr<G>,
    /// The M this G is wired to by `lock_os_thread` (an `&'static M`, typed by
    /// `proc::m::lockedm`), null if none. Written by the G
    /// itself, read by any scheduler that dequeues it.
    lockedm: AtomicPtr<()>,
    /// Set by the M once this G has switched out to park and its coroutine is
    /// stored back; cleared by the G as it starts its next park, before its
    /// status turns `Waiting` (which happens before the switch). A dump may
    /// inspect a `Waiting` G only when set.
    off_cpu: AtomicBool,
    /// When it last parked, on the coarse clock ([`coarse_now_ms`]).
    wait_since: AtomicU64,
    /// Its stack is swapped out: a hint for the swapper's sweep (`swap.rs`).
    out: AtomicBool,
    /// It runs its own code: not a switch into or out of its coroutine, whose
    /// half-switched stack no unwinder may walk. Written by the G itself right
    /// after each switch in and before each switch out; read by a dump's
    /// signal handler on the same thread (`monitor/running.rs`).
    in_code: AtomicBool,
    /// Who made it, for dumps: see [`CREATOR_THREAD_BIT`]. Written by `init`.
    creator: AtomicU64,
    /// Where it was spawned (`go!`'s call site). Written by `init`.
    created_at: Cell<&'static Location<'static>>,
    /// Its name. Written by `init` before the G is published and by `finish`
    /// under `meta`; read by the G itself, and by dumps under `meta`.
    name: UnsafeCell<Option<Box<str>>>,
    /// Held by `finish` while it retires the G, and by a dump while it reads the
    /// fields above: so a dump never reads a name being freed.
    meta: AtomicBool,
    /// For the execution trace: when it last became runnable (trace clock
    /// ticks, with `trace_json::READIED` set if a traced ready did it). Written
    /// by whoever makes it runnable, before it is queued; read by the M that
    /// runs it, after dequeuing it (the queue orders the two).
    trace_ready: AtomicU64,
    ctx: UnsafeCell<Context>,
    /// Its coroutine, created on the first run: owner-only, as the context,
    /// but apart from it, because the G's own code never touches it. So the
    /// M resumes it in place, holding it borrowed while the G runs and writes
    /// its context (no copy of the coroutine out and back per switch).
    coroutine: UnsafeCell<Option<GCoroutine>>,
}

/// Every G header ever made (Go's `allgs`), for goroutine dumps, scheddetail
/// traces and the deadlock check. A header is recorded once, when it is first
/// allocated ([`G::alloc`]), never per spawn; headers are never freed, so the
/// list only grows to the peak number of live Gs. Readers take a copy and then
/// look at each header through its own protocol (`inspect::snapshot`, `inspect::inspect`).
static ALL_GS: Mutex<Vec<GRef>> = Mutex::new(Vec::new());

/// Every G header so far, in allocation order ([`ALL_GS`]).
pub(crate) fn all_gs() -> Vec<GRef> {
    ALL_GS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Appends to `out` up to `n` G headers from index `from` of [`ALL_GS`]
/// (a sweep's chunk, without copying the whole list); returns how many
/// headers there are.
pub(crate) fn gs_from(from: usize, n: usize, out: &mut Vec<GRef>) -> usize {
    let all = ALL_GS.lock().unwrap_or_else(|e| e.into_inner());
    out.extend(all.iter().skip(from).take(n));
    all.len()
}

/// Who spawned a G, packed in one word: a G id, or a plain thread's token with
/// this bit set ([`super::creators`]).
pub(crate) const CREATOR_THREAD_BIT: u64 = 1 << 63;

/// What a spawn gives a fresh G besides its task.
pub(crate) struct Spawn {
    pub(crate) name: Option<Box<str>>,
    pub(crate) stack_size: usize,
    /// See [`CREATOR_THREAD_BIT`].
    pub(crate) creator: u64,
    pub(crate) at: &'static Location<'static>,
}

/// What happened when a G was resumed.
pub(crate) enum Outcome {
    /// The G switched out; [`Context::switch`] says why.
    Switched,
    /// The G's body returned; its stack is handed back for reuse.
    Exited(GStack),
    /// No stack could be mapped for the G's first run: it did not run. The
    /// caller hands the error to [`G::fail_without_stack`].
    NoStack(std::io::Error),
}

impl G {
    /// A new, free header (`Dead`), for the pool to hand out. Never freed.
    pub(crate) fn alloc() -> GRef {
        let g = Box::new(G {
            id: AtomicU64::new(0),
            stack_size: AtomicUsize::new(0),
            resume_sp: AtomicUsize::new(0),
            status: AtomicU8::new(Status::Dead as u8),
            wait_reason: AtomicU8::new(WaitReason::None as u8),
            m: AtomicI64::new(-1),
            guard: Cell::new((0, 0)),
            schedlink: AtomicPtr::new(std::ptr::null_mut()),
            lockedm: AtomicPtr::new(std::ptr::null_mut()),
            off_cpu: AtomicBool::new(false),
            wait_since: AtomicU64::new(0),
            out: AtomicBool::new(false),
            in_code: AtomicBool::new(false),
            creator: AtomicU64::new(0),
            created_at: Cell::new(Location::caller()),
            name: UnsafeCell::new(None),
            meta: AtomicBool::new(false),
            trace_ready: AtomicU64::new(0),
            coroutine: UnsafeCell::new(None),
            ctx: UnsafeCell::new(Context {
                yielder: std::ptr::null(),
                switch: Switch::None,
                task: None,
                lock_count: 0,
                locals: LocalMap::default(),
                inspecting: false,
                swapped: None,
                site: None,
                inspected: None,
            }),
        });
        let g = GRef(NonNull::from(Box::leak(g)));
        ALL_GS.lock().unwrap_or_else(|e| e.into_inner()).push(g);
        g
    }

    /// Readies a free header to run `task` as goroutine `id`. It is `Runnable`
    /// from here on (it is about to be queued), so a trace never shows a half-made G.
    ///
    /// # Safety
    /// The caller owns this free header exclusively (it came from `gfget`).
    ///
    /// The dump's fields (name, creator, call site) are written before the
    /// status, which is stored with `Release`: a dump that reads a live status
    /// with `Acquire` (under `meta`) sees them.
    pub(crate) unsafe fn init(&self, id: u64, spawn: Spawn, task: TaskRef) {
        debug_assert_eq!(self.status(), Status::Dead);
        self.id.store(id, Ordering::Relaxed);
        self.stack_size.store(spawn.stack_size, Ordering::Relaxed);
        self.m.store(-1, Ordering::Relaxed);
        self.creator.store(spawn.creator, Ordering::Relaxed);
        self.created_at.set(spawn.at);
        // SAFETY: exclusive by the caller's contract; a dump reads the name only
        // once it sees a live status, stored below. `finish` left `None` there:
        // a write, not an assignment, so the recycled header's line is not read
        // first (a cache miss on every spawn otherwise).
        unsafe {
            debug_assert!((*self.name.get()).is_none());
            self.name.get().write(spawn.name);
        }
        // SAFETY: exclusive by the caller's contract.
        let ctx = unsafe { self.ctx() };
        // SAFETY: as above.
        debug_assert!(unsafe { self.coroutine() }.is_none() && ctx.task.is_none());
        ctx.task = Some(task);
        self.status.store(Status::Runnable as u8, Ordering::Release);
    }

    /// After exit: marks the header `Dead`, drops the scheduler's reference to the
    /// task and clears what the next user must not see. The caller then returns
    /// it to a free list.
    ///
    /// # Safety
    /// The caller is the M that saw this G exit and owns it.
    pub(crate) unsafe fn finish(&self) {
        let name = self.with_meta(|| {
            self.set_status(Status::Dead);
            // SAFETY: exclusive by the caller's contract, and no dump reads the
            // name while we hold `meta`.
            unsafe { (*self.name.get()).take() }
        });
        drop(name);
        self.guard.set((0, 0));
        self.resume_sp.store(0, Ordering::Relaxed);
        // SAFETY: exclusive by the caller's contract.
        let ctx = unsafe { self.ctx() };
        ctx.lock_count = 0;
        ctx.locals.reset();
        self.set_lockedm_raw(std::ptr::null());
        if let Some(task) = ctx.task.take() {
            // SAFETY: the scheduler's reference, dropped once, at exit.
            unsafe { task.release() };
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id.load(Ordering::Relaxed)
    }

    pub(crate) fn stack_size(&self) -> usize {
        self.stack_size.load(Ordering::Relaxed)
    }

    /// Asks the CPU to start loading the stack lines this G's next resume will
    /// touch (its saved registers and the frames it returns into), so that the
    /// miss overlaps the work an M does before it gets there. Only a hint: the
    /// G may meanwhile run elsewhere or exit, and a prefetch never faults.
    #[inline(always)]
    pub(crate) fn prefetch_stack(&self) {
        let sp = self.resume_sp.load(Ordering::Relaxed);
        if sp == 0 {
            return;
        }
        for line in [sp.wrapping_sub(64), sp, sp.wrapping_add(64), sp.wrapping_add(128)] {
            prefetch_line(line);
        }
    }

    /// The G's name.
    ///
    /// # Safety
    /// Called by the running G itself (its name is stable while it runs).
    pub(crate) unsafe fn name(&self) -> Option<&str> {
        // SAFETY: a shared read of a field only `init`/`finish` write, and neither
        // runs while the G does.
        unsafe { (*self.name.get()).as_deref() }
    }

    /// Runs `f` holding this header's `meta` lock (a few instructions: `finish`
    /// and a dump's read of the fields it guards).
    pub(crate) fn with_meta<R>(&self, f: impl FnOnce() -> R) -> R {
        while self
            .meta
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        let r = f();
        self.meta.store(false, Ordering::Release);
        r
    }

    pub(crate) fn status(&self) -> Status {
        Status::from_u8(self.status.load(Ordering::Relaxed))
    }

    /// Whether it runs its own code, not a switch (`in_code`): for a signal
    /// handler on the thread that runs it.
    pub(crate) fn in_code(&self) -> bool {
        self.in_code.load(Ordering::Relaxed)
    }

    pub(crate) fn set_status(&self, s: Status) {
        self.status.store(s as u8, Ordering::Relaxed);
    }

    /// Moves the G from `from` to `to`; panics if it was in another state. This is
    /// the tripwire for a double `ready` or a `ready` of a running G: one atomic
    /// step, so of two racing calls only one succeeds.
    ///
    /// A `Waiting` G that a dump is inspecting (`SCAN` set) is waited for: the
    /// dump holds it for the time one backtrace takes.
    pub(crate) fn cas_status(&self, from: Status, to: Status) {
        loop {
            // Acquire: after a dump's inspection (`SCAN` cleared with
            // Release) the waker, which then owns the G, sees its context as
            // the dump left it.
            match self
                .status
                .compare_exchange(from as u8, to as u8, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(actual) if actual == from as u8 | SCAN => std::thread::yield_now(),
                Err(actual) => self.wrong_status(actual, from, to),
            }
        }
    }

    /// As [`G::cas_status`], for a transition only the G's owner makes (module
    /// docs): the G itself (parking, entering or leaving a blocking call), or the
    /// M that runs it (taking it from a run queue, requeueing it after a yield).
    /// Nobody else writes the status meanwhile, and the last write happened
    /// before this read: earlier on this thread, or, for a G just taken from a run
    /// queue, before the queue's release/acquire hand-over. So in release builds a
    /// checked load and a plain store do, with no locked instruction on every
    /// switch. Debug builds (the test suite, loom) keep the compare-and-swap, so
    /// that a run-queue bug handing one G to two Ms at once still trips here.
    ///
    /// The store is `Release` (free on x86): a dump that reads the new status
    /// with `Acquire` sees the G's fields as this owner left them.
    pub(crate) fn owner_set_status(&self, from: Status, to: Status) {
        if cfg!(debug_assertions) {
            if let Err(actual) =
                self.status
                    .compare_exchange(from as u8, to as u8, Ordering::Release, Ordering::Relaxed)
            {
                self.wrong_status(actual, from, to);
            }
            return;
        }
        let actual = self.status.load(Ordering::Relaxed);
        if actual != from as u8 {
            self.wrong_status(actual, from, to);
        }
        self.status.store(to as u8, Ordering::Release);
    }

    /// Marks the G parked and off its stack (the M, after the switch), or about
    /// to park, still on its stack (the G, before its status turns `Waiting`).
    pub(crate) fn set_off_cpu(&self, v: bool) {
        self.off_cpu.store(v, Ordering::Release);
    }

    /// When it last parked, on the coarse clock (ms).
    pub(crate) fn wait_since_ms(&self) -> u64 {
        self.wait_since.load(Ordering::Relaxed)
    }

    /// Records the park's start on the coarse clock (the G, as it parks).
    pub(crate) fn mark_wait_start(&self) {
        self.wait_since.store(coarse_now_ms(), Ordering::Relaxed);
    }

    #[cold]
    #[inline(never)]
    fn wrong_status(&self, actual: u8, from: Status, to: Status) -> ! {
        panic!(
            "goro: goroutine {} in status {:?}, expected {:?} (to move to {:?})",
            self.id(),
            Status::from_u8(actual),
            from,
            to
        );
    }

    pub(crate) fn wait_reason(&self) -> WaitReason {
        WaitReason::from_u8(self.wait_reason.load(Ordering::Relaxed))
    }

    pub(crate) fn set_wait_reason(&self, r: WaitReason) {
        self.wait_reason.store(r as u8, Ordering::Relaxed);
    }

    pub(crate) fn schedlink(&self) -> *const G {
        self.schedlink.load(Ordering::Relaxed)
    }

    pub(crate) fn set_schedlink(&self, next: *const G) {
        self.schedlink.store(next as *mut G, Ordering::Relaxed);
    }

    /// When it last became runnable, for the execution trace.
    pub(crate) fn trace_ready(&self) -> u64 {
        self.trace_ready.load(Ordering::Relaxed)
    }

    pub(crate) fn set_trace_ready(&self, ticks: u64) {
        self.trace_ready.store(ticks, Ordering::Relaxed);
    }

    pub(crate) fn m_id(&self) -> i64 {
        self.m.load(Ordering::Relaxed)
    }

    /// The M this G is wired to, untyped (null if none): `proc::m::lockedm` types it.
    #[inline]
    pub(crate) fn lockedm_raw(&self) -> *const () {
        self.lockedm.load(Ordering::Relaxed)
    }

    pub(crate) fn set_lockedm_raw(&self, m: *const ()) {
        self.lockedm.store(m as *mut (), Ordering::Relaxed);
    }

    pub(crate) fn set_m_id(&self, id: i64) {
        self.m.store(id, Ordering::Relaxed);
    }

    /// The owner-only part.
    ///
    /// # Safety
    /// The caller must own the G (module docs): be the M running it, or the G
    /// itself while running.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn ctx(&self) -> &mut Context {
        // SAFETY: exclusive by the caller's contract.
        unsafe { &mut *self.ctx.get() }
    }

    /// Its goroutine-local map. Only code running as this G may use it
    /// (`task::locals`).
    pub(crate) fn locals(&self) -> *mut LocalMap {
        // SAFETY: a field address only; nothing is read or borrowed here.
        unsafe { std::ptr::addr_of_mut!((*self.ctx.get()).locals) }
    }

    /// Whether the G has not run yet and needs a stack for its first run.
    ///
    /// # Safety
    /// The caller owns the G (module docs).
    pub(crate) unsafe fn needs_stack(&self) -> bool {
        // SAFETY: the caller's contract.
        unsafe { self.coroutine() }.is_none()
    }

    /// Its coroutine (`None` before its first run).
    ///
    /// # Safety
    /// The caller owns the G (module docs) and is not the G itself: no other
    /// reference to the coroutine is live.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn coroutine(&self) -> &mut Option<GCoroutine> {
        // SAFETY: exclusive by the caller's contract.
        unsafe { &mut *self.coroutine.get() }
    }

    /// Runs the G until it switches out or exits; its coroutine exists
    /// ([`G::start`] made it before its first run).
    ///
    /// Inlined into the scheduling loop: the switch clobbers every register,
    /// so a function of its own would save and restore all the callee-saved
    /// ones on every switch; the loop saves them once.
    ///
    /// # Safety
    /// The caller is the M that popped this G from a run queue and owns it.
    #[inline(always)]
    pub(crate) unsafe fn resume(&self) -> Outcome {
        // The coroutine stays in place while it runs: the G writes its context
        // (`switch_out`, its yielder), never its coroutine.
        // SAFETY: we own the G and are not it (caller's contract).
        let slot = unsafe { self.coroutine() };
        // SAFETY: as above; the scheduler took the last switch's request.
        debug_assert!(matches!(unsafe { self.ctx() }.switch, Switch::None));
        let Some(co) = slot else { not_started(self.id()) };
        // SAFETY: we own the G, which is not running (caller's contract).
        unsafe { swap::take_swapped(self) };
        match co.resume(()) {
            CoroutineResult::Yield(()) => Outcome::Switched,
            CoroutineResult::Return(()) => {
                // SAFETY: the G finished: we own it again.
                unsafe { self.ctx() }.yielder = std::ptr::null();
                let co = slot.take().expect("the coroutine that just returned");
                Outcome::Exited(co.into_stack())
            }
        }
    }

    /// Makes the G's body into a coroutine on `stack`, before its first run
    /// (when [`G::needs_stack`] says so).
    ///
    /// # Safety
    /// The caller owns the G, which has no coroutine yet.
    #[inline(never)]
    pub(crate) unsafe fn start(&self, stack: GStack) {
        // SAFETY: the caller's contract; this borrow ends here.
        let task = unsafe { self.ctx() }.task.expect("goro: G started without a task");
        self.guard.set(stack.guard());
        let me = GRef::from(self);
        // SAFETY: the caller's contract.
        let slot = unsafe { self.coroutine() };
        debug_assert!(slot.is_none());
        *slot = Some(Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
            // SAFETY: this runs on the G's own coroutine, so the G owns itself.
            unsafe { me.ctx() }.yielder = yielder;
            me.in_code.store(true, Ordering::Relaxed);
            // SAFETY: the task's one run, on its G's own stack.
            unsafe { task.run(None) };
            me.in_code.store(false, Ordering::Relaxed);
        }));
    }

    /// The G's first stack could not be mapped: its task runs its no-stack path
    /// (drops the body, stores `err` for `join`). The caller runs this as a
    /// plain-thread context (`sched/syscall.rs`): the destructors are user code
    /// on the M's own stack, where a wait cannot park a coroutine.
    ///
    /// # Safety
    /// The caller is the M that could map no first stack for this G
    /// ([`Outcome::NoStack`]) and owns the G; called once.
    pub(crate) unsafe fn fail_without_stack(&self, err: std::io::Error) {
        // SAFETY: we own the G (caller's contract).
        let task = unsafe { self.ctx() }.task.expect("goro: G without a task");
        // SAFETY: the task's one run, by its M, without a stack.
        unsafe { task.run(Some(err)) };
    }

    /// Records `switch` and switches to the M's scheduler loop; returns when
    /// some M resumes this G. Callers go through `switch::switch_out`
    /// (`sched/switch.rs`), which keeps a G that is unwinding on its M.
    ///
    /// # Safety
    /// Must be called by the currently running G on itself.
    #[inline(always)]
    pub(crate) unsafe fn suspend(&self, switch: Switch) {
        // SAFETY: the running G owns itself (caller's contract).
        let ctx = unsafe { self.ctx() };
        ctx.switch = switch;
        let yielder = ctx.yielder;
        if yielder.is_null() {
            no_coroutine(self.id());
        }
        loop {
            self.in_code.store(false, Ordering::Relaxed);
            self.resume_sp.store(swap::stack_pointer(), Ordering::Relaxed);
            // SAFETY: the yielder lives at the base of this coroutine's stack for as
            // long as the coroutine runs, and we are running on it.
            unsafe { (*yielder).suspend(()) };
            self.in_code.store(true, Ordering::Relaxed);
            // SAFETY: resumed, so this G owns itself again.
            if !unsafe { self.ctx() }.inspecting {
                return;
            }
            // A dump resumed us, on its own thread, to record where we are
            // parked; then we park on (`inspect::inspect`).
            inspect::record(self);
        }
    }
}

/// A G asked to switch out while it runs on no coroutine of its own (its
/// yielder is unset): only the runtime's own code runs a G's context off its
/// coroutine, and always as a plain-thread context, so this is a runtime bug.
/// Stopped here, in release builds too: switching would jump through a null
/// pointer.
#[cold]
#[inline(never)]
fn no_coroutine(id: u64) -> ! {
    eprintln!("goro: fatal error: goroutine {id} tried to park while not running on its own stack");
    std::process::abort()
}

/// A G resumed before [`G::start`] made its coroutine: a scheduler bug,
/// stopped here in release builds too.
#[cold]
#[inline(never)]
fn not_started(id: u64) -> ! {
    eprintln!("goro: fatal error: goroutine {id} was resumed before it was started");
    std::process::abort()
}

/// Asks the CPU to start loading the cache line at `addr`, whatever it is: a
/// prefetch never faults and changes nothing the program can observe.
#[inline(always)]
fn prefetch_line(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that never faults or reads into the
        // program's state, whatever the address; SSE is part of x86_64.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(addr as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// A pointer to a G that can cross threads; see the module docs for the handover
/// discipline that makes that sound.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct GRef(NonNull<G>);

// SAFETY: a GRef is handed between threads only through the run queues and waiter
// records, which synchronise with release/acquire; the owner-only fields are touched
// by one thread at a time (module docs). The G's body is `Send`.
unsafe impl Send for GRef {}
// SAFETY: shared access through &G reads atomics and fields whose writers and
// readers are ordered by a protocol: `guard` is written by the thread running
// the G and read by it or by a dump holding the G pinned (`SCAN`); `name`,
// `creator` and `created_at` are written before the G is published and read
// under `meta` (`G::snapshot`); the context is the owner's (module docs), and a
// dump owns it only while the G is pinned and off its stack (`inspect::inspect`).
unsafe impl Sync for GRef {}

impl GRef {
    pub(crate) fn as_ptr(self) -> NonNull<G> {
        self.0
    }

    pub(crate) fn from_ptr(p: NonNull<G>) -> GRef {
        GRef(p)
    }

    /// Views run-queue slots as GRefs.
    pub(crate) fn slice_from_ptrs(s: &[NonNull<G>]) -> &[GRef] {
        // SAFETY: GRef is #[repr(transparent)] over NonNull<G>.
        unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<GRef>(), s.len()) }
    }

    pub(crate) fn from_raw(p: *const G) -> Option<GRef> {
        NonNull::new(p as *mut G).map(GRef)
    }
}

impl From<&G> for GRef {
    fn from(g: &G) -> GRef {
        GRef(NonNull::from(g))
    }
}

impl GRef {
    /// Asks the CPU to start loading every cache line of this G's header
    /// ([`G::prefetch_stack`] reads `resume_sp`, a resume the status and the
    /// context) without reading it, so it may be a G this M does not own.
    #[inline(always)]
    pub(crate) fn prefetch_header(self) {
        let start = self.0.as_ptr() as usize;
        let size = std::mem::size_of::<G>();
        for line in (start..start + size).step_by(64).chain([start + size - 1]) {
            prefetch_line(line);
        }
    }
}

impl std::ops::Deref for GRef {
    type Target = G;
    fn deref(&self) -> &G {
        // SAFETY: G headers are leaked at allocation and never deallocated (they
        // go back to free lists and are only ever reused as Gs), so the pointer is
        // always to a live G. Every field is an atomic or sits in a Cell/UnsafeCell,
        // so a shared reference coexists with the owner's writes; a party that
        // does not own the G (`schedule::prefetch_next`) only reads atomics.
        unsafe { self.0.as_ref() }
    }
}

impl fmt::Debug for GRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "G{}", self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_transition_moves_the_status() {
        let g = G::alloc();
        g.set_status(Status::Runnable);
        g.owner_set_status(Status::Runnable, Status::Running);
        assert_eq!(g.status(), Status::Running);
        g.owner_set_status(Status::Running, Status::Waiting);
        g.cas_status(Status::Waiting, Status::Runnable);
        assert_eq!(g.status(), Status::Runnable);
    }

    #[test]
    #[should_panic(expected = "in status Waiting, expected Running (to move to Runnable)")]
    fn owner_transition_from_the_wrong_status_trips() {
        let g = G::alloc();
        g.set_status(Status::Waiting);
        g.owner_set_status(Status::Running, Status::Runnable);
    }

    #[test]
    #[should_panic(expected = "in status Runnable, expected Waiting (to move to Runnable)")]
    fn a_second_ready_trips() {
        let g = G::alloc();
        g.set_status(Status::Waiting);
        g.cas_status(Status::Waiting, Status::Runnable);
        g.cas_status(Status::Waiting, Status::Runnable);
    }
}
