package fsck

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// inode is what the check learns about one inode.
type inode struct {
	rec     schema.Inode
	bad     bool // the record does not decode
	orphan  bool // has an orphan marker
	links   int  // directory entries naming it
	subdirs int  // entries in it naming directories
	mapped  int64
	extEnd  int64 // end of the furthest extent
	reached bool  // reachable from the root
	// badOrphan: the orphan marker is wrong and a repair deletes it.
	badOrphan bool
}

func (n *inode) typ() uint32 { return n.rec.Mode & syscall.S_IFMT }

// parentRef is one back-reference: the inode is entry name of parent.
type parentRef struct {
	parent  uint64
	name    string
	matched bool // the entry exists and names the inode
}

func (c *checker) scanInodes() error {
	return c.scan([]byte{'i'}, []byte{'i' + 1}, func(k, v []byte) {
		if len(k) != 9 {
			c.report(KindDecode, noIno, "inode key %s: malformed", shortHex(k))
			return
		}
		ino := be64(k[1:])
		n := &inode{}
		c.inodes[ino] = n
		c.rep.Inodes++
		c.maxIno = max(c.maxIno, ino)
		var err error
		if n.rec, err = schema.DecodeInode(v); err != nil {
			n.bad = true
			c.report(KindDecode, ino, "inode %d: %v", ino, err)
		}
		c.maxVersion = max(c.maxVersion, n.rec.Version)
		switch n.typ() {
		case syscall.S_IFDIR:
			c.rep.Directories++
		case syscall.S_IFREG:
			c.rep.Files++
		}
		if ino == 0 || (c.nextIno != 0 && ino >= c.nextIno) {
			c.report(KindInoBeyondNext, ino, "inode %d, next_ino is %d", ino, c.nextIno)
		}
	})
}

func (c *checker) scanOrphans() error {
	return c.scan([]byte{'o'}, []byte{'o' + 1}, func(k, v []byte) {
		ino, err := schema.OrphanIno(k)
		if err != nil {
			c.report(KindDecode, keyIno(k), "orphan key %s: %v", shortHex(k), err)
			c.deleteKey(KindDecode, noIno, k, "deleted a malformed orphan key")
			return
		}
		if n := c.inodes[ino]; n != nil {
			n.orphan = true
		} else {
			c.report(KindBadOrphan, ino, "orphan marker of inode %d, which does not exist", ino)
			c.deleteKey(KindBadOrphan, ino, k, "deleted the orphan marker")
		}
	})
}

func (c *checker) scanParents() error {
	return c.scan([]byte{'p'}, []byte{'p' + 1}, func(k, v []byte) {
		ino, parent, name, err := schema.ParseParentKey(k)
		if err != nil {
			c.report(KindDecode, keyIno(k), "back-reference key %s: %v", shortHex(k), err)
			c.deleteKey(KindDecode, noIno, k, "deleted a malformed back-reference key")
			return
		}
		c.refs[ino] = append(c.refs[ino], parentRef{parent: parent, name: name})
	})
}

