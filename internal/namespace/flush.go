package namespace

import (
	"errors"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
)

// maxRuns bounds the runs one file buffers: a random writer's flush
// commits them in one transaction, and past this many that transaction
// grows large (and holds the writer) for no gain.
const maxRuns = 16 << 10

// maybeFlush commits part of f's buffer after a write at off: the run it
// went into when that grew large (streaming writers), or everything when
// all buffers together exceed the dirty limit or f holds too many runs
// (backpressure). The caller holds f's lock.
func (v *FS) maybeFlush(f *openFile, off int64) error {
	if v.dirty.n.Load() > v.opt.DirtyLimit || f.buf.Len() > maxRuns {
		return v.flushLocked(f, true)
	}
	if err := v.settleDone(f); err != nil {
		return err
	}
	r, ok := f.buf.RunAt(off)
	if !ok || !v.streamable(f, r) {
		return nil
	}
	if len(f.inflight) >= streamDepth {
		// The pipeline is full: wait for the oldest (backpressure);
		// settling may change the runs, so look again.
		if err := v.settleOldest(f); err != nil {
			return err
		}
		return v.maybeFlush(f, off)
	}
	if k := len(f.inflight); k > 0 && !f.inflight[k-1].tailBack {
		// The run continues where the newest stream's chunks end: put
		// its undecided tail back in front of it, and look again.
		takeTail(f)
		return v.maybeFlush(f, off)
	}
	v.startStream(f, r)
	return nil
}

func (v *FS) flushFile(f *openFile, final bool) error {
	l := v.locks.of(f.ino)
	l.Lock()
	defer l.Unlock()
	return v.flushLocked(f, final)
}

// flushLocked chunks and commits f's buffered runs in one transaction.
// Unless final, each run keeps the tail whose chunk boundary is not decided
// yet. The size recorded never exceeds what committed data reaches, so a
// crash cannot expose a size larger than the data written. All runs' chunks
// are hashed and stored together (in parallel, in few writes) and their
// extents written with one scan of the file's map, so many small runs cost
// little more per run than one large one.
func (v *FS) flushLocked(f *openFile, final bool) error {
	if err := v.settle(f); err != nil {
		return err
	}
	if !f.pending {
		return nil
	}
	runs := f.buf.Runs()
	var groups [][]*content.Prepared
	var chunks []*content.Prepared
	all := true // every byte will be committed
	var end int64
	for _, r := range runs {
		cut, n := content.Cut(v.chunkerOf(f), r.Off, r.Data, final)
		all = all && n == len(r.Data)
		if n > 0 {
			groups = append(groups, cut)
			chunks = append(chunks, cut...)
			end = max(end, r.Off+int64(n))
		}
	}
	if len(chunks) == 0 && !(all && final) {
		return nil
	}
	v.eng.MarkHostCached(f.ino, chunks)
	v.eng.PlanInPlace(f.ino, chunks)
	gone := false
	err := v.eng.CommitChunks(chunks, nil, func(tx *content.Tx) error {
		err := v.commitFlush(tx, f, groups, end, all)
		gone = errors.Is(err, syscall.ENOENT)
		return err
	})
	if gone { // deleted under us: nothing to keep
		v.dropBuffer(f)
		return nil
	}
	if err != nil {
		return err
	}
	f.held = heldAttrs{}
	consumed := int64(0)
	for _, g := range groups {
		last := g[len(g)-1]
		n := int(last.Off + int64(last.Len) - g[0].Off)
		f.buf.Consume(g[0].Off, n, v.opt.StreamFlush+(2<<20))
		consumed += int64(n)
	}
	v.dirty.n.Add(-consumed)
	if f.buf.Bytes() == 0 {
		v.setPending(f, false)
	}
	return nil
}

// commitFlush writes the extents of groups (one per run, in file order)
// and f's attributes; end is where the committed data ends, all whether
// it is all of the buffered data.
func (v *FS) commitFlush(tx *content.Tx, f *openFile, groups [][]*content.Prepared, end int64, all bool) error {
	n, err := loadInode(tx.Batch(), f.ino)
	if err != nil {
		return err
	}
	mapped, err := tx.WriteRanges(f.ino, groups)
	if err != nil {
		return err
	}
	n.Mapped += mapped
	if all {
		n.Size = f.size
	} else {
		n.Size = max(n.Size, min(end, f.size))
	}
	n.Mtime, n.Ctime = f.mtime, max(n.Ctime, f.ctime)
	if err := tx.Journal(f.ino, schema.OpData); err != nil {
		return err
	}
	if f.held.any() {
		f.held.apply(&n)
		if err := tx.Journal(f.ino, schema.OpAttr); err != nil {
			return err
		}
	}
	return saveInode(tx, f.ino, &n)
}

// giveUp drops the buffered writes of a file whose last handle is gone
// after its flush failed.
func (v *FS) giveUp(f *openFile, err error) {
	l := v.locks.of(f.ino)
	l.Lock()
	defer l.Unlock()
	if n := f.buf.Bytes(); n > 0 {
		v.log.Warn("closed file's unwritten data dropped", "ino", f.ino, "path", v.pathOf(f.ino), "bytes", n, "err", err)
	}
	v.dropBuffer(f)
}

func (v *FS) dropBuffer(f *openFile) {
	v.dirty.n.Add(-f.buf.Bytes())
	f.buf = content.Buffer{Spare: f.buf.Spare}
	f.held = heldAttrs{}
	v.setPending(f, false)
}

// flushAll commits every open file's buffered writes.
func (v *FS) flushAll(final bool) error {
	var first error
	for _, f := range v.openFiles() {
		if err := v.flushFile(f, final); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (v *FS) openFiles() []*openFile {
	v.filesMu.Lock()
	defer v.filesMu.Unlock()
	out := make([]*openFile, 0, len(v.files))
	for _, f := range v.files {
		out = append(out, f)
	}
	return out
}

// idleFlush is how long a file must go unwritten before the flusher
// commits its buffer completely, cutting its last chunk.
const idleFlush = time.Second

// flusher commits buffered writes in the background, so that data does
// not wait in memory for a close that may come late or never.
func (v *FS) flusher() {
	defer v.wg.Done()
	t := time.NewTicker(v.opt.FlushInterval)
	defer t.Stop()
	lastSync := time.Now()
	failing := map[uint64]string{} // files whose last flush failed, and why: logged once
	var syncErr error              // the last periodic sync's error: logged once
	for {
		select {
		case <-v.quit:
			return
		case <-t.C:
		}
		// The kernel does not pass syncfs(2) to FUSE daemons, so, like
		// ext4's commit interval, committed changes are made durable
		// periodically.
		if time.Since(lastSync) >= v.opt.SyncInterval {
			err := v.eng.Sync()
			if err != nil && (syncErr == nil || err.Error() != syncErr.Error()) {
				v.log.Error("periodic sync failed", "err", err)
			}
			syncErr, lastSync = err, time.Now()
		}
		for _, f := range v.openFiles() {
			l := v.locks.of(f.ino)
			l.Lock()
			idle := time.Since(f.lastWrite) >= idleFlush
			err := v.flushLocked(f, idle)
			l.Unlock()
			switch {
			case err == nil:
				delete(failing, f.ino)
			case failing[f.ino] != err.Error():
				failing[f.ino] = err.Error()
				v.log.Error("background flush failed; retrying while the file is open", "ino", f.ino, "path", v.pathOf(f.ino), "err", err)
			}
		}
		if len(failing) > 1024 {
			clear(failing) // a bound: forgetting only means logging again
		}
	}
}
