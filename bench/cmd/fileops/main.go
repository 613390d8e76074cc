// Command fileops is a small metadata micro-benchmark used by bench/basic.sh
// and bench/suite.sh.
//
// In one directory it runs three timed phases over N files:
//
//	create: create + write SIZE bytes + close, for every file
//	stat:   lstat every file
//	unlink: remove every file
//
// and prints the elapsed time of each phase as a single JSON object on stdout.
// With -drop-caches (root only) the kernel page/dentry/inode caches are
// dropped between phases (not timed), so that the stat and unlink phases hit
// the file system instead of the kernel's attribute cache.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

type result struct {
	Dir         string  `json:"dir"`
	Files       int     `json:"files"`
	Size        int     `json:"size"`
	DropCaches  bool    `json:"drop_caches"`
	CreateSec   float64 `json:"create_s"`
	StatSec     float64 `json:"stat_s"`
	UnlinkSec   float64 `json:"unlink_s"`
	CreateOpsPS float64 `json:"create_ops_per_s"`
	StatOpsPS   float64 `json:"stat_ops_per_s"`
	UnlinkOpsPS float64 `json:"unlink_ops_per_s"`
}

func main() {
	dir := flag.String("dir", "", "directory to run in (created if missing; must be empty)")
	n := flag.Int("n", 20000, "number of files")
	size := flag.Int("size", 1024, "bytes written to each file")
	drop := flag.Bool("drop-caches", false, "sync and drop kernel caches between phases (needs root)")
	keepDir := flag.Bool("keep-dir", false, "do not remove the directory at the end")
	flag.Parse()
	if *dir == "" || *n <= 0 || *size < 0 {
		fmt.Fprintln(os.Stderr, "usage: fileops -dir DIR [-n 20000] [-size 1024] [-drop-caches]")
		os.Exit(2)
	}
	if err := run(*dir, *n, *size, *drop, *keepDir); err != nil {
		fmt.Fprintln(os.Stderr, "fileops:", err)
		os.Exit(1)
	}
}

func run(dir string, n, size int, drop, keepDir bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if ents, err := os.ReadDir(dir); err != nil {
		return err
	} else if len(ents) != 0 {
		return fmt.Errorf("%s is not empty", dir)
	}

	names := make([]string, n)
	for i := range names {
		names[i] = filepath.Join(dir, fmt.Sprintf("f%06d", i))
	}
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i*131 + 7)
	}

	res := result{Dir: dir, Files: n, Size: size, DropCaches: drop}

	// Phase 1: create + write + close.
	start := time.Now()
	for i, name := range names {
		// Make every file's content distinct so a deduplicating file
		// system cannot collapse them into one chunk.
		if size >= 8 {
			putUint64(buf, uint64(i))
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	res.CreateSec = time.Since(start).Seconds()

	if drop {
		if err := dropCaches(); err != nil {
			return err
		}
	}

	// Phase 2: lstat.
	start = time.Now()
	for _, name := range names {
		var st syscall.Stat_t
		if err := syscall.Lstat(name, &st); err != nil {
			return fmt.Errorf("lstat %s: %w", name, err)
		}
		if st.Size != int64(size) {
			return fmt.Errorf("%s: size %d, want %d", name, st.Size, size)
		}
	}
	res.StatSec = time.Since(start).Seconds()

	if drop {
		if err := dropCaches(); err != nil {
			return err
		}
	}

	// Phase 3: unlink.
	start = time.Now()
	for _, name := range names {
		if err := syscall.Unlink(name); err != nil {
			return fmt.Errorf("unlink %s: %w", name, err)
		}
	}
	res.UnlinkSec = time.Since(start).Seconds()

	if !keepDir {
		if err := os.Remove(dir); err != nil {
			return err
		}
	}

	res.CreateOpsPS = rate(n, res.CreateSec)
	res.StatOpsPS = rate(n, res.StatSec)
	res.UnlinkOpsPS = rate(n, res.UnlinkSec)
	return json.NewEncoder(os.Stdout).Encode(res)
}

func rate(n int, sec float64) float64 {
	if sec <= 0 {
		return 0
	}
	return float64(n) / sec
}

func putUint64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func dropCaches() error {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return fmt.Errorf("drop caches: %w", err)
	}
	return nil
}
