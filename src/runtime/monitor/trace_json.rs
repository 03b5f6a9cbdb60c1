//! Turns recorded trace events into Chrome Trace Event JSON (the array form
//! that Perfetto's UI and chrome://tracing open), one event object per line.
//!
//! Tracks (`tid`): P `n` is `n`; an M in a blocking call, or running a G
//! whose P sysmon retook, is [`M_TRACK`] + its id; events of threads without an M or P go on [`RUNTIME_TRACK`]. A G's run
//! is an `X` slice on its P's track, named `G<id>` or `G<id> <name>`, from its
//! `Start` to its `Stop` on the same M; its `args` say when it became runnable
//! (`ready_ts`; none for the part of a run after a retake, or when that was
//! before the trace) and why it stopped
//! (`end`, and for a park the wait `reason`).
//! A `Ready` event is a flow start (`s`) on the waker's track; the run it
//! caused carries the matching flow end (`f`, bound to the slice). Steals,
//! global-queue takes, netpoll and timer wake-ups, retakes, P and M changes
//! are instant events (`i`).
//!
//! Events arrive per M in chunks, in each M's order but not sorted across Ms;
//! the JSON importers sort by time. Every line ends in a comma, and the array
//! is closed only by [`Json::finish`]: a trace cut short still opens.
//!
//! Formatting is by hand into one byte buffer (integers, microseconds with
//! three decimals from integer nanoseconds): the conversion runs when a trace
//! stops, and its speed is how long `stop` takes.
//!
//! Thread: owned by the trace writer thread.

use crate::runtime::sys::decimal;
use crate::runtime::sys::trace_buf::{Event, Kind, Source, Stop, NO_M, NO_P, READIED};
use crate::runtime::task::ids::WaitReason;
use std::collections::HashMap;
use std::io::{self, Write};

/// The track of M `m` while it is in a blocking call: `M_TRACK + m`.
pub(crate) const M_TRACK: u64 = 10_000;
/// The track of events recorded with neither P nor blocking M.
pub(crate) const RUNTIME_TRACK: u64 = 20_000;

/// The `end` of a run cut short on its P by a retake (not a [`Stop`]).
const RETAKEN: u8 = u8::MAX;
/// The `small` of the end of a run still going when the trace stopped.
const STILL_RUNNING: u8 = u8::MAX - 1;
/// Bytes gathered before they go to the output.
const FLUSH_AT: usize = 1 << 16;

/// A G run under way on one M.
#[derive(Debug, Clone, Copy)]
struct Open {
    g: u64,
    p: u16,
    start: u64,
    /// When it became runnable (ticks, [`READIED`] flag); `None` for the part
    /// of a run after a retake.
    ready: Option<u64>,
}

/// The JSON writer's state.
pub(crate) struct Json<W: Write> {
    out: W,
    buf: Vec<u8>,
    /// Ticks at the trace's start, and nanoseconds per tick.
    t0: u64,
    ns_per_tick: f64,
    /// By M id: the G run under way, and the blocking call under way (G, start).
    runs: Vec<Option<Open>>,
    blocking: Vec<Option<(u64, u64)>>,
    /// By M id: the M recorded a run's start or stop in this trace. A `Stop`
    /// with no run under way is then not a run from before the trace: its
    /// start was lost, or it is a G leaving a blocking call with no P free,
    /// whose run was already drawn; it gets no slice.
    ran: Vec<bool>,
    /// Tracks whose names were written: Ps by id, Ms by id.
    named_p: Vec<bool>,
    named_m: Vec<bool>,
    names: HashMap<u64, String>,
    /// By P id: when the P was taken from a running G (ticks, in the order
    /// recorded), for runs whose M never recorded the cut before the trace
    /// stopped.
    retaken_p: Vec<Vec<u64>>,
    /// By M id: the G it was running when the trace started (`Kind::Running`:
    /// G, P, inside a blocking call), drawn at the end if the M recorded
    /// nothing of the scheduler's in the whole trace (`busy`).
    running_at_start: Vec<Option<(u64, u16, bool)>>,
    /// By M id: the M recorded an event of the scheduler's (anything but a
    /// wake-up or a spawn, which its G's code makes): no G ran on it through
    /// the whole trace.
    busy: Vec<bool>,
    pub(crate) events: u64,
}

