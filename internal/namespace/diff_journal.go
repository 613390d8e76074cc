package namespace

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// fromJournal compares only the entries that changed since version since
// in any of roots (the two trees and the origins between them): the
// change journal names them. An entry whose name was added or removed is
// compared with everything below it (a renamed directory moved its whole
// subtree); an inode that changed in place is compared alone.
func (d *differ) fromJournal(a, b vnode, roots []uint64, since uint64) error {
	isRoot := map[uint64]bool{}
	for _, r := range roots {
		isRoot[r] = true
	}
	paths := &pathCache{r: d.r, roots: isRoot, memo: map[uint64][]string{}}
	cands := map[string]bool{} // rel -> deep
	ranges, err := journalRanges(d.r, roots, since)
	if err != nil {
		return err
	}
	for _, r := range ranges {
		err := scan(d.r, r[0], r[1], func(k, _ []byte) error {
			if err := d.ctx.Err(); err != nil {
				return err
			}
			d.res.JournalRead++
			ino, name, err := parseAnyJournalKey(k)
			if err != nil {
				return err
			}
			for _, rel := range paths.of(ino) {
				if name != "" {
					cands[joinRel(rel, name)] = true
				} else if !cands[rel] {
					cands[rel] = false
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	rels := make([]string, 0, len(cands))
	for rel := range cands {
		rels = append(rels, rel)
	}
	slices.Sort(rels) // a directory before what lies below it
	for _, rel := range rels {
		if d.coveredBelow(rel) {
			continue
		}
		x, err := walkRel(a, rel)
		if err != nil {
			return err
		}
		y, err := walkRel(b, rel)
		if err != nil {
			return err
		}
		if err := d.compare(rel, x, y, cands[rel]); err != nil {
			return err
		}
	}
	return nil
}

// coveredBelow reports whether a directory above rel was compared with
// everything below it already (as both trees' directory, or reported
// added or deleted whole): comparing rel again would find nothing new.
func (d *differ) coveredBelow(rel string) bool {
	if rel == "" {
		return false
	}
	whole := func(dir string) bool {
		return d.done[dir] || d.done[dir+"\x00A"] || d.done[dir+"\x00D"]
	}
	if whole("") {
		return true
	}
	for i := range len(rel) {
		if rel[i] == '/' && whole(rel[:i]) {
			return true
		}
	}
	return false
}

// journalRanges are the journal key ranges that name every change after
// since below roots. A root inside a clone (it carries the clone) reads
// only that clone's entries: its inodes lay in the clone when they changed,
// or lie below an entry a name change in a directory of the clone made
// since the clone (journaled there, and compared with everything below
// it). Any other root needs the volume's journal, which holds every entry.
func journalRanges(r meta.Reader, roots []uint64, since uint64) ([][2][]byte, error) {
	treeSince, err := readU64(r, schema.KeyTreeJournalSince, ^uint64(0))
	if err != nil {
		return nil, err
	}
	seen := map[uint64]bool{}
	var out [][2][]byte
	for _, root := range roots {
		n, err := loadInode(r, root)
		if err != nil {
			return nil, err
		}
		if n.Clone == 0 || since+1 < treeSince {
			lower, upper := schema.JournalRange(since+1, ^uint64(0))
			return [][2][]byte{{lower, upper}}, nil
		}
		if !seen[n.Clone] {
			seen[n.Clone] = true
			lower, upper := schema.TreeJournalRange(n.Clone, since+1, ^uint64(0))
			out = append(out, [2][]byte{lower, upper})
		}
	}
	return out, nil
}

// parseAnyJournalKey reads the inode and name of a volume or clone
// journal key.
func parseAnyJournalKey(k []byte) (uint64, string, error) {
	if _, _, ino, name, err := schema.ParseTreeJournalKey(k); err == nil {
		return ino, name, nil
	}
	_, ino, name, err := schema.ParseJournalKey(k)
	return ino, name, err
}

// walkRel finds rel below n, or nil if it does not exist there.
func walkRel(n vnode, rel string) (*vnode, error) {
	cur := n
	for _, name := range splitRel(rel) {
		if cur.n.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return nil, nil
		}
		c, err := cur.child(name)
		if errors.Is(err, syscall.ENOENT) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		cur = c
	}
	return &cur, nil
}

// splitRel splits a relative path ("" is the top) into its names.
func splitRel(rel string) []string {
	if rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// pathCache finds the paths of inodes relative to any of the roots, by
// their back-references.
type pathCache struct {
	r     meta.Reader
	roots map[uint64]bool
	memo  map[uint64][]string
}

func (p *pathCache) of(ino uint64) []string {
	return p.walk(ino, 0)
}

func (p *pathCache) walk(ino uint64, depth int) []string {
	if p.roots[ino] {
		return []string{""}
	}
	if ino == vfs.RootIno || depth > 4096 {
		return nil
	}
	if r, ok := p.memo[ino]; ok {
		return r
	}
	var out []string
	eachName(p.r, ino, func(parent uint64, name string) error {
		for _, rel := range p.walk(parent, depth+1) {
			out = append(out, joinRel(rel, name))
		}
		return nil
	})
	p.memo[ino] = out
	return out
}

// patchLimit bounds the bytes of each side a --patch reads.
const patchLimit = 4 << 20

// changedMeanwhile answers a patch whose side n could not be read: the
// diff reads a snapshot, and a file changed since then may have had its
// old chunks freed already. Then the patch is left out; any other
// failure is an error.
func changedMeanwhile(rel string, n *vnode, err error) (string, error) {
	if !n.own() {
		return "", err // read through a pin: its chunks stay
	}
	now, lerr := loadInode(n.v.fresh(), n.ino)
	if lerr == nil && now.Version == n.n.Version {
		return "", err
	}
	return fmt.Sprintf("Files a/%s and b/%s differ (changed while compared: no patch)\n", rel, rel), nil
}

// patchOf is a unified diff of two text files ("Binary files differ" for
// others).
func patchOf(rel string, a, b *vnode) (string, error) {
	if a.n.Size > patchLimit || b.n.Size > patchLimit {
		return fmt.Sprintf("Files a/%s and b/%s differ (too large for a patch)\n", rel, rel), nil
	}
	x, err := a.readAll(patchLimit)
	if err != nil {
		return changedMeanwhile(rel, a, err)
	}
	y, err := b.readAll(patchLimit)
	if err != nil {
		return changedMeanwhile(rel, b, err)
	}
	if bytes.IndexByte(x, 0) >= 0 || bytes.IndexByte(y, 0) >= 0 {
		return fmt.Sprintf("Binary files a/%s and b/%s differ\n", rel, rel), nil
	}
	return udiff.Unified("a/"+rel, "b/"+rel, string(x), string(y)), nil
}
