//! loom models of the concurrency core: the run queue ring, `runnext`, the
//! worker parking protocol (idle Ps, spinning Ms, the park note), the retake
//! handshake, the runtime lock on its futex, and the execution trace's chunks
//! moving between an M, the writer and the trace's end. (Channels, `goro::sync` and the
//! poll descriptors have their models next to their code.)
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom" cargo test --lib --release
//! loom_`). Under loom the ring has 4 slots, so overflow and wrap-around are
//! reachable with a handful of items.
//!
//! The protocol models replay, step for step, the submitter side of `mpark::wakep`
//! and the "nothing to do" tail of `schedule::find_runnable`, on the real `Idle`,
//! `RunQueue` and `Note`. Keep them in step with those functions.
//!
//! The retake models run the real handshake of `ownership` (`enter`/`still_held`
//! on the M's side, `take` on sysmon's or a stop-the-world's), with both barriers
//! as `SeqCst` fences (the fallback when `membarrier` is unavailable).

use super::proc::timers::NO_TIMER;
use super::queue::idle::Idle;
use super::queue::runq::{RunQueue, RING_CAP};
use super::sys::note::Note;
use loom::sync::atomic::{fence, AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::ptr::NonNull;

fn items(n: usize) -> Vec<NonNull<u64>> {
    let v: &'static mut [u64] = Box::leak((0..n as u64).collect::<Vec<_>>().into_boxed_slice());
    v.iter_mut().map(NonNull::from).collect()
}

fn val(p: NonNull<u64>) -> u64 {
    // SAFETY: points into a leaked array from `items`.
    unsafe { *p.as_ptr() }
}

struct SendPtrs(Vec<NonNull<u64>>);
// SAFETY: the pointees are leaked, immutable u64s.
unsafe impl Send for SendPtrs {}
// SAFETY: as above.
unsafe impl Sync for SendPtrs {}

/// Owner pushes past capacity (forcing a spill) and pops while a thief steals
/// (runnext included): each item ends up in exactly one place.
#[test]
fn loom_ring_push_pop_steal_spill_exactly_once() {
    loom::model(|| {
        let n = RING_CAP as usize + 1;
        let q = Arc::new(RunQueue::<u64>::new());
        let it = Arc::new(SendPtrs(items(n)));
        let thief = {
            let q = q.clone();
            thread::spawn(move || {
                let mine = RunQueue::new();
                let mut got = Vec::new();
                if let Some((g, _)) = mine.steal_into(&q, true, || true) {
                    got.push(val(g));
                    while let Some((g, _)) = mine.pop() {
                        got.push(val(g));
                    }
                }
                got
            })
        };
        let mut got = Vec::new();
        for (k, &i) in it.0.iter().enumerate() {
            q.push(i, k == 0, |batch| got.extend(batch.iter().map(|&g| val(g))));
        }
        // The owner's peek, racing the thief, names only items that were pushed.
        let pushed = |p: NonNull<u64>| it.0.contains(&p);
        assert!(q.peek(0).is_none_or(pushed) && q.peek(1).is_none_or(pushed));
        if let Some((g, _)) = q.pop() {
            got.push(val(g));
        }
        let stolen = thief.join().unwrap();
        loop {
            let peeked = q.peek(0);
            let Some((g, _)) = q.pop() else { break };
            assert_eq!(peeked, Some(g), "with no thief left, peek(0) is the next pop");
            got.push(val(g));
        }
        got.extend(stolen);
        got.sort_unstable();
        assert_eq!(got, (0..n as u64).collect::<Vec<_>>());
    });
}

/// Two thieves race for one victim's runnext while its owner pops it.
#[test]
fn loom_runnext_taken_once() {
    loom::model(|| {
        let q = Arc::new(RunQueue::<u64>::new());
        let it = items(1);
        q.push(it[0], true, |_| unreachable!());
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || {
                    let mine = RunQueue::new();
                    usize::from(mine.steal_into(&q, true, || true).is_some())
                })
            })
            .collect();
        let owner = usize::from(q.pop().is_some());
        let total: usize = owner + thieves.into_iter().map(|t| t.join().unwrap()).sum::<usize>();
        assert_eq!(total, 1);
    });
}

/// A parked M in the model: its note and the P handed to it.
struct ModelM {
    note: Note,
    nextp: Mutex<Option<usize>>,
}

