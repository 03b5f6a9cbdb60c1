//! Draws one [`BarChart`] as an SVG file with plotters' SVG backend: a title,
//! a subtitle saying which way is better, a legend, and per category one bar per
//! implementation with its value written at the bar's end. Ratio charts draw
//! each bar from Go's 1.0 line on a log axis (down: below Go, up: above);
//! absolute charts draw from 0 on a linear axis. Text is SVG `<text>` in the
//! generic `sans-serif` family: no font is needed to generate the file.

use std::error::Error;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::spec::{higher_is_better, BarChart};

const FONT: &str = "sans-serif";
const HEIGHT: u32 = 500;
const MIN_WIDTH: u32 = 760;
/// Pixels per bar and between categories (the width grows with the categories).
const BAR_PX: u32 = 30;
const GAP_PX: u32 = 40;
const HEAD_PX: u32 = 84;
/// Room above the highest bar (and below the lowest) for the value labels.
const LOG_PAD: f64 = 0.18;
const LINEAR_PAD: f64 = 1.15;
/// Candidate ratio ticks: 1-2-5 steps from 0.001 to 1000.
const RATIO_TICKS: [f64; 19] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0,
];

/// The colour of an implementation's bars (Go's is the Go gopher blue).
fn color(key: &str) -> RGBColor {
    match key {
        "goro" => RGBColor(214, 39, 40),
        "go" => RGBColor(0, 173, 216),
        "tokio" => RGBColor(255, 127, 14),
        "may" => RGBColor(44, 160, 44),
        _ => RGBColor(127, 127, 127),
    }
}

fn text(size: u32, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).pos(Pos::new(h, v))
}

