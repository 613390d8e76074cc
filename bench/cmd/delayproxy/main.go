// Command delayproxy forwards TCP connections to a server, holding the
// data a while each way, as if the server were elsewhere in a data
// centre (bench/shared.sh's BENCH_PG_DELAY). It runs until killed.
//
//	delayproxy -listen 127.0.0.1:6000 -target 127.0.0.1:5432 -one-way 250us
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/doppelfs/doppel/internal/testutil"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	target := flag.String("target", "", "server to forward to, HOST:PORT")
	oneWay := flag.Duration("one-way", 0, "how long data is held in each direction (a round trip takes twice that)")
	flag.Parse()
	if *target == "" || *oneWay < 0 {
		fmt.Fprintln(os.Stderr, "delayproxy: -target HOST:PORT is required, and -one-way must not be negative")
		os.Exit(2)
	}
	addr, stop, err := testutil.StartDelayProxy(*listen, *target, *oneWay)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayproxy:", err)
		os.Exit(1)
	}
	fmt.Println(addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	stop()
}