impl ModelM {
    fn new() -> Arc<Self> {
        Arc::new(ModelM {
            note: Note::new(),
            nextp: Mutex::new(None),
        })
    }

    /// The end of a model whose M may be parked: if no submitter handed a P out,
    /// the M must have found the work itself (`m` returns whether it did); else
    /// the M is told to stop, and woken in case it is parked.
    fn finish(&self, handed: bool, m: thread::JoinHandle<bool>, stop: &AtomicBool, lost: &str) {
        if !handed {
            assert!(m.join().unwrap(), "lost wake-up: {lost}");
            return;
        }
        stop.store(true, Ordering::SeqCst);
        self.note.wake();
        m.join().unwrap();
    }
}

/// Two Ps, both held, and the M on one of them spinning.
fn two_ps_one_spinning() -> Arc<Idle<Arc<ModelM>>> {
    let idle = Arc::new(Idle::new(2));
    let mut l = idle.lock();
    assert!(l.pidle_get().is_some() && l.pidle_get().is_some());
    drop(l);
    idle.become_spinning();
    idle
}

/// The spinner found a G (`reset_spinning`): it stops spinning and wakes
/// another M if one is wanted. Returns whether it handed a P out.
fn model_reset_spinning(idle: &Idle<Arc<ModelM>>) -> bool {
    idle.stop_spinning();
    model_wakep(idle)
}

/// `mpark::wakep` + `start_m`, as the submitter runs it after publishing work.
/// Returns true if it handed a P to an M (parked or newly created).
fn model_wakep(idle: &Idle<Arc<ModelM>>) -> bool {
    fence(Ordering::SeqCst);
    model_wakep_global(idle)
}

/// `mpark::wakep_global`: as [`model_wakep`] without the fence, for work pushed
/// to the global queue under its lock.
fn model_wakep_global(idle: &Idle<Arc<ModelM>>) -> bool {
    if !idle.should_wake() {
        return false;
    }
    let p = idle.lock().pidle_get_for_claim();
    let Some(p) = p else {
        return false;
    };
    if let Some(m) = idle.lock().mget() {
        *m.nextp.lock().unwrap() = Some(p);
        m.note.wake();
    }
    // No parked M: the real code spawns a new M holding `p`. Either way `p` runs.
    true
}

/// How the "nothing to do" tail of [`model_idle_m`] ended.
#[derive(PartialEq, Debug)]
enum Idled {
    /// A re-check found work: the M took an idle P back and spins.
    FoundWork,
    /// The M slept and was handed a P: it spins.
    Handed,
    /// The M slept and the model told it to stop.
    Stopped,
}

/// The start of `find_runnable`'s "Give up the P": turn spinning instead if a
/// submitter wanted a spinner (`needspinning`; the real M then searches again,
/// and the model has nothing to steal), idle P `p`, stop spinning, fence.
/// Returns whether the M was spinning.
fn model_give_up_p(idle: &Idle<Arc<ModelM>>, p: usize, mut spinning: bool) -> bool {
    let mut l = idle.lock();
    if !spinning && idle.needspinning() == 1 {
        drop(l);
        idle.become_spinning();
        spinning = true;
        l = idle.lock();
    }
    l.pidle_put(p);
    drop(l);
    if spinning {
        idle.stop_spinning();
    }
    fence(Ordering::SeqCst);
    spinning
}

/// The "nothing to do" tail of `find_runnable` for an M holding P `p`: turn
/// spinning instead if a submitter wanted a spinner (`needspinning`), else idle
/// the P, stop spinning, re-check the global queue (under its lock) and, if it
/// was spinning, the other Ps' rings, then park.
fn model_idle_m(
    idle: &Idle<Arc<ModelM>>,
    me: &Arc<ModelM>,
    p: usize,
    spinning: bool,
    global: &Mutex<Vec<u64>>,
    others: &[&RunQueue<u64>],
    stop: &AtomicBool,
) -> Idled {
    let spinning = model_give_up_p(idle, p, spinning);
    let take_p = || {
        let p = idle.lock().pidle_get_spinning();
        p.inspect(|_| idle.become_spinning()).is_some()
    };
    if !global.lock().unwrap().is_empty() && take_p() {
        return Idled::FoundWork;
    }
    if spinning && others.iter().any(|q| !q.is_empty()) && take_p() {
        return Idled::FoundWork;
    }
    idle.lock().mput(me.clone());
    me.note.sleep();
    if me.nextp.lock().unwrap().take().is_some() && !stop.load(Ordering::SeqCst) {
        Idled::Handed
    } else {
        Idled::Stopped
    }
}

