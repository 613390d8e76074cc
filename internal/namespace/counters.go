package namespace

import "sync/atomic"

// Counters are the namespace's running totals and the state of its flush
// queue, for monitoring.
type Counters struct {
	WrittenBytes int64 // accepted by Write since the volume was opened
	DirtyBytes   int64 // buffered write data not yet committed
	DirtyFiles   int64 // files holding buffered writes
	OpenFiles    int64 // files with open handles
}

// counters are kept with atomic adds, so monitoring takes no lock on the
// write path.
type counters struct {
	written    atomic.Int64
	dirtyFiles atomic.Int64
}

// Counters returns the running totals.
func (v *FS) Counters() Counters {
	v.filesMu.Lock()
	open := len(v.files)
	v.filesMu.Unlock()
	return Counters{
		WrittenBytes: v.counters.written.Load(), DirtyBytes: v.dirty.n.Load(),
		DirtyFiles: v.counters.dirtyFiles.Load(), OpenFiles: int64(open),
	}
}

// setPending marks whether f holds buffered changes, counting the files
// that do. The caller holds f's lock.
func (v *FS) setPending(f *openFile, pending bool) {
	if f.pending == pending {
		return
	}
	f.pending = pending
	if pending {
		v.counters.dirtyFiles.Add(1)
	} else {
		v.counters.dirtyFiles.Add(-1)
	}
}
