package namespace_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

var cloneSeed = flag.Uint64("clone.seed", 0, "seed of TestCloneIsolationModel (0: time)")

// mnode is the model of one inode; hard links share one mnode.
type mnode struct {
	dir      bool
	link     string // symlink target ("" for others)
	data     []byte
	mode     uint32
	xattrs   map[string]string
	children map[string]*mnode
}

func newDir() *mnode {
	return &mnode{dir: true, mode: 0o755, xattrs: map[string]string{}, children: map[string]*mnode{}}
}

// copyTree copies n the way a clone must: hard links inside stay shared
// (memo), names in skip are left out at every depth.
func copyTree(n *mnode, memo map[*mnode]*mnode, skip string) *mnode {
	if c, ok := memo[n]; ok {
		return c
	}
	c := &mnode{dir: n.dir, link: n.link, data: bytes.Clone(n.data), mode: n.mode, xattrs: map[string]string{}}
	for k, v := range n.xattrs {
		c.xattrs[k] = v
	}
	memo[n] = c
	if n.dir {
		c.children = map[string]*mnode{}
		for name, ch := range n.children {
			if name != skip {
				c.children[name] = copyTree(ch, memo, skip)
			}
		}
	}
	return c
}

type modelTree struct {
	name     string // entry under the volume root
	root     *mnode
	readOnly bool
	skip     string // the name its clone excluded
}

type openModel struct {
	h    vfs.Handle
	node *mnode
	tree *modelTree
}

type cloneModel struct {
	t   *testing.T
	rng *rand.Rand
	// diffRng picks the trees diffed, apart from rng so that the same
	// seed gives the same operations with and without diffs.
	diffRng *rand.Rand
	// blocks: the volume is cut in disk images' blocks, and half the
	// writes into existing files are whole blocks where blocks lie (so
	// that owned blocks are written over in place where they may).
	blocks bool
	v      *volume.Volume
	dir    string
	trees  []*modelTree
	open   []openModel
	step   int
	inos   map[string]uint64 // tree/path -> ino, checked across remounts
	// recordInos: the next check records inode numbers into inos.
	recordInos bool
	// diffs counts the journal diffs checked, compacted the journal
	// entries compaction removed before them.
	diffs, compacted int
}

// TestCloneIsolationModel applies random operations to a tree, its
// clones, clones of clones and snapshots, with exclusions, open handles
// and remounts, and compares every tree with a model after each step: no
// change may show on any other tree, hard links stay hard links inside
// each clone, snapshots refuse changes. fsck must be clean at the end,
// after the clones are removed too.
func TestCloneIsolationModel(t *testing.T) {
	testCloneIsolationModel(t, volume.InitOptions{}, 1)
}

// TestCloneIsolationModelDiskBlocks runs the model (a quarter of its
// operations) on a volume cut in disk images' 4 KiB blocks, whose new
// blocks are owned by their extents (docs/BLOCK.md, "Owned blocks"):
// clones, pins and copies must give them records at their place.
func TestCloneIsolationModelDiskBlocks(t *testing.T) {
	testCloneIsolationModel(t, volume.InitOptions{Chunking: "fixed:4K"}, 4)
}

