//! Turns recorded trace events into Chrome Trace Event JSON (the array form
//! that Perfetto's UI and chrome://tracing open), one event object per line.
//!
//! Tracks (`tid`): P `n` is `n`; an M in a blocking call, or running a G
//! whose P sysmon retook, is [`M_TRACK`] + its id; events of threads without an M or P go on [`RUNTIME_TRACK`]. A G's run
//! is an `X` slice on its P's track, named `G<id>` or `G<id> <name>`, from its
//! `Start` to its `Stop` on the same M; its `args` say when it became runnable
//! (`ready_ts`) and why it stopped (`end`, and for a park the wait `reason`).
//! A `Ready` event is a flow start (`s`) on the waker's track; the run it
//! caused carries the matching flow end (`f`, bound to the slice). Steals,
//! global-queue takes, netpoll and timer wake-ups, retakes, P and M changes
//! are instant events (`i`).
//!
//! Events arrive per M in chunks, in each M's order but not sorted across Ms;
//! the JSON importers sort by time. Every line ends in a comma, and the array
//! is closed only by [`Json::finish`]: a trace cut short still opens.
//!
//! Thread: owned by the trace writer thread.

use crate::runtime::sys::trace_buf::{Event, Kind, Source, Stop, NO_M, NO_P, READIED};
use crate::runtime::task::g::WaitReason;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{self, Write};

/// The track of M `m` while it is in a blocking call: `M_TRACK + m`.
pub(crate) const M_TRACK: u64 = 10_000;
/// The track of events recorded with neither P nor blocking M.
pub(crate) const RUNTIME_TRACK: u64 = 20_000;

/// The `end` of a run cut short on its P by a retake (not a [`Stop`]).
const RETAKEN: u8 = u8::MAX;

/// A G run under way on one M.
#[derive(Debug, Clone, Copy)]
struct Open {
    g: u64,
    p: u16,
    start: u64,
    ready: u64,
}

/// The JSON writer's state.
pub(crate) struct Json<W: Write> {
    out: W,
    line: String,
    /// Ticks at the trace's start, and ticks per microsecond.
    t0: u64,
    tpu: f64,
    /// Per M: the G run under way, and the blocking call under way.
    runs: HashMap<u32, Open>,
    blocking: HashMap<u32, (u64, u64)>,
    named: HashSet<u64>,
    names: HashMap<u64, String>,
    pub(crate) events: u64,
}

impl<W: Write> Json<W> {
    /// Starts the array with the process's name.
    pub(crate) fn new(out: W, t0: u64, tpu: f64) -> io::Result<Json<W>> {
        let mut json = Json {
            out,
            line: String::with_capacity(256),
            t0,
            tpu,
            runs: HashMap::new(),
            blocking: HashMap::new(),
            named: HashSet::new(),
            names: HashMap::new(),
            events: 0,
        };
        json.out
            .write_all(b"[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"goro\"}},\n")?;
        json.name_track(RUNTIME_TRACK, "runtime")?;
        Ok(json)
    }

    /// The name of G `g` for its slices, from now on.
    pub(crate) fn set_name(&mut self, g: u64, name: String) {
        self.names.insert(g, name);
    }

    fn us(&self, ticks: u64) -> f64 {
        ticks.saturating_sub(self.t0) as f64 / self.tpu
    }

    fn name_track(&mut self, tid: u64, name: &str) -> io::Result<()> {
        if !self.named.insert(tid) {
            return Ok(());
        }
        let sort = if tid >= RUNTIME_TRACK { 1 << 30 } else { tid };
        writeln!(
            self.out,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":\"{name}\"}}}},\n\
             {{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":1,\"tid\":{tid},\"args\":{{\"sort_index\":{sort}}}}},"
        )
    }

