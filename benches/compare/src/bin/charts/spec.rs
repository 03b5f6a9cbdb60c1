//! Which charts exist and what they show: each [`Spec`] names a group of
//! workloads (patterns, `*` matches any text); [`build`] turns the medians of
//! those workloads into the bars of one chart.

use crate::medians::Medians;

/// The implementations, in the order of the bars: (key in the results, name).
pub const IMPLS: [(&str, &str); 4] = [("goro", "goro"), ("go", "Go"), ("tokio", "Tokio"), ("may", "may")];

pub enum Kind {
    /// Each implementation's median ÷ Go's, on a log scale around Go = 1.
    RatioToGo,
    /// The medians themselves, all four implementations.
    Absolute,
}

pub struct Spec {
    /// File name without `.svg`.
    pub file: &'static str,
    pub title: &'static str,
    pub kind: Kind,
    /// Workload patterns, in the order of the categories.
    pub workloads: &'static [&'static str],
    /// The y axis of an absolute chart (a ratio chart's is always the same).
    pub y_desc: &'static str,
}

pub const SPECS: &[Spec] = &[
    Spec {
        file: "scheduling",
        title: "Scheduling: spawning, yielding, stealing",
        kind: Kind::RatioToGo,
        workloads: &["work_unit", "spawn_join", "yield", "imbalanced", "skynet"],
        y_desc: "",
    },
    Spec {
        file: "sync",
        title: "Channels and mutexes",
        kind: Kind::RatioToGo,
        workloads: &["pingpong", "buffered", "mutex_uncontended", "mutex_contended"],
        y_desc: "",
    },
    Spec {
        file: "timers_memory",
        title: "Timers, parked memory, preemption",
        kind: Kind::RatioToGo,
        workloads: &["sleepers_wall", "sleepers_cpu", "parked_rss", "hog_latency"],
        y_desc: "",
    },
    Spec {
        file: "tcp_echo",
        title: "TCP echo (100 connections, 64-byte messages)",
        kind: Kind::RatioToGo,
        workloads: &["tcp_echo_msgs", "tcp_echo_p50", "tcp_echo_p99", "tcp_echo_cpu"],
        y_desc: "",
    },
    Spec {
        file: "http_rps",
        title: "HTTP echo under wrk: requests per second",
        kind: Kind::Absolute,
        workloads: &["http_get_*_rps", "http_post_*_rps"],
        y_desc: "requests per second",
    },
    Spec {
        file: "http_p99",
        title: "HTTP echo under wrk: p99 latency",
        kind: Kind::Absolute,
        workloads: &["http_get_*_p99", "http_post_*_p99"],
        y_desc: "99th percentile latency (ms)",
    },
];

pub struct Series {
    pub key: &'static str,
    pub name: &'static str,
    /// One value per category; None: not measured (or no Go value to divide by).
    pub values: Vec<Option<f64>>,
}

/// Everything the drawing needs.
pub struct BarChart {
    pub title: String,
    /// What the bars mean and which way is better.
    pub subtitle: String,
    pub y_desc: String,
    /// Bars are ratios drawn from 1.0 on a log axis (else from 0 on a linear axis).
    pub ratio: bool,
    /// The unit of an absolute chart (tick and value labels), "" for ratios.
    pub unit: String,
    /// Label lines of each category.
    pub categories: Vec<Vec<String>>,
    pub series: Vec<Series>,
}

/// Rates (msgs/s, req/s) are better when higher; times, sizes and CPU when lower.
pub fn higher_is_better(unit: &str) -> bool {
    unit.ends_with("/s")
}

/// `*` matches any (possibly empty) text.
fn glob(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((head, tail)) => {
            s.starts_with(head) && (0..=s.len() - head.len()).any(|i| glob(tail, &s[head.len() + i..]))
        }
    }
}

/// Sort key that orders embedded numbers by value: http_get_64 before http_get_512.
fn natural(s: &str) -> String {
    let mut out = String::new();
    let mut digits = String::new();
    for c in s.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            out += &format!("{digits:0>12}");
            digits.clear();
        }
        out.push(c);
    }
    out
}

