package tests

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/crashtest"
	"github.com/doppelfs/doppel/internal/testutil"
)

var cloneCrashSeed = flag.Uint64("clonecrash.seed", 0, "seed for TestCloneCrashLoop (0: time-based)")

// TestCloneCrashLoop kills the daemon with SIGKILL at random moments while
// a loop writes files in a source tree and in its clones, clones the
// source or a clone (lazily, materialized or as a snapshot) and removes
// old clones. The loop keeps, outside the volume, the files every tree
// holds as of the last operation that returned. After each kill the
// volume mounts again and every tree holds exactly that: a clone made
// before the kill shows its source as it was then, whatever was written
// on either side since. The interrupted operation may have happened or
// not, never half (a clone exists whole or not at all). fsck is
// strict-clean after each kill, and after the last one the background
// materialization completes.
func TestCloneCrashLoop(t *testing.T) {
	const cycles = 6
	seed := crashtest.Seed(t, *cloneCrashSeed, "clonecrash.seed")
	v := newVolume(t)
	l := &cloneLoop{v: v, rand: rand.New(rand.NewPCG(seed, 2)), trees: map[string]map[string][]byte{"src": {}}, readOnly: map[string]bool{}}
	testutil.Check(t, os.Mkdir(v.path("src"), 0o755))
	crashtest.Loop(t, cycles, rand.New(rand.NewPCG(seed, 1)), 200*time.Millisecond, time.Second, daemonTarget{v}, l)
	v.waitMaterialized(t)
	l.pending = nil
	if !l.Verify(t) {
		t.Fatalf("seed %d: after the materialization the trees do not hold what was written", seed)
	}
	t.Logf("clone crash loop: %d kills, %d operations, %d clones made, %d trees at the end", cycles, l.ops, l.next, len(l.trees))
	v.umount(t)
	v.fsckStrict(t)
}

// cloneLoop applies random operations until one fails (the daemon died).
type cloneLoop struct {
	v        *volume
	rand     *rand.Rand
	trees    map[string]map[string][]byte // tree name -> file -> content
	readOnly map[string]bool
	next     int
	ops      int
	pending  *cloneOp // the operation under way
}

// cloneOp is one operation: a write of file in tree, a clone of from to
// tree, or the removal of tree.
type cloneOp struct {
	kind, tree, file, from string
	data                   []byte            // the write's content
	files                  map[string][]byte // a clone's content
}

func (l *cloneLoop) names() []string { return slices.Sorted(maps.Keys(l.trees)) }

func (l *cloneLoop) writable() []string {
	var out []string
	for _, n := range l.names() {
		if !l.readOnly[n] {
			out = append(out, n)
		}
	}
	return out
}

// Run implements crashtest.Workload: it applies operations until one
// fails or stop is set.
func (l *cloneLoop) Run(stop *atomic.Bool) error {
	for !stop.Load() {
		op := l.nextOp()
		l.pending = op
		if err := l.apply(op); err != nil {
			return err
		}
		l.adopt(op)
		l.pending = nil
		l.ops++
	}
	return nil
}

func (l *cloneLoop) nextOp() *cloneOp {
	n := l.rand.IntN(10)
	switch {
	case n < 5:
		w := l.writable()
		tree := w[l.rand.IntN(len(w))]
		if n == 0 {
			tree = "src"
		}
		size := l.rand.IntN(4 << 10)
		if l.rand.IntN(4) == 0 {
			size = l.rand.IntN(300 << 10)
		}
		return &cloneOp{kind: "write", tree: tree, file: fmt.Sprintf("f%02d", l.rand.IntN(12)), data: testutil.SeededBytes(l.rand.Uint64(), size)}
	case n < 8 || len(l.trees) < 4:
		from := "src"
		if l.rand.IntN(3) == 0 {
			names := l.names()
			from = names[l.rand.IntN(len(names))]
		}
		l.next++
		modes := []string{"--lazy", "--materialize", "--read-only"}
		return &cloneOp{kind: modes[l.rand.IntN(3)], tree: fmt.Sprintf("c%03d", l.next), from: from, files: maps.Clone(l.trees[from])}
	default:
		names := l.names()[:len(l.trees)-1] // clones sort before "src"
		return &cloneOp{kind: "rmclone", tree: names[l.rand.IntN(len(names))]}
	}
}