func testCloneIsolationModel(t *testing.T, opt volume.InitOptions, share int) {
	namespace.CheckTreeCache(t)
	seed := *cloneSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	ops := 600
	if s := os.Getenv("DOPPEL_CLONE_MODEL_OPS"); s != "" {
		ops, _ = strconv.Atoi(s)
	}
	ops = max(ops/share, min(ops, 100))
	t.Logf("seed %d, %d ops (rerun with -clone.seed=%d)", seed, ops, seed)
	v, dir := openVolumeWith(t, opt)
	m := &cloneModel{t: t, rng: rand.New(rand.NewPCG(seed, 1)), diffRng: rand.New(rand.NewPCG(seed, 2)), v: v, dir: dir, inos: map[string]uint64{},
		blocks: opt.Chunking == "fixed:4K"}
	testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "t0", 0o755))
	m.trees = []*modelTree{{name: "t0", root: newDir()}}
	var owned int64 // most owned blocks the volume held after a step
	for m.step = 0; m.step < ops; m.step++ {
		m.randomOp()
		owned = max(owned, m.v.Engine.Stats().OwnedBlocks)
		if m.step == ops-1 {
			m.checkAll()
		} else if m.step%10 == 0 {
			m.checkSome()
		}
		if m.step%7 == 0 {
			m.checkDiff()
		}
		if os.Getenv("DOPPEL_MODEL_FSCK") != "" {
			m.fsckClean("after the step")
		}
	}
	for _, o := range m.open {
		m.v.NS.Release(o.h)
	}
	m.open = nil
	t.Logf("%d journal diffs checked, %d journal entries compacted before them; at most %d owned blocks; %d blocks written in place",
		m.diffs, m.compacted, owned, m.v.Engine.Counters().OverwrittenBlocks)
	if opt.Chunking == "fixed:4K" && m.v.Engine.WritesOwnedBlocks() && owned == 0 {
		t.Error("no owned block on a volume of disk blocks: the variant tests nothing of them")
	}
	m.fsckClean("after the run")
	// Removing every clone frees what only it held.
	for _, tr := range m.trees[1:] {
		m.removeTree(tr.name)
	}
	m.trees = m.trees[:1]
	m.v = reopen(t, m.v, m.dir) // lets the releaser finish the pins
	m.checkAll()
	waitPinsReleased(t, m.v)
	m.fsckClean("after removing the clones")
}

func (m *cloneModel) trace(format string, args ...any) {
	if os.Getenv("DOPPEL_MODEL_TRACE") != "" {
		m.t.Logf("step %d: %s", m.step, fmt.Sprintf(format, args...))
	}
}

func (m *cloneModel) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("step %d: %s", m.step, fmt.Sprintf(format, args...))
}

func (m *cloneModel) fsckClean(when string) {
	rep, err := fsck.CheckLive(context.Background(), m.v.FsckStores(), m.v.Engine, fsck.Options{})
	if err != nil {
		m.fail("fsck %s: %v", when, err)
	}
	for _, p := range rep.Problems {
		if p.Kind != fsck.KindPendingFree && p.Kind != fsck.KindOrphanSpace && p.Kind != fsck.KindCloneHeld {
			m.fail("fsck %s: %s %s", when, p.Kind, p.Detail)
		}
	}
}

// lookup resolves a "/"-separated path inside tree tr.
func (m *cloneModel) lookup(tr *modelTree, path []string) (uint64, error) {
	a, err := m.v.NS.Lookup(vfs.RootIno, tr.name)
	if err != nil {
		return 0, err
	}
	ino := a.Ino
	for _, name := range path {
		a, err := m.v.NS.Lookup(ino, name)
		if err != nil {
			return 0, err
		}
		ino = a.Ino
	}
	return ino, nil
}

// pick chooses a random path in tr: dirs only or any node.
func (m *cloneModel) pick(tr *modelTree, wantDir bool) ([]string, *mnode) {
	var all [][]string
	var nodes []*mnode
	var walk func(n *mnode, p []string)
	walk = func(n *mnode, p []string) {
		if !wantDir || n.dir {
			all = append(all, p)
			nodes = append(nodes, n)
		}
		names := make([]string, 0, len(n.children))
		for name := range n.children {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			walk(n.children[name], append(slices.Clone(p), name))
		}
	}
	walk(tr.root, nil)
	i := m.rng.IntN(len(all))
	return all[i], nodes[i]
}

func parentOf(tr *modelTree, p []string) *mnode {
	n := tr.root
	for _, name := range p[:len(p)-1] {
		n = n.children[name]
	}
	return n
}

var names = []string{"a", "b", "c", "x1", "d2", "e"}

