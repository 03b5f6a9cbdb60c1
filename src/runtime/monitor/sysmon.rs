//! sysmon: the runtime's watchdog thread (Go's `sysmon`). It holds no P and runs
//! no G; it only looks at the Ps and intervenes:
//! - **blocking calls**: a P whose G has been in `goro::blocking` for a whole
//!   sysmon tick (≥ 20 µs) is handed to another M if it has work, or if no M is
//!   idle or spinning to pick up new work, or after 10 ms regardless
//!   (`syscall_handoffs`);
//! - **hogs**: a G that has run 10 ms without a switch is asked to yield at its
//!   next goro call (`M::preempt`); after 20 ms its P is taken from its M
//!   ([`crate::runtime::sched::ownership::try_take_running`]) and handed to another, so the P's
//!   other Gs run while the hog goes on without a P. A G that held its P that
//!   long in the kernel, outside `goro::blocking` (its thread's CPU clock moved
//!   by under a tenth of the time since the 10 ms mark), is told apart:
//!   `blocking_retakes` instead of `preempt_retakes`, `why: "blocked"` in the
//!   trace, and with `GODEBUG=blockwarn=1` a line naming it (`blockwarn.rs`). For that
//!   moment the process runs more threads than GOMAXPROCS: code that cannot be
//!   interrupted asynchronously can only be worked around, not stopped. Time in
//!   blocking calls counts as running (Go's `sysretake`): a G looping on short
//!   calls is asked to yield when one returns, and after 20 ms its P is handed
//!   off even between calls if something needs it; a G in one long call is not
//!   asked to yield (losing its P was enough);
//! - **time slices**: a P whose `schedtick` has not moved for 10 ms while it ran
//!   is flagged (`P::slice_over`), so a pair of Gs readying each other through
//!   `runnext`, which inherit the slice, give the P up at their next switch;
//! - **the network**: polled if nobody has for 10 ms, or for 1 ms while a P is
//!   idle (what the poll finds can start at once there). The M that takes a G
//!   from the blocking poll runs it without waking a helper
//!   (`ready::ready_batch`), so if that G computes, nobody is in the poller while
//!   the other P idles: a request on another connection waited for this poll,
//!   10 ms before the shorter rule (`tests/net_poll_while_computing.rs`);
//! - **unwatched timers**: while a P idles, nobody is blocked in the poller and
//!   no M spins, no M watches the timers of the idle Ps (nor those of a P whose
//!   G computes): the M that came back from the poller runs a G it found
//!   there, or one a timer readied, without waking a helper
//!   (`ready::ready_found`), and a G that parks with a timer leaves the wake-up to
//!   its M's search (`timers::add_timer_parked`). Before such an M runs a G, it
//!   wakes a helper for its own P's timers, and for the poller's (every P's)
//!   if one is due within [`MAX_DELAY`] (`schedule::watch_timers`); for a later
//!   one, sysmon, which looks at least that often while a P runs, sleeps no
//!   later than the timer plus [`TIMER_GRACE_NS`], and wakes a spinning M if it
//!   is still unrun then (Go instead wakes an M for every timer-readied G);
//! - **idle Ms**: an M parked for [`M_IDLE_RETIRE`] while more Ms exist than
//!   GOMAXPROCS exits, so bursts of blocking calls leave no crowd of threads;
//! - **idle stacks**: runs the stack scavenger (`scavenge.rs`), which gives
//!   back the memory of free stacks that sat unused for a whole second, a chunk
//!   per look;
//! - **idle goroutines' stacks**: runs the swapper (`task/swapper.rs`), which
//!   swaps out the stacks of goroutines parked longer than
//!   `Config::swap_idle_after`, a chunk of headers per look;
//! - **idle heap**: once every P has idled for a second after Gs ran, asks
//!   glibc's malloc to give its free memory back (`heap_trim.rs`), at most
//!   every 5 s;
//! - **schedtrace**: prints `GODEBUG=schedtrace` reports.
//!
//! It sleeps 20 µs between looks, and after 1 ms without anything to do doubles
//! that up to 10 ms (Go's pacing); a retake resets it, and a G entering a
//! blocking call wakes it from a long sleep so the hand-off is not 10 ms late.
//! When every P is idle there is nothing to watch: it sleeps until an M takes a P
//! ([`SysmonLink::p_acquired`](crate::runtime::proc::observers::SysmonLink::p_acquired)), waking only to retire idle Ms, for a timer
//! that no M watches (Go's "deep sleep", which also ends at the next timer),
//! for the scavenger while free stacks may still hold pages, for the swapper
//! when a parked goroutine it saw comes due, and once for the
//! heap trim after Gs ran.
//! It then goes on at the pace it had, so a workload whose Ps all idle between
//! bursts does not restart the 20 µs pace at every burst
//! (docs/decisions/0016-sysmon-pacing.md). A look that came early
//! only for the 1 ms network rule goes back to that pace, not to deep sleep:
//! under sparse traffic it would otherwise deep-sleep after every request and
//! cost each next request a wake-up of sysmon (`tests/net_sparse_wakeups.rs`).
//! Deep sleep and P acquisition pair through `SeqCst`: sysmon sets `deep` then
//! re-reads `npidle`; an M takes a P off the idle list (`npidle` RMW), fences, then
//! reads `deep`. One of them sees the other.
//!
//! Thread: only the sysmon thread runs [`run`]; the rest of the runtime reaches
//! it through [`SysmonLink::syscall_entered`](crate::runtime::proc::observers::SysmonLink::syscall_entered).

