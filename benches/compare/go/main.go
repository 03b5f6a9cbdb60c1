// Go side of the goro comparison (standard library only).
//
//	go-bench <workload> [--n N]     (env GOMAXPROCS sets the parallelism)
//
// prints exactly one line:
//
//	BENCH workload=<name> impl=go procs=<P> value=<number> unit=<unit>
//
// The workloads mirror ../src/bin/{goro,tokio,may}.rs; main itself is the
// driver goroutine. Adding a workload: a defaultN entry and a case in main.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	workIters     = 3_000_000        // iterations of work() per imbalanced task
	parkFor       = 10 * time.Second // how long each parked_rss goroutine sleeps
	startDeadline = 60 * time.Second // parked_rss: all must have started by then
)

// sink keeps results alive so the compiler cannot drop the work.
var sink uint64

func defaultN(workload string) (int, bool) {
	switch workload {
	case "spawn_join":
		return 1_000_000, true
	case "yield":
		return 1_000_000, true
	case "imbalanced":
		return 1_000, true
	case "parked_rss":
		return 100_000, true
	case "work_unit":
		return 50, true
	}
	return 0, false
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "go: %s\nusage: go-bench <workload> [--n N]   (env GOMAXPROCS sets the parallelism)\n", msg)
	os.Exit(2)
}

func fail(msg string) {
	fmt.Fprintf(os.Stderr, "FAILED: %s\n", msg)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 2 {
		usage("missing workload")
	}
	workload := os.Args[1]
	n, known := defaultN(workload)
	for i := 2; i < len(os.Args); i++ {
		switch os.Args[i] {
		case "--n":
			if i+1 >= len(os.Args) {
				usage("--n needs a value")
			}
			v, err := strconv.Atoi(os.Args[i+1])
			if err != nil || v <= 0 {
				usage("--n must be a positive integer")
			}
			n = v
			i++
		default:
			usage(fmt.Sprintf("unknown argument %q", os.Args[i]))
		}
	}
	var f func(int) (float64, string)
	switch workload {
	case "spawn_join":
		f = spawnJoin
	case "yield":
		f = yieldPingpong
	case "imbalanced":
		f = imbalanced
	case "parked_rss":
		f = parkedRSS
	case "work_unit":
		f = workUnit
	default:
		known = false
	}
	if !known {
		fmt.Fprintf(os.Stderr, "go: unknown workload %q\n", workload)
		os.Exit(2)
	}
	v, unit := f(n)
	fmt.Printf("BENCH workload=%s impl=go procs=%d value=%s unit=%s\n", workload, runtime.GOMAXPROCS(0), fmtValue(v, unit), unit)
	os.Exit(0) // do not wait for goroutines still parked (parked_rss)
}

func fmtValue(v float64, unit string) string {
	switch unit {
	case "s":
		return strconv.FormatFloat(v, 'f', 4, 64)
	case "ms":
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func nsPerOp(d time.Duration, ops int) (float64, string) {
	return float64(d.Nanoseconds()) / float64(ops), "ns/op"
}

// work is the CPU-bound body of one imbalanced task: a plain loop (Go's
// compiler neither vectorises it nor turns it into a closed form).
//
//go:noinline
func work(iters int) uint64 {
	var s uint64
	for i := 0; i < iters; i++ {
		s += uint64(i)
	}
	return s
}

// spawnJoin: spawn n trivial goroutines, then wait for all.
func spawnJoin(n int) (float64, string) {
	var wg sync.WaitGroup
	t := time.Now()
	for i := 0; i < n; i++ {
		wg.Go(func() {})
	}
	wg.Wait()
	return nsPerOp(time.Since(t), n)
}

// yieldPingpong: two goroutines each call runtime.Gosched n times.
func yieldPingpong(n int) (float64, string) {
	var wg sync.WaitGroup
	t := time.Now()
	for j := 0; j < 2; j++ {
		wg.Go(func() {
			for i := 0; i < n; i++ {
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	return nsPerOp(time.Since(t), 2*n)
}

// imbalanced: n CPU-bound goroutines spawned from this one; wall seconds.
func imbalanced(n int) (float64, string) {
	res := make([]uint64, n)
	var wg sync.WaitGroup
	t := time.Now()
	for i := 0; i < n; i++ {
		wg.Go(func() { res[i] = work(workIters) })
	}
	wg.Wait()
	d := time.Since(t)
	for _, s := range res {
		sink ^= s
	}
	return d.Seconds(), "s"
}

func vmRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fail("read /proc/self/status: " + err.Error())
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			k, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return k
			}
		}
	}
	fail("no VmRSS in /proc/self/status")
	return 0
}

// parkedRSS: n goroutines each sleeping 10 s; RSS growth per goroutine.
func parkedRSS(n int) (float64, string) {
	before := vmRSSKiB()
	var started atomic.Int64
	for i := 0; i < n; i++ {
		go func() {
			started.Add(1)
			time.Sleep(parkFor)
		}()
	}
	t := time.Now()
	for started.Load() < int64(n) {
		if time.Since(t) > startDeadline {
			fail(fmt.Sprintf("only %d/%d goroutines started after %v", started.Load(), n, startDeadline))
		}
		time.Sleep(time.Millisecond)
	}
	after := vmRSSKiB()
	return float64(after-before) / float64(n), "KiB"
}

// workUnit: milliseconds of one imbalanced task's work, run n times here.
func workUnit(n int) (float64, string) {
	t := time.Now()
	for i := 0; i < n; i++ {
		sink ^= work(workIters)
	}
	return time.Since(t).Seconds() * 1e3 / float64(n), "ms"
}
