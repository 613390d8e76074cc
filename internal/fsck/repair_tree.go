package fsck

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// fixKeys applies the planned record deletions and rewrites, each in its
// own transaction: xattrs and orphan markers of missing inodes,
// back-references, entry types, records that do not decode.
func (r *repairer) fixKeys() error {
	for _, f := range r.c.fix.keys {
		err := r.tx(func(tx *content.Tx) error {
			if f.value == nil {
				return tx.Batch().Delete(f.key)
			}
			return tx.Batch().Set(f.key, f.value)
		}, f.note)
		if err != nil {
			return err
		}
	}
	return nil
}

// fixEntries deletes the planned directory entries with their
// back-references and takes them off the link counts.
func (r *repairer) fixEntries() error {
	for _, e := range r.c.fix.entries {
		err := r.tx(func(tx *content.Tx) error {
			return r.unlink(tx, e.dir, e.name, e.ino)
		}, e.note)
		if err != nil {
			return err
		}
	}
	return nil
}

// unlink deletes entry name of dir (naming ino, or noIno if unknown) and
// its back-reference, and counts the link no more.
func (r *repairer) unlink(tx *content.Tx, dir uint64, name string, ino uint64) error {
	b := tx.Batch()
	if err := b.Delete(schema.DirentKey(dir, name)); err != nil {
		return err
	}
	if ino != noIno {
		if err := b.Delete(schema.ParentKey(ino, dir, name)); err != nil {
			return err
		}
	}
	r.c.refs[ino] = slices.DeleteFunc(r.c.refs[ino], func(p parentRef) bool { return p.parent == dir && p.name == name })
	// The check counted the entry if it names an existing inode.
	if n := r.c.inodes[ino]; n != nil {
		n.links--
		if d := r.c.inodes[dir]; d != nil && isDirInode(n) {
			d.subdirs--
		}
	}
	return tx.Journal(dir, schema.OpDirents)
}

func isDirInode(n *inode) bool { return !n.bad && n.typ() == syscall.S_IFDIR }

// reconnect links every inode that is not reachable from the root (and is
// no orphan) into /lost+found as "#INO". Inodes no entry names go first;
// then directories of unreachable cycles, whose other entries are
// deleted so that they keep one parent; reconnecting a directory makes
// its subtree reachable. Inodes whose record does not decode stay out.
func (r *repairer) reconnect() error {
	c := r.c
	var lost []uint64
	for ino, n := range c.inodes {
		if ino != vfs.RootIno && !n.reached && !n.bad && (!n.orphan || n.badOrphan) && !c.cloneHeld(ino, n) {
			lost = append(lost, ino)
		}
	}
	if root := c.inodes[vfs.RootIno]; len(lost) == 0 || root == nil || !isDirInode(root) {
		return nil
	}
	slices.Sort(lost)
	lf, err := r.lostFound()
	if err != nil || lf == noIno {
		return err
	}
	for pass := 0; pass < 3; pass++ {
		for _, ino := range lost {
			n := c.inodes[ino]
			if n.reached || (pass == 0 && n.links > 0) || (pass == 1 && !isDirInode(n)) {
				continue
			}
			if err := r.relink(lf, ino, n, pass == 1); err != nil {
				return err
			}
			c.walkFrom(ino)
		}
	}
	return nil
}

// relink names ino "#INO" in directory lf; with only, its other entries go.
func (r *repairer) relink(lf, ino uint64, n *inode, only bool) error {
	c := r.c
	name := fmt.Sprintf("#%d", ino)
	from := c.pathOf(ino)
	return r.tx(func(tx *content.Tx) error {
		if only {
			for _, ref := range slices.Clone(c.refs[ino]) {
				if ref.matched {
					if err := r.unlink(tx, ref.parent, ref.name, ino); err != nil {
						return err
					}
				}
			}
		}
		b := tx.Batch()
		d := schema.Dirent{Ino: ino, Type: n.typ()}
		if err := b.Set(schema.DirentKey(lf, name), d.Encode()); err != nil {
			return err
		}
		if err := b.Set(schema.ParentKey(ino, lf, name), nil); err != nil {
			return err
		}
		n.links++
		c.children[lf] = append(c.children[lf], ino)
		if isDirInode(n) {
			if err := addSubdir(tx, lf, c.inodes[lf]); err != nil {
				return err
			}
		}
		return tx.Journal(lf, schema.OpDirents)
	}, note{kind: KindUnreachable, ino: ino, action: fmt.Sprintf("reconnected %s as %s/%s", from, c.pathOf(lf), name)})
}

// lostFound returns the directory /lost+found, creating it. If that name
// is taken by something else, /lost+found.1 and so on are tried.
func (r *repairer) lostFound() (uint64, error) {
	c := r.c
	for i := 0; i < 100; i++ {
		name := "lost+found"
		if i > 0 {
			name = fmt.Sprintf("lost+found.%d", i)
		}
		raw, err := r.s.Meta.Get(schema.DirentKey(vfs.RootIno, name))
		if errors.Is(err, meta.ErrNotFound) {
			return r.mkdirRoot(name)
		}
		if err != nil {
			return noIno, err
		}
		if d, err := schema.DecodeDirent(raw); err == nil {
			if n := c.inodes[d.Ino]; n != nil && n.reached && isDirInode(n) {
				return d.Ino, nil
			}
		}
	}
	return noIno, nil
}