// scanDirents checks every entry against the inodes it joins and its
// back-reference, and builds the tree for the reachability check.
func (c *checker) scanDirents() error {
	return c.scan([]byte{'d'}, []byte{'d' + 1}, func(k, v []byte) {
		name, err := schema.DirentName(k)
		if err != nil || len(k) < 9 {
			c.report(KindDecode, keyIno(k), "entry key %s: malformed", shortHex(k))
			c.deleteKey(KindDecode, noIno, k, "deleted a malformed entry key")
			return
		}
		dir := be64(k[1:])
		ent, err := schema.DecodeDirent(v)
		if err != nil {
			c.reportEntry(KindDecode, dir, name, "entry %q of directory %d: %v", name, dir, err)
			c.dropEntry(KindDecode, dir, name, noIno, "deleted the entry")
			return
		}
		d, n := c.inodes[dir], c.inodes[ent.Ino]
		hasRef := c.matchRef(ent.Ino, dir, name)
		inDir := d != nil && (d.bad || d.typ() == syscall.S_IFDIR)
		switch {
		case !inDir:
			c.reportEntry(KindDirentNotInDir, dir, name, "entry %q (inode %d) of inode %d, which is not a directory", name, ent.Ino, dir)
			c.dropEntry(KindDirentNotInDir, dir, name, ent.Ino, "deleted the entry")
		case n == nil:
			c.dropEntry(KindDanglingDirent, dir, name, ent.Ino, "deleted the entry")
		case !hasRef:
			c.fix.keys = append(c.fix.keys, keyFix{key: schema.ParentKey(ent.Ino, dir, name), value: []byte{},
				note: note{KindMissingParentRef, dir, name, "added the back-reference"}})
		}
		if !hasRef {
			c.reportEntry(KindMissingParentRef, dir, name, "entry %q of directory %d names inode %d, which has no back-reference for it", name, dir, ent.Ino)
		}
		if n == nil {
			c.reportEntry(KindDanglingDirent, dir, name, "entry %q of directory %d names inode %d, which does not exist", name, dir, ent.Ino)
			return
		}
		n.links++
		c.children[dir] = append(c.children[dir], ent.Ino)
		typ := ent.Type
		if !n.bad {
			typ = n.typ()
			if ent.Type != typ {
				c.reportEntry(KindDirentType, dir, name, "entry says type %#o, inode %d has %#o", ent.Type, ent.Ino, typ)
				if inDir {
					fixed := schema.Dirent{Ino: ent.Ino, Type: typ}
					c.fix.keys = append(c.fix.keys, keyFix{key: clone(k), value: fixed.Encode(),
						note: note{KindDirentType, dir, name, fmt.Sprintf("recorded type %#o", typ)}})
				}
			}
		}
		if typ == syscall.S_IFDIR && d != nil {
			d.subdirs++
		}
	})
}

// matchRef marks the back-reference of entry name of dir, naming ino, as
// matched; it reports whether there is one.
func (c *checker) matchRef(ino, dir uint64, name string) bool {
	rs := c.refs[ino]
	for i := range rs {
		if rs[i].parent == dir && rs[i].name == name {
			rs[i].matched = true
			return true
		}
	}
	return false
}

// checkTree checks reachability, link counts and unmatched back-references.
func (c *checker) checkTree() {
	root := c.inodes[vfs.RootIno]
	if root == nil || (!root.bad && root.typ() != syscall.S_IFDIR) {
		c.report(KindMissingRoot, noIno, "inode %d is not a directory or does not exist", vfs.RootIno)
	} else {
		c.walk()
	}
	for _, ino := range c.removedRoots {
		if !c.inodes[ino].reached {
			c.walkFrom(ino) // a removed clone's tree, being freed
		}
	}
	for ino, n := range c.inodes {
		c.checkInode(ino, n)
	}
	for ino, rs := range c.refs {
		for _, r := range rs {
			if !r.matched {
				c.report(KindDanglingParentRef, ino, "back-reference of inode %d as entry %q of directory %d, which has no such entry", ino, r.name, r.parent)
				c.deleteKey(KindDanglingParentRef, ino, schema.ParentKey(ino, r.parent, r.name),
					fmt.Sprintf("deleted the back-reference as entry %q of directory %d", r.name, r.parent))
			}
		}
	}
}

// walk marks everything reachable from the root.
func (c *checker) walk() { c.walkFrom(vfs.RootIno) }

// walkFrom marks top and everything reachable from it.
func (c *checker) walkFrom(top uint64) {
	c.inodes[top].reached = true
	queue := []uint64{top}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		for _, ino := range c.children[dir] {
			n := c.inodes[ino]
			if n.reached {
				continue
			}
			n.reached = true
			if n.bad || n.typ() == syscall.S_IFDIR {
				queue = append(queue, ino)
			}
		}
	}
}

// cloneHeld reports whether unreachable inode ino is a hard-linked file of
// a live clone, whose link count the clone may keep one too high (see
// namespace.linksInView): the clone's removal settles it.
func (c *checker) cloneHeld(ino uint64, n *inode) bool {
	return c.linkMapped[ino] && n.typ() != syscall.S_IFDIR && n.rec.Clone != 0 && c.inodes[n.rec.Clone] != nil
}

