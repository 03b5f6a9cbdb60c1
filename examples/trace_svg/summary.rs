//! The numbers: utilisation per P, ready→running latency, time per wait reason,
//! blocking calls, steals and the other instants, within a window of the trace.

use crate::fmt_us;
use crate::parse::{End, Ending, Lane, Mark, Slice, Trace};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// The part of the trace looked at, in microseconds from the trace start.
pub struct Window {
    pub from: f64,
    pub to: f64,
}

impl Window {
    pub fn len(&self) -> f64 {
        self.to - self.from
    }

    pub fn has(&self, ts: f64) -> bool {
        ts >= self.from && ts <= self.to
    }

    /// The part of `s` inside the window.
    pub fn clip(&self, s: &Slice) -> Option<(f64, f64)> {
        let (a, b) = (s.ts.max(self.from), s.end_ts().min(self.to));
        (b > a || (b == a && self.has(s.ts))).then_some((a, b))
    }
}

pub struct LaneStat {
    pub lane: Lane,
    /// Time covered by runs (their union), clipped to the window.
    pub busy: f64,
    pub slices: usize,
    /// Runs that start before an earlier run on the lane has ended.
    pub overlaps: usize,
}

pub struct WaitStat {
    pub reason: String,
    pub sum: f64,
    pub count: usize,
    pub max: f64,
    /// Gs that parked for this reason and had not run again by the end.
    pub open: usize,
}

#[derive(Default)]
pub struct Counts {
    pub steals: usize,
    pub stolen: u64,
    pub netpoll: usize,
    pub netpoll_ready: u64,
    pub timers: usize,
    pub retakes: usize,
    pub retake_why: BTreeMap<String, usize>,
    pub global: usize,
    pub global_gs: u64,
    pub p_idle: usize,
    pub p_busy: usize,
    pub m_park: usize,
    pub m_wake: usize,
    pub other: BTreeMap<String, usize>,
}

pub struct Summary {
    pub window: (f64, f64),
    pub trace_span: Option<(f64, f64)>,
    pub lanes: Vec<LaneStat>,
    pub gs: usize,
    pub g_slices: usize,
    pub ends: BTreeMap<End, usize>,
    pub blocking_count: usize,
    pub blocking_total: f64,
    pub blocking_max: f64,
    /// Ready→running latencies, sorted.
    pub latency: Vec<f64>,
    /// Runs whose `ready_ts` is after their `ts` (counted as 0 latency).
    pub ready_after_run: usize,
    /// By total time, largest first.
    pub waits: Vec<WaitStat>,
    /// The Gs with the most running time, most first (at most 10).
    pub top_gs: Vec<(u64, f64)>,
    pub counts: Counts,
    pub flow_starts: usize,
    pub flow_ends: usize,
    pub flows_unmatched: usize,
}