/// A plain thread (or a yielding G's M) submits to the global queue and wakes
/// without a fence (`wakep_global`) while the only M, spinning or not, gives up
/// its P and re-checks the queue under its lock: the work is never stranded with
/// every M asleep.
#[test]
fn loom_global_submit_vs_idling_m_no_lost_wakeup() {
    for spinning in [true, false] {
        loom::model(move || {
            let idle = Arc::new(Idle::<Arc<ModelM>>::new(1));
            assert_eq!(idle.lock().pidle_get(), Some(0)); // the M holds P0
            if spinning {
                idle.become_spinning();
            }
            let global = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let me = ModelM::new();
            let m = {
                let (idle, global, me, stop) = (idle.clone(), global.clone(), me.clone(), stop.clone());
                thread::spawn(move || model_idle_m(&idle, &me, 0, spinning, &global, &[], &stop) == Idled::FoundWork)
            };
            global.lock().unwrap().push(1);
            let handed = model_wakep_global(&idle);
            me.finish(handed, m, &stop, "work queued, P idle, M asleep");
        });
    }
}

/// `ready::ready` from a thread without a P (a plain thread, another runtime's
/// worker waking a goroutine's future): with no M spinning it takes an idle P
/// itself, puts the G in that P's ring and starts a non-spinning M on it;
/// else the global queue and `wakep`. Models that against the only M, holding
/// P0, idling it: the G is never stranded with the P idle and the M asleep.
fn model_foreign_ready(
    idle: &Idle<Arc<ModelM>>,
    ring0: &RunQueue<u64>,
    global: &Mutex<Vec<u64>>,
    g: NonNull<u64>,
) -> bool {
    if idle.nmspinning() == 0 {
        let p = idle.lock().pidle_get();
        if let Some(p) = p {
            assert_eq!(p, 0);
            ring0.push(g, true, |_| unreachable!());
            // `start_m(p, false)`: a parked M, or a new one, holding P0 with the G.
            if let Some(m) = idle.lock().mget() {
                *m.nextp.lock().unwrap() = Some(p);
                m.note.wake();
            }
            return true;
        }
    }
    global.lock().unwrap().push(val(g));
    model_wakep_global(idle)
}

#[test]
fn loom_foreign_ready_vs_idling_m_no_lost_wakeup() {
    for spinning in [true, false] {
        loom::model(move || {
            let idle = Arc::new(Idle::<Arc<ModelM>>::new(1));
            assert_eq!(idle.lock().pidle_get(), Some(0)); // the M holds P0
            if spinning {
                idle.become_spinning();
            }
            let ring0 = Arc::new(RunQueue::<u64>::new());
            let global = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let me = ModelM::new();
            let m = {
                let (idle, global, me, stop) = (idle.clone(), global.clone(), me.clone(), stop.clone());
                thread::spawn(move || model_idle_m(&idle, &me, 0, spinning, &global, &[], &stop) == Idled::FoundWork)
            };
            let handed = model_foreign_ready(&idle, &ring0, &global, items(1)[0]);
            if handed && !stop.load(Ordering::SeqCst) {
                // Whoever holds P0 now finds the G in its ring or the global queue.
                assert!(!ring0.is_empty() || !global.lock().unwrap().is_empty());
            }
            me.finish(handed, m, &stop, "a foreign ready stranded: P idle, M asleep");
        });
    }
}

/// An M holding P1 readies a G into its own ring while the spinning M on P0 gives
/// up: either the submitter wakes someone or the spinner sees the ring.
#[test]
fn loom_local_submit_vs_spinner_giving_up() {
    loom::model(|| {
        let idle = two_ps_one_spinning(); // the M on P0 spins
        let ring1 = Arc::new(RunQueue::<u64>::new());
        let global = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let me = ModelM::new();
        let spinner = {
            let (idle, ring1, global, me, stop) =
                (idle.clone(), ring1.clone(), global.clone(), me.clone(), stop.clone());
            thread::spawn(move || model_idle_m(&idle, &me, 0, true, &global, &[&ring1], &stop) == Idled::FoundWork)
        };
        let it = items(2);
        ring1.push(it[0], true, |_| unreachable!());
        ring1.push(it[1], true, |_| unreachable!()); // one G now waits in P1's ring
        let handed = model_wakep(&idle);
        me.finish(handed, spinner, &stop, "P1's ring has work, P0 idle, M asleep");
    });
}