use super::blockwarn;
use super::heap_trim::HeapTrim;
use crate::runtime::proc::m::M;
use crate::runtime::proc::observers::{self, MAX_DELAY};
use crate::runtime::proc::p::{PState, PStatus, P};
use crate::runtime::proc::state::Sched;
use crate::runtime::proc::timers::NO_TIMER;
use crate::runtime::proc::tracing::{self, TakenFrom};
use crate::runtime::sched::mpark::{hand_off_p, wakep};
use crate::runtime::sched::ownership::try_take_running;
use crate::runtime::sched::schedule::TIME_SLICE_NS;
use crate::runtime::sys::trace_buf::Kind;
use crate::runtime::task::scavenge::Scavenger;
use crate::runtime::task::swapper::Swapper;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Shortest sleep between looks (the longest is [`MAX_DELAY`]).
const MIN_DELAY: Duration = Duration::from_micros(20);
/// Idle looks at the shortest delay before it starts doubling (Go's 50: 1 ms).
const IDLE_LOOKS_BEFORE_BACKOFF: u32 = 50;
/// A sleep at least this long is interrupted by a G entering a blocking call.
const LONG_SLEEP: Duration = Duration::from_millis(1);
/// A G running this long without a switch is asked to yield...
const PREEMPT_AFTER_NS: u64 = 10_000_000;
/// ...and this long, loses its P.
const RETAKE_AFTER_NS: u64 = 20_000_000;
/// A blocking call this long loses its P even when nothing else wants it.
const SYSCALL_FORCE_NS: u64 = 10_000_000;
/// The network is polled if nobody has for this long (Go's 10 ms)...
const NETPOLL_AFTER_NS: u64 = 10_000_000;
/// ...or this long while a P is idle.
const NETPOLL_IDLE_P_AFTER_NS: u64 = 1_000_000;
/// A timer nobody watches this long past due gets an M from sysmon.
const TIMER_GRACE_NS: u64 = 250_000;
/// An M parked this long exits if there are more Ms than GOMAXPROCS.
pub(crate) const M_IDLE_RETIRE: Duration = Duration::from_secs(1);

/// What sysmon last saw of a P (Go's `sysmontick`).
#[derive(Clone, Copy)]
struct Seen {
    context_switches: u64,
    since: u64,
    /// `schedtick` and since when it has not moved: the current time slice.
    schedtick: u64,
    slice_since: u64,
    syscalltick: u64,
    syscall_since: u64,
    /// When its G had held the P for [`PREEMPT_AFTER_NS`], and its M's
    /// thread's CPU time then: at a retake, how much of the time since was
    /// spent on the CPU tells a hog from a G blocked in the kernel.
    cpu_mark: Option<(u64, u64)>,
}