// mkdirRoot creates directory name in the root, for reconnected inodes:
// mode 0700, owned like the root.
func (r *repairer) mkdirRoot(name string) (uint64, error) {
	c := r.c
	root := c.inodes[vfs.RootIno]
	ino := c.nextIno
	rec := schema.Inode{Mode: syscall.S_IFDIR | 0o700, Uid: root.rec.Uid, Gid: root.rec.Gid, Nlink: 2}
	err := r.tx(func(tx *content.Tx) error {
		b := tx.Batch()
		if err := b.Set(schema.KeyNextIno, schema.U64(ino+1)); err != nil {
			return err
		}
		t := now()
		rec.Atime, rec.Mtime, rec.Ctime, rec.Btime, rec.Version = t, t, t, t, tx.Version()
		if err := b.Set(schema.InodeKey(ino), rec.Encode()); err != nil {
			return err
		}
		tx.AddInodes(1)
		if err := tx.Journal(ino, schema.OpCreate); err != nil {
			return err
		}
		d := schema.Dirent{Ino: ino, Type: syscall.S_IFDIR}
		if err := b.Set(schema.DirentKey(vfs.RootIno, name), d.Encode()); err != nil {
			return err
		}
		if err := b.Set(schema.ParentKey(ino, vfs.RootIno, name), nil); err != nil {
			return err
		}
		if err := addSubdir(tx, vfs.RootIno, root); err != nil {
			return err
		}
		return tx.Journal(vfs.RootIno, schema.OpDirents)
	}, note{kind: KindUnreachable, action: "created /" + name + " for unreachable inodes"})
	if err != nil {
		return noIno, err
	}
	c.nextIno, c.maxIno = ino+1, ino
	c.inodes[ino] = &inode{rec: rec, links: 1, reached: true}
	c.refs[ino] = []parentRef{{parent: vfs.RootIno, name: name, matched: true}}
	c.children[vfs.RootIno] = append(c.children[vfs.RootIno], ino)
	return ino, nil
}

// addSubdir counts a new subdirectory of directory ino. Its link count
// goes up with it if it was right; if it was wrong, fixInodes corrects it
// later and says so.
func addSubdir(tx *content.Tx, ino uint64, n *inode) error {
	before := n.wantNlink()
	n.subdirs++
	raw, err := tx.Batch().Get(schema.InodeKey(ino))
	if err != nil {
		return err
	}
	if rec, err := schema.DecodeInode(raw); err != nil || rec.Nlink != before {
		return err
	}
	return setInode(tx, ino, func(rec *schema.Inode) { rec.Nlink = n.wantNlink() })
}

// fixInodes sets each inode's link count, mapped bytes and size to what
// its entries and extents give it, after the repairs above.
func (r *repairer) fixInodes() error {
	c := r.c
	for _, ino := range slices.Sorted(maps.Keys(c.inodes)) {
		n := c.inodes[ino]
		if n.bad {
			continue
		}
		raw, err := r.s.Meta.Get(schema.InodeKey(ino))
		if err != nil {
			return err
		}
		cur, err := schema.DecodeInode(raw)
		if err != nil {
			return err
		}
		var notes []note
		nlink, size := n.wantNlink(), cur.Size
		if cur.Nlink != nlink {
			notes = append(notes, note{KindNlink, ino, "", fmt.Sprintf("nlink %d -> %d", cur.Nlink, nlink)})
		}
		if cur.Mapped != n.mapped {
			notes = append(notes, note{KindMapped, ino, "", fmt.Sprintf("mapped bytes %d -> %d", cur.Mapped, n.mapped)})
		}
		if end := c.fix.sizes[ino]; end > size && n.typ() == syscall.S_IFREG {
			notes = append(notes, note{KindExtentPastEOF, ino, "", fmt.Sprintf("size %d -> %d, to cover its extents", size, end)})
			size = end
		}
		if len(notes) == 0 {
			continue
		}
		err = r.tx(func(tx *content.Tx) error {
			return setInode(tx, ino, func(rec *schema.Inode) { rec.Nlink, rec.Mapped, rec.Size = nlink, n.mapped, size })
		}, notes...)
		if err != nil {
			return err
		}
	}
	return nil
}

// setInode rewrites ino's record with change applied.
func setInode(tx *content.Tx, ino uint64, change func(*schema.Inode)) error {
	raw, err := tx.Batch().Get(schema.InodeKey(ino))
	if err != nil {
		return err
	}
	rec, err := schema.DecodeInode(raw)
	if err != nil {
		return err
	}
	change(&rec)
	rec.Version = tx.Version()
	if err := tx.Batch().Set(schema.InodeKey(ino), rec.Encode()); err != nil {
		return err
	}
	return tx.Journal(ino, schema.OpAttr)
}

func now() int64 { return time.Now().UnixNano() }