/// Two plain threads submit to the global queue while an M coming back from a
/// blocking call takes the only P, runs what it finds and idles it again. The
/// first submitter's claim of the spinning slot can find no idle P (the M took
/// it) and leave `needspinning` for the M, which spins once and idles. Had the
/// claim been given back after the idle lock was dropped, the M could idle while
/// the claim still counted as a spinner, and the second submitter, seeing it,
/// would wake nobody: its G stranded, the P idle, the M asleep (Go gives the
/// claim back under `sched.lock`).
#[test]
fn loom_claim_without_p_given_back_before_an_m_idles() {
    loom::model(|| {
        let idle = Arc::new(Idle::<Arc<ModelM>>::new(1));
        let global = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let me = ModelM::new();
        let a = {
            let (idle, global) = (idle.clone(), global.clone());
            thread::spawn(move || {
                global.lock().unwrap().push(1);
                model_wakep(&idle)
            })
        };
        let m = {
            let (idle, global, me, stop) = (idle.clone(), global.clone(), me.clone(), stop.clone());
            thread::spawn(move || {
                let Some(p) = idle.lock().pidle_get() else {
                    return false; // a submitter's M has the P
                };
                let (mut ran, mut spinning) = (0, false);
                loop {
                    let before = ran;
                    while global.lock().unwrap().pop().is_some() {
                        ran += 1;
                    }
                    if ran > before && spinning {
                        // A spinner that found work stops spinning (`reset_spinning`).
                        spinning = false;
                        model_reset_spinning(&idle);
                    }
                    if ran == 2 {
                        return true;
                    }
                    match model_idle_m(&idle, &me, p, spinning, &global, &[], &stop) {
                        Idled::FoundWork | Idled::Handed => spinning = true,
                        Idled::Stopped => return false,
                    }
                }
            })
        };
        global.lock().unwrap().push(2);
        let handed = model_wakep(&idle) | a.join().unwrap();
        me.finish(handed, m, &stop, "Gs queued, the P idle, the M asleep");
    });
}

/// A timer added to P0 by a P-less caller (a plain thread, a G whose P was
/// retaken: `timers::add_timer`), whose `wakep` sees no idle P, while the M on
/// P0, not spinning (the spinner on P1 is), gives P0 up and that spinner finds
/// work and stops. The idling M's deadline came from before the add, so it must
/// read its P's timers again after its fence; someone then watches the timer.
/// (Without the re-read the M slept in the poller with no deadline, or on its
/// note, and the timer fired arbitrarily late.)
#[test]
fn loom_timer_added_to_an_idling_p_is_watched() {
    use loom::sync::atomic::AtomicU64;
    loom::model(|| {
        let idle = two_ps_one_spinning(); // P0: M0, P1: S
        let timer0 = Arc::new(AtomicU64::new(NO_TIMER)); // P0's `timers.next()`
        let m0 = {
            let (idle, timer0) = (idle.clone(), timer0.clone());
            thread::spawn(move || {
                let mut poll_until = timer0.load(Ordering::Acquire); // `run_timers`
                let spinning = idle.may_spin(2); // only once S stopped
                if spinning {
                    idle.become_spinning();
                }
                model_give_up_p(&idle, 0, spinning);
                // A spinner reads every P's timers, anyone else its own P's.
                poll_until = poll_until.min(timer0.load(Ordering::Acquire));
                poll_until != NO_TIMER // M0 then sleeps in the poller until it
            })
        };
        let s = {
            let idle = idle.clone();
            thread::spawn(move || model_reset_spinning(&idle)) // S found a G
        };
        timer0.store(1000, Ordering::Release); // the P-less `add_timer`
        let woke = model_wakep(&idle); // its `wake_netpoller`: nobody polls
        let watched = m0.join().unwrap();
        let s_woke = s.join().unwrap();
        assert!(watched || woke || s_woke, "a timer on idle P0 that no M watches");
    });
}