func (m *cloneModel) randomOp() {
	tr := m.trees[m.rng.IntN(len(m.trees))]
	ns := m.v.NS
	op := m.rng.IntN(100)
	if os.Getenv("DOPPEL_MODEL_TRACE") != "" {
		m.t.Logf("step %d: op %d on %s", m.step, op, tr.name)
	}
	if tr.readOnly && op < 70 {
		m.refusedChange(tr)
		return
	}
	switch {
	case op < 18: // write a file (new or existing), through a fresh handle
		dp, dn := m.pick(tr, true)
		name := names[m.rng.IntN(len(names))]
		dino := testutil.Must(m.lookup(tr, dp))
		data := modelBytes(m.rng)
		if ch, ok := dn.children[name]; ok {
			if ch.dir || ch.link != "" {
				return
			}
			off := m.rng.IntN(len(ch.data) + 1)
			if m.blocks && m.rng.IntN(2) == 0 {
				off, data = off/4096*4096, testutil.RandBytes(m.rng, 4096*(1+m.rng.IntN(8)))
			}
			ino := testutil.Must(ns.Lookup(dino, name)).Ino
			h := testutil.Must(ns.Open(ino, syscall.O_RDWR))
			testutil.Must(ns.Write(h, int64(off), data))
			testutil.Must(0, ns.Release(h))
			ch.data = overwrite(ch.data, off, data)
			m.trace("write %s %v/%s ino %d at %d len %d", tr.name, dp, name, ino, off, len(data))
			return
		}
		_, h, err := ns.Create(root, dino, name, 0o644, syscall.O_RDWR)
		if err != nil {
			m.fail("create %v/%s: %v", dp, name, err)
		}
		testutil.Must(ns.Write(h, 0, data))
		n := &mnode{mode: 0o644, data: data, xattrs: map[string]string{}}
		dn.children[name] = n
		m.trace("create %s %v/%s len %d", tr.name, dp, name, len(data))
		if m.rng.IntN(4) == 0 && len(m.open) < 6 { // keep it open across later clones
			m.open = append(m.open, openModel{h: h, node: n, tree: tr})
		} else {
			testutil.Must(0, ns.Release(h))
		}
	case op < 24: // write through a handle kept open (maybe unlinked)
		if len(m.open) == 0 {
			return
		}
		o := m.open[m.rng.IntN(len(m.open))]
		data := modelBytes(m.rng)
		off := m.rng.IntN(len(o.node.data) + 1)
		testutil.Must(ns.Write(o.h, int64(off), data))
		o.node.data = overwrite(o.node.data, off, data)
		m.trace("write open handle %d of %s at %d len %d", o.h, o.tree.name, off, len(data))
	case op < 28: // close a kept handle
		if len(m.open) == 0 {
			return
		}
		i := m.rng.IntN(len(m.open))
		testutil.Must(0, ns.Release(m.open[i].h))
		m.open = slices.Delete(m.open, i, i+1)
	case op < 34: // truncate
		p, n := m.pick(tr, false)
		if n.dir || n.link != "" {
			return
		}
		size := m.rng.IntN(len(n.data) + 2000)
		ino := testutil.Must(m.lookup(tr, p))
		testutil.Must(ns.SetAttr(root, ino, vfs.SetAttr{SetSize: true, Size: int64(size)}))
		m.trace("truncate %s %v ino %d to %d", tr.name, p, ino, size)
		if size < len(n.data) {
			n.data = n.data[:size]
		} else {
			n.data = append(n.data, make([]byte, size-len(n.data))...)
		}
	case op < 40: // mkdir
		dp, dn := m.pick(tr, true)
		name := names[m.rng.IntN(len(names))]
		if _, ok := dn.children[name]; ok {
			return
		}
		testutil.Must(ns.Mkdir(root, testutil.Must(m.lookup(tr, dp)), name, 0o755))
		dn.children[name] = newDir()
	case op < 46: // symlink
		dp, dn := m.pick(tr, true)
		name := names[m.rng.IntN(len(names))]
		if _, ok := dn.children[name]; ok {
			return
		}
		target := "t" + strconv.Itoa(m.rng.IntN(100))
		testutil.Must(ns.Symlink(root, testutil.Must(m.lookup(tr, dp)), name, target))
		dn.children[name] = &mnode{link: target, mode: 0o777, xattrs: map[string]string{}}
	case op < 54: // unlink or rmdir (of an empty directory)
		p, n := m.pick(tr, false)
		if len(p) == 0 || (n.dir && len(n.children) > 0) {
			return
		}
		pino := testutil.Must(m.lookup(tr, p[:len(p)-1]))
		if n.dir {
			testutil.Must(0, ns.Rmdir(pino, p[len(p)-1]))
		} else {
			testutil.Must(0, ns.Unlink(pino, p[len(p)-1]))
		}
		delete(parentOf(tr, p).children, p[len(p)-1])
		m.trace("remove %s %v", tr.name, p)
	case op < 62: // rename, across directories too
		p, n := m.pick(tr, false)
		dp, dn := m.pick(tr, true)
		name := names[m.rng.IntN(len(names))]
		if len(p) == 0 || isPrefix(p, dp) {
			return
		}
		if old, ok := dn.children[name]; ok && (old.dir || n.dir || old == n) {
			return // keep the model simple: replace files only (not by a link to themselves)
		}
		testutil.Must(0, ns.Rename(testutil.Must(m.lookup(tr, p[:len(p)-1])), p[len(p)-1], testutil.Must(m.lookup(tr, dp)), name, 0))
		delete(parentOf(tr, p).children, p[len(p)-1])
		dn.children[name] = n
		m.trace("rename %s %v -> %v/%s", tr.name, p, dp, name)
	case op < 66: // hard link
		p, n := m.pick(tr, false)
		dp, dn := m.pick(tr, true)
		name := names[m.rng.IntN(len(names))]
		if n.dir {
			return
		}
		if _, ok := dn.children[name]; ok {
			return
		}
		testutil.Must(ns.Link(testutil.Must(m.lookup(tr, p)), testutil.Must(m.lookup(tr, dp)), name))
		m.trace("link %s %v -> %v/%s", tr.name, p, dp, name)
		dn.children[name] = n
	case op < 70: // xattr or chmod
		p, n := m.pick(tr, false)
		ino := testutil.Must(m.lookup(tr, p))
		if n.link != "" {
			return
		}
		if m.rng.IntN(2) == 0 {
			val := strconv.Itoa(m.rng.IntN(1000))
			testutil.Must(0, ns.SetXattr(ino, "user.k", []byte(val), 0))
			n.xattrs["user.k"] = val
		} else {
			mode := uint32(0o600 + m.rng.IntN(0o100))
			testutil.Must(ns.SetAttr(root, ino, vfs.SetAttr{SetMode: true, Mode: mode}))
			n.mode = mode
		}
	case op < 80: // clone or snapshot, maybe of a subdirectory, maybe excluding a name
		if len(m.trees) >= 8 {
			return
		}
		p, n := m.pick(tr, true)
		name := "c" + strconv.Itoa(m.step)
		o := namespace.CloneOptions{ReadOnly: m.rng.IntN(4) == 0, Lazy: m.rng.IntN(2) == 0}
		skip := ""
		if m.rng.IntN(3) == 0 {
			skip = "x1"
			o.Excludes = []string{skip}
		}
		src := "/" + tr.name
		for _, s := range p {
			src += "/" + s
		}
		if os.Getenv("DOPPEL_MODEL_TRACE") != "" {
			m.t.Logf("step %d: clone %s -> /%s %+v", m.step, src, name, o)
		}
		res, err := m.v.NS.ClonePath(src, "/"+name, o)
		if err != nil {
			m.fail("clone %s: %v", src, err)
		}
		m.trace("cloned %s at version %d, root ino %d", name, res.Pin, res.Ino)
		m.trees = append(m.trees, &modelTree{name: name, root: copyTree(n, map[*mnode]*mnode{}, skip), readOnly: o.ReadOnly, skip: skip})
	case op < 83: // remove a whole clone
		if len(m.trees) < 3 {
			return
		}
		i := 1 + m.rng.IntN(len(m.trees)-1)
		for _, o := range m.open {
			if o.tree == m.trees[i] {
				return
			}
		}
		m.trace("remove tree %s", m.trees[i].name)
		m.removeTree(m.trees[i].name)
		m.trees = slices.Delete(m.trees, i, i+1)
	case op < 85: // remount: everything survives, inode numbers too
		for _, o := range m.open {
			testutil.Must(0, ns.Release(o.h))
		}
		m.open = nil
		m.trace("remount")
		m.recordInos = true
		m.checkAll()
		m.recordInos = false
		m.v = reopen(m.t, m.v, m.dir)
		m.checkAll() // the same paths must have the same inode numbers
		clear(m.inos)
	default:
		m.checkOne(tr)
	}
}

