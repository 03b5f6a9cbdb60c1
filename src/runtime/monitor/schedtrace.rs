//! `GODEBUG=schedtrace=N[,scheddetail=1]`: periodic scheduler summaries on stderr in
//! Go's own format, plus goro's extra fields (`steals=`, `stolen=`).
//!
//! sysmon prints one report at start-up and then every N ms (as Go's sysmon does).
//! Rendering only reads atomics and short-held locks, so the numbers are a racy
//! snapshot, as Go's are.

use crate::runtime::sched::state::Sched;
use crate::runtime::task::g::Status;
use std::fmt::Write as _;

/// The parsed `GODEBUG` settings goro understands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Godebug {
    /// Print period in ms; 0 = off.
    pub(crate) schedtrace_ms: u64,
    pub(crate) scheddetail: bool,
    /// `deadlock=0` turns the deadlock report off.
    pub(crate) no_deadlock_report: bool,
    /// `heaptrim=0` turns the heap trim off (`heap_trim.rs`).
    pub(crate) no_heap_trim: bool,
}

impl Godebug {
    pub(crate) fn from_env() -> Godebug {
        match std::env::var("GODEBUG") {
            Ok(v) => Godebug::parse(&v, |warning| eprintln!("goro: GODEBUG: {warning}")),
            Err(_) => Godebug::default(),
        }
    }

    /// Parses `key=value,...`; unknown keys are left to other readers (Go ignores
    /// them too), bad values of our keys are reported through `warn`.
    pub(crate) fn parse(v: &str, mut warn: impl FnMut(String)) -> Godebug {
        let mut g = Godebug::default();
        for kv in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, val) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "schedtrace" => match val.parse::<u64>() {
                    Ok(ms) => g.schedtrace_ms = ms,
                    Err(_) => warn(format!(
                        "schedtrace={val:?} is not a whole number of milliseconds; ignored"
                    )),
                },
                "scheddetail" => match val {
                    "0" => g.scheddetail = false,
                    "1" => g.scheddetail = true,
                    _ => warn(format!("scheddetail={val:?} must be 0 or 1; ignored")),
                },
                "deadlock" => match val {
                    "0" => g.no_deadlock_report = true,
                    "1" => g.no_deadlock_report = false,
                    _ => warn(format!("deadlock={val:?} must be 0 or 1; ignored")),
                },
                "heaptrim" => match val {
                    "0" => g.no_heap_trim = true,
                    "1" => g.no_heap_trim = false,
                    _ => warn(format!("heaptrim={val:?} must be 0 or 1; ignored")),
                },
                _ => {}
            }
        }
        g
    }
}

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
        .filter_map(|g| g.snapshot().map(|snap| (snap, g.lockedm().map_or(-1, |m| m.id()))))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn godebug_parsing() {
        let mut warnings = Vec::new();
        let g = Godebug::parse("gctrace=1,schedtrace=250,scheddetail=1,deadlock=0,heaptrim=0", |w| {
            warnings.push(w)
        });
        assert_eq!(
            g,
            Godebug {
                schedtrace_ms: 250,
                scheddetail: true,
                no_deadlock_report: true,
                no_heap_trim: true,
            }
        );
        assert!(warnings.is_empty());
        let g = Godebug::parse("schedtrace=abc,scheddetail=yes,deadlock=no,heaptrim=off", |w| {
            warnings.push(w)
        });
        assert_eq!(g, Godebug::default());
        assert_eq!(warnings.len(), 4, "{warnings:?}");
    }
}
