// Go side of the http_echo benchmark (behaviour shared by the four servers:
// ../src/http.rs):
//
//	go-bench http_server --addr 127.0.0.1:PORT [--procs P]
//
// net/http's Server (HTTP/1.1 keep-alive, one goroutine per connection);
// GOMAXPROCS = --procs (default: env GOMAXPROCS, read by the runtime). Prints
// "listening on <addr>" once accepting and serves until killed. GET (any path)
// answers httpHello as text/plain, POST (any path) echoes the request body as
// application/octet-stream, anything else is 405.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
)

// httpHello is the body of every GET answer (the same 13 bytes in all four).
const httpHello = "hello, world\n"

func httpServer(args []string) {
	fs := flag.NewFlagSet("go-bench http_server", flag.ExitOnError)
	addr := fs.String("addr", "", "host:port to listen on (port 0: any free port)")
	procs := fs.Int("procs", 0, "GOMAXPROCS (default: env GOMAXPROCS, else all CPUs)")
	fs.Parse(args)
	if *addr == "" {
		usage("http_server: missing --addr")
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fail(fmt.Sprintf("http server: listen %s: %v", *addr, err))
	}
	fmt.Printf("listening on %s\n", ln.Addr()) // os.Stdout is unbuffered
	err = http.Serve(ln, http.HandlerFunc(httpHandle))
	fail(fmt.Sprintf("http server: serve: %v", err))
}

func httpHandle(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, httpHello)
	case http.MethodPost:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}