// refusedChange tries a change inside a snapshot: it must fail with EROFS.
func (m *cloneModel) refusedChange(tr *modelTree) {
	p, n := m.pick(tr, false)
	ino, err := m.lookup(tr, p)
	if err != nil {
		m.fail("lookup %s %v: %v", tr.name, p, err)
	}
	switch {
	case n.dir:
		_, err = m.v.NS.Mkdir(root, ino, "new", 0o755)
	case n.link != "":
		_, err = m.v.NS.SetAttr(root, ino, vfs.SetAttr{SetMode: true, Mode: 0o700})
	default:
		_, err = m.v.NS.Open(ino, syscall.O_RDWR)
	}
	if !errors.Is(err, syscall.EROFS) {
		m.fail("change in snapshot %s at %v: got %v, want EROFS", tr.name, p, err)
	}
}

func (m *cloneModel) removeTree(name string) {
	var rm func(dir uint64, name string)
	rm = func(dir uint64, name string) {
		a := testutil.Must(m.v.NS.Lookup(dir, name))
		if a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			for _, e := range testutil.Must(m.v.NS.ReadDir(a.Ino)) {
				rm(a.Ino, e.Name)
			}
			testutil.Must(0, m.v.NS.Rmdir(dir, name))
			return
		}
		testutil.Must(0, m.v.NS.Unlink(dir, name))
	}
	// A snapshot refuses rm; its root can be renamed into a writable
	// place, but its contents stay read-only: such trees are dropped
	// whole with rmclone in the CLI tests. Here only writable ones go.
	for _, tr := range m.trees {
		if tr.name == name && tr.readOnly {
			return
		}
	}
	rm(vfs.RootIno, name)
}

