//! Reads a trace: the JSON array element by element (so a file cut short keeps every
//! complete event), each event checked and kept in a compact typed form.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// Tracks at and above this tid are not Ps: 10000+m is M m in a blocking call.
pub const M_TID_BASE: u64 = 10_000;
/// The track of events that have no P (sysmon, plain threads).
pub const RUNTIME_TID: u64 = 20_000;
/// The largest time or duration taken (31 years in µs): sums and spans of
/// such values stay finite.
const MAX_US: f64 = 1e15;

/// How a run ended (`args.end`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum End {
    Park,
    Yield,
    Preempt,
    Exit,
    Blocking,
    /// sysmon took the P: the run goes on, on the M's track.
    Retaken,
    /// Still running when the trace stopped.
    Running,
    Other,
    Missing,
}

impl End {
    pub const ALL: [End; 9] = [
        End::Park,
        End::Yield,
        End::Preempt,
        End::Exit,
        End::Blocking,
        End::Retaken,
        End::Running,
        End::Other,
        End::Missing,
    ];

    pub fn name(self) -> &'static str {
        match self {
            End::Park => "park",
            End::Yield => "yield",
            End::Preempt => "preempt",
            End::Exit => "exit",
            End::Blocking => "blocking",
            End::Retaken => "retaken",
            End::Running => "running",
            End::Other => "other",
            End::Missing => "no end",
        }
    }
}

/// A G's run on a track: a `"cat":"g"` slice on a P, or a `"cat":"blocking"` slice
/// on an M's track.
#[derive(Clone, Debug)]
pub struct Slice {
    pub tid: u64,
    pub ts: f64,
    pub dur: f64,
    pub g: u64,
    pub ready_ts: Option<f64>,
    pub end: End,
    /// The wait reason (an index into [`Trace::names`]).
    pub reason: Option<u32>,
}

impl Slice {
    pub fn end_ts(&self) -> f64 {
        self.ts + self.dur
    }
}

/// What an instant event says.
#[derive(Clone, Copy, Debug)]
pub enum Mark {
    Steal {
        victim: Option<u64>,
        count: u64,
    },
    Netpoll {
        ready: u64,
    },
    Timer,
    /// `why` is an index into [`Trace::names`].
    Retake {
        why: Option<u32>,
    },
    GlobalQueue {
        count: u64,
    },
    PIdle,
    PBusy,
    MPark,
    MWake,
    /// Any other name (an index into [`Trace::names`]).
    Other(u32),
}

#[derive(Clone, Copy, Debug)]
pub struct Instant {
    pub tid: u64,
    pub ts: f64,
    pub mark: Mark,
}

/// A flow arrow's end: `start` at the waker, else at the run it caused.
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    pub id: u64,
    pub ts: f64,
    pub start: bool,
}

/// How the array ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// With its closing `]`.
    Closed,
    /// Cut short: `dropped_bytes` after the last complete event (a partial event
    /// when `partial`).
    Cut { dropped_bytes: usize, partial: bool },
}

/// Interned strings: wait reasons, retake causes, unknown instant names.
#[derive(Default)]
pub struct Names {
    list: Vec<String>,
    index: HashMap<String, u32>,
}

impl Names {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }

    pub fn get(&self, i: u32) -> &str {
        &self.list[i as usize]
    }
}

/// One lane of the picture: a P, or a thin one for another track with runs on it.
pub struct Lane {
    pub tid: u64,
    pub label: String,
    pub thin: bool,
}

/// Everything the summary and the picture use, read from one file.
pub struct Trace {
    pub bytes: usize,
    /// Complete events read.
    pub events: usize,
    pub ending: Ending,
    /// `goro_trace`'s `(events, lost)`.
    pub footer: Option<(u64, u64)>,
    pub thread_names: BTreeMap<u64, String>,
    /// The name part of `G<id> <name>`, per G.
    pub g_names: HashMap<u64, String>,
    pub g_slices: Vec<Slice>,
    pub blocking: Vec<Slice>,
    pub instants: Vec<Instant>,
    pub flows: Vec<Flow>,
    pub names: Names,
    /// `X` events of another category.
    pub other_slices: usize,
    /// Events of other phases and unknown metadata, by kind.
    pub ignored: BTreeMap<String, usize>,
}