impl Seen {
    /// `p` as seen at `now`, counting from then: a G that later runs there starts
    /// a fresh count, not a hog at once.
    fn observed(p: &P, now: u64) -> Seen {
        Seen {
            context_switches: p.counters.context_switches.load(Ordering::Relaxed),
            since: now,
            schedtick: p.counters.schedtick.load(Ordering::Relaxed),
            slice_since: now,
            syscalltick: p.syscalltick.load(Ordering::Relaxed),
            syscall_since: now,
            cpu_mark: None,
        }
    }

    /// Counts from `now` again, whatever the counters say.
    fn restart(&mut self, now: u64) {
        self.since = now;
        self.slice_since = now;
        self.syscall_since = now;
        self.cpu_mark = None;
    }
}

/// Starts the sysmon thread.
pub(crate) fn start(s: &'static Sched) {
    let spawned = std::thread::Builder::new()
        .name("goro-sysmon".into())
        .spawn(move || run(s));
    if let Err(e) = spawned {
        crate::runtime::sys::fatal::die_now(&format!("fatal error: goro: cannot start the sysmon thread: {e}\n"));
    }
}

fn run(s: &'static Sched) -> ! {
    let _runtime_thread = crate::runtime::sys::os_threads::register();
    // As for every runtime thread that never idles as an M: a check that ran
    // before this registration saw an unknown thread (`monitor::deadlock`).
    observers::poke();
    let trace_ns = s.godebug.schedtrace_ms.saturating_mul(1_000_000);
    let mut next_trace = 0u64;
    let mut seen: Vec<Seen> = Vec::new();
    let mut delay = MIN_DELAY;
    let mut idle_looks = 0u32;
    // This look came early, only for the network's 1 ms rule.
    let mut early_for_network = false;
    let mut scavenger = Scavenger::new(s.nanotime());
    let mut swapper = Swapper::new(s.config.swap_after_ms);
    let mut heap_trim = HeapTrim::new(!s.godebug.no_heap_trim);
    loop {
        let now = s.nanotime();
        crate::runtime::sys::coarse_clock::tick(now);
        let netpoll_due = netpoll_if_stale(s, now);
        let timer_due = timers_if_unwatched(s, now);
        // Only a retake means "look closely again" (Go's rule): a poll that found
        // something is routine under network load, and resetting the pace on it
        // would keep sysmon waking every 20 µs (decision 0016).
        let looked = retake(s, now, &mut seen);
        let acted = looked.taken > 0;
        retire_idle_ms(s);
        let scavenge_due = scavenger.look(&s.stacks, now);
        let swap_due = swapper.look(now);
        let trim_due = heap_trim.look(s, now);
        if trace_ns > 0 && now >= next_trace {
            let report = super::schedtrace::render(s);
            // One write per report so lines from concurrent writers do not interleave.
            let _ = std::io::stderr().lock().write_all(report.as_bytes());
            next_trace = now + trace_ns;
        }

        idle_looks = if acted { 0 } else { idle_looks.saturating_add(1) };
        delay = if idle_looks <= IDLE_LOOKS_BEFORE_BACKOFF {
            MIN_DELAY
        } else {
            (delay * 2).min(MAX_DELAY)
        };
        // A hog crossing a threshold is dealt with on time, not up to a whole
        // (10 ms) pace late; never sooner than the shortest pace, so a P that
        // cannot be taken yet does not make sysmon spin.
        let now = s.nanotime();
        let due = looked
            .next_due
            .min(netpoll_due)
            .min(timer_due)
            .min(scavenge_due)
            .min(swap_due)
            .min(trim_due);
        let due = Duration::from_nanos(due.saturating_sub(now));
        let mut sleep = delay.min(due.max(MIN_DELAY));
        if trace_ns > 0 {
            sleep = sleep.min(Duration::from_nanos(next_trace.saturating_sub(now)));
        }
        // A look that came early only for the network does not end in deep
        // sleep: it sleeps its pace first. Under sparse traffic (a request now
        // and then, every P idle between them) it would otherwise deep-sleep
        // after every request, and the next request's M would have to wake it
        // on its way to the G (`p_acquired`), which costs that request CPU and
        // latency (`tests/net_sparse_wakeups.rs`).
        if trace_ns == 0 && !early_for_network && deep_sleep(s, timer_due, &scavenger, &mut swapper, &mut heap_trim) {
            // Every P idled: whoever holds one now starts a fresh count (a G back
            // from a blocking call may hold it without a switch to show for it).
            let now = s.nanotime();
            seen.iter_mut().for_each(|seen| seen.restart(now));
            continue;
        }
        early_for_network = netpoll_due < looked.next_due && netpoll_due.saturating_sub(now) < delay.as_nanos() as u64;
        let long = sleep >= LONG_SLEEP;
        s.sysmon.sleeping_long.store(long, Ordering::Relaxed);
        if s.sysmon.note.sleep_timeout(sleep) {
            idle_looks = 0; // a blocking call started: look closely again
            early_for_network = false;
        }
        s.sysmon.sleeping_long.store(false, Ordering::Relaxed);
    }
}