func (m *cloneModel) checkAll() {
	for _, tr := range m.trees {
		m.checkOne(tr)
	}
}

// checkSome checks each tree with probability one half: a check lists
// every directory, which materializes lazy clones, and clones of clones
// whose middle clone is still partly stubs must happen too.
func (m *cloneModel) checkSome() {
	for _, tr := range m.trees {
		if m.rng.IntN(2) == 0 {
			m.checkOne(tr)
		}
	}
}

// checkOne compares a tree with its model, including which paths share
// an inode.
func (m *cloneModel) checkOne(tr *modelTree) {
	ino := testutil.Must(m.lookup(tr, nil))
	seen := map[*mnode]uint64{}
	owner := map[uint64]*mnode{}
	m.compare(tr, ino, tr.root, tr.name, seen, owner)
	m.checkLinks(tr, seen)
}

// checkLinks compares the link count of every file of tr with the names
// it has in the model of tr. Too low would free a file that still has a
// name; too high would keep it after its last name goes.
func (m *cloneModel) checkLinks(tr *modelTree, inos map[*mnode]uint64) {
	names := map[*mnode]uint32{}
	var walk func(n *mnode)
	walk = func(n *mnode) {
		for _, c := range n.children {
			if c.dir {
				walk(c)
			} else {
				names[c]++
			}
		}
	}
	walk(tr.root)
	for n, want := range names {
		got := testutil.Must(m.v.NS.GetAttr(inos[n])).Nlink
		if got != want {
			m.fail("%s: inode %d has link count %d, but %d names", tr.name, inos[n], got, want)
		}
	}
}