// apply runs op. The commands name the store, not the mount point, so
// that killDaemonNow does not take them for the daemon.
func (l *cloneLoop) apply(op *cloneOp) error {
	switch op.kind {
	case "write":
		return os.WriteFile(l.v.path(op.tree, op.file), op.data, 0o644)
	case "rmclone":
		if out, err := runDoppel(time.Minute, "rmclone", "--store", l.v.Store, "/"+op.tree); err != nil {
			return fmt.Errorf("rmclone %s: %w: %s", op.tree, err, out)
		}
	default:
		if out, err := runDoppel(time.Minute, "clone", "--store", l.v.Store, op.kind, "/"+op.from, "/"+op.tree); err != nil {
			return fmt.Errorf("clone %s %s: %w: %s", op.kind, op.tree, err, out)
		}
	}
	return nil
}

// adopt records the effect of an operation that returned (or, after a
// kill, was found done).
func (l *cloneLoop) adopt(op *cloneOp) {
	switch op.kind {
	case "write":
		l.trees[op.tree][op.file] = op.data
	case "rmclone":
		delete(l.trees, op.tree)
		delete(l.readOnly, op.tree)
	default:
		l.trees[op.tree] = op.files
		l.readOnly[op.tree] = op.kind == "--read-only"
	}
}

// Verify implements crashtest.Workload: it compares every tree with the
// model; the pending operation may have happened or not.
func (l *cloneLoop) Verify(t *testing.T) bool {
	t.Helper()
	ok := true
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		ok = false
	}
	ents, err := os.ReadDir(l.v.Mnt)
	testutil.Check(t, err)
	var onDisk []string
	for _, e := range ents {
		onDisk = append(onDisk, e.Name())
	}
	if op := l.pending; op != nil && op.kind != "write" {
		if _, err := os.Lstat(l.v.path(op.tree)); (err == nil) == (op.kind != "rmclone") {
			t.Logf("the interrupted %s of %s happened", op.kind, op.tree)
			l.adopt(op)
		}
	}
	if want := l.names(); !slices.Equal(onDisk, want) {
		fail("the volume holds %q, want %q", onDisk, want)
	}
	for _, tree := range l.names() {
		files := l.trees[tree]
		ents, err := os.ReadDir(l.v.path(tree))
		if err != nil {
			fail("%s: %v", tree, err)
			continue
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		want := slices.Sorted(maps.Keys(files))
		if op := l.pending; op != nil && op.kind == "write" && op.tree == tree {
			if _, exists := files[op.file]; !exists && slices.Contains(got, op.file) {
				want = append(want, op.file)
				slices.Sort(want)
			}
		}
		if !slices.Equal(got, want) {
			fail("%s holds %q, want %q", tree, got, want)
			continue
		}
		for _, name := range got {
			data, err := os.ReadFile(filepath.Join(l.v.path(tree), name))
			if err != nil {
				fail("%s/%s: %v", tree, name, err)
				continue
			}
			if op := l.pending; op != nil && op.kind == "write" && op.tree == tree && op.file == name {
				// Truncated, then written: the old content, or a prefix of
				// the new.
				if !bytes.Equal(data, files[name]) && !bytes.HasPrefix(op.data, data) {
					fail("%s/%s (interrupted write): %d bytes, neither the old (%d) nor a prefix of the new (%d)", tree, name, len(data), len(files[name]), len(op.data))
				}
				files[name] = data
				continue
			}
			if !bytes.Equal(data, files[name]) {
				fail("%s/%s: %d bytes, want %d; first difference at %d", tree, name, len(data), len(files[name]), firstDifference(data, files[name]))
			}
		}
	}
	l.pending = nil
	return ok
}