/// As [`loom_timer_added_to_an_idling_p_is_watched`], with sysmon handing P0
/// off (`mpark::hand_off_p`): it reads the P's timers after idling it and a
/// fence, not before.
#[test]
fn loom_timer_added_to_a_handed_off_p_is_watched() {
    use loom::sync::atomic::AtomicU64;
    loom::model(|| {
        let idle = two_ps_one_spinning(); // P0 retaken, P1: S
        let timer0 = Arc::new(AtomicU64::new(NO_TIMER));
        let handoff = {
            let (idle, timer0) = (idle.clone(), timer0.clone());
            thread::spawn(move || {
                if idle.should_spin_for_handoff() {
                    return true; // a spinning M starts on P0 and watches every timer
                }
                idle.lock().pidle_put(0);
                fence(Ordering::SeqCst);
                timer0.load(Ordering::Acquire) != NO_TIMER // `wake_netpoller(when)`
            })
        };
        let s = {
            let idle = idle.clone();
            thread::spawn(move || model_reset_spinning(&idle)) // S found a G
        };
        timer0.store(1000, Ordering::Release);
        let woke = model_wakep(&idle);
        let watched = handoff.join().unwrap();
        let s_woke = s.join().unwrap();
        assert!(watched || woke || s_woke, "a timer on handed-off P0 that no M watches");
    });
}

/// `ownership::leave` from depth 1, written as its store: the M is the
/// depth's only writer, so `leave`'s load reads 1. With that load in place
/// loom's search misses interleavings (a take that dates itself and fails,
/// which threads racing the real code reach).
fn leave_from_one(depth: &super::sys::sync_prims::AtomicU32) {
    depth.store(0, Ordering::Release);
}

/// A P state word held by a pretend M at address 8 (Ms are 8-aligned).
fn held() -> super::proc::p::PState {
    super::proc::p::PState(8 | super::proc::p::PStatus::Running as usize)
}

/// An M leaves the runtime to run its G, then enters again (and touches its P if
/// it still holds it) and leaves, while a taker tries to take the P: they never
/// touch the P's private state at the same time (loom checks the cell), an M
/// that lost its P knows it, and the taker's verdict is what the M sees next.
#[test]
fn loom_retake_handshake_never_shares_the_p() {
    use super::proc::p::{PState, PStatus};
    use super::sched::ownership::{enter, leave, still_held, take};
    use super::sys::sync_prims::{AtomicU32, AtomicUsize};
    use loom::cell::UnsafeCell;
    loom::model(|| {
        let state = Arc::new(AtomicUsize::new(held().0));
        let depth = Arc::new(AtomicU32::new(1));
        let private = Arc::new(UnsafeCell::new(0u32));
        let taker = {
            let (state, depth, private) = (state.clone(), depth.clone(), private.clone());
            thread::spawn(move || {
                let took = take(&state, held(), PState::new(None, PStatus::Idle), &depth, || true);
                if took {
                    // SAFETY: the handshake gave us the P; loom checks this
                    // access against the M's.
                    private.with_mut(|v| unsafe { *v += 1 });
                }
                took
            })
        };
        leave(&depth); // the G runs user code
        let outer = enter(&depth);
        let kept = outer && still_held(&state, held());
        if kept {
            // SAFETY: the P is still ours; loom checks this access against
            // the taker's.
            private.with_mut(|v| unsafe { *v += 1 });
        }
        leave_from_one(&depth); // back to user code: the P may be taken now
        let took = taker.join().unwrap();
        assert!(kept || took, "the M lost a P nobody took");
        // The M's next entry sees the verdict.
        let outer = enter(&depth);
        assert!(outer);
        assert_eq!(still_held(&state, held()), !took);
    });
}