func (m *cloneModel) compare(tr *modelTree, ino uint64, n *mnode, path string, seen map[*mnode]uint64, owner map[uint64]*mnode) {
	ns := m.v.NS
	if prev, ok := seen[n]; ok && prev != ino {
		m.fail("%s: hard link broken: inode %d, its other name has %d", path, ino, prev)
	}
	if o, ok := owner[ino]; ok && o != n {
		m.fail("%s: inode %d is shared with an unrelated file", path, ino)
	}
	seen[n], owner[ino] = ino, n
	if want, ok := m.inos[path]; ok && want != ino {
		m.fail("%s: inode %d after the remount, %d before", path, ino, want)
	}
	if m.recordInos {
		m.inos[path] = ino
	}
	a := testutil.Must(ns.GetAttr(ino))
	switch {
	case n.dir:
		if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			m.fail("%s: not a directory", path)
		}
		ents := testutil.Must(ns.ReadDir(ino))
		var got, want []string
		for _, e := range ents {
			got = append(got, e.Name)
		}
		for name := range n.children {
			want = append(want, name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			m.fail("%s: entries %v, want %v", path, got, want)
		}
		for _, e := range ents {
			m.compare(tr, e.Ino, n.children[e.Name], path+"/"+e.Name, seen, owner)
		}
	case n.link != "":
		if got := testutil.Must(ns.Readlink(ino)); got != n.link {
			m.fail("%s: symlink to %q, want %q", path, got, n.link)
		}
		return
	default:
		if a.Size != int64(len(n.data)) {
			m.fail("%s: size %d, want %d", path, a.Size, len(n.data))
		}
		h := testutil.Must(ns.Open(ino, syscall.O_RDONLY))
		buf := make([]byte, len(n.data)+1)
		got := testutil.Must(ns.Read(h, 0, buf))
		testutil.Must(0, ns.Release(h))
		if !bytes.Equal(buf[:got], n.data) {
			first := 0
			for first < got && buf[first] == n.data[first] {
				first++
			}
			last := got - 1
			for last > first && buf[last] == n.data[last] {
				last--
			}
			st, _ := ns.Stat("/" + path)
			m.fail("%s: content differs (%d bytes read, want %d) in [%d, %d]; stored as %+v; pins %s", path, got, len(n.data), first, last+1, st.Extents, ns.DebugPins())
		}
	}
	if a.Mode&0o7777 != n.mode {
		m.fail("%s: mode %o, want %o", path, a.Mode&0o7777, n.mode)
	}
	for k, want := range n.xattrs {
		if got, err := ns.GetXattr(ino, k); err != nil || string(got) != want {
			m.fail("%s: xattr %s = %q, %v; want %q", path, k, got, err, want)
		}
	}
	if names := testutil.Must(ns.ListXattr(ino)); len(names) != len(n.xattrs) {
		m.fail("%s: xattrs %v, want %d", path, names, len(n.xattrs))
	}
}

// waitPinsReleased waits (bounded) for the background releaser.
func waitPinsReleased(t *testing.T, v *volume.Volume) {
	for i := 0; i < 200 && v.NS.PinCount() > 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

func modelBytes(rng *rand.Rand) []byte {
	n := rng.IntN(3000)
	if rng.IntN(8) == 0 {
		n = 200_000 + rng.IntN(200_000) // several chunks
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

func overwrite(data []byte, off int, p []byte) []byte {
	if end := off + len(p); end > len(data) {
		data = append(data, make([]byte, end-len(data))...)
	}
	copy(data[off:], p)
	return data
}

func isPrefix(p, q []string) bool {
	return len(p) <= len(q) && slices.Equal(p, q[:len(p)])
}
