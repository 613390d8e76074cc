package meta

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/vfs"
)

// softWAL is the file system Pebble runs on. It makes a "synced" commit cheap
// and crash-safe at once: Pebble writes a synced commit's log record to the
// OS before it returns (so it survives the daemon being killed), but the
// fsync of the write-ahead log is skipped. The real fsync happens in
// syncLogs, called by Store.Sync (fsync, `doppel sync`, the periodic sync),
// and when Pebble closes a log (rotation), so that a later log is never
// durable while an earlier one is not.
//
// Pebble's own NoSync commits cannot give this: they leave the record in an
// in-process buffer until a 32 KiB log block fills, and a killed daemon
// loses it.
type softWAL struct {
	vfs.FS

	mu   sync.Mutex
	logs map[*walFile]struct{} // open log files

	beforeDurable atomic.Pointer[func() error]
}

// makingDurable runs the registered hook before metadata becomes durable.
func (s *softWAL) makingDurable() error {
	if fn := s.beforeDurable.Load(); fn != nil {
		return (*fn)()
	}
	return nil
}

func newSoftWAL(fs vfs.FS) *softWAL {
	return &softWAL{FS: fs, logs: make(map[*walFile]struct{})}
}

func isLog(name string) bool { return strings.HasSuffix(name, ".log") }

func (s *softWAL) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isLog(name) {
		return f, err
	}
	w := &walFile{File: f, owner: s}
	s.mu.Lock()
	s.logs[w] = struct{}{}
	s.mu.Unlock()
	return w, nil
}

func (s *softWAL) Create(name string) (vfs.File, error) {
	f, err := s.FS.Create(name)
	return s.wrap(name, f, err)
}

func (s *softWAL) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := s.FS.ReuseForWrite(oldname, newname)
	return s.wrap(newname, f, err)
}

func (s *softWAL) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := s.FS.OpenReadWrite(name, opts...)
	return s.wrap(name, f, err)
}

// syncLogs makes every byte written to an open log so far durable.
func (s *softWAL) syncLogs() error {
	s.mu.Lock()
	open := make([]*walFile, 0, len(s.logs))
	for w := range s.logs {
		open = append(open, w)
	}
	s.mu.Unlock()
	var errs []error
	for _, w := range open {
		errs = append(errs, w.hardSync())
	}
	return errors.Join(errs...)
}

// walFile is an open write-ahead log whose sync calls only flush to the OS
// (which Pebble's writes already did).
type walFile struct {
	vfs.File
	owner *softWAL
	dirty atomic.Bool
	// syncMu orders hard syncs with Close, so that a log is never closed
	// under a running fsync.
	syncMu sync.Mutex
	closed bool
}

func (w *walFile) Write(p []byte) (int, error) {
	w.dirty.Store(true)
	return w.File.Write(p)
}

func (w *walFile) WriteAt(p []byte, off int64) (int, error) {
	w.dirty.Store(true)
	return w.File.WriteAt(p, off)
}

// maxWALPreallocate caps the space Pebble reserves ahead of a log's writes
// (110 % of the memtable a time), so that an idle volume's log holds about
// what it did with 4 MiB memtables rather than 18 MiB of reserved blocks.
const maxWALPreallocate = 4 << 20

func (w *walFile) Preallocate(off, n int64) error {
	return w.File.Preallocate(off, min(n, maxWALPreallocate))
}

func (w *walFile) Sync() error                { return nil }
func (w *walFile) SyncData() error            { return nil }
func (w *walFile) SyncTo(int64) (bool, error) { return false, nil }

func (w *walFile) hardSync() error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.closed || !w.dirty.Swap(false) {
		return nil
	}
	if err := w.File.SyncData(); err != nil {
		w.dirty.Store(true)
		return err
	}
	return nil
}

// Close fsyncs the log, so that a later log is never durable while an
// earlier one is not; the data it names is made durable first.
func (w *walFile) Close() error {
	var err error
	if w.dirty.Load() {
		err = w.owner.makingDurable()
	}
	if err == nil {
		err = w.hardSync()
	}
	w.syncMu.Lock()
	w.closed = true
	w.syncMu.Unlock()
	w.owner.mu.Lock()
	delete(w.owner.logs, w)
	w.owner.mu.Unlock()
	return errors.Join(err, w.File.Close())
}