func (c *checker) checkInode(ino uint64, n *inode) {
	switch {
	case n.orphan && (n.links > 0 || (!n.bad && n.rec.Nlink != 0)):
		c.report(KindBadOrphan, ino, "orphan marker on inode %d, which has %d entries and nlink %d", ino, n.links, n.rec.Nlink)
		n.badOrphan = true
		c.deleteKey(KindBadOrphan, ino, schema.OrphanKey(ino), "deleted the orphan marker")
	case !n.orphan && !n.reached && c.cloneHeld(ino, n):
		c.reportSev(KindCloneHeld, SeverityReclaimable, ino, "hard-linked file %d of clone %d has no name left but a link count of %d: the clone counted a name it may show (freed when the clone goes)", ino, n.rec.Clone, n.rec.Nlink)
	case !n.orphan && !n.reached && ino != vfs.RootIno:
		c.report(KindUnreachable, ino, "inode %d (nlink %d, %d entries) is not reachable from the root", ino, n.rec.Nlink, n.links)
	}
	if n.bad {
		return
	}
	isDir := n.typ() == syscall.S_IFDIR
	if n.rec.Stub {
		// A clone's stub: its entries and extents are still its
		// origin's, its link count and mapped bytes are the origin's.
		if !isDir && uint32(n.links) != n.rec.Nlink && !(c.linkMapped[ino] && n.rec.Nlink > uint32(n.links)) {
			c.report(KindNlink, ino, "inode %d has nlink %d, want %d", ino, n.rec.Nlink, n.links)
		}
		return
	}
	if want := n.wantNlink(); n.rec.Nlink != want && !(c.linkMapped[ino] && !isDir && n.rec.Nlink > want) {
		c.report(KindNlink, ino, "inode %d has nlink %d, want %d", ino, n.rec.Nlink, want)
	}
	if isDir && (n.links > 1 || (ino == vfs.RootIno && n.links > 0)) {
		c.report(KindDirParents, ino, "directory %d is named by %d entries", ino, n.links)
	}
	if n.mapped != n.rec.Mapped {
		c.report(KindMapped, ino, "inode %d records %d mapped bytes, its extents map %d", ino, n.rec.Mapped, n.mapped)
	}
}

// wantNlink is the link count the entries naming n give it.
func (n *inode) wantNlink() uint32 {
	if n.typ() != syscall.S_IFDIR {
		return uint32(n.links)
	}
	if n.orphan && !n.badOrphan && n.links == 0 {
		return 0 // removed while open
	}
	return uint32(2 + n.subdirs)
}

// reportEntry reports a problem of entry name of directory dir.
func (c *checker) reportEntry(kind string, dir uint64, name, format string, args ...any) {
	c.report(kind, dir, format, args...)
	c.problems[len(c.problems)-1].name = name
}

// pathOf names a path of ino through back-references, preferring those
// whose entry exists. Where the chain breaks, it starts with "<inode N>".
func (c *checker) pathOf(ino uint64) string {
	var parts []string
	seen := map[uint64]bool{}
	for cur := ino; ; {
		if cur == vfs.RootIno {
			return "/" + joinReversed(parts)
		}
		r, ok := c.bestRef(cur)
		if !ok || seen[cur] {
			head := "<inode " + strconv.FormatUint(cur, 10) + ">"
			if seen[cur] {
				head = "<cycle at inode " + strconv.FormatUint(cur, 10) + ">"
			}
			if len(parts) == 0 {
				return head
			}
			return head + "/" + joinReversed(parts)
		}
		seen[cur] = true
		parts = append(parts, r.name)
		cur = r.parent
	}
}

func (c *checker) bestRef(ino uint64) (parentRef, bool) {
	rs := c.refs[ino]
	for _, r := range rs {
		if r.matched {
			return r, true
		}
	}
	if len(rs) > 0 {
		return rs[0], true
	}
	return parentRef{}, false
}

func joinReversed(parts []string) string {
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
		if i > 0 {
			b.WriteByte('/')
		}
	}
	return b.String()
}