/// A taker dates its take inside the handshake, in its `still` check before
/// the commit (`tracing::retaking`), and withdraws the date if the take fails
/// (`tracing::retake_undone`); the M takes the date when it finds its P gone
/// (`tracing::lost_p`), at whichever entry that is. An M that lost its P
/// always finds the date (the trace marks where its G's run left the P), and
/// no date outlives a failed take. With `transition` the M, still holding its
/// P, makes its own transition and leaves the runtime (as `goro::blocking`'s
/// `enter_syscall` does). A take that began just after the M's check can then
/// read the M out of the runtime, date itself and fail its commit, which is
/// what the withdrawal is for.
#[test]
fn loom_a_retake_is_dated_before_its_m_can_see_it() {
    use super::proc::p::{PState, PStatus};
    use super::sched::ownership::{enter, leave, still_held, take};
    use super::sys::sync_prims::{AtomicU32, AtomicU64, AtomicUsize};
    const DATE: u64 = 7;
    for transition in [false, true] {
        loom::model(move || {
            let state = Arc::new(AtomicUsize::new(held().0));
            let depth = Arc::new(AtomicU32::new(1));
            let date = Arc::new(AtomicU64::new(0));
            let taker = {
                let (state, depth, date) = (state.clone(), depth.clone(), date.clone());
                thread::spawn(move || {
                    let mut cut = 0;
                    let took = take(&state, held(), PState::new(None, PStatus::Idle), &depth, || {
                        date.store(DATE, Ordering::Relaxed);
                        cut = DATE;
                        true
                    });
                    if !took {
                        super::proc::tracing::retake_undone(&date, cut);
                    }
                })
            };
            // The M finds its P gone: the date is there.
            let lost = |date: &AtomicU64| {
                assert_eq!(
                    date.swap(0, Ordering::Relaxed),
                    DATE,
                    "the M found its P gone without a date"
                );
            };
            leave(&depth); // the G runs user code
            let outer = enter(&depth);
            let kept = outer && still_held(&state, held());
            if !kept {
                lost(&date);
            } else if transition {
                state.swap(held().with_status(PStatus::Syscall).0, Ordering::AcqRel);
            }
            leave_from_one(&depth);
            taker.join().unwrap();
            if kept && !transition {
                // The M's next entry sees the verdict.
                assert!(enter(&depth));
                if !still_held(&state, held()) {
                    lost(&date);
                }
            }
            assert_eq!(date.load(Ordering::Relaxed), 0, "a date outlived its take");
        });
    }
}

/// The M, inside the runtime, gives its P up itself (`release_p`) while a taker
/// tries to take it: the taker must not commit a P the M already released.
#[test]
fn loom_retake_loses_to_the_ms_own_transition() {
    use super::proc::p::{PState, PStatus};
    use super::sched::ownership::take;
    use super::sys::sync_prims::{AtomicU32, AtomicUsize};
    loom::model(|| {
        let state = Arc::new(AtomicUsize::new(held().0));
        let depth = Arc::new(AtomicU32::new(1));
        let taker = {
            let (state, depth) = (state.clone(), depth.clone());
            thread::spawn(move || take(&state, held(), PState::new(None, PStatus::Stopped), &depth, || true))
        };
        // In the runtime: release the P (the swap of `P::set_state`, as in
        // `M::release_p`), then go on to run a G.
        state.swap(PState::new(None, PStatus::Idle).0, Ordering::AcqRel);
        leave_from_one(&depth);
        let took = taker.join().unwrap();
        let end = PState(state.load(Ordering::Acquire)).status();
        assert!(!took, "the taker took a P its M had released");
        assert_eq!(end, PStatus::Idle);
    });
}

/// The runtime lock (`RawMutex`) under contention from three threads, sleepers
/// on its futex included: no update under it is lost, and every sleeper is woken.
#[test]
fn loom_raw_mutex_excludes_and_wakes_sleepers() {
    use loom::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    loom::model(|| {
        let m = Arc::new((super::sys::lock::RawMutex::new(), AtomicUsize::new(0)));
        let bump = |m: &(super::sys::lock::RawMutex, AtomicUsize)| {
            let _g = m.0.guard();
            let v = m.1.load(Relaxed);
            m.1.store(v + 1, Relaxed);
        };
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || bump(&m))
            })
            .collect();
        bump(&m);
        ts.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(m.1.load(Relaxed), 3);
    });
}

/// An event numbered `i` (in its `g` field), for the trace models.
fn trace_event(i: u64) -> super::sys::trace_buf::Event {
    super::sys::trace_buf::Event {
        ts: i,
        g: i,
        arg: 0,
        m: 0,
        p: 0,
        kind: super::sys::trace_buf::Kind::Start,
        small: 0,
    }
}

