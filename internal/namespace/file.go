package namespace

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// openFile is the in-memory state of a file with open handles: its write
// buffer and the attributes its buffered writes imply. Fields other than
// opens are guarded by the inode's stripe lock; opens by FS.filesMu.
type openFile struct {
	ino   uint64
	opens int
	buf   content.Buffer
	// pending is true while buffered writes have changed size or times
	// beyond what the inode record says.
	pending   bool
	inflight  []*inflight     // background commits of a streaming run, oldest first
	chunker   chunker.Chunker // nil: the volume's policy
	size      int64
	mtime     int64
	ctime     int64     // the pending changes' ctime (writes, held attributes)
	held      heldAttrs // attribute changes waiting for the buffered writes
	lastWrite time.Time
	stub      atomic.Bool // a clone's file whose extents are its origin's
	// recordMu and recorded: this host's open record of the file is
	// committed (volumes several hosts mount; open_records.go).
	recordMu sync.Mutex
	recorded bool
}

type handle struct {
	ino    uint64
	f      *openFile
	append bool
}

// dirtyCounter tracks buffered bytes across all files.
type dirtyCounter struct{ n atomic.Int64 }

func (v *FS) isOpen(ino uint64) bool {
	v.filesMu.Lock()
	defer v.filesMu.Unlock()
	return v.files[ino] != nil
}

// loadPending loads ino's record with its open file's buffered writes'
// size and times and held attribute changes applied. An open file's record
// is read under its lock: a flush between the read and the overlay would
// commit and clear the pending changes after the read, and the result would
// have neither (a held chmod seen undone).
func (v *FS) loadPending(ino uint64) (schema.Inode, error) {
	v.filesMu.Lock()
	f := v.files[ino]
	v.filesMu.Unlock()
	if f == nil {
		return loadInode(v.meta, ino)
	}
	l := v.locks.of(ino)
	l.RLock()
	defer l.RUnlock()
	n, err := loadInode(v.meta, ino)
	if err == nil {
		f.overlay(&n)
	}
	return n, err
}

// openHandle registers a handle on ino.
func (v *FS) openHandle(ino uint64, flags uint32) vfs.Handle {
	return v.registerHandle(ino, flags, func() chunker.Chunker { return v.fileChunker(ino) })
}

// registerHandle registers a handle on ino; chunker gives the file's
// chunker if it is not open yet.
func (v *FS) registerHandle(ino uint64, flags uint32, chunker func() chunker.Chunker) vfs.Handle {
	v.filesMu.Lock()
	defer v.filesMu.Unlock()
	f := v.files[ino]
	if f == nil {
		f = &openFile{ino: ino, chunker: chunker()}
		f.buf.Spare = v.runBufs.Recycled
		v.files[ino] = f
	}
	f.opens++
	v.nextFh++
	v.handles[v.nextFh] = &handle{ino: ino, f: f, append: flags&syscall.O_APPEND != 0}
	return v.nextFh
}

func (v *FS) handle(h vfs.Handle) (*handle, error) {
	v.filesMu.Lock()
	defer v.filesMu.Unlock()
	hd := v.handles[h]
	if hd == nil {
		return nil, syscall.EBADF
	}
	return hd, nil
}

// Create implements vfs.FS.
func (v *FS) Create(c vfs.Caller, parent uint64, name string, mode uint32, flags uint32) (vfs.Attr, vfs.Handle, error) {
	var tx *content.Tx
	var ino uint64
	var n schema.Inode
	var policy []byte
	err := v.materializing(func() (err error) {
		if tx, err = v.begin(); err != nil {
			return err
		}
		ino, n, policy, err = v.newNode(tx, c, parent, name, schema.Inode{Mode: syscall.S_IFREG | mode&0o7777})
		if err == nil {
			err = v.recordCreated(tx, ino)
		}
		if err != nil {
			tx.Abort()
		}
		return err
	})
	if err != nil {
		return vfs.Attr{}, 0, v.errno("create", err)
	}
	// Register the handle before the name becomes visible, so that an
	// unlink racing with create sees the file open.
	h := v.registerHandle(ino, flags, func() chunker.Chunker { return policyChunker(policy) })
	if err := tx.Commit(false); err != nil {
		v.Release(h)
		return vfs.Attr{}, 0, v.errno("create", err)
	}
	if v.opt.Sessions != nil {
		f := v.fileOf(h)
		f.recordMu.Lock()
		f.recorded = true
		f.recordMu.Unlock()
	}
	return toAttr(ino, &n), h, nil
}