/// Sleeps while every P is idle (module docs); false if some P is not. Wakes
/// after [`M_IDLE_RETIRE`] if there are idle Ms that may retire, at
/// `timer_due` (from [`timers_if_unwatched`]) for a timer that no M watches, as
/// Go's sysmon sleeps no later than the next timer, and for the stack
/// scavenger's and the heap trim's next looks. Those are read after every P
/// was seen idle, so they count the stacks the last running G gave back and
/// the work it did.
fn deep_sleep(
    s: &Sched,
    timer_due: u64,
    scavenger: &Scavenger,
    swapper: &mut Swapper,
    heap_trim: &mut HeapTrim,
) -> bool {
    let all_idle = || s.idle.npidle() as usize == s.gomaxprocs();
    if !all_idle() {
        swapper.all_idle(false, 0);
        return false;
    }
    s.sysmon.deep.store(true, Ordering::SeqCst);
    if !all_idle() {
        s.sysmon.deep.store(false, Ordering::SeqCst);
        swapper.all_idle(false, 0);
        return false;
    }
    swapper.all_idle(true, s.nanotime());
    let mut limit = (s.idle.nmidle() > 0).then_some(M_IDLE_RETIRE);
    let now = s.nanotime();
    let due = timer_due
        .min(scavenger.next_look(&s.stacks, now))
        .min(swapper.next_look(now))
        .min(heap_trim.next_look(s, now));
    if due != u64::MAX {
        let to_due = Duration::from_nanos(due.saturating_sub(s.nanotime()));
        limit = Some(limit.map_or(to_due, |l| l.min(to_due)));
    }
    let woken = match limit {
        Some(limit) => s.sysmon.note.sleep_timeout(limit),
        None => {
            s.sysmon.note.sleep();
            true
        }
    };
    s.sysmon.deep.store(false, Ordering::SeqCst);
    if woken {
        // An M took a P: Gs may have parked since the Ps went idle.
        swapper.all_idle(false, 0);
    }
    true
}

/// Polls the network if Gs wait on it and nobody polled for 10 ms, or for 1 ms
/// while a P is idle; the readied Gs go to the global queue (sysmon has no P) and
/// Ms are woken for them. Returns when a poll is next due (`u64::MAX`: none while
/// nothing changes).
fn netpoll_if_stale(s: &Sched, now: u64) -> u64 {
    if crate::runtime::proc::state::net_waiters() == 0 {
        return u64::MAX;
    }
    let last = s.lastpoll.load(Ordering::SeqCst);
    if last == 0 {
        return u64::MAX; // an M is blocked in the poller
    }
    let after = if s.idle.npidle() > 0 {
        NETPOLL_IDLE_P_AFTER_NS
    } else {
        NETPOLL_AFTER_NS
    };
    if last + after > now {
        return last + after; // polled lately
    }
    if s.lastpoll
        .compare_exchange(last, now.max(1), Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        crate::runtime::sched::poll::netpoll(s, Some(Duration::ZERO));
    }
    now + after
}