/// `v[i]`, growing `v` with defaults to reach it.
fn slot<T: Default + Clone>(v: &mut Vec<T>, i: usize) -> &mut T {
    if i >= v.len() {
        v.resize(i + 1, T::default());
    }
    &mut v[i]
}

/// Appends `v` in decimal.
fn num(buf: &mut Vec<u8>, v: u64) {
    buf.extend_from_slice(decimal::digits(v, &mut [0; decimal::MAX_DIGITS]));
}

/// Appends `ns` as microseconds with three decimals.
fn micros(buf: &mut Vec<u8>, ns: u64) {
    num(buf, ns / 1000);
    let frac = ns % 1000;
    buf.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

impl<W: Write> Json<W> {
    /// Starts the array with the process's name, written to `out` at once (an
    /// unusable writer fails here).
    pub(crate) fn new(out: W, t0: u64, ticks_per_us: f64) -> io::Result<Json<W>> {
        let mut json = Json {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 1024),
            t0,
            ns_per_tick: 1000.0 / ticks_per_us,
            runs: Vec::new(),
            blocking: Vec::new(),
            ran: Vec::new(),
            named_p: Vec::new(),
            named_m: Vec::new(),
            names: HashMap::new(),
            retaken_p: Vec::new(),
            running_at_start: Vec::new(),
            busy: Vec::new(),
            events: 0,
        };
        json.buf.extend_from_slice(
            b"[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"goro\"}},\n",
        );
        json.name_track(RUNTIME_TRACK, b"runtime", None);
        json.flush()?;
        Ok(json)
    }

    /// The name of G `g` for its slices.
    pub(crate) fn set_name(&mut self, g: u64, name: String) {
        self.names.insert(g, name);
    }

    /// Nanoseconds from the trace's start.
    fn ns(&self, ticks: u64) -> u64 {
        (ticks.saturating_sub(self.t0) as f64 * self.ns_per_tick) as u64
    }

    /// The metadata naming track `tid` `name` (with `suffix` number appended).
    fn name_track(&mut self, tid: u64, name: &[u8], suffix: Option<u64>) {
        let sort = if tid >= RUNTIME_TRACK { 1 << 30 } else { tid };
        let b = &mut self.buf;
        b.extend_from_slice(b"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":");
        num(b, tid);
        b.extend_from_slice(b",\"args\":{\"name\":\"");
        b.extend_from_slice(name);
        if let Some(n) = suffix {
            num(b, n);
        }
        if (M_TRACK..RUNTIME_TRACK).contains(&tid) {
            b.extend_from_slice(b" (no P)");
        }
        b.extend_from_slice(b"\"}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":");
        num(b, tid);
        b.extend_from_slice(b",\"args\":{\"sort_index\":");
        num(b, sort);
        b.extend_from_slice(b"}},\n");
    }

    /// The track an event of M `m` on P `p` is drawn on.
    fn track(&mut self, m: u32, p: u16) -> u64 {
        if p != NO_P {
            if !std::mem::replace(slot(&mut self.named_p, usize::from(p)), true) {
                self.name_track(u64::from(p), b"P", Some(u64::from(p)));
            }
            u64::from(p)
        } else if m != NO_M
            && (self.blocking.get(m as usize).is_some_and(Option::is_some)
                || self.runs.get(m as usize).is_some_and(Option::is_some))
        {
            // In a blocking call, or running a G whose P was taken: the M's track.
            self.m_track(m)
        } else {
            RUNTIME_TRACK
        }
    }

    fn m_track(&mut self, m: u32) -> u64 {
        let tid = M_TRACK + u64::from(m);
        if !std::mem::replace(slot(&mut self.named_m, m as usize), true) {
            self.name_track(tid, b"M", Some(u64::from(m)));
        }
        tid
    }

    /// The start of an event object: `{"ph":"<ph>",` then `rest`.
    fn begin(&mut self, ph: u8, rest: &[u8]) {
        self.buf.extend_from_slice(b"{\"ph\":\"");
        self.buf.push(ph);
        self.buf.extend_from_slice(b"\",");
        self.buf.extend_from_slice(rest);
    }

    /// `,"pid":1,"tid":<tid>,"ts":<us>`
    fn where_when(&mut self, tid: u64, ns: u64) {
        self.buf.extend_from_slice(b",\"pid\":1,\"tid\":");
        num(&mut self.buf, tid);
        self.buf.extend_from_slice(b",\"ts\":");
        micros(&mut self.buf, ns);
    }

    /// `<id>.<stamp>`: a flow's id, from the readied G and the ready's time.
    fn flow_id(&mut self, g: u64, stamp: u64) {
        self.buf.extend_from_slice(b",\"id\":\"");
        num(&mut self.buf, g);
        self.buf.push(b'.');
        num(&mut self.buf, stamp);
        self.buf.push(b'"');
    }

    /// Writes out one event (or, for a `Start`, remembers it until its `Stop`).
    pub(crate) fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.events += 1;
        let ns = self.ns(ev.ts);
        if ev.m != NO_M && !matches!(ev.kind, Kind::Ready | Kind::Create) {
            *slot(&mut self.busy, ev.m as usize) = true;
        }
        match ev.kind {
            Kind::Running => {
                *slot(&mut self.running_at_start, ev.arg as usize) = Some((ev.g, ev.p, ev.small == 1));
            }
            Kind::Start => {
                // Runnable since before the trace: when, and who readied it,
                // are not in it.
                let known = ev.arg & !READIED >= self.t0;
                if ev.m != NO_M {
                    *slot(&mut self.ran, ev.m as usize) = true;
                    *slot(&mut self.runs, ev.m as usize) = Some(Open {
                        g: ev.g,
                        p: ev.p,
                        start: ev.ts,
                        ready: known.then_some(ev.arg),
                    });
                }
                if known && ev.arg & READIED != 0 {
                    let tid = self.track(ev.m, ev.p);
                    self.begin(b'f', b"\"bp\":\"e\",\"cat\":\"ready\",\"name\":\"ready\"");
                    self.flow_id(ev.g, ev.arg & !READIED);
                    self.where_when(tid, ns);
                    self.buf.extend_from_slice(b"},\n");
                }
            }
            Kind::Stop => {
                let ran = ev.m != NO_M && std::mem::replace(slot(&mut self.ran, ev.m as usize), true);
                let open = match self.runs.get_mut(ev.m as usize).and_then(Option::take) {
                    Some(open) if open.g == ev.g => open,
                    _ if ran => return Ok(()),
                    // Running when the trace started.
                    _ => Open {
                        g: ev.g,
                        p: ev.p,
                        start: self.t0,
                        ready: None,
                    },
                };
                self.slice(ev, open);
            }
            Kind::Ready => {
                let tid = self.track(ev.m, ev.p);
                let from: &[u8] = match ev.small {
                    s if s == Source::Netpoll as u8 => b"netpoll",
                    s if s == Source::Timer as u8 => b"timer",
                    _ => b"thread",
                };
                self.begin(b's', b"\"cat\":\"ready\",\"name\":\"ready\"");
                self.flow_id(ev.g, ev.ts);
                self.where_when(tid, ns);
                self.buf.extend_from_slice(b",\"args\":{\"g\":");
                num(&mut self.buf, ev.g);
                self.buf.extend_from_slice(b",\"by\":\"");
                self.buf.extend_from_slice(from);
                self.buf.extend_from_slice(b"\"}},\n");
            }
            Kind::BlockingEnter if ev.m != NO_M => {
                *slot(&mut self.blocking, ev.m as usize) = Some((ev.g, ev.ts));
            }
            Kind::BlockingExit if ev.m != NO_M => {
                let (g, start) = self
                    .blocking
                    .get_mut(ev.m as usize)
                    .and_then(Option::take)
                    .unwrap_or((ev.g, self.t0));
                self.blocking_slice(ev.m, g, start, ev.ts);
            }
            // The retaken M's own mark: where its G's run left the P.
            Kind::Retake if ev.m != NO_M => self.split_retaken(ev),
            Kind::Retake => {
                if ev.p != NO_P {
                    slot(&mut self.retaken_p, usize::from(ev.p)).push(ev.ts);
                }
                self.instant(ev, ns);
            }
            Kind::BlockingEnter | Kind::BlockingExit => {}
            _ => self.instant(ev, ns),
        }
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// G `g`'s blocking call on M `m`, from `start` to `end` (ticks), on the
    /// M's track.
    fn blocking_slice(&mut self, m: u32, g: u64, start: u64, end: u64) {
        let tid = self.m_track(m);
        let (start_ns, end_ns) = (self.ns(start), self.ns(end));
        self.begin(b'X', b"\"cat\":\"blocking\",\"name\":\"G");
        num(&mut self.buf, g);
        self.buf.extend_from_slice(b" blocking\"");
        self.where_when(tid, start_ns);
        self.buf.extend_from_slice(b",\"dur\":");
        micros(&mut self.buf, end_ns.saturating_sub(start_ns));
        self.buf.extend_from_slice(b",\"args\":{\"g\":");
        num(&mut self.buf, g);
        self.buf.extend_from_slice(b",\"m\":");
        num(&mut self.buf, u64::from(m));
        self.buf.extend_from_slice(b"}},\n");
    }

    /// sysmon took the P from the G running on M `ev.m`: that run ends on the
    /// P and goes on, without it, on the M's track until the G stops.
    fn split_retaken(&mut self, ev: &Event) {
        let Some(open) = self.runs.get(ev.m as usize).copied().flatten() else {
            return;
        };
        let cut = Event { small: RETAKEN, ..*ev };
        self.slice(&cut, open);
        self.runs[ev.m as usize] = Some(Open {
            p: NO_P,
            start: ev.ts,
            ready: None,
            ..open
        });
    }

    fn slice(&mut self, ev: &Event, open: Open) {
        let tid = match open.p {
            NO_P => self.m_track(ev.m),
            p => self.track(ev.m, p),
        };
        let start = self.ns(open.start);
        let end: &[u8] = match ev.small {
            s if s == Stop::Park as u8 => b"park",
            s if s == Stop::Yield as u8 => b"yield",
            s if s == Stop::Preempt as u8 => b"preempt",
            s if s == Stop::Exit as u8 => b"exit",
            RETAKEN => b"retaken",
            STILL_RUNNING => b"running",
            _ => b"blocking",
        };
        self.begin(b'X', b"\"cat\":\"g\",\"name\":\"G");
        num(&mut self.buf, open.g);
        if let Some(name) = self.names.get(&open.g) {
            self.buf.push(b' ');
            escape_into(&mut self.buf, name);
        }
        self.buf.push(b'"');
        self.where_when(tid, start);
        self.buf.extend_from_slice(b",\"dur\":");
        let dur = self.ns(ev.ts).saturating_sub(start);
        micros(&mut self.buf, dur);
        self.buf.extend_from_slice(b",\"args\":{\"g\":");
        num(&mut self.buf, open.g);
        self.buf.extend_from_slice(b",\"m\":");
        num(&mut self.buf, u64::from(ev.m));
        if let Some(ready) = open.ready {
            self.buf.extend_from_slice(b",\"ready_ts\":");
            let ready = self.ns(ready & !READIED);
            micros(&mut self.buf, ready);
        }
        self.buf.extend_from_slice(b",\"end\":\"");
        self.buf.extend_from_slice(end);
        self.buf.push(b'"');
        if ev.small == Stop::Park as u8 {
            self.buf.extend_from_slice(b",\"reason\":\"");
            self.buf.extend_from_slice(reason_name(ev.arg).as_bytes());
            self.buf.push(b'"');
        }
        self.buf.extend_from_slice(b"}},\n");
    }

    fn instant(&mut self, ev: &Event, ns: u64) {
        let tid = self.track(ev.m, ev.p);
        let (name, key, value): (&[u8], &[u8], u64) = match ev.kind {
            Kind::Create => (b"go", b"g", ev.g),
            Kind::Steal => (b"steal", b"victim", ev.g),
            Kind::GlobalTake => (b"global queue", b"count", ev.arg),
            Kind::Netpoll => (b"netpoll", b"ready", ev.arg),
            Kind::Timers => (b"timer", b"count", ev.arg),
            Kind::PAcquire => (b"P busy", b"m", u64::from(ev.m)),
            Kind::PRelease => (b"P idle", b"m", u64::from(ev.m)),
            Kind::MPark => (b"M park", b"m", u64::from(ev.m)),
            Kind::MWake => (b"M wake", b"m", u64::from(ev.m)),
            Kind::Retake => (b"retake", b"p", u64::from(ev.p)),
            Kind::SwapOut => (b"swap out", b"g", ev.g),
            Kind::SwapIn => (b"swap in", b"g", ev.g),
            Kind::Start | Kind::Stop | Kind::Ready | Kind::BlockingEnter | Kind::BlockingExit | Kind::Running => {
                unreachable!("not an instant")
            }
        };
        self.begin(b'i', b"\"s\":\"t\",\"name\":\"");
        self.buf.extend_from_slice(name);
        self.buf.push(b'"');
        self.where_when(tid, ns);
        self.buf.extend_from_slice(b",\"args\":{\"");
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(b"\":");
        num(&mut self.buf, value);
        match ev.kind {
            Kind::Steal => {
                self.buf.extend_from_slice(b",\"count\":");
                num(&mut self.buf, ev.arg);
            }
            Kind::Retake => {
                self.buf.extend_from_slice(match ev.small {
                    0 => b",\"why\":\"syscall\"",
                    1 => b",\"why\":\"hog\"",
                    2 => b",\"why\":\"blocked\"",
                    _ => b",\"why\":\"resize\"",
                });
            }
            Kind::SwapOut | Kind::SwapIn => {
                self.buf.extend_from_slice(b",\"bytes\":");
                num(&mut self.buf, ev.arg);
            }
            _ => {}
        }
        self.buf.extend_from_slice(b"}},\n");
    }

    /// Closes the array with the trace's totals, and flushes.
    pub(crate) fn finish(mut self, lost: u64, ended: u64) -> io::Result<W> {
        self.running_through();
        // Blocking calls still going when the trace stopped end there.
        for m in 0..self.blocking.len() {
            if let Some((g, start)) = self.blocking[m].take() {
                self.blocking_slice(m as u32, g, start, ended);
            }
        }
        // Runs still going when the trace stopped end there; one whose P
        // was taken meanwhile, its M not having recorded the cut yet, ends
        // on the P at the first such retake and goes on on the M's track.
        for m in 0..self.runs.len() {
            let Some(open) = self.runs[m] else {
                continue;
            };
            let at = |ts, kind, small| Event {
                ts,
                g: open.g,
                arg: 0,
                m: m as u32,
                p: open.p,
                kind,
                small,
            };
            // The first retake of its P after the run began cut it.
            let retaken = self
                .retaken_p
                .get(usize::from(open.p))
                .and_then(|ts| ts.iter().copied().filter(|&t| t >= open.start).min());
            if let (Some(retaken), true) = (retaken, open.p != NO_P) {
                self.split_retaken(&at(retaken, Kind::Retake, 0));
            }
            if let Some(open) = self.runs[m].take() {
                self.slice(&at(ended, Kind::Stop, STILL_RUNNING), open);
            }
        }
        self.buf
            .extend_from_slice(b"{\"ph\":\"M\",\"name\":\"goro_trace\",\"pid\":1,\"args\":{\"events\":");
        num(&mut self.buf, self.events);
        self.buf.extend_from_slice(b",\"lost\":");
        num(&mut self.buf, lost);
        self.buf.extend_from_slice(b"}}\n]\n");
        self.flush()?;
        Ok(self.out)
    }

    /// The Gs running when the trace started on Ms that recorded nothing of
    /// the scheduler's since: they ran (or sat in a blocking call) through
    /// the whole trace, and are open from its start. An M that did record
    /// something had its G's run drawn from its own events, or had stopped
    /// that G before the trace began (a status read as the M switched).
    fn running_through(&mut self) {
        for m in 0..self.running_at_start.len() {
            let Some((g, p, blocking)) = self.running_at_start[m] else {
                continue;
            };
            if self.busy.get(m).copied().unwrap_or(false) {
                continue;
            }
            if blocking {
                *slot(&mut self.blocking, m) = Some((g, self.t0));
            } else {
                *slot(&mut self.runs, m) = Some(Open {
                    g,
                    p,
                    start: self.t0,
                    ready: None,
                });
            }
        }
    }

    /// Writes out what is gathered, and flushes the output.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }
}

/// The dump's name of wait reason `code`.
fn reason_name(code: u64) -> &'static str {
    u8::try_from(code).map_or("unknown", |c| WaitReason::from_u8(c).as_str())
}

/// Appends `s` as the inside of a JSON string.
fn escape_into(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b if b < 0x20 => {
                out.extend_from_slice(b"\\u00");
                out.push(b"0123456789abcdef"[usize::from(b >> 4)]);
                out.push(b"0123456789abcdef"[usize::from(b & 15)]);
            }
            b => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut b = Vec::new();
        f(&mut b);
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn numbers_and_microseconds() {
        assert_eq!(text(|b| num(b, 0)), "0");
        assert_eq!(text(|b| num(b, u64::MAX)), u64::MAX.to_string());
        assert_eq!(text(|b| micros(b, 0)), "0.000");
        assert_eq!(text(|b| micros(b, 7)), "0.007");
        assert_eq!(text(|b| micros(b, 1_234_567)), "1234.567");
        assert_eq!(text(|b| micros(b, 90_010)), "90.010");
    }

    fn ev(kind: Kind, m: u32, g: u64, ts: u64) -> Event {
        Event {
            ts,
            g,
            arg: 0,
            m,
            p: 0,
            kind,
            small: Stop::Park as u8,
        }
    }

    /// The `X` slices' `(g, ts)` of a trace of `events`.
    fn slices(events: &[Event]) -> Vec<(u64, String)> {
        let mut json = Json::new(Vec::new(), 1000, 1000.0).unwrap();
        for e in events {
            json.event(e).unwrap();
        }
        let out = String::from_utf8(json.finish(0, 0).unwrap()).unwrap();
        out.lines()
            .filter(|l| l.contains("\"ph\":\"X\""))
            .map(|l| {
                let g = l
                    .split("\"g\":")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                let ts = l.split("\"ts\":").nth(1).unwrap().split(',').next().unwrap().to_owned();
                (g, ts)
            })
            .collect()
    }

    #[test]
    fn a_stop_without_its_start_is_drawn_only_for_a_run_from_before_the_trace() {
        let events = [
            // M0: G1 running since before the trace, then G2's run.
            ev(Kind::Stop, 0, 1, 5_000),
            ev(Kind::Start, 0, 2, 6_000),
            ev(Kind::Stop, 0, 2, 7_000),
            // G3's start lost (or G3 left a blocking call without a P): no
            // slice from the trace's start.
            ev(Kind::Stop, 0, 3, 9_000),
            ev(Kind::Start, 0, 4, 10_000),
            ev(Kind::Stop, 0, 4, 11_000),
        ];
        assert_eq!(
            slices(&events),
            [
                (1, "0.000".to_owned()),
                (2, "5.000".to_owned()),
                (4, "9.000".to_owned())
            ]
        );
    }

    /// A run still open at the stop ends there, `running`; one whose P
    /// sysmon took meanwhile (its M recorded no cut) leaves the P at the
    /// retake, so the P's next owner's runs do not overlap it.
    #[test]
    fn runs_open_at_the_stop_end_there_and_leave_a_retaken_p() {
        let retake = Event {
            m: NO_M,
            small: 1,
            ..ev(Kind::Retake, 0, 0, 5_000)
        };
        let events = [
            ev(Kind::Start, 1, 1, 2_000), // M1's G1 on P0, never stopped
            retake,                       // sysmon takes P0 from M1
            ev(Kind::Start, 2, 2, 6_000), // M2 runs G2 on P0
            Event {
                p: 1,
                ..ev(Kind::Start, 3, 3, 7_000) // M3's G3 on P1, never stopped
            },
        ];
        let mut json = Json::new(Vec::new(), 1000, 1000.0).unwrap();
        for e in &events {
            json.event(e).unwrap();
        }
        let out = String::from_utf8(json.finish(0, 9_000).unwrap()).unwrap();
        let x: Vec<&str> = out.lines().filter(|l| l.contains("\"ph\":\"X\"")).collect();
        let find = |g: u64, end: &str| {
            x.iter()
                .find(|l| l.contains(&format!("\"g\":{g},")) && l.contains(&format!("\"end\":\"{end}\"")))
                .unwrap_or_else(|| panic!("no G{g} slice ending {end}: {x:#?}"))
        };
        assert!(find(1, "retaken").contains("\"ts\":1.000,\"dur\":3.000"), "{x:#?}");
        assert!(find(1, "running").contains("\"ts\":4.000,\"dur\":4.000"), "{x:#?}");
        assert!(find(2, "running").contains("\"ts\":5.000,\"dur\":3.000"), "{x:#?}");
        assert!(find(3, "running").contains("\"ts\":6.000,\"dur\":2.000"), "{x:#?}");
        assert_eq!(x.len(), 4, "{x:#?}");
    }

    /// A run open at the stop is cut at the first retake of its P after it
    /// began, not the last: the P's later owners' runs come after it.
    #[test]
    fn a_run_open_at_the_stop_leaves_its_p_at_the_first_retake() {
        let retake = |ts| Event {
            m: NO_M,
            small: 3,
            ..ev(Kind::Retake, 0, 0, ts)
        };
        let events = [
            retake(1_500),                // before G1's run: not its cut
            ev(Kind::Start, 1, 1, 2_000), // M1's G1 on P0, never stopped
            retake(3_000),                // a resize takes P0 from M1
            ev(Kind::Start, 2, 2, 4_000), // M2's G2 on P0, never stopped
            retake(5_000),                // and from M2
        ];
        let mut json = Json::new(Vec::new(), 1000, 1000.0).unwrap();
        for e in &events {
            json.event(e).unwrap();
        }
        let out = String::from_utf8(json.finish(0, 9_000).unwrap()).unwrap();
        let on_p0: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("\"ph\":\"X\"") && l.contains("\"tid\":0,"))
            .collect();
        assert_eq!(on_p0.len(), 2, "{on_p0:#?}");
        assert!(
            on_p0[0].contains("\"g\":1,") && on_p0[0].contains("\"ts\":1.000,\"dur\":1.000"),
            "{on_p0:#?}"
        );
        assert!(
            on_p0[1].contains("\"g\":2,") && on_p0[1].contains("\"ts\":3.000,\"dur\":1.000"),
            "{on_p0:#?}"
        );
    }

    /// A G running when the trace started, on an M that records nothing of
    /// the scheduler's until the stop, is drawn through the whole trace, on
    /// its P or in its blocking call; a status the M's own events overtake
    /// (a `Stop`) or contradict (an M park) adds nothing; a blocking call
    /// still going at the stop ends there. In either order of the shared
    /// chunk (the statuses) and the Ms' own.
    #[test]
    fn gs_running_through_the_trace_are_drawn_from_its_start() {
        let status = |g: u64, m: u64, p: u16, blocking: u8| Event {
            arg: m,
            m: NO_M,
            p,
            small: blocking,
            ..ev(Kind::Running, 0, g, 1_000)
        };
        let statuses = [
            status(1, 1, 0, 0),
            status(2, 2, 1, 0),
            status(3, 3, 2, 0),
            status(4, 4, NO_P, 1),
        ];
        let own = [
            Event {
                p: 1,
                ..ev(Kind::Stop, 2, 2, 3_000) // M2 stops G2 during the trace
            },
            ev(Kind::MPark, 3, 0, 4_000),         // M3 was not running G3 after all
            ev(Kind::BlockingEnter, 5, 5, 5_000), // M5's G5 blocks until the stop
        ];
        for statuses_first in [true, false] {
            let mut json = Json::new(Vec::new(), 1000, 1000.0).unwrap();
            let (a, b) = if statuses_first {
                (&statuses[..], &own[..])
            } else {
                (&own[..], &statuses[..])
            };
            for e in a.iter().chain(b) {
                json.event(e).unwrap();
            }
            let out = String::from_utf8(json.finish(0, 9_000).unwrap()).unwrap();
            let mut x: Vec<String> = out
                .lines()
                .filter(|l| l.contains("\"ph\":\"X\""))
                .map(|l| {
                    let field = |k: &str| l.split(k).nth(1).unwrap().split([',', '}']).next().unwrap().to_owned();
                    format!(
                        "{} g{} {}+{}",
                        field("\"cat\":"),
                        field("\"g\":"),
                        field("\"ts\":"),
                        field("\"dur\":")
                    )
                })
                .collect();
            x.sort();
            assert_eq!(
                x,
                [
                    "\"blocking\" g4 0.000+8.000",
                    "\"blocking\" g5 4.000+4.000",
                    "\"g\" g1 0.000+8.000",
                    "\"g\" g2 0.000+2.000",
                ],
                "statuses first: {statuses_first}"
            );
        }
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(
            text(|b| escape_into(b, "a\"b\\c\nd\u{1}é")),
            "a\\\"b\\\\c\\u000ad\\u0001é"
        );
    }
}