impl Trace {
    /// The first and last instant of any timed event.
    pub fn span(&self) -> Option<(f64, f64)> {
        let slices = self.g_slices.iter().chain(&self.blocking);
        let points = self
            .instants
            .iter()
            .map(|i| i.ts)
            .chain(self.flows.iter().map(|f| f.ts));
        let lo = slices.clone().map(|s| s.ts).chain(points.clone()).reduce(f64::min)?;
        let hi = slices.map(Slice::end_ts).chain(points).fold(lo, f64::max);
        Some((lo, hi))
    }

    /// The Ps (named `P<n>`, or with runs or steals on tids below 10000), then a thin
    /// lane for each other track with runs on it (Ms in blocking calls).
    pub fn lanes(&self) -> Vec<Lane> {
        let mut ps: Vec<u64> = self.thread_names.keys().copied().filter(|&t| t < M_TID_BASE).collect();
        ps.extend(self.g_slices.iter().map(|s| s.tid).filter(|&t| t < M_TID_BASE));
        for i in &self.instants {
            if let Mark::Steal { victim, .. } = i.mark {
                ps.push(i.tid);
                ps.extend(victim);
            }
        }
        ps.retain(|&t| t < M_TID_BASE);
        ps.sort_unstable();
        ps.dedup();
        let mut thin: Vec<u64> = (self.g_slices.iter().chain(&self.blocking))
            .map(|s| s.tid)
            .filter(|&t| t >= M_TID_BASE)
            .collect();
        thin.sort_unstable();
        thin.dedup();
        let label = |tid: u64| match self.thread_names.get(&tid) {
            Some(name) => name.clone(),
            None if tid < M_TID_BASE => format!("P{tid}"),
            None if tid < RUNTIME_TID => format!("M{} blocking", tid - M_TID_BASE),
            None if tid == RUNTIME_TID => "runtime".to_owned(),
            None => format!("tid {tid}"),
        };
        let ps = ps.into_iter().map(|tid| Lane {
            tid,
            label: label(tid),
            thin: false,
        });
        let thin = thin.into_iter().map(|tid| Lane {
            tid,
            label: label(tid),
            thin: true,
        });
        ps.chain(thin).collect()
    }

    fn add(&mut self, v: Value) -> Result<(), String> {
        let Value::Object(o) = v else {
            return Err(format!("not an object but {}", kind(&v)));
        };
        let ev = Ev { map: &o, prefix: "" };
        let ph = req(ev.str("ph")?, "ph")?;
        match ph {
            "M" => self.metadata(&ev),
            "X" => self.slice(&ev),
            "i" | "I" => self.instant(&ev),
            "s" | "f" => self.flow(&ev, ph == "s"),
            other => {
                *self.ignored.entry(format!("ph {other:?}")).or_default() += 1;
                Ok(())
            }
        }
    }

    fn metadata(&mut self, ev: &Ev) -> Result<(), String> {
        let name = req(ev.str("name")?, "name")?;
        match name {
            "thread_name" => {
                let tid = req(ev.uint("tid")?, "tid")?;
                let args = req(ev.args()?, "args")?;
                let name = req(args.str("name")?, "args.name")?;
                self.thread_names.insert(tid, name.to_owned());
            }
            "process_name" => {}
            "goro_trace" => {
                let args = req(ev.args()?, "args")?;
                let events = req(args.uint("events")?, "args.events")?;
                let lost = req(args.uint("lost")?, "args.lost")?;
                self.footer = Some((events, lost));
            }
            other => *self.ignored.entry(format!("metadata {other:?}")).or_default() += 1,
        }
        Ok(())
    }