// Open implements vfs.FS.
func (v *FS) Open(ino uint64, flags uint32) (vfs.Handle, error) {
	if err := v.catchUpForOpen(); err != nil {
		return 0, v.errno("open", err)
	}
	n, err := loadInode(v.meta, ino)
	if err != nil {
		return 0, v.errno("open", err)
	}
	if isDir(n.Mode) && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return 0, syscall.EISDIR
	}
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		if err := v.checkWritable(&n); err != nil {
			return 0, err
		}
		if n.Stub { // writes go to the file's own extents
			if err := v.materialize(ino); err != nil {
				return 0, v.errno("open", err)
			}
			n.Stub = false
		}
	}
	h := v.openHandle(ino, flags)
	if v.opt.Sessions != nil {
		if err := v.recordOpen(v.fileOf(h)); err != nil {
			v.Release(h)
			return 0, v.errno("open", err)
		}
	}
	if n.Stub {
		v.filesMu.Lock()
		if f := v.files[ino]; f != nil {
			f.stub.Store(true)
		}
		v.filesMu.Unlock()
		// Materialized meanwhile? Then its own extents are the ones.
		if m, err := loadInode(v.meta, ino); err == nil && !m.Stub {
			v.filesMu.Lock()
			if f := v.files[ino]; f != nil {
				f.stub.Store(false)
			}
			v.filesMu.Unlock()
		}
	}
	if err := v.stillThere(ino); err != nil {
		v.Release(h)
		return 0, v.errno("open", err)
	}
	if flags&syscall.O_TRUNC != 0 && n.Mode&syscall.S_IFMT == syscall.S_IFREG {
		if _, err := v.SetAttr(vfs.Caller{}, ino, vfs.SetAttr{SetSize: true}); err != nil {
			v.Release(h)
			return 0, err
		}
	}
	return h, nil
}

// stillThere checks, once a handle on ino is registered, that ino was not
// deleted meanwhile. An unlink of its last name decides, inside its
// transaction, whether the inode is open (then it stays, an orphan until
// the last close) or goes; one that decided before the handle existed is
// awaited here, so that the open fails with ENOENT instead of succeeding
// on a deleted inode (fstat of the new descriptor then said ENOENT:
// go-fuse's posixtest OpenSymlinkRace).
func (v *FS) stillThere(ino uint64) error {
	v.eng.AwaitTransactions()
	_, err := loadInode(v.meta, ino)
	return err
}

// Read implements vfs.FS.
func (v *FS) Read(h vfs.Handle, off int64, buf []byte) (int, error) {
	hd, err := v.handle(h)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	l := v.locks.of(hd.ino)
	l.RLock()
	defer l.RUnlock()
	size := hd.f.size
	if !hd.f.pending {
		n, err := loadInode(v.meta, hd.ino)
		if err != nil {
			return 0, v.errno("read", err)
		}
		size = n.Size
	}
	if off >= size {
		return 0, nil
	}
	buf = buf[:min(int64(len(buf)), size-off)]
	if err := v.readStored(hd.f, off, buf); err != nil {
		return 0, v.readFailed(hd.ino, off, len(buf), err)
	}
	hd.f.buf.Overlay(off, buf)
	return len(buf), nil
}

