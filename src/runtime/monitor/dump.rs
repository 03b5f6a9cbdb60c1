//! The goroutine dump: [`goroutines`] and [`write_goroutines`], in the shape of
//! Go's traceback (`goroutine 7 [chan receive]:` ... `created by ...`).
//!
//! A dump looks at every G header ever made (`task::g::all_gs`). A live G's fields are
//! read under its `meta` lock (`G::snapshot`). A G parked off its stack is pinned
//! for a moment (`G::inspect`, Go's `_Gscan`) and resumed on the dump's own
//! thread, where it records its frames and parks again; its wakers wait out the
//! pin. A running G, or one inside `goro::blocking`, is asked for its frames
//! through its M's thread (`running.rs`, a signal); a runnable G is listed
//! without frames. Plain threads in goro waits answer a request for their own
//! frames (`thread_waits`). Frames are resolved on the dump's thread, which has
//! a large stack, so any goroutine may ask for a dump; each distinct address is
//! resolved once per dump (`frames::Symbolizer`), and a dump written to a
//! stream is written one goroutine at a time, as it is made.

use super::running;
use crate::runtime::proc::m::current;
use crate::runtime::sched::syscall::blocking;
use crate::runtime::sys::frames::{self, Captured, Keep, Symbolizer};
use crate::runtime::task::creators;
use crate::runtime::task::g::{inspect, snapshot, Snapshot, Status, CREATOR_THREAD_BIT};
use crate::runtime::task::ids::GoId;
use crate::runtime::task::ids::WaitReason;
use crate::runtime::wait::thread_waits;
use std::fmt;
use std::io;
use std::panic::Location;
use std::time::Duration;

/// How long a dump waits for a waiting plain thread to report its frames.
const THREAD_PATIENCE: Duration = Duration::from_millis(200);

/// What a goroutine is doing, as a dump shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GoState {
    /// In a run queue, waiting for a P.
    Runnable,
    /// Running on an M.
    Running,
    /// Parked in a goro wait.
    Waiting(WaitReason),
    /// Inside [`blocking`](fn@crate::blocking) (Go's `syscall`).
    Blocking,
}

impl fmt::Display for GoState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GoState::Runnable => f.write_str("runnable"),
            GoState::Running => f.write_str("running"),
            GoState::Waiting(r) => fmt::Display::fmt(r, f),
            GoState::Blocking => f.write_str("syscall"),
        }
    }
}

/// One live goroutine in a dump ([`goroutines`](crate::runtime::goroutines)). `Display` prints it as Go's
/// traceback does:
///
/// ```text
/// goroutine 7 "worker-1" [chan receive, 2 minutes]:
/// app::worker(...)
///         src/main.rs:8
/// created by goroutine 1 at src/main.rs:12:5
/// ```
#[derive(Clone, Debug)]
pub struct GoroutineInfo {
    id: GoId,
    name: Option<String>,
    state: GoState,
    waiting_for: Option<Duration>,
    created_at: &'static Location<'static>,
    parent: Option<GoId>,
    /// The plain thread that spawned it, when no goroutine did.
    creator_thread: Option<String>,
    locked: bool,
    stack: Option<String>,
}

impl GoroutineInfo {
    /// Its id.
    pub fn id(&self) -> GoId {
        self.id
    }

    /// Its [`Builder::name`](crate::Builder::name), if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// What it is doing.
    pub fn state(&self) -> GoState {
        self.state
    }

    /// How long it has waited, if it is waiting (a coarse clock: to within a
    /// few ms).
    pub fn waiting_for(&self) -> Option<Duration> {
        self.waiting_for
    }

    /// Where it was started: the `go!` (or `spawn`, `WaitGroup::go`,
    /// `time::after_func`) call site.
    pub fn created_at(&self) -> &'static Location<'static> {
        self.created_at
    }

    /// The goroutine that started it; `None` if a plain thread did.
    pub fn parent(&self) -> Option<GoId> {
        self.parent
    }

    /// Where it is parked, one frame per line pair (the function, then its file
    /// and line), from the call that parked it down to its body; `None` when not
    /// captured (it is not parked, or its stack had no room for the capture).
    pub fn stack(&self) -> Option<&str> {
        self.stack.as_deref()
    }
}

