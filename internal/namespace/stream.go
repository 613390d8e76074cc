package namespace

import "github.com/doppelfs/doppel/internal/content"

// A streaming writer's buffer is committed in the background: when a run
// reaches StreamFlush bytes, it is cut into chunks right away, and its
// complete chunks are detached from the buffer and hashed, stored and
// committed by a goroutine while the writer goes on appending. Cutting
// (a serial scan) happens on the writer's side and hashing and storing on
// the other, so both cores work. The next run is detached once it has
// grown to StreamFlush bytes again; only then does the writer wait for the
// previous commit (backpressure: one commit in flight per file).
//
// The run's last bytes, whose chunk boundary is not decided yet, stay in
// the buffer, copied into a fresh array the writer appends to. The bytes
// of complete chunks are in flight only; reads take them from the inflight
// record until it is settled.
//
// The goroutine never takes the inode lock. Its result is folded back
// (settle, called under the lock by the next stream, flush, truncate, or
// overlapping write): if the commit failed, its bytes go back into the
// buffer. A write overlapping the bytes in flight settles first, so the
// committed bytes are never stale.
type inflight struct {
	done chan struct{}
	off  int64  // file offset of the bytes in flight
	len  int    // len(data)
	data []byte // the bytes in flight, no longer in the buffer
	buf  []byte // data's whole array, recycled once settled
	err  error  // set before done closes
}

func (in *inflight) overlaps(off, end int64) bool {
	return off < in.off+int64(in.len) && in.off < end
}

// copyTo fills dst, which holds file data at off inside the bytes in
// flight, from them.
func (in *inflight) copyTo(dst []byte, off int64) {
	copy(dst, in.data[off-in.off:])
}

// streamable reports whether run r is worth committing in the background:
// it reached StreamFlush bytes, and some of its chunk boundaries are
// decided (a run no longer than the largest chunk may have none).
func (v *Volume) streamable(f *openFile, r content.Run) bool {
	return len(r.Data) >= v.opt.StreamFlush && len(r.Data) > v.chunkerOf(f).MaxSize()
}

// startStream cuts run r of f's buffer and commits its complete chunks
// in the background. The caller holds f's lock and has settled any
// earlier stream.
func (v *Volume) startStream(f *openFile, r content.Run) {
	chunks, n := content.Cut(v.chunkerOf(f), r.Off, r.Data, false)
	if n == 0 {
		return
	}
	f.buf.Detach(r.Off, len(r.Data)-n, v.runBufs.Get())
	in := &inflight{done: make(chan struct{}), off: r.Off, len: n, data: r.Data[:n:n], buf: r.Data}
	f.inflight = in
	size, mtime := f.size, f.mtime
	go func() {
		defer close(in.done)
		in.err = v.commitStream(f.ino, chunks, in.off, n, size, mtime)
	}()
}

// commitStream stores the chunks cut from the n bytes at off and commits
// them. The recorded size never exceeds the end of committed data.
func (v *Volume) commitStream(ino uint64, chunks []*content.Prepared, off int64, n int, size, mtime int64) error {
	if err := v.eng.Store(chunks); err != nil {
		return err
	}
	tx, err := v.begin()
	if err != nil {
		v.eng.Discard(chunks)
		return err
	}
	tx.Adopt(chunks)
	node, err := loadInode(tx.Batch(), ino)
	if err == nil {
		var mapped int64
		if mapped, err = tx.WriteChunks(ino, chunks); err == nil {
			node.Mapped += mapped
			node.Size = max(node.Size, min(off+int64(n), size))
			node.Mtime, node.Ctime = mtime, max(node.Ctime, mtime)
			err = saveInode(tx, ino, &node)
		}
	}
	if err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(false)
}

// streamDone reports whether f's background commit has finished, so that
// settling it will not wait.
func streamDone(f *openFile) bool {
	if f.inflight == nil {
		return false
	}
	select {
	case <-f.inflight.done:
		return true
	default:
		return false
	}
}

// settle waits for f's background commit, if any, and folds its result
// back into the buffer. The caller holds f's lock.
func (v *Volume) settle(f *openFile) error {
	in := f.inflight
	if in == nil {
		return nil
	}
	<-in.done
	f.inflight = nil
	if in.err != nil {
		// Back into the buffer (still counted as dirty), so that a later
		// flush retries.
		f.buf.Write(in.off, in.data)
	} else {
		v.dirty.n.Add(-int64(in.len))
	}
	v.runBufs.Put(in.buf)
	return in.err
}