/// A bar's value as written at its end.
fn value_label(v: f64, chart: &BarChart) -> String {
    if chart.ratio {
        return match v {
            v if v >= 100.0 => format!("{v:.0}"),
            v if v >= 10.0 => format!("{v:.1}"),
            v if v >= 0.1 => format!("{v:.2}"),
            _ => format!("{v:.3}"),
        };
    }
    if higher_is_better(&chart.unit) {
        return match v {
            v if v >= 10_000.0 => format!("{:.0}k", v / 1e3),
            v if v >= 1_000.0 => format!("{:.1}k", v / 1e3),
            _ => format!("{v:.0}"),
        };
    }
    match v {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 1.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

fn ratio_tick_label(t: f64) -> String {
    format!("{t}×")
}

/// An absolute axis tick: 20k for rates, else the value with at most 2 decimals.
fn tick_label(v: f64, unit: &str) -> String {
    if higher_is_better(unit) && v >= 1_000.0 {
        format!("{}k", (v / 10.0).round() / 100.0)
    } else {
        format!("{}", (v * 100.0).round() / 100.0)
    }
}

pub fn draw(chart: &BarChart, path: &Path) -> Result<(), Box<dyn Error>> {
    let n = chart.categories.len();
    let m = chart.series.len();
    let width = (150 + n as u32 * (m as u32 * BAR_PX + GAP_PX)).max(MIN_WIDTH);
    let root = SVGBackend::new(path, (width, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(HEAD_PX);
    let center = width as i32 / 2;
    let bold = TextStyle::from((FONT, 20).into_font().style(FontStyle::Bold)).pos(Pos::new(HPos::Center, VPos::Top));
    head.draw_text(&chart.title, &bold, (center, 8))?;
    let dark = BLACK.mix(0.75);
    head.draw_text(
        &chart.subtitle,
        &text(14, HPos::Center, VPos::Top).color(&dark),
        (center, 34),
    )?;
    draw_legend(&head, chart, center, 64)?;

    // Bars live in x = k .. k + 1 for category k; y is log10(ratio) or the value.
    let values = chart.series.iter().flat_map(|s| s.values.iter().flatten().copied());
    let (y0, y1) = if chart.ratio {
        let logs: Vec<f64> = values.map(f64::log10).collect();
        let lo = logs.iter().copied().fold(0.0, f64::min) - LOG_PAD;
        let hi = logs.iter().copied().fold(0.0, f64::max) + LOG_PAD;
        (lo, hi)
    } else {
        (0.0, values.fold(0.0, f64::max).max(f64::MIN_POSITIVE) * LINEAR_PAD)
    };
    let mut cc = ChartBuilder::on(&body)
        .margin_left(10)
        .margin_right(20)
        .margin_top(6)
        .margin_bottom(8)
        .x_label_area_size(46)
        .y_label_area_size(78)
        .build_cartesian_2d(0f64..n as f64, y0..y1)?;
    let tick_fmt = |v: &f64| tick_label(*v, &chart.unit);
    let mut mesh = cc.configure_mesh();
    mesh.disable_x_mesh()
        .x_labels(0)
        .y_desc(chart.y_desc.as_str())
        .axis_desc_style((FONT, 14))
        .label_style((FONT, 12));
    if chart.ratio {
        mesh.y_labels(0).disable_y_mesh();
    } else {
        mesh.y_labels(8).y_label_formatter(&tick_fmt).light_line_style(WHITE);
    }
    mesh.draw()?;

    if chart.ratio {
        // Ticks at 1-2-5 steps (only powers of ten when that is too many), then Go's line.
        let mut ticks: Vec<f64> = RATIO_TICKS
            .into_iter()
            .filter(|t| (y0..=y1).contains(&t.log10()))
            .collect();
        if ticks.len() > 9 {
            ticks.retain(|t| t.log10().fract() == 0.0);
        }
        for t in ticks {
            let y = t.log10();
            cc.draw_series(std::iter::once(PathElement::new(
                vec![(0.0, y), (n as f64, y)],
                BLACK.mix(0.12),
            )))?;
            let (px, py) = cc.backend_coord(&(0.0, y));
            root.draw_text(&ratio_tick_label(t), &text(12, HPos::Right, VPos::Center), (px - 6, py))?;
        }
        let go_line = PathElement::new(vec![(0.0, 0.0), (n as f64, 0.0)], BLACK.stroke_width(2));
        cc.draw_series(std::iter::once(go_line))?;
    }

    let slot = 0.8 / m as f64; // bars fill the middle 80 % of a category
    let gray = BLACK.mix(0.5);
    for (j, s) in chart.series.iter().enumerate() {
        let fill = color(s.key).filled();
        for (k, v) in s.values.iter().enumerate() {
            let x0 = k as f64 + 0.1 + j as f64 * slot;
            let (x1, xc) = (x0 + slot * 0.92, x0 + slot * 0.46);
            let Some(v) = *v else {
                let (px, py) = cc.backend_coord(&(xc, if chart.ratio { 0.0 } else { y0 }));
                let na = text(10, HPos::Center, VPos::Bottom).color(&gray);
                root.draw_text("n/a", &na, (px, py - 3))?;
                continue;
            };
            let y = if chart.ratio { v.log10() } else { v };
            cc.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, y)], fill)))?;
            let (px, py) = cc.backend_coord(&(xc, y));
            let (vpos, dy) = if y >= 0.0 { (VPos::Bottom, -3) } else { (VPos::Top, 3) };
            root.draw_text(&value_label(v, chart), &text(11, HPos::Center, vpos), (px, py + dy))?;
        }
    }

    for (k, lines) in chart.categories.iter().enumerate() {
        let (px, py) = cc.backend_coord(&(k as f64 + 0.5, y0));
        for (i, line) in lines.iter().enumerate() {
            let size = if i == 0 { 13 } else { 11 };
            root.draw_text(line, &text(size, HPos::Center, VPos::Top), (px, py + 8 + 16 * i as i32))?;
        }
    }
    root.present()?;
    Ok(())
}

/// One row, centred at (center, y): a swatch and the name of each series, and
/// for ratio charts Go's 1.0 line.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &BarChart,
    center: i32,
    y: i32,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let style = text(14, HPos::Left, VPos::Center);
    // (label, width): a swatch of 14 px, 6 px, the text (~8 px a character), 24 px.
    let mut items: Vec<(String, Option<&str>)> =
        chart.series.iter().map(|s| (s.name.to_string(), Some(s.key))).collect();
    if chart.ratio {
        items.push(("Go = 1 (the line)".to_string(), None));
    }
    let item_px = |label: &str| 14 + 6 + 8 * label.chars().count() as i32 + 24;
    let total: i32 = items.iter().map(|(l, _)| item_px(l)).sum::<i32>() - 24;
    let mut x = center - total / 2;
    for (label, key) in &items {
        match key {
            Some(k) => area.draw(&Rectangle::new([(x, y - 7), (x + 14, y + 7)], color(k).filled()))?,
            None => area.draw(&PathElement::new(vec![(x, y), (x + 14, y)], BLACK.stroke_width(2)))?,
        }
        area.draw_text(label, &style, (x + 20, y))?;
        x += item_px(label);
    }
    Ok(())
}