/// Wakes a spinning M for a timer that no M watches (module docs) once it is
/// [`TIMER_GRACE_NS`] overdue: an M spinning runs every P's due timers, and one
/// in the poller sleeps until the earliest; with no P idle, each P's M runs its
/// own at its next scheduling round. The grace leaves a timer that an M is
/// about to run (the poller's, which wakes when sysmon would) to that M.
/// Returns when sysmon should look again for it (`u64::MAX`: nothing to watch).
fn timers_if_unwatched(s: &Sched, now: u64) -> u64 {
    if s.lastpoll.load(Ordering::SeqCst) == 0 || s.idle.npidle() == 0 || s.idle.nmspinning() > 0 {
        return u64::MAX;
    }
    let when = crate::runtime::sched::schedule::earliest_timer(s);
    if when == NO_TIMER {
        return u64::MAX;
    }
    let overdue_at = when.saturating_add(TIMER_GRACE_NS);
    if overdue_at > now {
        return overdue_at;
    }
    wakep();
    u64::MAX
}

/// What one look at the Ps found.
struct Looked {
    /// Ps retaken.
    taken: usize,
    /// When a running G next crosses a threshold (flag or retake), if it keeps
    /// running: sysmon looks again no later than that.
    next_due: u64,
}

/// Retakes Ps from blocking calls and hogs (Go's `retake`).
fn retake(s: &Sched, now: u64, seen: &mut Vec<Seen>) -> Looked {
    let n = s.gomaxprocs();
    seen.truncate(n);
    while seen.len() < n {
        seen.push(Seen::observed(s.p(seen.len()), now));
    }
    let mut taken = 0;
    let mut next_due = u64::MAX;
    for (p, seen) in s.procs().zip(seen.iter_mut()) {
        let st = p.state();
        let status = st.status();
        if !matches!(status, PStatus::Running | PStatus::Syscall) {
            *seen = Seen::observed(p, now);
        }
        // How long the P's G has held it without a switch, running or in and out
        // of blocking calls (which move no context switch): Go counts a G that
        // loops on short system calls as running too.
        let cs = p.counters.context_switches.load(Ordering::Relaxed);
        if seen.context_switches != cs {
            seen.context_switches = cs;
            seen.since = now;
            seen.cpu_mark = None;
        }
        let ran = now.saturating_sub(seen.since);
        let Some(m) = st.m() else { continue };
        match status {
            PStatus::Running => {
                if ran >= PREEMPT_AFTER_NS {
                    // Checked at its next goro call.
                    m.preempt.store(true, Ordering::Relaxed);
                    if seen.cpu_mark.is_none() {
                        seen.cpu_mark = m.cpu_time_ns().map(|cpu| (now, cpu));
                    }
                }
                // Gs taken from `runnext` inherit the slice and leave `schedtick`
                // alone (context switches do move): a slice this old is over.
                let tick = p.counters.schedtick.load(Ordering::Relaxed);
                if seen.schedtick != tick {
                    seen.schedtick = tick;
                    seen.slice_since = now;
                } else if now.saturating_sub(seen.slice_since) >= TIME_SLICE_NS {
                    p.slice_over.store(true, Ordering::Relaxed);
                    seen.slice_since = now;
                }
                next_due = next_due.min(seen.slice_since + TIME_SLICE_NS);
                let threshold = if ran < PREEMPT_AFTER_NS {
                    PREEMPT_AFTER_NS
                } else {
                    RETAKE_AFTER_NS
                };
                next_due = next_due.min(seen.since + threshold);
                if ran >= RETAKE_AFTER_NS {
                    let mut cut = 0;
                    let still_running = || {
                        let still = p.counters.context_switches.load(Ordering::Relaxed) == cs;
                        if still {
                            cut = tracing::retaking(m);
                        }
                        still
                    };
                    if try_take_running(p, st, PStatus::Idle, still_running) {
                        took_from_running(s, p, m, seen, now, ran, cut);
                        taken += 1;
                    } else {
                        tracing::retake_undone(&m.retaken_at, cut);
                    }
                }
            }
            PStatus::Syscall => {
                let t = p.syscalltick.load(Ordering::Relaxed);
                let cycling = seen.syscalltick != t;
                if cycling && ran >= PREEMPT_AFTER_NS {
                    // In and out of short calls for 10 ms: asked to yield when
                    // one returns (`blocking` checks). Not a G in one long call.
                    m.preempt.store(true, Ordering::Relaxed);
                }
                // A G that has held its P this long, however short its calls, is
                // not left alone for being between calls (Go's `sysretake`).
                let hog = ran >= RETAKE_AFTER_NS;
                if cycling {
                    seen.syscalltick = t;
                    seen.syscall_since = now;
                    if !hog {
                        continue;
                    }
                }
                // Go's rule: leave it if nothing waits for it and there are Ms to
                // pick up new work, unless the call has gone on for long.
                let wanted = !p.runq.is_empty()
                    || p.timers.next() != NO_TIMER
                    || s.idle.nmspinning() + s.idle.npidle() == 0
                    || now.saturating_sub(seen.syscall_since) >= SYSCALL_FORCE_NS;
                if wanted && p.cas_state(st, PState::new(None, PStatus::Idle)) {
                    s.counters.syscall_handoffs.fetch_add(1, Ordering::Relaxed);
                    if tracing::on() {
                        tracing::emit_for_p(Kind::Retake, p.id, 0, 0);
                    }
                    hand_off_p(p.id);
                    if !hog {
                        // One long call: it lost its P, that is enough.
                        m.preempt.store(false, Ordering::Relaxed);
                    }
                    // Its G may take it back before anything switches there: that
                    // is a fresh start, not a hog.
                    seen.since = now;
                    taken += 1;
                }
            }
            _ => {}
        }
    }
    Looked { taken, next_due }
}

