//! `GODEBUG=schedtrace=N[,scheddetail=1]`: periodic scheduler summaries on stderr in
//! Go's own format, plus goro's extra fields (`steals=`, `stolen=`).
//!
//! sysmon prints one report at start-up and then every N ms (as Go's sysmon does).
//! Rendering only reads atomics and short-held locks, so the numbers are a racy
//! snapshot, as Go's are.

use crate::runtime::proc::state::Sched;
use crate::runtime::task::g::{snapshot, Status};
use std::fmt::Write as _;

/// One report: the summary line, and with scheddetail the P, M and G lines.
pub(crate) fn render(s: &Sched) -> String {
    let detail = s.godebug.scheddetail;
    let ms = s.started.elapsed().as_millis();
    let stats = super::stats::collect(s);
    let ms_list = s.allm.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut out = String::new();
    let _ = write!(
        out,
        "SCHED {ms}ms: gomaxprocs={} idleprocs={} threads={} spinningthreads={} needspinning={} idlethreads={} runqueue={}",
        s.gomaxprocs(),
        s.idle.npidle(),
        ms_list.len(),
        s.idle.nmspinning(),
        s.idle.needspinning(),
        s.idle.nmidle(),
        s.global.len(),
    );
    if detail {
        let _ = write!(
            out,
            " gcwaiting={} nmidlelocked={} stopwait={} sysmonwait={}",
            s.stopping.load(std::sync::atomic::Ordering::Relaxed),
            ms_list.iter().filter(|m| m.lockedg().is_some() && m.blocked()).count(),
            s.stopwait.load(std::sync::atomic::Ordering::Relaxed),
            s.sysmon.sleeps_deeply()
        );
    } else {
        out.push_str(" [");
        for p in &stats.procs {
            let _ = write!(out, " {}", p.runq_len);
        }
        out.push_str(" ] schedticks=[");
        for p in &stats.procs {
            let _ = write!(out, " {}", p.schedtick);
        }
        out.push_str(" ]");
    }
    let _ = writeln!(out, " steals={} stolen={}", stats.steals, stats.stolen);
    if !detail {
        return out;
    }
    for (i, p) in s.procs().enumerate() {
        let _ = writeln!(
            out,
            "  P{i}: status={} schedtick={} syscalltick={} m={} runqsize={} gfreecnt={} timerslen={}",
            p.status() as u8,
            p.schedtick(),
            p.syscalltick.load(std::sync::atomic::Ordering::Relaxed),
            nil_or(p.m_id()),
            stats.procs[i].runq_len,
            p.gfreecnt(),
            p.timers.len()
        );
    }
    // Go lists Ms newest first.
    for m in ms_list.iter().rev() {
        let _ = writeln!(
            out,
            "  M{}: p={} curg={} mallocing=0 throwing=0 preemptoff= locks={} dying=0 spinning={} blocked={} lockedg={}",
            m.id(),
            nil_or(m.p_id().map_or(-1, |p| p as i64)),
            nil_or(match (m.curg(), m.syscallg()) {
                (0, Some(g)) => g.id() as i64,
                (0, None) => -1,
                (id, _) => id as i64,
            }),
            m.depth.load(std::sync::atomic::Ordering::Relaxed),
            m.spinning(),
            m.blocked(),
            nil_or(m.lockedg().map_or(-1, |g| g.id() as i64)),
        );
    }
    let mut gs: Vec<_> = crate::runtime::task::g::all_gs()
        .into_iter()
        .filter_map(|g| snapshot(&g).map(|snap| (snap, crate::runtime::proc::m::lockedm(&g).map_or(-1, |m| m.id()))))
        .collect();
    gs.sort_by_key(|(snap, _)| snap.id);
    for (snap, lockedm) in gs {
        let reason = if snap.status == Status::Waiting {
            snap.reason.as_str()
        } else {
            ""
        };
        let m = if matches!(snap.status, Status::Running | Status::Syscall) {
            snap.m
        } else {
            -1
        };
        let _ = writeln!(
            out,
            "  G{}: status={}({reason}) m={} lockedm={}",
            snap.id,
            snap.status as u8,
            nil_or(m),
            nil_or(lockedm)
        );
    }
    out
}

fn nil_or(v: i64) -> String {
    if v < 0 {
        "nil".to_string()
    } else {
        v.to_string()
    }
}
