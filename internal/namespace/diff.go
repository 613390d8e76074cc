package namespace

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/exclude"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/schema"
)

// DiffOptions shape a diff.
type DiffOptions struct {
	Patch bool // unified diffs of text files
	Full  bool // walk both trees even if they share an origin
}

// Diff compares the trees at paths a and b ("/"-rooted in the volume).
// When one is a clone of the other, or both come from one origin, only
// the entries the change journal names since the oldest clone between
// them are compared; else both trees are walked. Chunk identities are
// compared, never data (except for --patch).
func (v *FS) Diff(ctx context.Context, a, b string, opt DiffOptions) (ops.DiffResult, error) {
	// Compare what has been written, also what open files still buffer.
	if err := v.flushAll(true); err != nil {
		return ops.DiffResult{}, err
	}
	defer v.pinReads.begin()() // the walk reads stubs through their pins
	ra, err := v.lookupPath(a)
	if err != nil {
		return ops.DiffResult{}, pathErr(a, err)
	}
	rb, err := v.lookupPath(b)
	if err != nil {
		return ops.DiffResult{}, pathErr(b, err)
	}
	// One snapshot for the whole diff: a walk of the live state would
	// meet entries whose inodes went since it listed them. (Stubs are read
	// through their pins, which do not change.)
	snap := v.meta.Snapshot()
	defer snap.Close()
	if hook := diffSnapshotHook.Load(); hook != nil {
		(*hook)()
	}
	na, err := v.rootVnode(snap, ra)
	if err != nil {
		return ops.DiffResult{}, pathErr(a, err)
	}
	nb, err := v.rootVnode(snap, rb)
	if err != nil {
		return ops.DiffResult{}, pathErr(b, err)
	}
	d := &differ{ctx: ctx, v: v, r: snap, opt: opt, done: map[string]bool{}, reported: map[string]bool{}}
	roots, since, related := v.commonOrigin(ra, rb)
	for _, ino := range []uint64{ra, rb} {
		xs, inside, err := v.ignoreOf(ino)
		if err != nil {
			return ops.DiffResult{}, err
		}
		d.ignore = append(d.ignore, xs...)
		related = related && !inside
	}
	// A clone with exclusions between the two trees and their common
	// origin left things out that no journal entry names.
	for _, ino := range roots {
		if ino == ra || ino == rb || ino == roots[len(roots)-1] {
			continue
		}
		if xs, inside, err := v.ignoreOf(ino); err != nil {
			return ops.DiffResult{}, err
		} else if len(xs) > 0 || inside {
			related = false
		}
	}
	// The pruner must not raise the floor between this check and the
	// journal reads.
	v.journalMu.RLock()
	defer v.journalMu.RUnlock()
	if related && !opt.Full {
		floor, err := v.JournalFloor()
		if err != nil {
			return ops.DiffResult{}, err
		}
		related = since+1 >= floor // else the entries it needs are pruned
	}
	if !related || opt.Full {
		d.res.Method = "walk"
		err = d.compare("", &na, &nb, true)
	} else {
		d.res.Method, d.res.Since = "journal", since
		err = d.fromJournal(na, nb, roots, since)
	}
	slices.SortFunc(d.res.Entries, func(x, y ops.DiffEntry) int {
		switch {
		case x.Path < y.Path:
			return -1
		case x.Path > y.Path:
			return 1
		}
		return 0
	})
	return d.res, err
}

// diffSnapshotHook, when tests set it, runs once a diff has taken its
// snapshot.
var diffSnapshotHook atomic.Pointer[func()]

type differ struct {
	ctx      context.Context
	v        *FS
	r        meta.Reader // the snapshot both trees and the journal are read from
	opt      DiffOptions
	res      ops.DiffResult
	done     map[string]bool // paths compared deeply
	reported map[string]bool
	ignore   exclude.Set // the compared clones' exclusions
}