    /// The track an event of M `m` on P `p` is drawn on.
    fn track(&mut self, m: u32, p: u16) -> io::Result<u64> {
        if p != NO_P {
            let tid = u64::from(p);
            if !self.named.contains(&tid) {
                self.name_track(tid, &format!("P{p}"))?;
            }
            Ok(tid)
        } else if m != NO_M && self.blocking.contains_key(&m) {
            Ok(self.m_track(m)?)
        } else {
            Ok(RUNTIME_TRACK)
        }
    }

    fn m_track(&mut self, m: u32) -> io::Result<u64> {
        let tid = M_TRACK + u64::from(m);
        if !self.named.contains(&tid) {
            self.name_track(tid, &format!("M{m} (no P)"))?;
        }
        Ok(tid)
    }

    /// Writes out one event (or, for a `Start`, remembers it until its `Stop`).
    pub(crate) fn event(&mut self, ev: &Event) -> io::Result<()> {
        self.events += 1;
        let ts = self.us(ev.ts);
        self.line.clear();
        match ev.kind {
            Kind::Start => {
                let open = Open {
                    g: ev.g,
                    p: ev.p,
                    start: ev.ts,
                    ready: ev.arg,
                };
                self.runs.insert(ev.m, open);
                if ev.arg & READIED != 0 {
                    let tid = self.track(ev.m, ev.p)?;
                    let _ = write!(
                        self.line,
                        "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ready\",\"name\":\"ready\",\"id\":\"{}.{}\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3}}},",
                        ev.g,
                        ev.arg & !READIED
                    );
                }
            }
            Kind::Stop => {
                let open = match self.runs.remove(&ev.m) {
                    Some(open) if open.g == ev.g => open,
                    // Running when the trace started.
                    _ => Open {
                        g: ev.g,
                        p: ev.p,
                        start: self.t0,
                        ready: self.t0,
                    },
                };
                self.slice(ev, open)?;
            }
            Kind::Ready => {
                let tid = self.track(ev.m, ev.p)?;
                let from = match ev.small {
                    s if s == Source::Netpoll as u8 => "netpoll",
                    s if s == Source::Timer as u8 => "timer",
                    _ => "thread",
                };
                let _ = write!(
                    self.line,
                    "{{\"ph\":\"s\",\"cat\":\"ready\",\"name\":\"ready\",\"id\":\"{}.{}\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"args\":{{\"g\":{},\"by\":\"{from}\"}}}},",
                    ev.g, ev.ts, ev.g
                );
            }
            Kind::BlockingEnter => {
                self.blocking.insert(ev.m, (ev.g, ev.ts));
            }
            Kind::BlockingExit => {
                let (g, start) = self.blocking.remove(&ev.m).unwrap_or((ev.g, self.t0));
                let tid = self.m_track(ev.m)?;
                let start_us = self.us(start);
                let _ = write!(
                    self.line,
                    "{{\"ph\":\"X\",\"cat\":\"blocking\",\"name\":\"G{g} blocking\",\"pid\":1,\"tid\":{tid},\"ts\":{start_us:.3},\"dur\":{:.3},\"args\":{{\"g\":{g},\"m\":{}}}}},",
                    (ts - start_us).max(0.0),
                    ev.m
                );
            }
            // The retaken M's own mark: where its G's run left the P.
            Kind::Retake if ev.m != NO_M => self.split_retaken(ev)?,
            _ => self.instant(ev, ts)?,
        }
        if !self.line.is_empty() {
            self.line.push('\n');
            self.out.write_all(self.line.as_bytes())?;
        }
        Ok(())
    }

    /// sysmon took the P from the G running on M `ev.m`: that run ends on the
    /// P and goes on, without it, on the M's track until the G stops.
    fn split_retaken(&mut self, ev: &Event) -> io::Result<()> {
        let Some(&open) = self.runs.get(&ev.m) else {
            return Ok(());
        };
        let cut = Event { small: RETAKEN, ..*ev };
        self.slice(&cut, open)?;
        self.runs.insert(
            ev.m,
            Open {
                p: NO_P,
                start: ev.ts,
                ..open
            },
        );
        Ok(())
    }

