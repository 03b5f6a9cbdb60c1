//! The picture: a time axis, a lane per P (thin lanes for Ms in blocking calls),
//! runs coloured per G, steals, and rows of netpoll, timer and retake ticks.
//!
//! The element count is bounded whatever the trace's size: runs narrower than a
//! column (one pixel, or more when there are many lanes) are merged per lane and
//! column, a column is drawn fainter the more of it is idle, and steals and ticks are
//! drawn as one path each, deduplicated per column.

use crate::fmt_us;
use crate::parse::{End, Mark, Slice, Trace};
use crate::summary::{Summary, Window};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

/// Columns the lanes may have in all. A lane draws at most one merged rectangle per
/// column and at most as many wide runs (with a tooltip each) as it has columns, so
/// the runs make at most 3 elements per column: under ~20k.
const COLUMN_BUDGET: f64 = 6000.0;
/// Distinct steal marks drawn at most (coarser columns beyond).
const STEAL_MARKS: usize = 800;

const LEFT: f64 = 100.0;
const RIGHT: f64 = 20.0;
const LANE_H: f64 = 20.0;
const LANE_GAP: f64 = 4.0;
const THIN_H: f64 = 8.0;
const THIN_GAP: f64 = 3.0;
const TICK_H: f64 = 8.0;
const STEAL: &str = "#d62728";
const TICKS: [(&str, &str); 3] = [("netpoll", "#1f77b4"), ("timer", "#ff7f0e"), ("retake", "#9467bd")];

pub struct Picture {
    pub text: String,
    pub elements: usize,
}

/// Text for XML content and attribute values.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// A colour per G that does not change from one picture to the next.
pub fn g_colour(g: u64) -> String {
    let mut h = g.wrapping_add(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    let hue = (h % 360) as f64;
    let sat = 0.50 + ((h >> 16) % 30) as f64 / 100.0;
    let light = 0.42 + ((h >> 32) % 20) as f64 / 100.0;
    // HSL to RGB.
    let c = (1.0 - (2.0 * light - 1.0).abs()) * sat;
    let x = c * (1.0 - ((hue / 60.0) % 2.0 - 1.0).abs());
    let (r, g, b) = match (hue / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = light - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b))
}

/// The name a G is shown by: `G12 worker` or `G12`.
fn g_label(t: &Trace, g: u64) -> String {
    match t.g_names.get(&g) {
        Some(name) => format!("G{g} {name}"),
        None => format!("G{g}"),
    }
}

/// A tick step of 1, 2 or 5 times a power of ten giving about ten ticks over `len`.
fn tick_step(len: f64) -> f64 {
    let raw = len / 10.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag)
}

/// A tick label in the step's unit with as many decimals as the step needs.
fn tick_label(us: f64, step: f64) -> String {
    let (unit, name) = if step < 1e3 {
        (1.0, "µs")
    } else if step < 1e6 {
        (1e3, "ms")
    } else {
        (1e6, "s")
    };
    let decimals = (-(step / unit).log10().floor()).max(0.0) as usize;
    format!("{:.*}{name}", decimals, us / unit)
}

/// Merged runs narrower than a column, per lane: the column, the busy pixels in it
/// and the G with the most of them.
struct Column {
    col: i64,
    busy: f64,
    gs: Vec<(u64, f64)>,
}

impl Column {
    fn add(&mut self, g: u64, px: f64) {
        self.busy += px;
        if let Some(entry) = self.gs.iter_mut().find(|(id, _)| *id == g) {
            entry.1 += px;
        } else if self.gs.len() < 16 {
            self.gs.push((g, px));
        }
    }

    fn top(&self) -> u64 {
        self.gs.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map_or(0, |e| e.0)
    }
}

/// Writes the column runs of one lane, joining neighbours of the same G and shade.
struct ColumnWriter<'a> {
    out: &'a mut String,
    y: f64,
    h: f64,
    gran: f64,
    right: f64,
    pending: Option<(f64, f64, u64, u8)>,
}

