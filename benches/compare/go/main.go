// Go side of the goro comparison (standard library only).
//
//	go-bench <workload> [--n N] [--port P]     (env GOMAXPROCS sets the parallelism)
//
// prints exactly one line:
//
//	BENCH workload=<name> impl=go procs=<P> value=<number> unit=<unit>
//
// The workloads mirror ../src/workloads.rs (shared by the goro, tokio and may
// binaries); main itself is the driver goroutine, which also runs
// mutex_uncontended's loop (the Rust binaries run it in one spawned task).
// Adding a workload: a defaultN entry and a case in main.
//
// Except the servers: http_server (http_server.go), an HTTP/1.1 server for wrk,
// and echo_server: a TCP echo server for the shared load generator
// (../src/bin/echo_client.rs), which prints "LISTENING <port>" and serves until
// killed (net.Listen, one goroutine per connection; Go sets TCP_NODELAY on
// every TCP connection by default).
package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	workIters     = 3_000_000        // iterations of work() per imbalanced task
	parkFor       = 10 * time.Second // how long each parked_rss goroutine sleeps
	startDeadline = 60 * time.Second // parked_rss: all must have started by then
	idleFor       = 3 * time.Second  // idle_rss: how long the goroutines idle before the measure

	bufferedCap       = 128 // buffered: channel capacity
	bufferedProducers = 4
	bufferedConsumers = 4
	skynetFanout      = 10   // skynet: children per node; N must be a power of it
	mutexTasks        = 4    // mutex_contended: goroutines sharing the lock
	sleepsPerTask     = 10   // sleepers_*: sleeps per goroutine
	echoBuf           = 4096 // echo_server: bytes read (and written back) at most per read

	hogTick           = 5 * time.Millisecond // hog_latency: the ticker's sleep
	hogWarmupTicks    = 3                    // hog_latency: ticker sleeps before the hog starts
	hogWarmupDeadline = 10 * time.Second     // hog_latency: they must be done by then
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
	case "parked_rss", "idle_rss":
		return 100_000, true
	case "work_unit":
		return 50, true
	case "pingpong":
		return 1_000_000, true
	case "buffered":
		return 4_000_000, true
	case "skynet":
		return 1_000_000, true
	case "mutex_uncontended":
		return 10_000_000, true
	case "mutex_contended":
		return 4_000_000, true
	case "sleepers_wall", "sleepers_cpu":
		return 100_000, true
	case "hog_latency":
		return 2_000, true // ms the CPU hog runs
	case "echo_server":
		return 0, true // unused: serves until killed
	}
	return 0, false
}

