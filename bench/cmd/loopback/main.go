// Command loopback is the benchmark's reference FUSE file system: a go-fuse
// loopback mount (fs.NewLoopbackRoot) of a directory, used by
// bench/basic.sh.
//
//	loopback [-kernel-passthrough=false] [-max-write BYTES] MOUNTPOINT DIR
//
// By default it behaves like go-fuse's example/loopback: when run as root
// on Linux 6.9 or later, opened files use FUSE passthrough, so the kernel
// reads and writes DIR's files itself and file data never reaches this
// process. With -kernel-passthrough=false every read and write is served
// by the Go process, which is the data path a file system that transforms
// data (such as doppel) has; -max-write then sets its request size.
// SIGTERM or SIGINT unmounts.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

func main() {
	passthrough := flag.Bool("kernel-passthrough", true, "let the kernel do file I/O on the backing files (root, Linux >= 6.9)")
	debug := flag.Bool("debug", false, "log every FUSE request and reply (go-fuse's debug output)")
	maxWrite := flag.Int("max-write", 0, "largest read/write request in bytes (0: go-fuse's default, 128 KiB)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: loopback [-kernel-passthrough=false] [-max-write BYTES] MOUNTPOINT DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	mp, dir := flag.Arg(0), flag.Arg(1)
	root, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loopback:", err)
		os.Exit(1)
	}
	sec := time.Second
	opts := &fs.Options{
		AttrTimeout:     &sec, // libfuse's defaults, as in go-fuse's example
		EntryTimeout:    &sec,
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			FsName:   dir,
			Name:     "loopback",
			MaxWrite: *maxWrite,
			Debug:    *debug,
		},
	}
	if *maxWrite > 0 {
		opts.MountOptions.MaxReadAhead = *maxWrite
	}
	if !*passthrough {
		opts.MountOptions.DisabledCapabilities = fuse.CAP_PASSTHROUGH
	}
	server, err := fs.Mount(mp, root, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loopback: mount:", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		server.Unmount()
	}()
	server.Wait()
}
