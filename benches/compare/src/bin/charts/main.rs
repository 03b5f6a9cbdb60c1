//! Draws the SVG charts of docs/BENCHMARKS.md from the medians that
//! scripts/compare_medians.py keeps:
//!
//! ```text
//! charts --medians docs/charts/medians.tsv --out docs/charts
//! ```
//!
//! Writes `<out>/<name>.svg` for every chart of [`spec::SPECS`] that has data,
//! and `<out>/index.tsv` (`file<TAB>title`, one line per chart written), which
//! scripts/compare_report.py reads to embed them. Exits 1 with the reason on error.

mod draw;
mod medians;
mod spec;

use std::io::Write;
use std::path::PathBuf;

fn main() {
    if let Err(e) = run() {
        eprintln!("charts: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let (medians, out) = parse_args()?;
    let med = medians::Medians::read(&medians)?;
    std::fs::create_dir_all(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
    let mut index = String::from("file\ttitle\n");
    for s in spec::SPECS {
        let Some(chart) = spec::build(s, &med) else {
            eprintln!("charts: {}: no data, skipped", s.file);
            continue;
        };
        let file = format!("{}.svg", s.file);
        let path = out.join(&file);
        draw::draw(&chart, &path).map_err(|e| format!("draw {}: {e}", path.display()))?;
        index += &format!("{file}\t{}\n", chart.title);
        println!("wrote {}", path.display());
    }
    let path = out.join("index.tsv");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(index.as_bytes()))
        .map_err(|e| format!("write {}: {e}", path.display()))
}

fn parse_args() -> Result<(String, PathBuf), String> {
    let usage = "usage: charts --medians MEDIANS.tsv --out DIR";
    let (mut medians, mut out) = (None, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let v = it.next().ok_or(format!("{a} needs a value; {usage}"))?;
        match a.as_str() {
            "--medians" => medians = Some(v),
            "--out" => out = Some(PathBuf::from(v)),
            _ => return Err(format!("unknown argument {a:?}; {usage}")),
        }
    }
    Ok((medians.ok_or(usage)?, out.ok_or(usage)?))
}
