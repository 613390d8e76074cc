package namespace

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
)

// A stub is an inode of a clone whose entries, extents and xattrs are
// still its origin's as of the clone's pin (schema.Inode.Stub). Its own
// attributes are real. Reads go to the origin; anything that would change
// or list its entries, extents or xattrs materializes it first: a
// directory gets its entries (as new stubs), a file its extents (chunk
// references, never data).

// stubError says an operation met a stub it needs materialized. The
// operation aborts its transaction and returns it; materializing runs it
// again after materializing the stub.
type stubError struct{ ino uint64 }

func (e *stubError) Error() string {
	return fmt.Sprintf("inode %d of a clone is not materialized yet", e.ino)
}

// needOwn returns a stubError for a stub.
func needOwn(ino uint64, n *schema.Inode) error {
	if n.Stub {
		return &stubError{ino}
	}
	return nil
}

// needOwnNames asks for a hard-linked stub file to be materialized before
// one of its names goes. A stub's names in its clone are its origin's
// names (minus exclusions) for as long as it is a stub, which is what lets
// a clone of it count them from the origin (linksInView); adding or
// removing one makes it a file of its own first.
func needOwnNames(tx *content.Tx, ino uint64) error {
	n, err := loadInode(tx.Batch(), ino)
	if err != nil || isDir(n.Mode) || n.Nlink < 2 {
		return err
	}
	return needOwn(ino, &n)
}

// materializing runs op until it no longer meets a stub.
func (v *FS) materializing(op func() error) error {
	for {
		err := op()
		var s *stubError
		if !errors.As(err, &s) {
			return err
		}
		if err := v.materialize(s.ino); err != nil {
			return err
		}
	}
}

// source is where a stub's contents are: inode ino as r (a reader as of a
// pin) shows it, with the exclusions that apply below it.
type source struct {
	r    meta.Reader
	pin  uint64
	ino  uint64
	n    schema.Inode
	excl []schema.ExclCtx
}

// sourceOf follows a stub's origin, and the origin's origin while that
// was a stub too, to the inode that holds the contents.
func (v *FS) sourceOf(n *schema.Inode) (source, error) {
	s := source{excl: n.Excl}
	o := n.Origin
	for depth := 0; ; depth++ {
		if depth > 1<<12 {
			return s, errors.New("namespace: clone origin chain too long")
		}
		s.r, s.pin, s.ino = versions.AsOf(v.meta, o.Pin), o.Pin, o.Base
		var err error
		if s.n, err = loadInode(s.r, o.Base); err != nil {
			return s, fmt.Errorf("origin %d of a clone as of version %d: %w", o.Base, o.Pin, err)
		}
		if !s.n.Stub {
			return s, nil
		}
		s.excl = append(s.excl, s.n.Excl...)
		o = s.n.Origin
	}
}

// materialize gives a stub its own records, in its own transaction.
func (v *FS) materialize(ino uint64) error {
	if n, err := loadInode(v.meta, ino); err != nil || !n.Stub {
		return err
	}
	return v.materializeMany([]uint64{ino}, false)
}

// materializeMany gives the stubs among inos their own records in one
// transaction. skipGone passes over inodes deleted meanwhile; otherwise
// that is an error (ENOENT).
func (v *FS) materializeMany(inos []uint64, skipGone bool) error {
	tx, err := v.begin()
	if err != nil {
		return err
	}
	var done []uint64
	for _, ino := range inos {
		n, err := loadInode(tx.Batch(), ino)
		if skipGone && errors.Is(err, syscall.ENOENT) {
			continue
		}
		if err == nil && !n.Stub {
			continue // materialized meanwhile
		}
		if err == nil {
			err = v.materializeIn(tx, ino, &n)
		}
		if err != nil {
			tx.Abort()
			return err
		}
		done = append(done, ino)
	}
	if len(done) == 0 {
		tx.Abort()
		return nil
	}
	if err := tx.Commit(false); err != nil {
		return err
	}
	v.filesMu.Lock()
	for _, ino := range done {
		if f := v.files[ino]; f != nil {
			f.stub.Store(false)
		}
	}
	v.filesMu.Unlock()
	return nil
}

