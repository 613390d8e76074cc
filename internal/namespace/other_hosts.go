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
// so that the kernel's caches of them go.

// Invalidator drops what a frontend caches of inodes and names.
type Invalidator interface {
	InvalidateInode(ino uint64)
	InvalidateEntry(dir uint64, name string)
}

// otherHosts is what OtherHostsCommitted keeps between calls.
type otherHosts struct {
	mu      sync.Mutex
	applied uint64 // the journal is applied up to this version
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
	v.others.applied = cur
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
	v.others.mu.Lock()
	defer v.others.mu.Unlock()
	r := v.fresh()
	cur, err := readU64(r, schema.KeyVersion, 0)
	if err != nil || cur <= v.others.applied {
		return 0, err
	}
	own := v.eng.TakeOwnCommits(cur)
	floor, err := readU64(r, schema.KeyJournalFloor, 0)
	if err != nil {
		return 0, err
	}
	if floor > v.others.applied+1 {
		// Pruned past where this host was: which changed is not known;
		// the kernel's caches time out within a second.
		v.others.applied = cur
		v.dropCaches()
		return 1, nil
	}
	it, err := r.NewIter(schema.JournalRange(v.others.applied+1, cur+1))
	if err != nil {
		return 0, err
	}
	type entry struct {
		dir  uint64
		name string
	}
	var inodes []uint64
	var names []entry
	for ok := it.First(); ok; ok = it.Next() {
		ver, ino, name, err := schema.ParseJournalKey(it.Key())
		if err != nil || own[ver] {
			continue
		}
		if name != "" {
			names = append(names, entry{ino, name})
		}
		inodes = append(inodes, ino)
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	v.others.applied = cur
	if len(inodes) == 0 {
		return 0, nil
	}
	v.dropCaches()
	if inv := v.others.inv; inv != nil {
		for _, e := range names {
			inv.InvalidateEntry(e.dir, e.name)
		}
		seen := map[uint64]bool{}
		for _, ino := range inodes {
			if !seen[ino] {
				seen[ino] = true
				inv.InvalidateInode(ino)
			}
		}
	}
	return len(inodes), nil
}

// dropCaches drops the metadata store's cache (a notification may have
// been missed).
func (v *FS) dropCaches() {
	if d, ok := v.meta.(meta.CacheDropper); ok {
		d.DropCaches()
	}
}