    fn slice(&mut self, ev: &Ev) -> Result<(), String> {
        let ts = req(ev.num("ts")?, "ts")?;
        let dur = req(ev.num("dur")?, "dur")?;
        if dur < 0.0 {
            return Err(format!("`dur` is negative ({dur})"));
        }
        let tid = req(ev.uint("tid")?, "tid")?;
        let cat = ev.str("cat")?.unwrap_or("");
        if cat != "g" && cat != "blocking" {
            self.other_slices += 1;
            return Ok(());
        }
        let name = ev.str("name")?.unwrap_or("");
        // `G12 worker`: the id, then the G's name if it has one.
        let (id_part, g_name) = name.split_once(' ').unwrap_or((name, ""));
        let name_id = id_part.strip_prefix('G').and_then(|id| id.parse::<u64>().ok());
        let args = ev.args()?;
        let arg_g = match &args {
            Some(a) => a.uint("g")?,
            None => None,
        };
        let g = arg_g
            .or(name_id)
            .ok_or("a `g` or `blocking` slice without a G id (`args.g`, or a name `G<id>`)")?;
        let (mut ready_ts, mut end, mut reason) = (None, End::Missing, None);
        if let Some(a) = &args {
            ready_ts = a.num("ready_ts")?;
            end = match a.str("end")? {
                None => End::Missing,
                Some("park") => End::Park,
                Some("yield") => End::Yield,
                Some("preempt") => End::Preempt,
                Some("exit") => End::Exit,
                Some("blocking") => End::Blocking,
                Some("retaken") => End::Retaken,
                Some("running") => End::Running,
                Some(_) => End::Other,
            };
            reason = a.str("reason")?.map(|r| self.names.intern(r));
        }
        let slice = Slice {
            tid,
            ts,
            dur,
            g,
            ready_ts,
            end,
            reason,
        };
        if cat == "g" {
            if !g_name.is_empty() && !self.g_names.contains_key(&g) {
                self.g_names.insert(g, g_name.to_owned());
            }
            self.g_slices.push(slice);
        } else {
            self.blocking.push(slice);
        }
        Ok(())
    }

    fn instant(&mut self, ev: &Ev) -> Result<(), String> {
        let ts = req(ev.num("ts")?, "ts")?;
        let tid = ev.uint("tid")?.unwrap_or(RUNTIME_TID);
        let name = req(ev.str("name")?, "name")?;
        let args = ev.args()?;
        let arg = |key: &str| -> Result<Option<u64>, String> {
            match &args {
                Some(a) => a.uint(key),
                None => Ok(None),
            }
        };
        let mark = match name {
            "steal" => Mark::Steal {
                victim: arg("victim")?,
                count: arg("count")?.unwrap_or(0),
            },
            "netpoll" => Mark::Netpoll {
                ready: arg("ready")?.unwrap_or(0),
            },
            "timer" => {
                arg("g")?;
                Mark::Timer
            }
            "retake" => {
                arg("p")?;
                let why = match &args {
                    Some(a) => a.str("why")?,
                    None => None,
                };
                Mark::Retake {
                    why: why.map(|w| self.names.intern(w)),
                }
            }
            "global queue" => Mark::GlobalQueue {
                count: arg("count")?.unwrap_or(0),
            },
            "P idle" => Mark::PIdle,
            "P busy" => Mark::PBusy,
            "M park" => Mark::MPark,
            "M wake" => Mark::MWake,
            other => Mark::Other(self.names.intern(other)),
        };
        self.instants.push(Instant { tid, ts, mark });
        Ok(())
    }

    fn flow(&mut self, ev: &Ev, start: bool) -> Result<(), String> {
        let ts = req(ev.num("ts")?, "ts")?;
        let id = match ev.map.get("id") {
            None => return Err("a flow event without an `id`".into()),
            Some(Value::String(s)) => (1 << 63) | u64::from(self.names.intern(s)),
            Some(v) => v
                .as_u64()
                .ok_or_else(|| format!("`id` must be a non-negative integer or a string, found {}", kind(v)))?,
        };
        self.flows.push(Flow { id, ts, start });
        Ok(())
    }
}

/// An event object (or its `args`), with typed access that says what is wrong.
struct Ev<'a> {
    map: &'a Map<String, Value>,
    /// `args.` when this is the args object, for messages.
    prefix: &'static str,
}

impl<'a> Ev<'a> {
    fn wrong(&self, key: &str, want: &str, v: &Value) -> String {
        format!("`{}{key}` must be {want}, found {}", self.prefix, kind(v))
    }

    fn str(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.wrong(key, "a string", v)),
        }
    }

    fn num(&self, key: &str) -> Result<Option<f64>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if n.abs() <= MAX_US => Ok(Some(n)),
                Some(_) => Err(self.wrong(key, "a time within 31 years (in µs)", v)),
                None => Err(self.wrong(key, "a number", v)),
            },
        }
    }

    fn uint(&self, key: &str) -> Result<Option<u64>, String> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a non-negative integer", v)),
        }
    }

    fn args(&self) -> Result<Option<Ev<'a>>, String> {
        match self.map.get("args") {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Ev { map, prefix: "args." })),
            Some(v) => Err(self.wrong("args", "an object", v)),
        }
    }
}

