package namespace

import (
	"sync"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Other hosts' changes (docs/SHARED.md, 9.3). On a volume that several
// hosts mount, the metadata store's listener calls OtherHostsCommitted
// after other hosts' commits (and about once a second): it reads the
// journal from the last version it applied to the volume's version now,
// skips this host's own commits, and tells the Invalidator (the FUSE
// frontend, which tells the kernel) of every inode and name that changed,
// so that the kernel's caches of them go. Every open does the same before
// it replies (close-to-open, catchUpForOpen).

// Invalidator drops what a frontend caches of inodes and names.
type Invalidator interface {
	InvalidateInode(ino uint64)
	InvalidateEntry(dir uint64, name string)
}

// otherHosts is what OtherHostsCommitted keeps between calls.
type otherHosts struct {
	mu      sync.Mutex
	applied uint64 // the journal is applied up to this version
	watch   bool   // WatchOtherHosts was called
	inv     Invalidator
}

// WatchOtherHosts starts following what other hosts change, from the
// volume's version now on.
func (v *FS) WatchOtherHosts() error {
	cur, err := readU64(v.fresh(), schema.KeyVersion, 0)
	if err != nil {
		return err
	}
	v.eng.TrackOwnCommits()
	v.others.mu.Lock()
	v.others.applied, v.others.watch = cur, true
	v.others.mu.Unlock()
	return nil
}

// SetInvalidator makes inv (nil: none) be told what other hosts change.
func (v *FS) SetInvalidator(inv Invalidator) {
	v.others.mu.Lock()
	v.others.inv = inv
	v.others.mu.Unlock()
}

// fresh is a reader of the committed state that bypasses the metadata
// store's cache, where it has one.
func (v *FS) fresh() meta.Reader {
	if f, ok := v.meta.(interface{ Fresh() meta.Reader }); ok {
		return f.Fresh()
	}
	return v.meta
}

// OtherHostsCommitted applies the journal up to the volume's version. It
// returns how many changes of other hosts it found.
func (v *FS) OtherHostsCommitted() (int, error) {
	// A lock another host held may have gone: waiting requests try again.
	v.fileLocks.wake()
	n, names, err := v.applyOtherHosts()
	v.invalidateNames(names)
	return n, err
}

// catchUpForOpen is close-to-open (docs/SHARED.md, 9.3): before an open on
// a volume several hosts mount replies, what other hosts committed is
// applied, so the open reads the inode afresh and the kernel, its cached
// attributes dropped, asks for them again (and drops the file's pages if
// the size or mtime moved). It costs one round trip when nothing changed.
// The kernel may hold the file's inode lock during the open (O_TRUNC), and
// dropping a name waits for its directory's lock, which an unlink of that
// same file holds while it waits for the file's: names go in the
// background, as the notification's delay allows anyway.
func (v *FS) catchUpForOpen() error {
	v.others.mu.Lock()
	watch := v.others.watch
	v.others.mu.Unlock()
	if !watch || v.opt.Sessions == nil { // one host: nothing to catch up
		return nil
	}
	_, names, err := v.applyOtherHosts()
	if len(names) > 0 {
		go v.invalidateNames(names)
	}
	return err
}

// changedName is a name another host changed: entry name in directory dir.
type changedName struct {
	dir  uint64
	name string
}

// applyOtherHosts reads the journal from the last version applied to the
// volume's version, drops the caches and the kernel's attributes of the
// inodes other hosts changed, and returns how many changes it found and
// the names to drop. Attributes are dropped before the mutex is released,
// so that a caller that finds nothing left to apply knows the kernel
// holds none of them; names are the caller's to drop, without the mutex
// (dropping one can wait for a directory's lock, see catchUpForOpen).
func (v *FS) applyOtherHosts() (int, []changedName, error) {
	v.others.mu.Lock()
	defer v.others.mu.Unlock()
	r := v.fresh()
	cur, err := readU64(r, schema.KeyVersion, 0)
	if err != nil || cur <= v.others.applied {
		return 0, nil, err
	}
	own := v.eng.TakeOwnCommits(cur)
	floor, err := readU64(r, schema.KeyJournalFloor, 0)
	if err != nil {
		return 0, nil, err
	}
	compacted, err := readU64(r, schema.KeyJournalCompacted, 0)
	if err != nil {
		return 0, nil, err
	}
	if max(floor, compacted) > v.others.applied+1 {
		// Pruned (or compacted: the entries of this host's own commits
		// may stand for others') past where this host was: which changed
		// is not known; the kernel's caches time out within a second.
		v.others.applied = cur
		v.dropCaches()
		return 1, nil, nil
	}
	it, err := r.NewIter(schema.JournalRange(v.others.applied+1, cur+1))
	if err != nil {
		return 0, nil, err
	}
	var inodes []uint64
	var names []changedName
	for ok := it.First(); ok; ok = it.Next() {
		ver, ino, name, err := schema.ParseJournalKey(it.Key())
		if err != nil || own[ver] {
			continue
		}
		if name != "" {
			names = append(names, changedName{ino, name})
		}
		inodes = append(inodes, ino)
	}
	if err := it.Close(); err != nil {
		return 0, nil, err
	}
	v.others.applied = cur
	if len(inodes) == 0 {
		return 0, nil, nil
	}
	v.dropCaches()
	inv := v.others.inv
	if inv == nil {
		return len(inodes), nil, nil
	}
	seen := map[uint64]bool{}
	for _, ino := range inodes {
		if !seen[ino] {
			seen[ino] = true
			inv.InvalidateInode(ino)
		}
	}
	return len(inodes), names, nil
}

// invalidateNames tells the Invalidator of names other hosts changed.
func (v *FS) invalidateNames(names []changedName) {
	v.others.mu.Lock()
	inv := v.others.inv
	v.others.mu.Unlock()
	if inv == nil {
		return
	}
	for _, e := range names {
		inv.InvalidateEntry(e.dir, e.name)
	}
}

// dropCaches drops the metadata store's cache (a notification may have
// been missed).
func (v *FS) dropCaches() {
	if d, ok := v.meta.(meta.CacheDropper); ok {
		d.DropCaches()
	}
}