    fn slice(&mut self, ev: &Event, open: Open) -> io::Result<()> {
        let tid = match open.p {
            NO_P => self.m_track(ev.m)?,
            p => self.track(ev.m, p)?,
        };
        let start = self.us(open.start);
        let dur = (self.us(ev.ts) - start).max(0.0);
        let ready = self.us(open.ready & !READIED);
        let g = open.g;
        let end = match ev.small {
            s if s == Stop::Park as u8 => "park",
            s if s == Stop::Yield as u8 => "yield",
            s if s == Stop::Preempt as u8 => "preempt",
            s if s == Stop::Exit as u8 => "exit",
            RETAKEN => "retaken",
            _ => "blocking",
        };
        let _ = write!(self.line, "{{\"ph\":\"X\",\"cat\":\"g\",\"name\":\"G{g}");
        if let Some(name) = self.names.get(&g) {
            self.line.push(' ');
            escape_into(&mut self.line, name);
        }
        let _ = write!(
            self.line,
            "\",\"pid\":1,\"tid\":{tid},\"ts\":{start:.3},\"dur\":{dur:.3},\"args\":{{\"g\":{g},\"m\":{},\"ready_ts\":{ready:.3},\"end\":\"{end}\"",
            ev.m
        );
        if ev.small == Stop::Park as u8 {
            let _ = write!(self.line, ",\"reason\":\"{}\"", reason_name(ev.arg));
        }
        self.line.push_str("}},");
        Ok(())
    }

    fn instant(&mut self, ev: &Event, ts: f64) -> io::Result<()> {
        let tid = self.track(ev.m, ev.p)?;
        let (name, args) = match ev.kind {
            Kind::Create => ("go", format!("{{\"g\":{}}}", ev.g)),
            Kind::Steal => ("steal", format!("{{\"victim\":{},\"count\":{}}}", ev.g, ev.arg)),
            Kind::GlobalTake => ("global queue", format!("{{\"count\":{}}}", ev.arg)),
            Kind::Netpoll => ("netpoll", format!("{{\"ready\":{}}}", ev.arg)),
            Kind::Timers => ("timer", format!("{{\"count\":{}}}", ev.arg)),
            Kind::PAcquire => ("P busy", format!("{{\"m\":{}}}", ev.m)),
            Kind::PRelease => ("P idle", format!("{{\"m\":{}}}", ev.m)),
            Kind::MPark => ("M park", format!("{{\"m\":{}}}", ev.m)),
            Kind::MWake => ("M wake", format!("{{\"m\":{}}}", ev.m)),
            Kind::Retake => (
                "retake",
                format!(
                    "{{\"p\":{},\"why\":\"{}\"}}",
                    ev.p,
                    if ev.small == 0 { "syscall" } else { "hog" }
                ),
            ),
            Kind::Start | Kind::Stop | Kind::Ready | Kind::BlockingEnter | Kind::BlockingExit => {
                unreachable!("not an instant")
            }
        };
        let _ = write!(
            self.line,
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{name}\",\"pid\":1,\"tid\":{tid},\"ts\":{ts:.3},\"args\":{args}}},"
        );
        Ok(())
    }

    /// Closes the array with the trace's totals, and flushes.
    pub(crate) fn finish(mut self, lost: u64) -> io::Result<W> {
        writeln!(
            self.out,
            "{{\"ph\":\"M\",\"name\":\"goro_trace\",\"pid\":1,\"args\":{{\"events\":{},\"lost\":{lost}}}}}\n]",
            self.events
        )?;
        self.out.flush()?;
        Ok(self.out)
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The dump's name of wait reason `code`.
fn reason_name(code: u64) -> &'static str {
    u8::try_from(code).map_or("unknown", |c| WaitReason::from_u8(c).as_str())
}

/// Appends `s` as the inside of a JSON string.
fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}
