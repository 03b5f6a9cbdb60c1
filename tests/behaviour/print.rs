//! goro's print macros in goroutines whose arguments wait while they are
//! formatted: every line whole, no panic, under `#![forbid(unsafe_code)]`.
#![forbid(unsafe_code)]

use crate::common;
use std::fmt;
use std::time::Duration;

const GS: usize = 8;
const LINES: usize = 500;

/// Formatting it parks the goroutine twice: the goroutine resumes elsewhere
/// mid-format, while others print from the thread it left.
struct Yields(usize);

impl fmt::Display for Yields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        goro::yield_now();
        write!(f, "y{}", self.0)?;
        goro::yield_now();
        write!(f, "!")
    }
}

/// What goroutine `g` printed as its line `n`, on either stream.
fn line(g: usize, n: usize) -> String {
    if g.is_multiple_of(2) {
        format!("g{g} line {n} y{n}!")
    } else {
        format!("g{g} line {n} plain")
    }
}

#[test]
fn print_macros_format_before_locking_so_arguments_may_wait() {
    if common::is_child() {
        let _w = common::watchdog(Duration::from_secs(120));
        goro::runtime::Config::new().procs(4).init().unwrap();
        // Ends the line libtest began with the test's name.
        goro::println!();
        goro::eprintln!();
        let hs: Vec<_> = (0..GS)
            .map(|g| {
                goro::go!(move || {
                    for n in 0..LINES {
                        if g.is_multiple_of(2) {
                            goro::println!("g{g} line {n} {}", Yields(n));
                            goro::eprint!("g{g} line {n} {}\n", Yields(n));
                        } else {
                            goro::print!("g{g} line {n} plain\n");
                            goro::eprintln!("g{g} line {n} {}", "plain");
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        goro::println!("end");
        return;
    }
    let out = common::run_child_in(
        module_path!(),
        "print_macros_format_before_locking_so_arguments_may_wait",
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed: {:?}\n{stderr}", out.status);
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        let mut expected: Vec<String> = (0..GS).flat_map(|g| (0..LINES).map(move |n| line(g, n))).collect();
        let mut got: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with('g'))
            .map(str::to_string)
            .collect();
        expected.sort();
        got.sort();
        assert_eq!(got.len(), expected.len(), "{name}: lines split or lost");
        if let Some((g, e)) = got.iter().zip(&expected).find(|(g, e)| g != e) {
            panic!("{name}: a line was interleaved: {g:?}, expected {e:?}");
        }
    }
    assert!(stdout.contains("\nend\n"), "{stdout}");
}