func usage(msg string) {
	fmt.Fprintf(os.Stderr, "go: %s\nusage: go-bench <workload> [--n N] [--port P]   (env GOMAXPROCS sets the parallelism)\n", msg)
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
	if workload == "http_server" {
		httpServer(os.Args[2:]) // never returns; flags of its own (http_server.go)
	}
	n, known := defaultN(workload)
	port := 0
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
		case "--port":
			if i+1 >= len(os.Args) {
				usage("--port needs a value")
			}
			v, err := strconv.Atoi(os.Args[i+1])
			if err != nil || v < 0 || v > 65535 {
				usage("--port must be 0..=65535")
			}
			port = v
			i++
		default:
			usage(fmt.Sprintf("unknown argument %q", os.Args[i]))
		}
	}
	if workload == "echo_server" {
		echoServer(port) // never returns
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
	case "idle_rss":
		f = idleRSS
	case "work_unit":
		f = workUnit
	case "pingpong":
		f = pingpong
	case "buffered":
		f = buffered
	case "skynet":
		f = skynet
	case "mutex_uncontended":
		f = mutexUncontended
	case "mutex_contended":
		f = mutexContended
	case "sleepers_wall":
		f = func(n int) (float64, string) { w, _ := sleepers(n); return w, "s" }
	case "sleepers_cpu":
		f = func(n int) (float64, string) { _, c := sleepers(n); return c, "s" }
	case "hog_latency":
		f = hogLatency
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
	case "msgs/s":
		return strconv.FormatFloat(v, 'f', 0, 64)
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

// idleRSS: n goroutines, each blocked receiving on a channel of its own
// (capacity 1, as workloads.rs), idle for idleFor once all have started;
// KiB of RSS growth per goroutine, channels included.
func idleRSS(n int) (float64, string) {
	before := vmRSSKiB()
	var started atomic.Int64
	chans := make([]chan uint64, n)
	for i := range chans {
		ch := make(chan uint64, 1)
		chans[i] = ch
		go func() {
			started.Add(1)
			<-ch
		}()
	}
	t := time.Now()
	for started.Load() < int64(n) {
		if time.Since(t) > startDeadline {
			fail(fmt.Sprintf("only %d/%d goroutines started after %v", started.Load(), n, startDeadline))
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(idleFor)
	after := vmRSSKiB()
	runtime.KeepAlive(chans)
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

// share: items of part i when n items are split into parts parts (as
// workloads.rs).
func share(n, parts, i int) int {
	k := n / parts
	if i < n%parts {
		k++
	}
	return k
}

// pingpong: two goroutines, two unbuffered channels; A sends i on ping and
// waits for it back on pong, B echoes; n round trips.
func pingpong(n int) (float64, string) {
	ping, pong := make(chan int), make(chan int)
	var wg sync.WaitGroup
	t := time.Now()
	wg.Go(func() {
		for i := 0; i < n; i++ {
			ping <- i
			if v := <-pong; v != i {
				fail(fmt.Sprintf("pingpong: expected %d back, got %d", i, v))
			}
		}
	})
	wg.Go(func() {
		for i := 0; i < n; i++ {
			pong <- <-ping
		}
	})
	wg.Wait()
	return nsPerOp(time.Since(t), n)
}

// buffered: make(chan int, 128), 4 producer goroutines (n/4 values each) and 4
// consumers ranging over the channel, closed once every producer is done.
func buffered(n int) (float64, string) {
	ch := make(chan int, bufferedCap)
	var counts, sums [bufferedConsumers]int
	var prod, cons sync.WaitGroup
	t := time.Now()
	for c := 0; c < bufferedConsumers; c++ {
		cons.Go(func() {
			count, sum := 0, 0
			for v := range ch {
				count++
				sum += v
			}
			counts[c], sums[c] = count, sum
		})
	}
	for p := 0; p < bufferedProducers; p++ {
		k := share(n, bufferedProducers, p)
		prod.Go(func() {
			for i := 0; i < k; i++ {
				ch <- i
			}
		})
	}
	prod.Wait()
	close(ch)
	cons.Wait()
	d := time.Since(t)
	count, sum, want := 0, 0, 0
	for c := 0; c < bufferedConsumers; c++ {
		count += counts[c]
		sum += sums[c]
	}
	for p := 0; p < bufferedProducers; p++ {
		k := share(n, bufferedProducers, p)
		want += k * (k - 1) / 2
	}
	if count != n || sum != want {
		fail(fmt.Sprintf("buffered: consumers got %d messages summing to %d, expected %d summing to %d", count, sum, n, want))
	}
	return float64(n) / d.Seconds(), "msgs/s"
}

// skynetNode: a leaf sends its index; an inner node makes a make(chan int, 10),
// starts 10 children on it, sums their 10 answers and sends the sum up.
// (The canonical go/skynet.go uses an unbuffered make(chan int) per node.)
func skynetNode(up chan<- int, num, size int) {
	if size == 1 {
		up <- num
		return
	}
	rc := make(chan int, skynetFanout)
	sub := size / skynetFanout
	for i := 0; i < skynetFanout; i++ {
		go skynetNode(rc, num+i*sub, sub)
	}
	sum := 0
	for i := 0; i < skynetFanout; i++ {
		sum += <-rc
	}
	up <- sum
}

// skynet with n leaves; wall seconds until the root's sum is received here.
func skynet(n int) (float64, string) {
	for k := n; k != 1; k /= skynetFanout {
		if k%skynetFanout != 0 {
			fail(fmt.Sprintf("skynet: N=%d leaves is not a power of %d", n, skynetFanout))
		}
	}
	c := make(chan int, 1)
	t := time.Now()
	go skynetNode(c, 0, n)
	sum := <-c
	d := time.Since(t)
	if want := n * (n - 1) / 2; sum != want {
		fail(fmt.Sprintf("skynet: root sum %d, expected %d", sum, want))
	}
	return d.Seconds(), "s"
}

// mutexUncontended: this goroutine locks, increments and unlocks a sync.Mutex n times.
func mutexUncontended(n int) (float64, string) {
	var mu sync.Mutex
	counter := 0
	t := time.Now()
	for i := 0; i < n; i++ {
		mu.Lock()
		counter++
		mu.Unlock()
	}
	d := time.Since(t)
	mu.Lock()
	if counter != n {
		fail(fmt.Sprintf("mutex: counter is %d after %d increments", counter, n))
	}
	mu.Unlock()
	return nsPerOp(d, n)
}

// mutexContended: 4 goroutines each lock, increment and unlock one sync.Mutex n/4 times.
func mutexContended(n int) (float64, string) {
	var mu sync.Mutex
	counter := 0
	var wg sync.WaitGroup
	t := time.Now()
	for g := 0; g < mutexTasks; g++ {
		k := share(n, mutexTasks, g)
		wg.Go(func() {
			for i := 0; i < k; i++ {
				mu.Lock()
				counter++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	d := time.Since(t)
	if counter != n {
		fail(fmt.Sprintf("mutex: counter is %d after %d increments", counter, n))
	}
	return nsPerOp(d, n)
}

// nextSleepMs: the next sleep of a goroutine, 1..=50 ms, from the same 64-bit
// LCG as workloads.rs's next_sleep_ms (state starts at the goroutine's index).
func nextSleepMs(state *uint64) time.Duration {
	*state = *state*6364136223846793005 + 1442695040888963407
	return time.Duration(1+(*state>>33)%50) * time.Millisecond
}

// processCPU: user + system CPU time of the whole process (getrusage(RUSAGE_SELF)).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: " + err.Error())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sleepers: n goroutines each sleep 10 times 1..=50 ms; wall seconds and
// process CPU seconds from before the first go to after wg.Wait.
func sleepers(n int) (wall, cpu float64) {
	var wg sync.WaitGroup
	cpu0 := processCPU()
	t := time.Now()
	for i := 0; i < n; i++ {
		wg.Go(func() {
			s := uint64(i)
			for j := 0; j < sleepsPerTask; j++ {
				time.Sleep(nextSleepMs(&s))
			}
		})
	}
	wg.Wait()
	return time.Since(t).Seconds(), (processCPU() - cpu0).Seconds()
}

// tick is one sleep of hog_latency's ticker: when it started, and how late it
// woke up (elapsed - hogTick, in ms; negative if early).
type tick struct {
	start  time.Time
	lateMs float64
}

// hogSpin is hog_latency's hog: it spins for d with no yield and no runtime
// call other than the clock (time.Since every 1000 iterations), as
// workloads.rs's hog_spin; Go preempts it asynchronously. Returns when it
// started and ended.
//
//go:noinline
func hogSpin(d time.Duration) (start, end time.Time) {
	start = time.Now()
	var x uint64
	for i := 1; ; i++ {
		x++
		if i%1000 == 0 && time.Since(start) >= d {
			break
		}
	}
	sink ^= x
	return start, time.Now()
}

// hogP99: the nearest-rank 99th percentile (sort, index ceil(0.99 len) - 1) of
// the lateness of the sleeps that started while the hog ran (strictly after
// start, before end); if there is none, the largest lateness of all. ms rounded
// to 2 decimals, as workloads.rs's hog_p99.
func hogP99(ticks []tick, start, end time.Time) (float64, string) {
	var during []float64
	for _, t := range ticks {
		if t.start.After(start) && t.start.Before(end) {
			during = append(during, t.lateMs)
		}
	}
	var v float64
	if len(during) > 0 {
		slices.Sort(during)
		v = during[(99*len(during)+99)/100-1]
	} else if len(ticks) > 0 {
		v = ticks[0].lateMs
		for _, t := range ticks {
			v = max(v, t.lateMs)
		}
	} else {
		fail("hog_latency: the ticker took no sample")
	}
	return math.Round(v*100) / 100, "ms"
}

// hogLatency: a ticker goroutine sleeping 5 ms in a loop, then (once it ticks
// steadily) a hog goroutine spinning n ms in a plain loop: p99 lateness of the
// ticks taken meanwhile (Go's sysmon preempts the hog asynchronously).
func hogLatency(n int) (float64, string) {
	var ticks []tick
	var nticks atomic.Int64
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			t := time.Now()
			time.Sleep(hogTick)
			ticks = append(ticks, tick{t, float64(time.Since(t)-hogTick) / 1e6})
			nticks.Add(1)
		}
	})
	t := time.Now()
	for nticks.Load() < hogWarmupTicks {
		if time.Since(t) > hogWarmupDeadline {
			fail(fmt.Sprintf("hog_latency: the ticker did %d sleeps in %v", nticks.Load(), hogWarmupDeadline))
		}
		time.Sleep(time.Millisecond)
	}
	var start, end time.Time
	wg.Go(func() {
		start, end = hogSpin(time.Duration(n) * time.Millisecond)
		done.Store(true)
	})
	wg.Wait()
	return hogP99(ticks, start, end)
}

// echoErrors counts echoError calls: only the first 20 are printed.
var echoErrors atomic.Int64

// echoError reports an unexpected connection or accept error on stderr, as
// workloads.rs's echo_error does (the client closes every connection cleanly).
func echoError(what string, err error) {
	switch k := echoErrors.Add(1); {
	case k <= 20:
		fmt.Fprintf(os.Stderr, "ECHO-ERROR %s: %v\n", what, err)
	case k == 21:
		fmt.Fprintln(os.Stderr, "ECHO-ERROR (more errors not shown)")
	}
}

// echoServer: listens on 127.0.0.1:port, prints "LISTENING <port>", then
// accepts forever, one goroutine per connection.
func echoServer(port int) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		fail(fmt.Sprintf("echo_server: listen: %v", err))
	}
	fmt.Printf("LISTENING %d\n", ln.Addr().(*net.TCPAddr).Port) // os.Stdout is unbuffered
	for {
		c, err := ln.Accept()
		if err != nil {
			echoError("accept", err)
			continue
		}
		go echoConn(c)
	}
}

// echoConn reads up to echoBuf bytes and writes back exactly what was read, until EOF.
func echoConn(c net.Conn) {
	defer c.Close()
	buf := make([]byte, echoBuf)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				echoError("write", werr)
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				echoError("read", err)
			}
			return
		}
	}
}