impl ColumnWriter<'_> {
    fn push(&mut self, c: &Column) {
        let x0 = LEFT + c.col as f64 * self.gran;
        let x1 = (x0 + self.gran).min(self.right);
        // The shade: the busy share of the column, in quarters, at least one.
        let shade = ((c.busy / self.gran * 4.0).ceil() as u8).clamp(1, 4);
        let g = c.top();
        match &mut self.pending {
            Some((_, px1, pg, ps)) if *pg == g && *ps == shade && (x0 - *px1).abs() < 1e-6 => *px1 = x1,
            _ => {
                self.flush();
                self.pending = Some((x0, x1, g, shade));
            }
        }
    }

    fn flush(&mut self) {
        if let Some((x0, x1, g, shade)) = self.pending.take() {
            let _ = writeln!(
                self.out,
                r#"<rect x="{x0:.1}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}" fill-opacity="{}"/>"#,
                self.y,
                (x1 - x0).max(0.3),
                self.h,
                g_colour(g),
                f64::from(shade) / 4.0
            );
        }
    }
}

pub fn render(t: &Trace, s: &Summary, w: &Window, file: &str, width: u32) -> Picture {
    let width = f64::from(width);
    let plot_w = width - LEFT - RIGHT;
    let right = LEFT + plot_w;
    let len = if w.len() > 0.0 { w.len() } else { 1.0 };
    let x_of = |ts: f64| LEFT + (ts - w.from) / len * plot_w;

    // Lane positions.
    let mut lane_y: HashMap<u64, (f64, f64)> = HashMap::new();
    let top = 62.0;
    let mut y = top;
    for l in &s.lanes {
        let h = if l.lane.thin { THIN_H } else { LANE_H };
        lane_y.insert(l.lane.tid, (y, h));
        y += h + if l.lane.thin { THIN_GAP } else { LANE_GAP };
    }
    let lanes_bottom = y;
    let ticks_top = lanes_bottom + 6.0;
    let legend_top = ticks_top + 3.0 * (TICK_H + 3.0) + 18.0;
    let per_row = ((width - 20.0) / 190.0).floor().max(1.0) as usize;
    let legend_rows = s.top_gs.len().div_ceil(per_row).max(1);
    let height = legend_top + legend_rows as f64 * 16.0 + 30.0;

    let mut o = String::new();
    let _ = writeln!(o, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}" viewBox="0 0 {width} {height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(o, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let ps = s.lanes.iter().filter(|l| !l.lane.thin).count();
    let _ = writeln!(
        o,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">{} — {} .. {} ({}), {ps} Ps, {} Gs, {} runs</text>"#,
        esc(file),
        fmt_us(w.from),
        fmt_us(w.to),
        fmt_us(w.to - w.from),
        s.gs,
        s.g_slices
    );

    // The time axis, with grid lines through the lanes.
    let step = tick_step(len);
    let _ = writeln!(
        o,
        r##"<path d="M{LEFT} 50H{right:.1}" stroke="#444" stroke-width="1"/>"##
    );
    let mut grid = String::new();
    let mut k = (w.from / step).ceil();
    while k * step <= w.to + step * 1e-9 {
        let x = x_of(k * step);
        let _ = write!(grid, "M{x:.1} 50V{lanes_bottom:.1}");
        let _ = writeln!(
            o,
            r#"<text x="{x:.1}" y="44" text-anchor="middle">{}</text>"#,
            tick_label(k * step, step)
        );
        k += 1.0;
    }
    if !grid.is_empty() {
        let _ = writeln!(o, r##"<path d="{grid}" stroke="#ddd" stroke-width="1"/>"##);
    }

    // Lanes and runs.
    let mut by_tid: HashMap<u64, Vec<(f64, f64, &Slice)>> = HashMap::new();
    for sl in t.g_slices.iter().chain(&t.blocking) {
        if let (Some((a, b)), true) = (w.clip(sl), lane_y.contains_key(&sl.tid)) {
            by_tid.entry(sl.tid).or_default().push((x_of(a), x_of(b), sl));
        }
    }
    let gran = (s.lanes.len() as f64 * plot_w / COLUMN_BUDGET).max(1.0);
    // Runs at least a column wide cannot be more than the columns unless they overlap.
    let wide_cap = (plot_w / gran) as usize + 16;
    for l in &s.lanes {
        let (ly, lh) = lane_y[&l.lane.tid];
        let _ = writeln!(
            o,
            r##"<rect x="{LEFT}" y="{ly:.1}" width="{plot_w:.1}" height="{lh}" fill="#f2f2f2"/>"##
        );
        let font = if l.lane.thin { 9 } else { 11 };
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="{font}">{}</text>"#,
            LEFT - 6.0,
            ly + lh / 2.0 + f64::from(font) / 3.0,
            esc(&l.lane.label)
        );
        let mut runs = by_tid.remove(&l.lane.tid).unwrap_or_default();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut cols = ColumnWriter {
            out: &mut o,
            y: ly,
            h: lh,
            gran,
            right,
            pending: None,
        };
        let mut column: Option<Column> = None;
        let mut wide = 0;
        for (x0, x1, sl) in runs {
            if x1 - x0 >= gran && wide < wide_cap {
                wide += 1;
                if let Some(c) = column.take() {
                    cols.push(&c);
                }
                cols.flush();
                let mut tip = format!(
                    "{} on {}: {} from {}",
                    g_label(t, sl.g),
                    l.lane.label,
                    fmt_us(sl.dur),
                    fmt_us(sl.ts)
                );
                if sl.end != End::Missing {
                    let _ = write!(tip, ", {}", sl.end.name());
                }
                if let Some(r) = sl.reason {
                    let _ = write!(tip, " ({})", t.names.get(r));
                }
                if let Some(ready) = sl.ready_ts {
                    let _ = write!(tip, "; ready→running {}", fmt_us(sl.ts - ready));
                }
                let _ = writeln!(
                    cols.out,
                    r#"<rect x="{x0:.1}" y="{ly:.1}" width="{:.2}" height="{lh}" fill="{}"><title>{}</title></rect>"#,
                    // A hairline gap shows where one run ends and the next begins.
                    if x1 - x0 > 2.0 { x1 - x0 - 0.5 } else { x1 - x0 },
                    g_colour(sl.g),
                    esc(&tip)
                );
                continue;
            }
            let col = ((x0 - LEFT) / gran).floor() as i64;
            match &mut column {
                Some(c) if c.col == col => c.add(sl.g, x1 - x0),
                _ => {
                    if let Some(c) = column.take() {
                        cols.push(&c);
                    }
                    let mut c = Column {
                        col,
                        busy: 0.0,
                        gs: Vec::new(),
                    };
                    c.add(sl.g, x1 - x0);
                    column = Some(c);
                }
            }
        }
        if let Some(c) = column.take() {
            cols.push(&c);
        }
        cols.flush();
    }

    // Steals: a mark on the thief's lane, a line from the victim's.
    let steals: Vec<(u64, Option<u64>, f64)> = t
        .instants
        .iter()
        .filter(|i| w.has(i.ts) && lane_y.contains_key(&i.tid))
        .filter_map(|i| match i.mark {
            Mark::Steal { victim, .. } => Some((i.tid, victim.filter(|v| lane_y.contains_key(v)), x_of(i.ts))),
            _ => None,
        })
        .collect();
    let mut steal_gran = 1.0;
    let marks = loop {
        let marks: BTreeSet<(u64, Option<u64>, i64)> = steals
            .iter()
            .map(|&(thief, victim, x)| (thief, victim, ((x - LEFT) / steal_gran).floor() as i64))
            .collect();
        if marks.len() <= STEAL_MARKS {
            break marks;
        }
        steal_gran *= 2.0;
    };
    if !marks.is_empty() {
        let (mut lines, mut heads) = (String::new(), String::new());
        for (thief, victim, col) in marks {
            let x = LEFT + (col as f64 + 0.5) * steal_gran;
            let (ty, th) = lane_y[&thief];
            if let Some(v) = victim {
                let (vy, vh) = lane_y[&v];
                let _ = write!(lines, "M{x:.1} {:.1}V{:.1}", vy + vh / 2.0, ty + th / 2.0);
            }
            let _ = write!(heads, "M{:.1} {:.1}h6l-3 5z", x - 3.0, ty - 1.0);
        }
        if !lines.is_empty() {
            let _ = writeln!(
                o,
                r#"<path d="{lines}" stroke="{STEAL}" stroke-width="1" stroke-opacity="0.6" fill="none"/>"#
            );
        }
        let _ = writeln!(
            o,
            r#"<path d="{heads}" fill="{STEAL}"><title>{} steals, {} Gs moved</title></path>"#,
            s.counts.steals, s.counts.stolen
        );
    }

    // Netpoll, timer and retake ticks, a row each, one per pixel.
    for (row, (name, colour)) in TICKS.iter().enumerate() {
        let ry = ticks_top + row as f64 * (TICK_H + 3.0);
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="9">{name}</text>"#,
            LEFT - 6.0,
            ry + TICK_H - 1.0
        );
        let cols: BTreeSet<i64> = t
            .instants
            .iter()
            .filter(|i| w.has(i.ts))
            .filter(|i| {
                matches!(
                    (row, i.mark),
                    (0, Mark::Netpoll { .. }) | (1, Mark::Timer) | (2, Mark::Retake { .. })
                )
            })
            .map(|i| x_of(i.ts).floor() as i64)
            .collect();
        if cols.is_empty() {
            continue;
        }
        let mut d = String::new();
        for x in cols {
            let _ = write!(d, "M{}.5 {ry:.1}v{TICK_H}", x);
        }
        let count = match row {
            0 => s.counts.netpoll,
            1 => s.counts.timers,
            _ => s.counts.retakes,
        };
        let _ = writeln!(
            o,
            r#"<path d="{d}" stroke="{colour}" stroke-width="1"><title>{count} {name} events</title></path>"#
        );
    }

    // Legend: the Gs with the most running time, then the marks.
    let _ = writeln!(
        o,
        r#"<text x="10" y="{:.1}">Gs with the most running time:</text>"#,
        legend_top - 4.0
    );
    for (i, &(g, time)) in s.top_gs.iter().enumerate() {
        let lx = 10.0 + (i % per_row) as f64 * 190.0;
        let ly = legend_top + (i / per_row) as f64 * 16.0;
        let _ = writeln!(
            o,
            r#"<rect x="{lx:.1}" y="{ly:.1}" width="12" height="10" fill="{}"/>"#,
            g_colour(g)
        );
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}">{} {}</text>"#,
            lx + 16.0,
            ly + 9.0,
            esc(&g_label(t, g)),
            fmt_us(time)
        );
    }
    let ky = legend_top + legend_rows as f64 * 16.0 + 8.0;
    let _ = writeln!(
        o,
        r#"<path d="M10 {:.1}h6l-3 5z" fill="{STEAL}"/><text x="20" y="{:.1}">steal (line from the victim P)</text>"#,
        ky,
        ky + 6.0
    );
    for (i, (name, colour)) in TICKS.iter().enumerate() {
        let kx = 220.0 + i as f64 * 90.0;
        let _ = writeln!(
            o,
            r#"<path d="M{kx}.5 {ky:.1}v8" stroke="{colour}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            kx + 5.0,
            ky + 7.0
        );
    }
    let _ = writeln!(
        o,
        r##"<text x="{:.1}" y="{:.1}" fill="#666">blank: P idle; faint: a column partly idle</text>"##,
        220.0 + 3.0 * 90.0,
        ky + 7.0
    );
    o.push_str("</svg>\n");
    let elements = o.matches('<').count() - o.matches("</").count() - 1;
    Picture { text: o, elements }
}
