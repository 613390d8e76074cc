package namespace

import (
	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/content"
)

// A streaming writer's buffer is committed in the background: when a run
// reaches StreamFlush bytes, all of it but its last few bytes is detached
// from the buffer and handed to a goroutine, which cuts it into chunks,
// hashes and stores them and commits them, while the writer goes on
// appending. The writer's side only copies: a FUSE write is answered
// before the next is sent, so whatever the writer does per request is
// time the kernel and the application wait; cutting (a serial scan of
// every byte) belongs with the hashing, on the other core. The next run is
// detached once it has grown to StreamFlush bytes again; only then does
// the writer wait for the previous commit (backpressure: one commit in
// flight per file).
//
// The bytes after the last chunk boundary the goroutine could decide (less
// than one chunk) are not committed; settling puts them back into the
// buffer in front of the bytes the writer kept, which Detach placed in a
// fresh array with room before them, so that they are prepended in place
// and the stream goes on as one run. Until settled, the detached bytes are
// in flight only; reads take them from the inflight record.
//
// The goroutine never takes the inode lock. Its result is folded back
// (settle, called under the lock by the next stream, flush, truncate, or
// overlapping write): if the commit failed, its bytes go back into the
// buffer. A write overlapping the bytes in flight settles first, so the
// committed bytes are never stale.
type inflight struct {
	done      chan struct{}
	off       int64  // file offset of the bytes in flight
	len       int    // len(data)
	data      []byte // the bytes in flight, no longer in the buffer
	buf       []byte // data's whole array, recycled once settled
	committed int    // leading bytes of data committed; set before done closes
	err       error  // set before done closes
}

func (in *inflight) overlaps(off, end int64) bool {
	return off < in.off+int64(in.len) && in.off < end
}

// copyTo fills dst, which holds file data at off inside the bytes in
// flight, from them.
func (in *inflight) copyTo(dst []byte, off int64) {
	copy(dst, in.data[off-in.off:])
}

// streamKeep is how many of a detached run's last bytes stay buffered, so
// that the writer's next append continues a run (in a fresh array).
const streamKeep = blob.Align

// streamable reports whether run r is worth committing in the background:
// it reached StreamFlush bytes, and some of its chunk boundaries are
// decided (a run no longer than the largest chunk may have none).
func (v *FS) streamable(f *openFile, r content.Run) bool {
	return len(r.Data) >= v.opt.StreamFlush && len(r.Data) > v.chunkerOf(f).MaxSize()+streamKeep
}

// startStream detaches run r of f's buffer but its last streamKeep bytes
// and commits the complete chunks of the detached bytes in the
// background. The caller holds f's lock and has settled any earlier
// stream.
func (v *FS) startStream(f *openFile, r content.Run) {
	ch := v.chunkerOf(f)
	n := len(r.Data) - streamKeep
	detached := f.buf.Detach(r.Off, streamKeep, v.runBufs.Get(), ch.MaxSize())
	in := &inflight{done: make(chan struct{}), off: r.Off, len: n, data: r.Data[:n:n], buf: detached.Array()}
	f.inflight = in
	ino, size, mtime := f.ino, f.size, f.mtime
	go func() {
		defer close(in.done)
		chunks, cut := content.Cut(ch, in.off, in.data, false)
		if cut == 0 {
			return
		}
		in.err = v.commitStream(ino, chunks, in.off, cut, size, mtime)
		if in.err == nil {
			in.committed = cut
		}
	}()
}

// commitStream stores the chunks cut from the n bytes at off and commits
// them. The recorded size never exceeds the end of committed data.
func (v *FS) commitStream(ino uint64, chunks []*content.Prepared, off int64, n int, size, mtime int64) error {
	return v.eng.CommitChunks(chunks, nil, func(tx *content.Tx) error {
		node, err := loadInode(tx.Batch(), ino)
		if err != nil {
			return err
		}
		mapped, err := tx.WriteChunks(ino, chunks)
		if err != nil {
			return err
		}
		node.Mapped += mapped
		node.Size = max(node.Size, min(off+int64(n), size))
		node.Mtime, node.Ctime = mtime, max(node.Ctime, mtime)
		return saveInode(tx, ino, &node)
	})
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
func (v *FS) settle(f *openFile) error {
	in := f.inflight
	if in == nil {
		return nil
	}
	<-in.done
	f.inflight = nil
	// What was not committed goes back into the buffer (still counted as
	// dirty): the undecided tail, or everything if the commit failed, so
	// that a later flush retries.
	f.buf.Write(in.off+int64(in.committed), in.data[in.committed:])
	v.dirty.n.Add(-int64(in.committed))
	v.runBufs.Put(in.buf)
	return in.err
}