// materializeIn materializes stub ino (record n) inside tx.
func (v *FS) materializeIn(tx *content.Tx, ino uint64, n *schema.Inode) error {
	src, err := v.sourceOf(n)
	if err != nil {
		return err
	}
	created := 0
	if isDir(n.Mode) {
		subdirs, stubs, err := v.copyEntries(tx, ino, n, src)
		if err != nil {
			return err
		}
		n.Nlink = 2 + uint32(subdirs)
		created = stubs
	} else if _, err := tx.CopyAll(src.r, src.ino, ino); err != nil {
		return err
	}
	if err := copyXattrs(tx, ino, src); err != nil {
		return err
	}
	n.Stub, n.Excl = false, nil
	if err := saveInode(tx, ino, n); err != nil {
		return err
	}
	return countStubs(tx, n.Clone, int64(created)-1, 1)
}

// copyXattrs gives ino its source's extended attributes.
func copyXattrs(tx *content.Tx, ino uint64, src source) error {
	return eachXattr(src.r, src.ino, func(name string, val []byte) error {
		return setXattr(tx.Batch(), ino, name, val)
	})
}

// scan calls fn for every record in [lower, upper) of r; fn's arguments
// are copies.
func scan(r meta.Reader, lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(lower, upper)
	if err != nil {
		return err
	}
	type kv struct{ k, v []byte }
	var all []kv
	for it.First(); it.Valid(); it.Next() {
		all = append(all, kv{append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)})
	}
	// A failed move ends the loop as the range's end does: fn must not
	// see a partial range as the whole.
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, e := range all {
		if err := fn(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// countStubs adjusts the materialization counters of clone c.
func countStubs(tx *content.Tx, c uint64, stubs, done int64) error {
	if c == 0 {
		return nil
	}
	b := tx.Batch()
	rec, err := loadClone(b, c)
	if errors.Is(err, meta.ErrNotFound) {
		return nil // the clone's record is gone: it was removed
	}
	if err != nil {
		return err
	}
	rec.Stubs = uint64(max(0, int64(rec.Stubs)+stubs))
	rec.Done = uint64(int64(rec.Done) + done)
	return saveClone(b, c, rec)
}

// checkWritable refuses changes to the inodes of a read-only clone.
func (v *FS) checkWritable(n *schema.Inode) error {
	if n.Clone == 0 {
		return nil
	}
	ro, err := v.readOnlyClone(n.Clone)
	if err != nil {
		return err
	}
	if ro {
		return syscall.EROFS
	}
	return nil
}

// readOnlyClone reports whether clone c is a snapshot; the answer never
// changes, so it is cached.
func (v *FS) readOnlyClone(c uint64) (bool, error) {
	if ro, ok := v.readOnly.Load(c); ok {
		return ro.(bool), nil
	}
	rec, err := loadClone(v.meta, c)
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	v.readOnly.Store(c, rec.ReadOnly)
	return rec.ReadOnly, nil
}

// dataSource is where ino's extents are read from: its own records, or
// for a stub its origin's as of the pin.
func (v *FS) dataSource(ino uint64, n *schema.Inode) (meta.Reader, uint64, error) {
	if !n.Stub {
		return v.meta, ino, nil
	}
	src, err := v.sourceOf(n)
	return src.r, src.ino, err
}

// xattrSource is dataSource for extended attributes.
func (v *FS) xattrSource(ino uint64) (meta.Reader, uint64, error) {
	n, err := loadInode(v.meta, ino)
	if err != nil {
		return nil, 0, err
	}
	return v.dataSource(ino, &n)
}

// readStub reads a stub file's content from its origin. A stub that was
// materialized meanwhile holds the same extents, so either is right.
func (v *FS) readStub(ino uint64, off int64, buf []byte) error {
	defer v.pinReads.begin()()
	n, err := loadInode(v.meta, ino)
	if err != nil {
		return err
	}
	r, src, err := v.dataSource(ino, &n)
	if err != nil {
		return err
	}
	return v.eng.ReadAtFrom(r, src, off, buf)
}