/// A category's name: "GET, 64 conns" for http_get_64_*, else the workload.
fn workload_label(w: &str) -> String {
    let parts: Vec<&str> = w.split('_').collect();
    match parts.as_slice() {
        ["http", method, conns, _] => format!("{}, {conns} conns", method.to_uppercase()),
        _ => w.to_string(),
    }
}

/// The chart of `spec` from the medians, or None when none of its workloads has
/// a bar to draw.
pub fn build(spec: &Spec, med: &Medians) -> Option<BarChart> {
    let procs = med.procs_by_workload();
    let mut workloads: Vec<&str> = Vec::new();
    for pat in spec.workloads {
        let mut found: Vec<&str> = procs.keys().copied().filter(|w| glob(pat, w)).collect();
        found.sort_by_key(|w| natural(w));
        workloads.extend(found);
    }
    let ratio = matches!(spec.kind, Kind::RatioToGo);
    let impls: Vec<(&'static str, &'static str)> = IMPLS.into_iter().filter(|(k, _)| !ratio || *k != "go").collect();
    let mut series: Vec<Series> = impls
        .iter()
        .map(|&(key, name)| Series {
            key,
            name,
            values: Vec::new(),
        })
        .collect();
    let mut categories = Vec::new();
    let mut directions = Vec::new(); // higher_is_better per category
    for w in workloads {
        for &p in &procs[w] {
            let Some(unit) = IMPLS
                .iter()
                .find_map(|(i, _)| med.get(w, p, i))
                .map(|m| m.unit.as_str())
            else {
                continue; // only implementations this chart does not know
            };
            let go = med.get(w, p, "go").map(|m| m.value).filter(|&v| v > 0.0);
            for s in &mut series {
                let v = med.get(w, p, s.key).map(|m| m.value);
                s.values.push(if ratio { v.zip(go).map(|(v, g)| v / g) } else { v });
            }
            let up = higher_is_better(unit);
            let mut second = format!("P={p}");
            if ratio && up {
                second += ", ↑ better";
            }
            categories.push(vec![workload_label(w), second]);
            directions.push(up);
        }
    }
    if series.iter().all(|s| s.values.iter().all(Option::is_none)) {
        return None;
    }
    let unit = if ratio { String::new() } else { med_unit(spec, med) };
    let (subtitle, y_desc) = if ratio {
        let sub = if directions.iter().all(|&u| !u) {
            "median ÷ Go's median: below 1 is better than Go (less time, memory or CPU)"
        } else if directions.iter().all(|&u| u) {
            "median ÷ Go's median: above 1 is better than Go (higher rate)"
        } else {
            "median ÷ Go's median: below 1 is better than Go, except rates (↑ better): above 1 is better"
        };
        (sub.to_string(), "ratio to Go (log scale; Go = 1)".to_string())
    } else {
        let better = if higher_is_better(&unit) { "higher" } else { "lower" };
        (
            format!("median of the runs, in {unit}: {better} is better"),
            spec.y_desc.to_string(),
        )
    };
    Some(BarChart {
        title: spec.title.to_string(),
        subtitle,
        y_desc,
        ratio,
        unit,
        categories,
        series,
    })
}

/// The unit of an absolute chart: that of its first workload with a median.
fn med_unit(spec: &Spec, med: &Medians) -> String {
    med.0
        .iter()
        .find(|m| spec.workloads.iter().any(|p| glob(p, &m.workload)))
        .map(|m| m.unit.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_and_natural_order() {
        assert!(glob("http_get_*_rps", "http_get_512_rps"));
        assert!(!glob("http_get_*_rps", "http_post_64_rps"));
        assert!(glob("yield", "yield") && !glob("yield", "yields"));
        assert!(natural("http_get_64_rps") < natural("http_get_512_rps"));
        assert_eq!(workload_label("http_post_512_p99"), "POST, 512 conns");
    }
}