/// The value at quantile `q` of `sorted` by nearest rank: the smallest sample with
/// at least `q` of the samples at or below it.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Summary {
    pub fn new(t: &Trace, w: &Window) -> Summary {
        // Per-lane busy time: the union of the clipped runs.
        let mut by_tid: HashMap<u64, Vec<(f64, f64)>> = HashMap::new();
        for s in t.g_slices.iter().chain(&t.blocking) {
            if let Some(iv) = w.clip(s) {
                by_tid.entry(s.tid).or_default().push(iv);
            }
        }
        let lanes = t
            .lanes()
            .into_iter()
            .map(|lane| {
                let mut ivs = by_tid.remove(&lane.tid).unwrap_or_default();
                ivs.sort_by(|a, b| a.0.total_cmp(&b.0));
                let (mut busy, mut overlaps) = (0.0, 0);
                let mut cur: Option<(f64, f64)> = None;
                for &(a, b) in &ivs {
                    cur = match cur {
                        // 10 ns of slack: timestamps are printed rounded.
                        Some((ca, cb)) if a < cb - 0.01 => {
                            overlaps += 1;
                            Some((ca, cb.max(b)))
                        }
                        Some((ca, cb)) => {
                            busy += cb - ca;
                            Some((a, b))
                        }
                        None => Some((a, b)),
                    };
                }
                busy += cur.map_or(0.0, |(a, b)| b - a);
                LaneStat {
                    lane,
                    busy,
                    slices: ivs.len(),
                    overlaps,
                }
            })
            .collect();

        let mut gs: HashMap<u64, f64> = HashMap::new();
        let (mut g_slices, mut ends) = (0, BTreeMap::new());
        let (mut latency, mut ready_after_run) = (Vec::new(), 0);
        for s in &t.g_slices {
            if let Some((a, b)) = w.clip(s) {
                *gs.entry(s.g).or_default() += b - a;
                g_slices += 1;
                *ends.entry(s.end).or_insert(0) += 1;
            }
            if let (Some(ready), true) = (s.ready_ts, w.has(s.ts)) {
                if ready > s.ts {
                    ready_after_run += 1;
                }
                latency.push((s.ts - ready).max(0.0));
            }
        }
        latency.sort_by(f64::total_cmp);
        let (mut blocking_count, mut blocking_total, mut blocking_max) = (0, 0.0, 0.0f64);
        for s in &t.blocking {
            if let Some((a, b)) = w.clip(s) {
                gs.entry(s.g).or_default();
                blocking_count += 1;
                blocking_total += b - a;
                blocking_max = blocking_max.max(b - a);
            }
        }
        let mut top_gs: Vec<(u64, f64)> = gs.iter().map(|(&g, &time)| (g, time)).collect();
        top_gs.retain(|&(_, time)| time > 0.0);
        top_gs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        top_gs.truncate(10);

        Summary {
            window: (w.from, w.to),
            trace_span: t.span(),
            lanes,
            gs: gs.len(),
            g_slices,
            ends,
            blocking_count,
            blocking_total,
            blocking_max,
            latency,
            ready_after_run,
            waits: waits(t, w),
            top_gs,
            counts: counts(t, w),
            flow_starts: t.flows.iter().filter(|f| f.start && w.has(f.ts)).count(),
            flow_ends: t.flows.iter().filter(|f| !f.start && w.has(f.ts)).count(),
            flows_unmatched: unmatched_flows(t),
        }
    }

    /// The plain-text summary.
    pub fn report(&self, name: &str, t: &Trace) -> String {
        let mut o = String::new();
        let ending = match t.ending {
            Ending::Closed => "closed with `]`",
            Ending::Cut { .. } => "cut short",
        };
        let _ = writeln!(o, "trace: {name}: {} events, {} bytes, {ending}", t.events, t.bytes);
        let (from, to) = self.window;
        let _ = write!(o, "span: {} .. {} ({})", fmt_us(from), fmt_us(to), fmt_us(to - from));
        match self.trace_span {
            Some((a, b)) if (a, b) != (from, to) => {
                let _ = writeln!(o, "; a window of a trace spanning {} .. {}", fmt_us(a), fmt_us(b));
            }
            _ => o.push('\n'),
        }
        let ends: Vec<String> = End::ALL
            .iter()
            .filter_map(|e| self.ends.get(e).map(|n| format!("{} {n}", e.name())))
            .collect();
        let _ = writeln!(
            o,
            "Gs seen: {}; G slices: {} ({}); blocking-call slices: {}",
            self.gs,
            self.g_slices,
            ends.join(", "),
            self.blocking_count
        );
        let _ = writeln!(o, "per-P utilisation (busy / span):");
        let span = (to - from).max(f64::MIN_POSITIVE);
        for l in self.lanes.iter().filter(|l| !l.lane.thin) {
            let _ = write!(
                o,
                "  {:<8} {:>12} / {}  {:5.1}%  {} slices",
                l.lane.label,
                fmt_us(l.busy),
                fmt_us(to - from),
                100.0 * l.busy / span,
                l.slices
            );
            if l.overlaps > 0 {
                let _ = write!(o, "  ({} overlapping an earlier run!)", l.overlaps);
            }
            o.push('\n');
        }
        let c = &self.counts;
        let _ = writeln!(o, "steals: {}, Gs moved {}", c.steals, c.stolen);
        if self.latency.is_empty() {
            let _ = writeln!(o, "ready→running latency: no runs with a ready_ts");
        } else {
            let l = &self.latency;
            let _ = write!(
                o,
                "ready→running latency ({} runs): p50 {}  p99 {}  max {}",
                l.len(),
                fmt_us(quantile(l, 0.5)),
                fmt_us(quantile(l, 0.99)),
                fmt_us(l[l.len() - 1])
            );
            if self.ready_after_run > 0 {
                let _ = write!(o, "  ({} with ready_ts after ts, counted as 0)", self.ready_after_run);
            }
            o.push('\n');
        }
        if self.waits.is_empty() {
            let _ = writeln!(o, "time per wait reason: no parks");
        } else {
            let _ = writeln!(o, "time per wait reason (park → next ready), by total:");
            let _ = writeln!(
                o,
                "  {:<24} {:>12} {:>7} {:>12} {:>12} {:>5}",
                "reason", "total", "count", "mean", "max", "open"
            );
            for r in &self.waits {
                let mean = if r.count == 0 { 0.0 } else { r.sum / r.count as f64 };
                let _ = writeln!(
                    o,
                    "  {:<24} {:>12} {:>7} {:>12} {:>12} {:>5}",
                    r.reason,
                    fmt_us(r.sum),
                    r.count,
                    fmt_us(mean),
                    fmt_us(r.max),
                    r.open
                );
            }
        }
        let _ = writeln!(
            o,
            "blocking calls: {}, total {}, max {}",
            self.blocking_count,
            fmt_us(self.blocking_total),
            fmt_us(self.blocking_max)
        );
        let why: Vec<String> = c.retake_why.iter().map(|(w, n)| format!("{w} {n}")).collect();
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join(", "))
        };
        let _ = writeln!(
            o,
            "instants: netpoll {} (Gs ready {}), timer {}, retake {}{why}, global queue {} (Gs {}), \
             P idle {}, P busy {}, M park {}, M wake {}",
            c.netpoll,
            c.netpoll_ready,
            c.timers,
            c.retakes,
            c.global,
            c.global_gs,
            c.p_idle,
            c.p_busy,
            c.m_park,
            c.m_wake
        );
        if !c.other.is_empty() {
            let other: Vec<String> = c.other.iter().map(|(n, k)| format!("{n:?} {k}")).collect();
            let _ = writeln!(o, "other instants: {}", other.join(", "));
        }
        let _ = writeln!(
            o,
            "wake-up arrows: {} starts, {} ends, {} unmatched in the whole trace",
            self.flow_starts, self.flow_ends, self.flows_unmatched
        );
        if t.other_slices > 0 || !t.ignored.is_empty() {
            let mut ignored: Vec<String> = t.ignored.iter().map(|(k, n)| format!("{k} {n}")).collect();
            if t.other_slices > 0 {
                ignored.insert(0, format!("slices of other categories {}", t.other_slices));
            }
            let _ = writeln!(o, "ignored: {}", ignored.join(", "));
        }
        let _ = match (t.footer, t.ending) {
            (Some((events, lost)), _) => writeln!(o, "lost events: {lost} (the recorder wrote {events})"),
            (None, Ending::Cut { .. }) => writeln!(o, "lost events: unknown: trace cut short"),
            (None, Ending::Closed) => writeln!(o, "lost events: unknown: no goro_trace record"),
        };
        let _ = match t.ending {
            Ending::Closed => writeln!(o, "dropped: nothing"),
            Ending::Cut { partial: false, .. } => writeln!(o, "dropped: nothing, but the file ends without `]`"),
            Ending::Cut { dropped_bytes, .. } => writeln!(
                o,
                "dropped: {dropped_bytes} bytes at the end (1 partial event; the file is cut short)"
            ),
        };
        o
    }
}

