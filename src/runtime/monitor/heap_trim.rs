//! The heap trim: once the process has gone idle after some work, sysmon asks
//! glibc's malloc to give its free memory back to the kernel (`malloc_trim(0)`),
//! as Go's scavenger does for Go's heap. `task/scavenge.rs` does this for stacks;
//! this module does it for what goroutines allocated with Rust's allocator.
//!
//! glibc keeps a freed block for reuse, and gives memory back on its own only
//! from the top of an arena. A burst leaves the top of each arena held by a
//! block still in use, so the freed memory below stays resident, and each
//! thread that ever allocated may have an arena of its own (up to eight per
//! core): a server stays at its peak RSS long after its bursts
//! (docs/decisions/0002-heap-trim.md). `malloc_trim` also releases the whole
//! pages inside the free blocks of every arena (`madvise(MADV_DONTNEED)`),
//! which is what brings that back.
//!
//! # When
//! sysmon trims when, at one of its looks, all three hold:
//! - **every P is idle, and no G has switched in since the idle stretch
//!   began**, for [`IDLE_NS`]: the work count ([`work`]: every P's context
//!   switches plus the Gs that finished without a P) has not moved. A G in a
//!   blocking call whose P was handed off does not count as work; a trim
//!   beside its allocations is safe (malloc locks each arena);
//! - **some G ran since the last trim** (the work count moved): what nothing
//!   ran to free is not there to give back, so an idle process trims once and
//!   then sleeps;
//! - **[`MIN_INTERVAL_NS`] since the last trim**: each trim walks every arena
//!   under its lock, and the pages it gives back are faulted in again by the
//!   next burst; the interval bounds both for a workload that comes back in
//!   bursts just over [`IDLE_NS`] apart.
//!
//! An idle stretch is timed from the first look that sees every P idle; the
//! work count is read once more when sysmon goes into deep sleep, so work
//! done between that look and the sleep starts a new stretch.
//!
//! Never on a hot path: only sysmon calls `malloc_trim`, and only after
//! [`IDLE_NS`] with every P idle. It holds one arena's lock at a time, so a G
//! that allocates meanwhile in the arena being trimmed waits for that arena's
//! walk (the whole trim takes tens of milliseconds with hundreds of MiB free).
//! The pages it gives
//! back are faulted in again by whatever allocates next, as Go's are.
//!
//! # Sleeping
//! The next trim's time bounds sysmon's deep sleep (every P idle) only while
//! a trim is pending: the first look that sees every P idle after work
//! starts the stretch, the deep sleep ends when it is due, and after the trim
//! nothing is pending, so sysmon sleeps until an M takes a P. One wake-up per
//! idle stretch that followed work, none while the process stays idle.
//!
//! # Where it applies
//! Only on Linux with glibc (`target_env = "gnu"`): elsewhere [`trim`] is
//! empty and [`HeapTrim`] never asks for it. Under another global allocator
//! (jemalloc, mimalloc) glibc's arenas hold little, and a trim only walks
//! them. `GODEBUG=heaptrim=0` turns it off.
//!
//! Thread: [`HeapTrim`] is sysmon's own. [`work`] reads the Ps' counters
//! Relaxed, but only after an `npidle` load (`SeqCst`) has shown every P idle;
//! an M bumps its P's count before it puts the P on the idle list (`npidle`
//! RMW, `SeqCst`), so the count read includes every G that ran before the P
//! idled, and the last G's work is never mistaken for none.

use crate::runtime::proc::state::Sched;
use std::sync::atomic::Ordering;

/// The process counts as idle after every P has been idle, with no G run, this
/// long: the stack scavenger's period (`scavenge::PERIOD_NS`), so a burst's
/// stacks and heap go back on the same schedule.
pub(crate) const IDLE_NS: u64 = 1_000_000_000;
/// Trims at most this often: with what a trim costs sysmon (decision 0002),
/// under the 1% of a core that Go's background scavenger allows itself
/// (`scavengePercent`).
pub(crate) const MIN_INTERVAL_NS: u64 = 5_000_000_000;

/// Whether this target has glibc's `malloc_trim`.
pub(crate) const SUPPORTED: bool = cfg!(all(target_os = "linux", target_env = "gnu"));

/// sysmon's side: what it saw since the last trim (module docs).
#[derive(Debug)]
pub(crate) struct HeapTrim {
    enabled: bool,
    /// The work count at the last trim (0 before the first: no G had run).
    trimmed_work: u64,
    /// When the last trim was done.
    last_trim: Option<u64>,
    /// The current idle stretch: the work count sysmon first saw every P idle
    /// with, and when.
    idle: Option<(u64, u64)>,
}

impl HeapTrim {
    pub(crate) fn new(enabled: bool) -> Self {
        HeapTrim {
            enabled: enabled && SUPPORTED,
            trimmed_work: 0,
            last_trim: None,
            idle: None,
        }
    }