impl fmt::Display for GoroutineInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "goroutine {}", self.id)?;
        if let Some(name) = &self.name {
            write!(f, " {name:?}")?;
        }
        write!(f, " [{}", self.state)?;
        if let Some(minutes) = self.waiting_for.map(|d| d.as_secs() / 60).filter(|&m| m >= 1) {
            write!(f, ", {minutes} minutes")?;
        }
        if self.locked {
            f.write_str(", locked to thread")?;
        }
        f.write_str("]:\n")?;
        if let Some(stack) = &self.stack {
            f.write_str(stack)?;
        }
        let at = self.created_at;
        match (&self.parent, &self.creator_thread) {
            (Some(p), _) => write!(
                f,
                "created by goroutine {p} at {}:{}:{}",
                at.file(),
                at.line(),
                at.column()
            ),
            (None, Some(t)) => write!(
                f,
                "created by thread {t:?} at {}:{}:{}",
                at.file(),
                at.line(),
                at.column()
            ),
            (None, None) => write!(f, "created at {}:{}:{}", at.file(), at.line(), at.column()),
        }
    }
}

/// [`goroutines`](crate::runtime::goroutines) once the runtime has started.
pub(crate) fn goroutines_of_started() -> Vec<GoroutineInfo> {
    let caller = current();
    on_dump_thread(
        move |emit: &mut dyn FnMut(GoroutineInfo)| each_goroutine(caller, emit),
        |all: &mut Vec<GoroutineInfo>, g| all.push(g),
        Vec::new(),
    )
}

/// [`write_goroutines`](crate::runtime::write_goroutines) once the runtime has started.
pub(crate) fn write_goroutines_of_started<W: io::Write + ?Sized>(w: &mut W) -> io::Result<()> {
    write_dump(w)
}

/// Writes the whole dump to `w`, each goroutine as soon as its frames are
/// resolved (a dump of many goroutines streams).
pub(crate) fn write_dump<W: io::Write + ?Sized>(w: &mut W) -> io::Result<()> {
    let caller = current();
    on_dump_thread(
        move |emit: &mut dyn FnMut(String)| dump_chunks(caller, emit),
        |res: &mut io::Result<()>, chunk: String| {
            if res.is_ok() {
                *res = w.write_all(chunk.as_bytes()).and_then(|()| w.flush());
            }
        },
        Ok(()),
    )
}

/// The dump's text, one chunk per goroutine and per waiting thread.
fn dump_chunks(caller: Option<GoId>, emit: &mut dyn FnMut(String)) {
    let mut sym = Symbolizer::new();
    each_goroutine_with(caller, &mut sym, &mut |g| emit(format!("{g}\n\n")));
    for t in thread_waits::waiting() {
        let name = t
            .thread
            .name()
            .map_or_else(|| format!("{:?}", t.thread.id()), str::to_owned);
        let mut out = format!("thread {name:?} [{}", t.reason);
        let minutes = t.since.elapsed().as_secs() / 60;
        if minutes >= 1 {
            out.push_str(&format!(", {minutes} minutes"));
        }
        out.push_str("]:\n");
        if let Some(frames) = t.frames(THREAD_PATIENCE) {
            out.push_str(&resolve(&mut sym, &frames, None));
        }
        out.push('\n');
        emit(out);
    }
}

/// Runs `produce` on a thread of its own with a large stack (resolving frames
/// needs one), as a `blocking` call when the caller is a goroutine, while the
/// calling thread folds what it emits into `acc` with `consume` as it comes
/// (so a dump written to a stream streams). If no thread can be had (a thread
/// limit: just when a dump is wanted), `produce` runs on the caller's own
/// stack instead.
fn on_dump_thread<T: Send, A>(
    produce: impl FnOnce(&mut dyn FnMut(T)) + Send,
    mut consume: impl FnMut(&mut A, T),
    mut acc: A,
) -> A {
    let produce = std::sync::Mutex::new(Some(produce));
    let take = || produce.lock().unwrap_or_else(|e| e.into_inner()).take();
    blocking(|| {
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel::<T>();
            let spawned = std::thread::Builder::new()
                .name("goro-dump".into())
                .stack_size(8 << 20)
                .spawn_scoped(s, move || {
                    if let Some(f) = take() {
                        f(&mut |item| drop(tx.send(item)));
                    }
                });
            match spawned {
                Ok(h) => {
                    for item in rx {
                        consume(&mut acc, item);
                    }
                    if let Err(p) = h.join() {
                        std::panic::resume_unwind(p);
                    }
                }
                Err(_) => {
                    drop(rx);
                    let f = take().expect("goro: the dump ran twice");
                    f(&mut |item| consume(&mut acc, item));
                }
            }
        })
    });
    acc
}

