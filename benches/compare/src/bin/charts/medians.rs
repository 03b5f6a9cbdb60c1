//! Reads the medians file kept by scripts/compare_medians.py: a TSV with the
//! header `workload procs impl median unit runs date`, one row per (workload,
//! GOMAXPROCS, implementation) that has a result.

use std::collections::HashMap;

pub struct Median {
    pub workload: String,
    pub procs: u32,
    pub implementation: String,
    pub value: f64,
    pub unit: String,
}

pub struct Medians(pub Vec<Median>);

impl Medians {
    pub fn read(path: &str) -> Result<Medians, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))?;
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().ok_or(format!("{path}: empty"))?.split('\t').collect();
        let col = |name: &str| {
            header
                .iter()
                .position(|h| *h == name)
                .ok_or(format!("{path}: no column {name:?}"))
        };
        let (w, p, i, m, u) = (
            col("workload")?,
            col("procs")?,
            col("impl")?,
            col("median")?,
            col("unit")?,
        );
        let mut rows = Vec::new();
        for (n, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
            let f: Vec<&str> = line.split('\t').collect();
            let get = |k: usize| f.get(k).copied().ok_or(format!("{path}:{}: too few columns", n + 2));
            let num =
                |k: usize| -> Result<f64, String> { get(k)?.parse().map_err(|e| format!("{path}:{}: {e}", n + 2)) };
            rows.push(Median {
                workload: get(w)?.to_string(),
                procs: num(p)? as u32,
                implementation: get(i)?.to_string(),
                value: num(m)?,
                unit: get(u)?.to_string(),
            });
        }
        Ok(Medians(rows))
    }

    /// median of (workload, procs, impl), if measured.
    pub fn get(&self, workload: &str, procs: u32, implementation: &str) -> Option<&Median> {
        self.0
            .iter()
            .find(|m| m.workload == workload && m.procs == procs && m.implementation == implementation)
    }

    /// The GOMAXPROCS values measured for each workload, sorted.
    pub fn procs_by_workload(&self) -> HashMap<&str, Vec<u32>> {
        let mut out: HashMap<&str, Vec<u32>> = HashMap::new();
        for m in &self.0 {
            let v = out.entry(&m.workload).or_default();
            if !v.contains(&m.procs) {
                v.push(m.procs);
                v.sort_unstable();
            }
        }
        out
    }
}