// compare compares the entries at rel in both trees (nil: missing);
// deep compares whole subtrees.
func (d *differ) compare(rel string, a, b *vnode, deep bool) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	if d.ignored(rel, a, b) {
		return nil
	}
	d.res.Compared++
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return d.all("A", rel, b)
	case b == nil:
		return d.all("D", rel, a)
	}
	ta, tb := a.n.Mode&syscall.S_IFMT, b.n.Mode&syscall.S_IFMT
	if ta != tb {
		d.add(ops.DiffEntry{Status: "T", Path: rel, Type: typeName(tb), OldSize: a.n.Size, NewSize: b.n.Size})
		if ta == syscall.S_IFDIR {
			return d.below("D", rel, a)
		}
		if tb == syscall.S_IFDIR {
			return d.below("A", rel, b)
		}
		return nil
	}
	what, err := d.changes(a, b)
	if err != nil {
		return err
	}
	if len(what) > 0 {
		e := ops.DiffEntry{Status: "M", Path: rel, Type: typeName(tb), What: what, OldSize: a.n.Size, NewSize: b.n.Size}
		if d.opt.Patch && ta == syscall.S_IFREG && slices.Contains(what, "content") {
			if e.Patch, err = patchOf(rel, a, b); err != nil {
				return err
			}
		}
		d.add(e)
	}
	if !deep || ta != syscall.S_IFDIR || d.done[rel] {
		return nil
	}
	d.done[rel] = true
	an, ac, err := a.children()
	if err != nil {
		return err
	}
	bn, bc, err := b.children()
	if err != nil {
		return err
	}
	names := append(an, bn...)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {

		var x, y *vnode
		if c, ok := ac[name]; ok {
			x = &c
		}
		if c, ok := bc[name]; ok {
			y = &c
		}
		if err := d.compare(joinRel(rel, name), x, y, true); err != nil {
			return err
		}
	}
	return nil
}

func (d *differ) add(e ops.DiffEntry) {
	if e.Path == "" {
		e.Path = "."
	}
	if d.reported[e.Path] {
		return // reached again from another changed entry
	}
	d.reported[e.Path] = true
	d.res.Entries = append(d.res.Entries, e)
}

// all reports n and everything below it with status.
func (d *differ) all(status, rel string, n *vnode) error {
	if d.ignored(rel, n, nil) {
		return nil
	}
	d.add(ops.DiffEntry{Status: status, Path: rel, Type: typeName(n.n.Mode), OldSize: sizeIf(status == "D", n), NewSize: sizeIf(status == "A", n)})
	return d.below(status, rel, n)
}

func (d *differ) below(status, rel string, n *vnode) error {
	if n.n.Mode&syscall.S_IFMT != syscall.S_IFDIR || d.done[rel+"\x00"+status] {
		return nil
	}
	d.done[rel+"\x00"+status] = true
	names, kids, err := n.children()
	if err != nil {
		return err
	}
	for _, name := range names {
		c := kids[name]
		d.res.Compared++
		if err := d.all(status, joinRel(rel, name), &c); err != nil {
			return err
		}
	}
	return nil
}

func sizeIf(ok bool, n *vnode) int64 {
	if ok {
		return n.n.Size
	}
	return 0
}

// changes lists how two entries of one type differ. Directory times
// follow their entries, so they are not compared; access and change
// times are not either.
func (d *differ) changes(a, b *vnode) ([]string, error) {
	var what []string
	x, y := &a.n, &b.n
	dir := x.Mode&syscall.S_IFMT == syscall.S_IFDIR
	if x.Mode != y.Mode {
		what = append(what, "mode")
	}
	if x.Uid != y.Uid || x.Gid != y.Gid {
		what = append(what, "owner")
	}
	if !dir && x.Mtime != y.Mtime {
		what = append(what, "times")
	}
	if x.Target != y.Target {
		what = append(what, "target")
	}
	if x.Rdev != y.Rdev {
		what = append(what, "rdev")
	}
	if x.Mode&syscall.S_IFMT == syscall.S_IFREG {
		same, err := sameContent(a, b)
		if err != nil {
			return nil, err
		}
		if !same {
			what = append(what, "content")
		}
	}
	xa, err := a.xattrs()
	if err != nil {
		return nil, err
	}
	xb, err := b.xattrs()
	if err != nil {
		return nil, err
	}
	if !maps.Equal(xa, xb) {
		what = append(what, "xattrs")
	}
	return what, nil
}

