package metrics

import (
	"sync/atomic"
	"syscall"
	"time"
)

// Op is a FUSE operation the frontend serves.
type Op uint8

// The operations, named as in the FUSE protocol.
const (
	OpLookup Op = iota
	OpGetattr
	OpSetattr
	OpReadlink
	OpSymlink
	OpMknod
	OpMkdir
	OpUnlink
	OpRmdir
	OpRename
	OpLink
	OpAccess
	OpStatfs
	OpCreate
	OpOpen
	OpRead
	OpWrite
	OpFlush
	OpFsync
	OpRelease
	OpFallocate
	OpLseek
	OpCopyFileRange
	OpGetxattr
	OpListxattr
	OpSetxattr
	OpRemovexattr
	OpOpendir
	OpReaddir
	OpReaddirplus
	OpFsyncdir
	OpReleasedir
	OpGetlk
	OpSetlk
	OpSetlkw
	numOps
)

var opNames = [numOps]string{
	"lookup", "getattr", "setattr", "readlink", "symlink", "mknod", "mkdir",
	"unlink", "rmdir", "rename", "link", "access", "statfs", "create", "open",
	"read", "write", "flush", "fsync", "release", "fallocate", "lseek",
	"copy_file_range", "getxattr", "listxattr", "setxattr", "removexattr",
	"opendir", "readdir", "readdirplus", "fsyncdir", "releasedir",
	"getlk", "setlk", "setlkw",
}

func (o Op) String() string { return opNames[o] }

// LatencyBounds are the upper bounds of the latency histogram's buckets.
// Metadata operations served from Pebble's cache take microseconds; a
// flush that commits a large buffer, or an fsync, can take seconds.
var LatencyBounds = [...]time.Duration{
	5 * time.Microsecond, 10 * time.Microsecond, 25 * time.Microsecond,
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond,
	500 * time.Microsecond, time.Millisecond, 2500 * time.Microsecond,
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	time.Second, 5 * time.Second,
}

// opStats holds one operation's counts. The count is the sum of the
// buckets rather than a counter of its own, so that a scrape racing with
// Observe still sees a histogram whose buckets add up to its count.
type opStats struct {
	buckets [len(LatencyBounds) + 1]atomic.Uint64 // the last: above every bound
	sumNs   atomic.Uint64
	errors  atomic.Uint64
	eio     atomic.Uint64
}

// Ops counts FUSE operations, their failures and latencies. Observe costs
// two or three uncontended atomic adds; the zero value is ready.
type Ops struct {
	ops [numOps]opStats
}

// Observe records one request that took d and was answered with errno
// (0 for success).
func (o *Ops) Observe(op Op, d time.Duration, errno syscall.Errno) {
	s := &o.ops[op]
	i := 0
	for i < len(LatencyBounds) && d > LatencyBounds[i] {
		i++
	}
	s.buckets[i].Add(1)
	s.sumNs.Add(uint64(max(d, 0)))
	if errno != 0 {
		s.errors.Add(1)
		if errno == syscall.EIO {
			s.eio.Add(1)
		}
	}
}

// OpCounts is a reading of one operation's counters.
type OpCounts struct {
	Count   uint64
	Errors  uint64 // answered with any error
	EIO     uint64 // answered with EIO: the daemon failed (damage, store errors)
	Sum     time.Duration
	Buckets [len(LatencyBounds) + 1]uint64 // per bucket, not cumulative
}

// Read returns op's counters.
func (o *Ops) Read(op Op) OpCounts {
	s := &o.ops[op]
	c := OpCounts{Errors: s.errors.Load(), EIO: s.eio.Load(), Sum: time.Duration(s.sumNs.Load())}
	for i := range s.buckets {
		c.Buckets[i] = s.buckets[i].Load()
		c.Count += c.Buckets[i]
	}
	return c
}

// Totals sums the counters of every operation.
func (o *Ops) Totals() OpCounts {
	var t OpCounts
	for op := range numOps {
		r := o.Read(op)
		t.Count += r.Count
		t.Errors += r.Errors
		t.EIO += r.EIO
		t.Sum += r.Sum
		for i, n := range r.Buckets {
			t.Buckets[i] += n
		}
	}
	return t
}