fn req<T>(v: Option<T>, key: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("missing `{key}`"))
}

/// A JSON value's kind and, when short, the value itself, for messages.
fn kind(v: &Value) -> String {
    let what = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let text = v.to_string();
    if text.len() <= 40 {
        format!("{what} ({text})")
    } else {
        what.to_owned()
    }
}

fn skip_ws(buf: &[u8], mut pos: usize) -> usize {
    while buf.get(pos).is_some_and(|b| b.is_ascii_whitespace()) {
        pos += 1;
    }
    pos
}

/// `line L, column C` (1-based, columns in bytes) of byte `pos`.
fn location(buf: &[u8], pos: usize) -> String {
    let before = &buf[..pos.min(buf.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = pos - before.iter().rposition(|&b| b == b'\n').map_or(0, |nl| nl + 1) + 1;
    format!("line {line}, column {column}")
}

fn describe(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("`{}`", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// Reads a whole trace file; a cut-short tail is dropped and reported in
/// [`Trace::ending`], anything else that is not a trace is an error.
pub fn parse(buf: &[u8]) -> Result<Trace, String> {
    let mut t = Trace {
        bytes: buf.len(),
        events: 0,
        ending: Ending::Closed,
        footer: None,
        thread_names: BTreeMap::new(),
        g_names: HashMap::new(),
        g_slices: Vec::new(),
        blocking: Vec::new(),
        instants: Vec::new(),
        flows: Vec::new(),
        names: Names::default(),
        other_slices: 0,
        ignored: BTreeMap::new(),
    };
    let mut pos = skip_ws(buf, 0);
    if buf[pos..].starts_with(b"\xEF\xBB\xBF") {
        pos = skip_ws(buf, pos + 3);
    }
    match buf.get(pos) {
        None => return Err("empty: not a trace (expected a JSON array of events)".into()),
        Some(b'[') => pos += 1,
        Some(&b) => {
            return Err(format!(
                "not a trace: expected a JSON array of events (`[`) at {}, found {}",
                location(buf, pos),
                describe(b)
            ))
        }
    }
    let cut = |pos: usize| Ending::Cut {
        dropped_bytes: buf.len() - pos,
        partial: pos < buf.len(),
    };
    loop {
        pos = skip_ws(buf, pos);
        match buf.get(pos) {
            None => {
                t.ending = cut(pos);
                break;
            }
            // `[]`, or a trailing comma before the `]`.
            Some(b']') => {
                pos += 1;
                break;
            }
            Some(_) => {}
        }
        let mut stream = serde_json::Deserializer::from_slice(&buf[pos..]).into_iter::<Value>();
        match stream.next() {
            None => {
                t.ending = cut(pos);
                break;
            }
            Some(Err(e)) if e.is_eof() => {
                t.ending = cut(pos);
                break;
            }
            Some(Err(e)) => {
                // serde_json's position is within the slice it was given.
                let msg = e.to_string();
                let msg = msg.rfind(" at line ").map_or(&msg[..], |at| &msg[..at]);
                let line_start = (1..e.line()).fold(pos, |p, _| {
                    p + buf[p..].iter().position(|&b| b == b'\n').map_or(0, |nl| nl + 1)
                });
                let at = (line_start + e.column().saturating_sub(1)).min(buf.len());
                return Err(format!("not valid JSON at {}: {msg}", location(buf, at)));
            }
            Some(Ok(v)) => {
                let start = pos;
                pos += stream.byte_offset();
                t.add(v)
                    .map_err(|e| format!("event {} at {}: {e}", t.events + 1, location(buf, start)))?;
                t.events += 1;
            }
        }
        pos = skip_ws(buf, pos);
        match buf.get(pos) {
            Some(b',') => pos += 1,
            Some(b']') => {
                pos += 1;
                break;
            }
            None => {
                t.ending = cut(pos);
                break;
            }
            Some(&b) => {
                return Err(format!(
                    "not a JSON array: expected `,` or `]` after event {} at {}, found {}",
                    t.events,
                    location(buf, pos),
                    describe(b)
                ))
            }
        }
    }
    if t.ending == Ending::Closed {
        let rest = skip_ws(buf, pos);
        if rest < buf.len() {
            return Err(format!(
                "data after the closing `]` at {}: not a single JSON array",
                location(buf, rest)
            ));
        }
    }
    Ok(t)
}