/// The execution trace's chunks (`sys/trace_buf.rs`, 2 events each under
/// loom): an M records five events (filling two chunks and handing them to the
/// writer) and exits (its chunk goes back), while the writer drains and
/// recycles chunks and the trace ends. The writer sees a prefix of the M's
/// events, each once and in order, none lost; loom checks every slot access
/// for a race between the M, `end`'s copy and the writer.
#[test]
fn loom_trace_chunks_reach_the_writer_once_in_order() {
    use super::sys::trace_buf::{TraceBuf, TRACER};
    loom::model(|| {
        assert!(TRACER.begin());
        // Leaked: a buffer lives as long as its M, here the whole model.
        let buf: &'static TraceBuf = Box::leak(Box::new(TraceBuf::new()));
        let m = thread::spawn(move || {
            for i in 0..5 {
                buf.record(trace_event(i));
            }
            buf.release();
        });
        let writer = thread::spawn(|| {
            let mut seen = Vec::new();
            loop {
                let (chunks, last) = {
                    let mut state = TRACER.lock();
                    (std::mem::take(&mut state.full), state.last.take())
                };
                for chunk in chunks {
                    seen.extend(chunk.events().map(|e| e.g));
                    TRACER.recycle(chunk);
                }
                if let Some(last) = last {
                    seen.extend(last.into_iter().flatten().map(|e| e.g));
                    return seen;
                }
                thread::yield_now();
            }
        });
        TRACER.end();
        let seen = writer.join().unwrap();
        m.join().unwrap();
        assert_eq!(TRACER.lost.load(Ordering::Relaxed), 0);
        assert_eq!(
            seen,
            (0..seen.len() as u64).collect::<Vec<_>>(),
            "not a prefix, once each"
        );
    });
}

/// More events than every chunk holds (3 chunks of 2 under loom): the M
/// waits for the writer to give chunks back, and loses none. A model where
/// the M counted an event lost instead of waiting, or waited for a chunk
/// nobody signals, fails (an assertion, or loom's deadlock check).
#[test]
fn loom_trace_a_full_tracer_slows_the_m_and_loses_nothing() {
    use super::sys::trace_buf::{TraceBuf, TRACER};
    loom::model(|| {
        assert!(TRACER.begin());
        let buf: &'static TraceBuf = Box::leak(Box::new(TraceBuf::new()));
        let done = Arc::new(AtomicBool::new(false));
        let m_done = done.clone();
        let m = thread::spawn(move || {
            for i in 0..8 {
                buf.record(trace_event(i));
            }
            buf.release();
            m_done.store(true, Ordering::Release);
        });
        let writer = thread::spawn(move || {
            let mut seen = Vec::new();
            loop {
                let finished = done.load(Ordering::Acquire);
                let chunks = std::mem::take(&mut TRACER.lock().full);
                if finished && chunks.is_empty() {
                    return seen;
                }
                for chunk in chunks {
                    seen.extend(chunk.events().map(|e| e.g));
                    TRACER.recycle(chunk);
                }
                thread::yield_now();
            }
        });
        m.join().unwrap();
        let seen = writer.join().unwrap();
        TRACER.end();
        drop(TRACER.lock().last.take());
        assert_eq!(TRACER.lost.load(Ordering::Relaxed), 0);
        assert_eq!(seen, (0..8).collect::<Vec<u64>>());
    });
}

/// A second trace after the first: a buffer holding the first trace's chunk
/// records into the second, and the second's writer sees only its events.
#[test]
fn loom_trace_generations_do_not_mix() {
    use super::sys::trace_buf::{TraceBuf, TRACER};
    loom::model(|| {
        let buf: &'static TraceBuf = Box::leak(Box::new(TraceBuf::new()));
        assert!(TRACER.begin());
        buf.record(trace_event(100));
        TRACER.end();
        drop(TRACER.lock().last.take());
        assert!(TRACER.begin());
        let m = thread::spawn(move || {
            for i in 0..3 {
                buf.record(trace_event(i));
            }
        });
        TRACER.end();
        m.join().unwrap();
        let mut state = TRACER.lock();
        let mut seen: Vec<u64> = std::mem::take(&mut state.full)
            .iter()
            .flat_map(|c| c.events().map(|e| e.g).collect::<Vec<_>>())
            .collect();
        seen.extend(state.last.take().unwrap().into_iter().flatten().map(|e| e.g));
        drop(state);
        assert_eq!(seen, (0..seen.len() as u64).collect::<Vec<_>>(), "{seen:?}");
        buf.release();
    });
}
