package namespace

import (
	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/content"
)

// A streaming writer's buffer is committed in the background: when a run
// reaches StreamFlush bytes, its bytes so far are chunked, stored and
// committed by a goroutine while the writer goes on appending, so copying
// data in from the kernel and chunking/hashing it use both cores.
//
// The goroutine never takes the inode lock. Until its result is folded
// back (settle, called under the lock by the next flush, truncate, or
// overlapping write), the bytes stay in the buffer, so reads see them
// whether or not the commit has happened. A write overlapping the bytes in
// flight settles first, so the committed bytes are never stale.
type inflight struct {
	done chan struct{}
	off  int64 // file offset of the bytes in flight
	len  int
	n    int // bytes committed; set before done closes
	err  error
}

func (in *inflight) overlaps(off, end int64) bool {
	return off < in.off+int64(in.len) && in.off < end
}

// startStream commits the complete chunks of run r in the background. The
// caller holds f's lock and has settled any earlier stream.
func (v *Volume) startStream(f *openFile, r content.Run) {
	in := &inflight{done: make(chan struct{}), off: r.Off, len: len(r.Data)}
	f.inflight = in
	// r.Data's first len bytes are not written again while in flight: an
	// overlapping write settles first, and appends go past them (or into a
	// new array).
	data := r.Data[:len(r.Data):len(r.Data)]
	ch := v.chunkerOf(f)
	size, mtime := f.size, f.mtime
	go func() {
		defer close(in.done)
		in.n, in.err = v.commitStream(f.ino, ch, in.off, data, size, mtime)
	}()
}

// commitStream prepares data (at off) without cutting its last chunk and
// commits what it could decide. The recorded size never exceeds the end of
// committed data.
func (v *Volume) commitStream(ino uint64, ch chunker.Chunker, off int64, data []byte, size, mtime int64) (int, error) {
	chunks, n, err := v.eng.PrepareWith(ch, off, data, false)
	if err != nil || n == 0 {
		return 0, err
	}
	tx, err := v.begin()
	if err != nil {
		v.eng.Discard(chunks)
		return 0, err
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
		return 0, err
	}
	if err := tx.Commit(false); err != nil {
		return 0, err
	}
	return n, nil
}

// settle waits for f's background commit, if any, and drops the bytes it
// committed from the buffer. The caller holds f's lock.
func (v *Volume) settle(f *openFile) error {
	in := f.inflight
	if in == nil {
		return nil
	}
	<-in.done
	f.inflight = nil
	if in.err != nil {
		return in.err // the bytes stay buffered; a later flush retries
	}
	if in.n > 0 {
		before := f.buf.Bytes()
		f.buf.Drop(in.off, in.off+int64(in.n), v.opt.StreamFlush+(2<<20))
		v.dirty.n.Add(f.buf.Bytes() - before)
	}
	return nil
}
