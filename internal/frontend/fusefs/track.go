package fusefs

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/metrics"
)

// track records a request when it returns; every FUSE method defers it
// first thing. It must stay cheap: it runs once per request, and costs a
// clock read and a few atomic adds unless debug logging is on. st is nil
// for requests without a reply status.
func (f *FS) track(op metrics.Op, ino uint64, start time.Time, st *fuse.Status) {
	d := time.Since(start)
	var errno syscall.Errno
	if st != nil {
		errno = syscall.Errno(*st)
	}
	f.ops.Observe(op, d, errno)
	if !f.debug {
		return
	}
	if errno != 0 {
		f.log.Debug("fuse", "op", op.String(), "ino", ino, "duration", d, "errno", unix.ErrnoName(errno))
		return
	}
	f.log.Debug("fuse", "op", op.String(), "ino", ino, "duration", d)
}