// readStored fills buf with f's committed content at off. Bytes that a
// background stream is committing are taken from the stream: their extents
// may change under the read. The caller holds f's lock (shared is enough).
func (v *FS) readStored(f *openFile, off int64, buf []byte) error {
	if f.stub.Load() {
		return v.readStub(f.ino, off, buf)
	}
	end := off + int64(len(buf))
	if !streamsOverlap(f, off, end) {
		return v.eng.ReadAt(f.ino, off, buf)
	}
	// Committed content around the spans in flight (merged: a stream
	// starts inside the one before it where that one's chunks ended),
	// then the bytes in flight over it.
	spans := make([][2]int64, 0, len(f.inflight))
	for _, in := range f.inflight {
		if in.overlaps(off, end) {
			spans = append(spans, [2]int64{max(off, in.off), min(end, in.off+int64(in.len))})
		}
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	pos := off
	for _, s := range spans {
		if pos < s[0] {
			if err := v.eng.ReadAt(f.ino, pos, buf[pos-off:s[0]-off]); err != nil {
				return err
			}
		}
		pos = max(pos, s[1])
	}
	if pos < end {
		if err := v.eng.ReadAt(f.ino, pos, buf[pos-off:]); err != nil {
			return err
		}
	}
	for _, in := range f.inflight {
		if from, to := max(off, in.off), min(end, in.off+int64(in.len)); from < to {
			in.copyTo(buf[from-off:to-off], from)
		}
	}
	return nil
}

// Write implements vfs.FS.
func (v *FS) Write(h vfs.Handle, off int64, data []byte) (int, error) {
	return v.write(h, off, len(data), func(buf *content.Buffer, off int64) error {
		buf.Write(off, data)
		return nil
	})
}

// WriteFrom implements vfs.FromWriter: as Write, but the n bytes are
// read by fill straight into the file's write buffer (content.Buffer's
// WriteFrom), saving a copy. The file's lock is held while fill runs.
func (v *FS) WriteFrom(h vfs.Handle, off int64, n int, fill func(dst []byte) error) (int, error) {
	return v.write(h, off, n, func(buf *content.Buffer, off int64) error {
		return buf.WriteFrom(off, n, fill)
	})
}

var _ vfs.FromWriter = (*FS)(nil)

// write is Write and WriteFrom: put buffers the n bytes at off (which
// O_APPEND may have moved). An error of put leaves the buffer as it was
// and is returned as it is.
func (v *FS) write(h vfs.Handle, off int64, n int, put func(buf *content.Buffer, off int64) error) (int, error) {
	hd, err := v.handle(h)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	f := hd.f
	l := v.locks.of(hd.ino)
	l.Lock()
	defer l.Unlock()
	if !f.pending {
		n, err := loadInode(v.meta, hd.ino)
		if err != nil {
			return 0, v.errno("write", err)
		}
		f.size, f.mtime, f.ctime = n.Size, n.Mtime, n.Ctime
	}
	if hd.append {
		off = f.size
	}
	if off+int64(n) > maxFileSize {
		return 0, syscall.EFBIG
	}
	// Refused before it is buffered, so that the writer learns of a full
	// disk from write(2) rather than only from close. Buffered bytes of
	// every file count as stored already: they will be.
	if err := v.opt.Headroom.ForData(v.dirty.n.Load() + int64(n)); err != nil {
		return 0, v.errno("write", err)
	}
	if streamsOverlap(f, off, off+int64(n)) {
		if err := v.settle(f); err != nil {
			return 0, v.errno("write", err)
		}
	}
	before := f.buf.Bytes()
	if err := put(&f.buf, off); err != nil {
		return 0, err
	}
	v.dirty.n.Add(f.buf.Bytes() - before)
	f.size = max(f.size, off+int64(n))
	f.mtime = now()
	f.ctime = max(f.ctime, f.mtime)
	v.setPending(f, true)
	f.lastWrite = time.Now()
	v.counters.written.Add(int64(n))
	if err := v.maybeFlush(f, off); err != nil {
		return 0, v.errno("write", err)
	}
	return n, nil
}

// maxFileSize is the largest file offset doppel accepts (8 EiB would
// overflow int64 arithmetic on offsets).
const maxFileSize = 1 << 62

// Flush implements vfs.FS: close(2) commits the file's buffered writes,
// without waiting for the disk.
func (v *FS) Flush(h vfs.Handle) error {
	hd, err := v.handle(h)
	if err != nil {
		return err
	}
	return v.errno("flush", v.flushFile(hd.f, true))
}

// Fsync implements vfs.FS.
func (v *FS) Fsync(h vfs.Handle, dataOnly bool) error {
	if hd, err := v.handle(h); err == nil {
		if err := v.flushFile(hd.f, true); err != nil {
			return v.errno("fsync", err)
		}
	}
	return v.errno("fsync", v.eng.Sync())
}

// Release implements vfs.FS.
func (v *FS) Release(h vfs.Handle) error {
	v.filesMu.Lock()
	hd := v.handles[h]
	delete(v.handles, h)
	v.filesMu.Unlock()
	if hd == nil {
		return syscall.EBADF
	}
	ferr := v.flushFile(hd.f, true)
	v.filesMu.Lock()
	hd.f.opens--
	last := hd.f.opens == 0
	if last {
		delete(v.files, hd.ino)
	}
	v.filesMu.Unlock()
	if !last {
		return v.errno("release", ferr)
	}
	if ferr != nil {
		// Nobody can write the buffer any more: close(2) already reported
		// the failure (ENOSPC, EIO), so its bytes are given up.
		v.giveUp(hd.f, ferr)
	}
	if v.opt.Sessions != nil {
		return v.errno("release", v.releaseRecorded(hd.ino))
	}
	return v.errno("release", v.deleteIfOrphan(hd.ino))
}

// fileOf is the open file of handle h, which must exist.
func (v *FS) fileOf(h vfs.Handle) *openFile {
	v.filesMu.Lock()
	defer v.filesMu.Unlock()
	return v.handles[h].f
}

// deleteIfOrphan deletes ino if its last name went while it was open.
func (v *FS) deleteIfOrphan(ino uint64) error {
	n, err := loadInode(v.meta, ino)
	if err != nil || n.Nlink > 0 || isDir(n.Mode) {
		return nil
	}
	l := v.locks.of(ino)
	l.Lock()
	defer l.Unlock()
	tx, err := v.begin()
	if err != nil {
		return err
	}
	if v.isOpen(ino) { // reopened meanwhile (e.g. through an fd link)
		tx.Abort()
		return nil
	}
	if err := v.deleteInode(tx, ino); err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(false)
}

// SyncFS implements vfs.FS.
func (v *FS) SyncFS() error {
	if err := v.flushAll(true); err != nil {
		return v.errno("syncfs", err)
	}
	return v.errno("syncfs", v.eng.Sync())
}