/// For each G, the time from a run that ended in a park to its next run's
/// `ready_ts` (its `ts` when it has none), summed per wait reason; counted when the
/// park falls in the window.
fn waits(t: &Trace, w: &Window) -> Vec<WaitStat> {
    let mut order: Vec<&Slice> = t.g_slices.iter().collect();
    order.sort_by(|a, b| a.g.cmp(&b.g).then(a.ts.total_cmp(&b.ts)));
    let mut by_reason: HashMap<Option<u32>, WaitStat> = HashMap::new();
    for (i, s) in order.iter().enumerate() {
        if s.end != End::Park || !w.has(s.end_ts()) {
            continue;
        }
        let stat = by_reason.entry(s.reason).or_insert_with(|| WaitStat {
            reason: s.reason.map_or("(no reason)", |r| t.names.get(r)).to_owned(),
            sum: 0.0,
            count: 0,
            max: 0.0,
            open: 0,
        });
        match order.get(i + 1).filter(|next| next.g == s.g) {
            Some(next) => {
                let wait = (next.ready_ts.unwrap_or(next.ts) - s.end_ts()).max(0.0);
                stat.sum += wait;
                stat.count += 1;
                stat.max = stat.max.max(wait);
            }
            None => stat.open += 1,
        }
    }
    let mut waits: Vec<WaitStat> = by_reason.into_values().collect();
    waits.sort_by(|a, b| b.sum.total_cmp(&a.sum).then_with(|| a.reason.cmp(&b.reason)));
    waits
}

fn counts(t: &Trace, w: &Window) -> Counts {
    let mut c = Counts::default();
    for i in t.instants.iter().filter(|i| w.has(i.ts)) {
        match i.mark {
            Mark::Steal { count, .. } => {
                c.steals += 1;
                c.stolen += count;
            }
            Mark::Netpoll { ready } => {
                c.netpoll += 1;
                c.netpoll_ready += ready;
            }
            Mark::Timer => c.timers += 1,
            Mark::Retake { why } => {
                c.retakes += 1;
                let why = why.map_or("no cause", |w| t.names.get(w));
                *c.retake_why.entry(why.to_owned()).or_default() += 1;
            }
            Mark::GlobalQueue { count } => {
                c.global += 1;
                c.global_gs += count;
            }
            Mark::PIdle => c.p_idle += 1,
            Mark::PBusy => c.p_busy += 1,
            Mark::MPark => c.m_park += 1,
            Mark::MWake => c.m_wake += 1,
            Mark::Other(name) => *c.other.entry(t.names.get(name).to_owned()).or_default() += 1,
        }
    }
    c
}

/// Flow ids with a start and no end, or an end and no start.
fn unmatched_flows(t: &Trace) -> usize {
    let mut ids: HashMap<u64, (usize, usize)> = HashMap::new();
    for f in &t.flows {
        let e = ids.entry(f.id).or_default();
        if f.start {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    ids.values().map(|&(s, f)| s.abs_diff(f)).sum()
}
