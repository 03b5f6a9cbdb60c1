#!/usr/bin/env python3
"""Seeds known bugs into the code the loom models check, one at a time, and runs
the models that should catch each: every mutant must make `scripts/loom.sh` fail
(a deadlock, a failed assertion, a causality violation). A mutant that survives
means a model has gone blind. Restores every file, even when interrupted.

Usage: scripts/loom_mutants.py [name-substring ...]   (a few minutes: one loom
build per mutant). Exits 1 if any mutant survives.
"""
import os
import subprocess
import sys

# (what the bug is, file, original text, mutated text, model filter)
MUTANTS = [
    ("chan close skips waking", "src/chan/channel.rs", "        for w in wake {\n            w.wake();\n        }", "        for w in wake {\n            drop(w);\n        }", "loom_chan_close"),
    ("rawmutex unlock skips futex wake", "src/runtime/sys/lock.rs", "            futex::wake_one(&self.state);", "            // no wake", "loom_raw"),
    ("rawmutex unlock relaxed", "src/runtime/sys/lock.rs", "self.state.swap(UNLOCKED, Ordering::Release)", "self.state.swap(UNLOCKED, Ordering::Relaxed)", "loom_raw"),
    ("netpoll wait skips gen recheck", "src/runtime/netpoll/desc.rs", "        if self.gen(dir) != seen {\n            return Ok(());\n        }", "", "loom_netpoll_readiness"),
    ("netpoll notify skips wake", "src/runtime/netpoll/desc.rs", "        pop_all_into(&mut w.queues[dir as usize], true, woken);", "        let _ = (&mut w, &woken);", "loom_netpoll_readiness"),
    ("netpoll deadline wakes without claiming", "src/runtime/wait/waitq.rs", "            if claim.try_claim(case) {\n                s.success.set(false);", "            if true {\n                s.success.set(false);", "loom_netpoll_deadline"),
    ("netpoll deadline timer never re-arms", "src/runtime/netpoll/desc.rs", "        if let Some(when) = next {\n            self.arm(when, tag);\n        }", "        let _ = next;", "loom_netpoll_deadline"),
    ("netpoll expiry leaves armed stale", "src/runtime/netpoll/desc.rs", "        self.armed[i].store(next.unwrap_or(0), Ordering::Relaxed);\n", "", "loom_netpoll_deadline"),
    ("netpoll shut skips wake", "src/runtime/netpoll/desc.rs", "        woken.into_iter().for_each(Waiter::wake);\n    }", "        drop(woken);\n    }", "loom_netpoll_close"),
    ("mutex slow path skips recheck", "src/sync/mutex.rs", "            self.state.fetch_or(WAITERS, Ordering::Relaxed);\n            // Re-check with WAITERS set: an unlock that came before will not look\n            // at the queue, so we must not sleep through it.\n            if self.try_acquire() {\n                return;\n            }", "            self.state.fetch_or(WAITERS, Ordering::Relaxed);", "loom_mutex"),
    ("mutex unlock relaxed", "src/sync/mutex.rs", ".compare_exchange(LOCKED, 0, Ordering::Release, Ordering::Relaxed)", ".compare_exchange(LOCKED, 0, Ordering::Relaxed, Ordering::Relaxed)", "loom_mutex"),
    ("trace chunk read relaxed", "src/runtime/sys/trace_buf.rs", "let len = self.len.load(Ordering::Acquire);", "let len = self.len.load(Ordering::Relaxed);", "loom_trace"),
    ("trace full: lose instead of wait", "src/runtime/sys/trace_buf.rs", "            if state.stuck_gen == gen || waited >= WRITER_PATIENCE {", "            if true || waited >= WRITER_PATIENCE {", "loom_trace_a_full"),
    ("trace recycle wakes no waiter", "src/runtime/sys/trace_buf.rs", "        if state.waiting > 0 {\n            self.freed.notify_all();", "        if state.waiting > 1000 {\n            self.freed.notify_all();", "loom_trace_a_full"),
    ("trace full chunk left in active", "src/runtime/sys/trace_buf.rs", "                state.active.retain(|&(buf, _)| buf != me);\n                Tracer::queue_full(&mut state, old);", "                Tracer::queue_full(&mut state, old);", "loom_trace"),
    ("a failed take keeps its date", "src/runtime/proc/tracing.rs", "        let _ = retaken_at.compare_exchange(ts, 0, Ordering::Relaxed, Ordering::Relaxed);", "        let _ = retaken_at;", "loom_a_retake_is_dated"),
    ("retake commits before its still check", "src/runtime/sched/ownership.rs", "depth.load(Ordering::Acquire) == 0 && still() && cas(retaking, taken)", "depth.load(Ordering::Acquire) == 0 && cas(retaking, taken) && still()", "loom_a_retake_is_dated"),
    ("waitgroup done never wakes", "src/sync/waitgroup.rs", "            all.into_iter().for_each(|w| w.wake());", "            drop(all);", "loom_waitgroup"),
    ("select leaves losers queued", "src/chan/select.rs", "            unsafe { c.unregister() };", "            let _ = c;", "loom_select_takes"),
    ("select swap-out ignores a won claim", "src/chan/select.rs", "        if self.claim.winner() != UNCLAIMED {\n            return false;", "        if false {\n            return false;", "loom_select_swap"),
    ("swap-out moves a claimed sudog", "src/runtime/wait/waitq.rs", "            if !self.sg.queued.get() {\n                return; // claimed: the waiter is being woken\n            }", "", "loom_swap"),
    ("once: done stored before running", "src/sync/once.rs", "        st.running = true;\n        drop(st);", "        st.running = true;\n        self.done.store(true, Ordering::Release);\n        drop(st);", "loom_once"),
    ("note wake skips futex", "src/runtime/sys/note.rs", "            futex::wake_one(&self.state);", "            // none", "loom_global"),
    ("block_on parks without checking notified", "src/block_on.rs", "        if std::mem::take(&mut st.notified) {", "        if false && std::mem::take(&mut st.notified) {", "loom_block_on"),
    ("block_on wake sets no flag for a polling caller", "src/block_on.rs", "            None => st.notified = true,", "            None => {}", "loom_block_on"),
    ("recv_async cancel keeps an unused wake-up", "src/chan/channel.rs", "        } else if !st.buf.is_empty() || !st.sendq.is_empty() {\n            self.next_async_receiver(st)", "        } else if false {\n            self.next_async_receiver(st)", "loom_chan_recv_async"),
    ("send_async re-poll stores its waker after the check", "src/chan/futures.rs", "        rec.forward.set(waker);\n        let claimed = {\n            let _l = self.chan.lock();\n            rec.claim.winner() != UNCLAIMED\n        };", "        let claimed = {\n            let _l = self.chan.lock();\n            rec.claim.winner() != UNCLAIMED\n        };\n        rec.forward.set(waker);", "loom_chan_send_async"),
]


def run(name, path, original, mutated, models):
    src = open(path).read()
    assert src.count(original) == 1, f"{name}: the original text is not in {path} exactly once"
    open(path, "w").write(src.replace(original, mutated))
    try:
        r = subprocess.run(["timeout", "600", "scripts/loom.sh", models], capture_output=True, text=True)
    finally:
        open(path, "w").write(src)
    out = r.stdout + r.stderr
    why = next((w for w in ("deadlock", "assert", "Causality", "maximum number of branches") if w in out), f"exit {r.returncode}")
    caught = r.returncode != 0
    print(f"{'caught' if caught else 'SURVIVED'}: {name}" + (f" ({why})" if caught else ""), flush=True)
    return caught


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    only = sys.argv[1:]
    chosen = [m for m in MUTANTS if not only or any(o in m[0] for o in only)]
    survivors = [m[0] for m in chosen if not run(*m)]
    if survivors:
        print(f"{len(survivors)} mutant(s) survived: {survivors}")
        sys.exit(1)
    print(f"all {len(chosen)} mutants caught")


if __name__ == "__main__":
    main()
