package namespace

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/exclude"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
	"github.com/doppelfs/doppel/internal/vfs"
)

// CloneOptions shape a clone.
type CloneOptions struct {
	// Excludes are gitignore-style patterns relative to the source; see
	// exclude.go.
	Excludes []string
	// ReadOnly makes a snapshot: every change inside it fails with EROFS.
	ReadOnly bool
	// Lazy clones are never materialized in the background: they keep
	// reading through their pin (right for short-lived sandboxes).
	Lazy bool
}

// Clone makes name in directory parent a copy of src as it is now, in
// constant time: it pins the current version and creates a stub whose
// contents are src's as of the pin. Buffered writes are committed first,
// so everything written before the call is in the clone.
func (v *FS) Clone(src, parent uint64, name string, o CloneOptions) (vfs.Attr, error) {
	if err := checkName(name); err != nil {
		return vfs.Attr{}, err
	}
	if err := exclude.Check(o.Excludes); err != nil {
		return vfs.Attr{}, fmt.Errorf("%w: %v", syscall.EINVAL, err)
	}
	if err := v.opt.Headroom.ForMeta(); err != nil {
		return vfs.Attr{}, err
	}
	if err := v.flushAll(true); err != nil {
		return vfs.Attr{}, err
	}
	var ino uint64
	var n schema.Inode
	err := v.materializing(func() error {
		tx, err := v.begin()
		if err != nil {
			return err
		}
		if err := v.cloneIn(tx, src, parent, name, o, &ino, &n); err != nil {
			tx.Abort() // the pin it added goes with it (versions.AddPin)
			return err
		}
		if err := tx.Commit(false); err != nil {
			return err
		}
		if !o.Lazy {
			v.wakeMaterializer()
		}
		return nil
	})
	if err != nil {
		return vfs.Attr{}, err
	}
	return toAttr(ino, &n), nil
}

// cloneIn writes the pin, the clone's root stub, its record and its
// entry; if tx aborts, the pin goes with it.
func (v *FS) cloneIn(tx *content.Tx, src, parent uint64, name string, o CloneOptions, ino *uint64, n *schema.Inode) error {
	b := tx.Batch()
	sn, err := loadInode(b, src)
	if err != nil {
		return err
	}
	dir, err := loadInode(b, parent)
	if err != nil {
		return err
	}
	if !isDir(dir.Mode) {
		return syscall.ENOTDIR
	}
	if err := v.checkWritable(&dir); err != nil {
		return err
	}
	if _, err := entryIn(b, parent, &dir, name); err == nil {
		return syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	if isDir(sn.Mode) {
		if inside, err := isAncestor(b, src, parent); err != nil {
			return err
		} else if inside {
			return fmt.Errorf("%w: the clone would be inside its own source", syscall.EINVAL)
		}
	}
	if !v.hasClones.Swap(true) {
		tx.SetTrees(v.trees.forTx(tx)) // this transaction's entries too
	}
	pin := tx.Version() - 1 // the state every committed transaction left
	raw, err := b.Get(schema.KeyNextIno)
	if err != nil {
		return err
	}
	nextIno, err := schema.ParseU64(raw)
	if err != nil {
		return err
	}
	deps, err := v.heldPins(b)
	if err != nil {
		return err
	}
	xs, err := exclude.Parse(o.Excludes)
	if err != nil {
		return err
	}
	v.pinExcludes.Store(pin, xs.Matcher()) // before it retains anything
	p := schema.Pin{Root: src, NextIno: nextIno, Held: true, Deps: deps}
	if err := v.ret.AddPin(tx, pin, p); err != nil {
		return err
	}
	if *ino, err = allocIno(tx); err != nil {
		return err
	}
	*n = sn
	n.Clone, n.Origin, n.Stub, n.Excl = *ino, schema.Origin{Pin: pin, Base: src}, true, nil
	if len(o.Excludes) > 0 {
		n.Excl = []schema.ExclCtx{{Clone: *ino}}
	}
	if !isDir(sn.Mode) {
		n.Nlink = 1
	}
	if err := saveInode(tx, *ino, n); err != nil {
		return err
	}
	// The directory map starts at the root, with the clone whose tree
	// holds src (inodes made in a clone do not say); a clone without
	// them was made before there was a map (see linkCounter).
	below, err := enclosingClone(b, src)
	if err != nil {
		return err
	}
	if err := setMap(b, dirMap, *ino, pin, src, *ino); err != nil {
		return err
	}
	if err := setMap(b, dirMap, *ino, 0, 0, below); err != nil {
		return err
	}
	tx.AddInodes(1)
	originPath, _ := pathOf(b, src)
	rec := schema.Clone{Origin: src, OriginPath: originPath, Pin: pin, Created: now(),
		Excludes: o.Excludes, ReadOnly: o.ReadOnly, Lazy: o.Lazy, Stubs: 1}
	if err := saveClone(b, *ino, rec); err != nil {
		return err
	}
	if err := tx.Journal(*ino, schema.OpCreate); err != nil {
		return err
	}
	return addEntry(tx, &dir, parent, name, *ino, n.Mode)
}

// heldPins lists the pins whose clones still read through them, and
// counts the new pin among their dependents: a clone made now may
// contain their stubs, whose past it must keep readable.
func (v *FS) heldPins(b meta.Batch) ([]uint64, error) {
	var deps []uint64
	for _, p := range v.ret.Pins() {
		if !p.Held {
			continue
		}
		if err := versions.AddDependent(b, p.Version); err != nil {
			return nil, err
		}
		deps = append(deps, p.Version)
	}
	return deps, nil
}