/// Every live G, in id order, each handed to `emit` once its frames are
/// resolved; `caller`, the G asking (inside the `blocking` call the dump
/// runs in), shows as running, as in Go.
fn each_goroutine(caller: Option<GoId>, emit: &mut dyn FnMut(GoroutineInfo)) {
    each_goroutine_with(caller, &mut Symbolizer::new(), emit);
}

fn each_goroutine_with(caller: Option<GoId>, sym: &mut Symbolizer, emit: &mut dyn FnMut(GoroutineInfo)) {
    let now_ms = crate::runtime::proc::state::sched().nanotime() / 1_000_000;
    let mut live: Vec<_> = crate::runtime::task::g::all_gs()
        .into_iter()
        .filter_map(|g| snapshot(&g).map(|snap| (g, snap)))
        .collect();
    live.sort_by_key(|(_, snap)| snap.id);
    let ms = crate::runtime::proc::state::sched()
        .allm
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    // Every running goroutine's M is asked first: they answer together.
    let mut asked: std::collections::HashMap<u64, running::Asked> = live
        .iter()
        .filter(|(_, snap)| {
            matches!(snap.status, Status::Running | Status::Syscall) && Some(GoId::from_raw(snap.id)) != caller
        })
        .filter_map(|(_, snap)| {
            ms.iter()
                .find(|m| m.id() == snap.m && m.curg() == snap.id || m.syscallg().is_some_and(|s| s.id() == snap.id))
                .and_then(|m| running::ask(m, snap.id))
                .map(|a| (snap.id, a))
        })
        .collect();
    for (g, snap) in live {
        let is_caller = Some(GoId::from_raw(snap.id)) == caller;
        let captured = match snap.status {
            Status::Waiting => inspect(&g, snap.id),
            _ => asked.remove(&snap.id).and_then(running::Asked::answer),
        };
        let stack = captured.map(|c| resolve(sym, &c, Some(snap.created_at.file())));
        let mut info = info(snap, stack, now_ms);
        if is_caller {
            info.state = GoState::Running;
        }
        emit(info);
    }
}

fn info(snap: Snapshot, stack: Option<String>, now_ms: u64) -> GoroutineInfo {
    let state = match snap.status {
        Status::Running => GoState::Running,
        Status::Syscall => GoState::Blocking,
        Status::Waiting => GoState::Waiting(snap.reason),
        _ => GoState::Runnable,
    };
    let (parent, creator_thread) = match snap.creator {
        c if c & CREATOR_THREAD_BIT != 0 => (None, Some(creators::thread_name(c))),
        0 => (None, None),
        id => (Some(GoId::from_raw(id)), None),
    };
    GoroutineInfo {
        id: GoId::from_raw(snap.id),
        name: snap.name,
        state,
        waiting_for: matches!(state, GoState::Waiting(_))
            .then(|| Duration::from_millis(now_ms.saturating_sub(snap.wait_since_ms))),
        created_at: snap.created_at,
        parent,
        creator_thread,
        locked: snap.locked,
        stack,
    }
}

/// Resolves and formats frames in Go's shape; `created_at`, the file a
/// goroutine was created in, may name the build root (`frames::learn_root`).
fn resolve(sym: &mut Symbolizer, captured: &Captured, created_at: Option<&str>) -> String {
    let all = sym.resolve(captured);
    if let Some(at) = created_at {
        frames::learn_root(at, &all, frames::Side::Outermost);
    }
    let mut text = String::new();
    frames::write_go(&mut text, frames::trim(&all, Keep::Parked));
    text
}