// sameContent compares sizes and extent maps: the chunks files share,
// never their bytes. Equal content cut differently counts as different.
func sameContent(a, b *vnode) (bool, error) {
	if a.n.Size != b.n.Size {
		return false, nil
	}
	pa, err := a.extents()
	if err != nil {
		return false, err
	}
	pb, err := b.extents()
	if err != nil {
		return false, err
	}
	return slices.EqualFunc(pa, pb, func(x, y content.Piece) bool { return x.Off == y.Off && x.SameChunk(y.Extent) }), nil
}

func pathErr(p string, err error) error {
	var s *stubError
	if errors.As(err, &s) {
		return err
	}
	return &pathError{p, err}
}

type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// commonOrigin finds how two trees are related through clone origins:
// the roots whose changes matter (the common origin last) and the version
// since which they do.
func (v *FS) commonOrigin(a, b uint64) ([]uint64, uint64, bool) {
	ca, cb := v.originChain(a), v.originChain(b)
	for i, x := range ca {
		for j, y := range cb {
			if x.ino != y.ino {
				continue
			}
			// The pins that matter are those of the clone steps from
			// each tree up to the common origin.
			since := ^uint64(0)
			var roots []uint64
			for _, s := range ca[:i] {
				since = min(since, s.pin)
			}
			for _, s := range cb[:j] {
				since = min(since, s.pin)
			}
			for _, s := range append(slices.Clone(ca[:i]), cb[:j+1]...) {
				roots = append(roots, s.ino) // the common origin last
			}
			return roots, since, since != ^uint64(0)
		}
	}
	return nil, 0, false
}

type chainStep struct{ ino, pin uint64 }

// originChain lists ino and the origins it was cloned from, each with
// the pin it was cloned at (the first has none: ^0). A step whose inode
// is gone ends the chain: its changes could not be found by path.
func (v *FS) originChain(ino uint64) []chainStep {
	chain := []chainStep{{ino, ^uint64(0)}}
	for depth := 0; depth < 64; depth++ {
		n, err := loadInode(v.meta, ino)
		if err != nil || n.Origin == (schema.Origin{}) {
			break
		}
		if _, err := loadInode(v.meta, n.Origin.Base); err != nil {
			break
		}
		chain[len(chain)-1].pin = n.Origin.Pin
		ino = n.Origin.Base
		chain = append(chain, chainStep{ino, ^uint64(0)})
	}
	return chain
}

// ignored reports whether rel matches the exclusion patterns of a tree
// being compared that is a clone made with exclusions: what a clone left
// out is not a difference (as .gitignore'd files are not).
func (d *differ) ignored(rel string, a, b *vnode) bool {
	if rel == "" || len(d.ignore) == 0 {
		return false
	}
	dir := (a != nil && isDir(a.n.Mode)) || (b != nil && isDir(b.n.Mode))
	return excludedPath(d.ignore, rel, dir)
}

// ignoreOf returns the exclusions of the clone whose root is ino, and
// whether ino lies inside a clone made with exclusions without being its
// root (then what it left out cannot be told from the journal).
func (v *FS) ignoreOf(ino uint64) (exclude.Set, bool, error) {
	n, err := loadInode(v.meta, ino)
	if err != nil || n.Clone == 0 {
		return nil, false, err
	}
	xs, err := v.cloneExcludes(n.Clone)
	if err != nil || len(xs) == 0 {
		return nil, false, err
	}
	if n.Clone != ino {
		return nil, true, nil
	}
	return xs, false, nil
}