    /// Trims if one is due (module docs). Returns [`HeapTrim::next_look`].
    pub(crate) fn look(&mut self, s: &Sched, now: u64) -> u64 {
        let idle_work = self.idle_work(s);
        match (idle_work, self.due(idle_work, now)) {
            (Some(work), Some(due)) if due <= now => {
                trim();
                self.trimmed(work, now);
                u64::MAX
            }
            (_, due) => due.unwrap_or(u64::MAX),
        }
    }

    /// When sysmon should look again for a trim (`u64::MAX`: not while nothing
    /// changes). Starts an idle stretch if every P is idle now, so that a deep
    /// sleep begun right after the last G went idle ends in time for it.
    pub(crate) fn next_look(&mut self, s: &Sched, now: u64) -> u64 {
        let idle_work = self.idle_work(s);
        self.due(idle_work, now).unwrap_or(u64::MAX)
    }

    /// The work count if every P is idle, else `None`.
    fn idle_work(&self, s: &Sched) -> Option<u64> {
        (self.enabled && s.idle.npidle() as usize == s.gomaxprocs()).then(|| work(s))
    }

    /// When the next trim is due, given the work count if every P is idle
    /// (`None`: some P is not, which ends the idle stretch); `None` if none is
    /// pending.
    fn due(&mut self, idle_work: Option<u64>, now: u64) -> Option<u64> {
        let Some(work) = idle_work else {
            self.idle = None;
            return None;
        };
        if work == self.trimmed_work {
            return None; // nothing ran since the last trim
        }
        let since = match self.idle {
            Some((w, since)) if w == work => since,
            _ => {
                self.idle = Some((work, now));
                now
            }
        };
        let not_before = self.last_trim.map_or(0, |t| t.saturating_add(MIN_INTERVAL_NS));
        Some(since.saturating_add(IDLE_NS).max(not_before))
    }

    fn trimmed(&mut self, work: u64, now: u64) {
        self.trimmed_work = work;
        self.last_trim = Some(now);
        self.idle = None;
    }
}

/// How much the Gs have run: context switches on every P, plus Gs that
/// finished on an M without a P. Moves whenever a G runs.
fn work(s: &Sched) -> u64 {
    let outside = s.counters.completed_outside.load(Ordering::Relaxed);
    s.every_p()
        .map(|p| p.counters.context_switches.load(Ordering::Relaxed))
        .fold(outside, u64::wrapping_add)
}

/// Gives glibc malloc's free memory back to the kernel.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: `malloc_trim` is glibc's, has no preconditions and is thread-safe:
    // it takes each arena's lock while it works on that arena. Its result (whether
    // memory was released) is not needed.
    unsafe { libc::malloc_trim(0) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn trimmer() -> HeapTrim {
        HeapTrim {
            enabled: true,
            trimmed_work: 0,
            last_trim: None,
            idle: None,
        }
    }

    #[test]
    fn nothing_is_due_before_any_g_ran() {
        let mut t = trimmer();
        assert_eq!(t.due(Some(0), 0), None);
        assert_eq!(t.due(Some(0), 100 * S), None);
    }

    #[test]
    fn a_trim_is_due_after_a_whole_idle_period_following_work() {
        let mut t = trimmer();
        assert_eq!(t.due(None, 0), None, "busy");
        assert_eq!(t.due(Some(50), S / 2), Some(S / 2 + IDLE_NS), "idle from now");
        assert_eq!(t.due(Some(50), S), Some(S / 2 + IDLE_NS), "still the same stretch");
        t.trimmed(50, S / 2 + IDLE_NS);
        assert_eq!(t.due(Some(50), 100 * S), None, "trimmed, and nothing ran since");
    }

    #[test]
    fn work_or_a_busy_p_restarts_the_idle_stretch() {
        let mut t = trimmer();
        assert_eq!(t.due(Some(10), 0), Some(IDLE_NS));
        assert_eq!(
            t.due(Some(11), S / 2),
            Some(S / 2 + IDLE_NS),
            "a G ran in between: the stretch starts again"
        );
        assert_eq!(t.due(None, S), None, "a P is busy");
        assert_eq!(t.due(Some(11), 2 * S), Some(2 * S + IDLE_NS), "idle again, from now");
    }

    #[test]
    fn trims_are_at_least_the_interval_apart() {
        let mut t = trimmer();
        t.trimmed(10, 3 * S);
        assert_eq!(t.due(None, 3 * S + 1), None);
        assert_eq!(
            t.due(Some(20), 4 * S),
            Some(3 * S + MIN_INTERVAL_NS),
            "idle since 4 s, but the interval decides"
        );
        assert_eq!(
            t.due(Some(30), 20 * S),
            Some(21 * S),
            "long after, a new stretch: the idle period decides"
        );
    }
}