/// sysmon took P `p` from `m`, whose G held it `ran` ns without a switch
/// (the cut dated `cut` for the trace): counts it as a CPU hog or as blocked
/// in the kernel, tells the trace (and with `blockwarn`, the user), and hands
/// the P to another M.
fn took_from_running(s: &Sched, p: &P, m: &'static M, seen: &mut Seen, now: u64, ran: u64, cut: u64) {
    let blocked = blocked_in_kernel(m, seen.cpu_mark, now);
    let counter = if blocked {
        &s.counters.blocking_retakes
    } else {
        &s.counters.preempt_retakes
    };
    counter.fetch_add(1, Ordering::Relaxed);
    if tracing::on() {
        let why = if blocked { TakenFrom::Blocked } else { TakenFrom::Hog };
        tracing::retook_from(p.id, why, cut);
    }
    if blocked && s.godebug.blockwarn {
        blockwarn::report(m, m.curg(), ran);
    }
    hand_off_p(p.id);
    seen.since = now;
    seen.cpu_mark = None;
}

/// Whether the G of `m`, about to lose its P, spent the time since `mark`
/// (when, and its thread's CPU time then) in the kernel rather than on the
/// CPU: its thread ran under a tenth of it, and is not runnable now (a hog
/// among more threads than cores waits for a CPU, runnable).
fn blocked_in_kernel(m: &M, mark: Option<(u64, u64)>, now: u64) -> bool {
    let Some((at, cpu_then)) = mark else { return false };
    let Some(cpu_now) = m.cpu_time_ns() else { return false };
    cpu_now.saturating_sub(cpu_then).saturating_mul(10) < now.saturating_sub(at) && m.thread_runnable() != Some(true)
}

/// Lets Ms that have been parked for [`M_IDLE_RETIRE`] exit while there are more
/// Ms than GOMAXPROCS.
fn retire_idle_ms(s: &Sched) {
    if s.idle.nmidle() == 0 {
        return;
    }
    let threads = s.allm.lock().unwrap_or_else(|e| e.into_inner()).len();
    let excess = threads.saturating_sub(s.gomaxprocs());
    if excess == 0 {
        return;
    }
    let cutoff = s.nanotime().saturating_sub(M_IDLE_RETIRE.as_nanos() as u64);
    let retiring = s
        .idle
        .lock()
        .mget_idle_since(cutoff, excess, |m| m.idle_since.load(Ordering::Relaxed));
    for m in retiring {
        m.set_retire();
        m.note.wake();
    }
}
