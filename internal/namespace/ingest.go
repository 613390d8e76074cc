package namespace

import (
	"sync/atomic"
	"syscall"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

var _ vfs.FileCreator = (*FS)(nil)

// CreateFile implements vfs.FileCreator. The data is read, cut, hashed
// and stored a window at a time, pipelined: while one window's chunks are
// hashed, stored and committed, the next is read and cut. No write buffer
// is involved and nothing is copied but a chunk's tail between windows.
//
// A file that fits in one window takes one transaction: inode, entry,
// extents, attributes. A larger one is created empty first and grows by
// one transaction per window; its size is never ahead of its committed
// data, and its times and size are final with the last window.
func (v *FS) CreateFile(parent uint64, name string, nf vfs.NewFile) (vfs.Attr, error) {
	if nf.Size < 0 || nf.Size > maxFileSize {
		return vfs.Attr{}, syscall.EINVAL
	}
	if err := checkName(name); err != nil {
		return vfs.Attr{}, err
	}
	in := &ingest{v: v, nf: &nf}
	in.chooseXattrs()
	w, err := in.next(nil, 0)
	if err != nil {
		return vfs.Attr{}, err // the source's error, as it is
	}
	if w.last {
		defer in.release(w)
		n, ino, err := in.create(parent, name, w)
		if err != nil {
			return vfs.Attr{}, v.errno("createfile", err)
		}
		return toAttr(ino, &n), nil
	}
	n, ino, err := in.create(parent, name, nil)
	if err != nil {
		in.release(w)
		return vfs.Attr{}, v.errno("createfile", err)
	}
	n, err = in.stream(ino, w)
	if err != nil {
		if rerr := v.removeCreated(parent, name, ino); rerr != nil {
			v.log.Error("createfile: cannot remove a partly created file", "path", v.pathOf(ino), "err", rerr)
		}
		return vfs.Attr{}, err
	}
	return toAttr(ino, &n), nil
}

// ingest is the state of one CreateFile.
type ingest struct {
	v      *FS
	nf     *vfs.NewFile
	ch     chunker.Chunker
	xattrs []vfs.Xattr // the valid ones
	failed atomic.Bool // the committer failed: stop reading
}

// chooseXattrs keeps the valid attributes and picks the chunker: the
// file's own policy, else the volume's (nothing is inherited).
func (in *ingest) chooseXattrs() {
	in.ch = in.v.eng.Chunker()
	for _, x := range in.nf.Xattrs {
		if err := checkXattr(x.Name, x.Value); err != nil {
			if in.nf.XattrRefused != nil {
				in.nf.XattrRefused(x.Name, err)
			}
			continue
		}
		if x.Name == PolicyXattr {
			if c := policyChunker(x.Value); c != nil {
				in.ch = c
			}
		}
		in.xattrs = append(in.xattrs, x)
	}
}

// stream commits the first window w and the rest of the file to ino: a
// goroutine commits windows while this one reads and cuts the next.
func (in *ingest) stream(ino uint64, w *window) (schema.Inode, error) {
	windows := make(chan *window, 1)
	type result struct {
		n   schema.Inode
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for w := range windows {
			if r.err == nil {
				r.n, r.err = in.commit(ino, w)
				in.failed.Store(r.err != nil)
			}
			in.release(w)
		}
		done <- r
	}()
	var tail []byte
	var err error
	for {
		// The tail is copied out before the window goes: the committer
		// gives the window's buffer back.
		tail = append(tail[:0], w.tail...)
		tailOff, last := w.tailOff, w.last
		windows <- w
		if last || in.failed.Load() {
			break
		}
		if w, err = in.next(tail, tailOff); err != nil {
			break
		}
	}
	close(windows)
	r := <-done
	if r.err != nil {
		return r.n, in.v.errno("createfile", r.err)
	}
	return r.n, err
}

// create makes the file's inode, entry and attributes in one transaction,
// with the content of w when w holds all of it (stored and committed by
// content.Engine.CommitChunks).
func (in *ingest) create(parent uint64, name string, w *window) (n schema.Inode, ino uint64, err error) {
	v, nf := in.v, in.nf
	// The parent may be a clone's directory not materialized yet.
	if err := v.materialize(parent); err != nil {
		return schema.Inode{}, 0, err
	}
	fill := func(tx *content.Tx) error {
		c := vfs.Caller{Uid: nf.Uid, Gid: nf.Gid}
		var err error
		if ino, n, _, err = v.newNode(tx, c, parent, name, schema.Inode{Mode: syscall.S_IFREG | nf.Mode&0o7777}); err != nil {
			return err
		}
		if err := in.setXattrs(tx, ino); err != nil {
			return err
		}
		if w != nil {
			if err := in.addWindow(tx, ino, &n, w); err != nil {
				return err
			}
		}
		n.Gid = nf.Gid // even in a set-group-ID directory
		n.Atime, n.Mtime = nf.Atime.UnixNano(), nf.Mtime.UnixNano()
		return saveInode(tx, ino, &n)
	}
	if w != nil {
		err = v.eng.CommitChunks(w.chunks, nil, fill)
	} else {
		err = v.commit(fill)
	}
	if err != nil {
		return n, 0, err
	}
	return n, ino, nil
}

// setXattrs gives ino exactly the chosen attributes, replacing a policy
// its directory passed on.
func (in *ingest) setXattrs(tx *content.Tx, ino uint64) error {
	b := tx.Batch()
	if err := deleteXattr(b, ino, PolicyXattr); err != nil {
		return err
	}
	for _, x := range in.xattrs {
		if err := setXattr(b, ino, x.Name, x.Value); err != nil {
			return err
		}
	}
	return nil
}

// commit stores window w and commits it to ino.
func (in *ingest) commit(ino uint64, w *window) (schema.Inode, error) {
	v := in.v
	l := v.locks.of(ino)
	locked := false
	defer func() {
		if locked {
			l.Unlock()
		}
	}()
	var n schema.Inode
	err := v.eng.CommitChunks(w.chunks, func() error { l.Lock(); locked = true; return nil }, func(tx *content.Tx) error {
		var err error
		if n, err = loadInode(tx.Batch(), ino); err != nil {
			return err
		}
		if err := in.addWindow(tx, ino, &n, w); err != nil {
			return err
		}
		if w.last {
			n.Atime, n.Mtime = in.nf.Atime.UnixNano(), in.nf.Mtime.UnixNano()
		}
		return saveInode(tx, ino, &n)
	})
	return n, err
}

// addWindow adds w's chunks to n (inode ino) inside tx. The size follows
// the committed data, and is the file's size with the last window.
func (in *ingest) addWindow(tx *content.Tx, ino uint64, n *schema.Inode, w *window) error {
	mapped, err := tx.WriteChunks(ino, w.chunks)
	if err != nil {
		return err
	}
	n.Mapped += mapped
	n.Size = max(n.Size, w.end)
	if w.last {
		n.Size = max(n.Size, in.nf.Size)
	}
	n.Ctime = now()
	return tx.Journal(ino, schema.OpData)
}

// removeCreated unlinks a file CreateFile could not finish, unless its
// name was taken by something else meanwhile.
func (v *FS) removeCreated(parent uint64, name string, ino uint64) error {
	tx, err := v.begin()
	if err != nil {
		return err
	}
	d, err := lookupEntry(tx.Batch(), parent, name)
	if err != nil || d.Ino != ino {
		tx.Abort()
		return nil
	}
	if err := v.removeIn(tx, parent, name, false); err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(false)
}
