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
// every byte) belongs with the hashing, on the other core.
//
// Up to streamDepth such commits of one file are in flight at once, a
// pipeline: while one waits for its chunks to reach the store (an upload,
// on a volume with data in S3) and commits, the next is being hashed and
// stored; the stores themselves take turns (content.StoreTurn), so that
// the file's chunks reach the blob store in file order. The next run is
// detached once it has grown to StreamFlush bytes again and the previous
// stream has decided its last chunk boundary; with streamDepth streams in
// flight the writer waits for the oldest (backpressure). Commits happen in
// order: each waits for the one before and fails, committing nothing, if
// that one failed, so that the recorded size never passes data that is
// not committed.
//
// The bytes after the last chunk boundary a stream could decide (less
// than one chunk) are not committed; as soon as that boundary is known
// they are put back into the buffer in front of the bytes the writer kept,
// which Detach placed in a fresh array with room before them, so that
// they are prepended in place and the stream goes on as one run. The
// decided bytes are in flight only until the stream is settled; reads
// take them from the inflight records.
//
// The goroutines never take the inode lock. Their results are folded
// back, oldest first (settle, called under the lock by the next stream,
// flush, truncate, or overlapping write): a stream whose commit failed
// puts its bytes back into the buffer. A write overlapping bytes in
// flight settles every stream first, so the committed bytes are never
// stale.
type inflight struct {
	done    chan struct{} // closed when the commit ended
	decided chan struct{} // closed when cut is known
	stored  chan struct{} // closed when its chunks' store ended (the next stream's turn)
	off     int64         // file offset of the bytes in flight
	len     int           // len(data)
	data    []byte        // the bytes in flight, no longer in the buffer
	buf     []byte        // data's whole array, recycled when loan ends
	// loan lends buf to the blob store, which may upload chunks from it
	// (blob.Lender); buf goes back to the pool when the store and the
	// settling both let go of it.
	loan     *content.Loan
	cut      int  // leading bytes of data in complete chunks; set before decided closes
	tailBack bool // data[cut:] is back in the buffer
	// committed is the leading bytes of data committed (0 or cut); set
	// before done closes, as is err.
	committed int
	err       error
}

// streamDepth is how many background commits of one file may be in
// flight: one hashing and storing, one waiting for its uploads, one
// committing. Each holds at most StreamFlush bytes of the file's buffer
// (plus the array's spare room), all counted as dirty bytes.
const streamDepth = 3

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

// streamsOverlap reports whether bytes of [off, end) are in flight.
func streamsOverlap(f *openFile, off, end int64) bool {
	for _, in := range f.inflight {
		if in.overlaps(off, end) {
			return true
		}
	}
	return false
}

// startStream detaches run r of f's buffer but its last streamKeep bytes
// and commits the complete chunks of the detached bytes in the
// background, after the streams already in flight. The caller holds f's
// lock, and the tail of the newest stream in flight is back in the buffer.
func (v *FS) startStream(f *openFile, r content.Run) {
	ch := v.chunkerOf(f)
	n := len(r.Data) - streamKeep
	detached := f.buf.Detach(r.Off, streamKeep, v.runBufs.Get(), ch.MaxSize())
	in := &inflight{done: make(chan struct{}), decided: make(chan struct{}), stored: make(chan struct{}),
		off: r.Off, len: n, data: r.Data[:n:n], buf: detached.Array()}
	in.loan = content.NewLoan(in.buf, func() { v.runBufs.Put(in.buf) })
	var prev *inflight
	turn := content.StoreTurn{Done: in.stored, Loan: in.loan}
	if k := len(f.inflight); k > 0 {
		prev = f.inflight[k-1]
		turn.After = prev.stored
	}
	f.inflight = append(f.inflight, in)
	ino, size, mtime := f.ino, f.size, f.mtime
	go func() {
		defer close(in.done)
		chunks, cut := content.Cut(ch, in.off, in.data, false)
		in.cut = cut
		close(in.decided)
		if cut == 0 {
			if turn.After != nil {
				<-turn.After // the turn passes on in order: the next store waits for the one before
			}
			close(in.stored)
			in.err = waitStream(prev) // nothing to commit, but an earlier failure still counts
			return
		}
		in.err = v.commitStream(ino, chunks, in.off, cut, size, mtime, turn, func() error { return waitStream(prev) })
		if in.err == nil {
			in.committed = cut
		}
	}()
}

// waitStream waits for stream in (nil: none) to end and returns its error.
func waitStream(in *inflight) error {
	if in == nil {
		return nil
	}
	<-in.done
	return in.err
}

// commitStream stores the chunks cut from the n bytes at off and commits
// them once before (the previous stream's commit) succeeded. The recorded
// size never exceeds the end of committed data.
func (v *FS) commitStream(ino uint64, chunks []*content.Prepared, off int64, n int, size, mtime int64, turn content.StoreTurn, before func() error) error {
	v.eng.MarkHostCached(ino, chunks)
	v.eng.PlanInPlace(ino, chunks)
	return v.eng.CommitChunksInTurn(chunks, turn, before, func(tx *content.Tx) error {
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

// takeTail puts the undecided tail of f's newest stream back into the
// buffer, waiting for its boundary to be decided, so that the run it
// belongs to continues there. The caller holds f's lock.
func takeTail(f *openFile) {
	k := len(f.inflight)
	if k == 0 || f.inflight[k-1].tailBack {
		return
	}
	in := f.inflight[k-1]
	<-in.decided
	f.buf.Write(in.off+int64(in.cut), in.data[in.cut:])
	in.tailBack = true
}

// settleDone folds back the streams at the head of f's pipeline that have
// finished, without waiting. The caller holds f's lock.
func (v *FS) settleDone(f *openFile) error {
	for len(f.inflight) > 0 {
		select {
		case <-f.inflight[0].done:
		default:
			return nil
		}
		if err := v.settleOldest(f); err != nil {
			return err
		}
	}
	return nil
}

// settleOldest waits for f's oldest stream and folds its result back
// into the buffer. The caller holds f's lock.
func (v *FS) settleOldest(f *openFile) error {
	in := f.inflight[0]
	<-in.done
	f.inflight = f.inflight[1:]
	if len(f.inflight) == 0 {
		f.inflight = nil
	}
	// What was not committed goes back into the buffer (still counted as
	// dirty): the undecided tail unless it went back already, or
	// everything if the commit failed, so that a later flush retries.
	end := in.len
	if in.tailBack {
		end = in.cut
	}
	if in.committed < end {
		f.buf.Write(in.off+int64(in.committed), in.data[in.committed:end])
	}
	v.dirty.n.Add(-int64(in.committed))
	in.loan.Drop()
	return in.err
}

// settle waits for every stream of f, oldest first, and folds their
// results back into the buffer; it returns the first error. The caller
// holds f's lock.
func (v *FS) settle(f *openFile) error {
	var first error
	for len(f.inflight) > 0 {
		if err := v.settleOldest(f); err != nil && first == nil {
			first = err
		}
	}
	return first
}
