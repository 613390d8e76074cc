package versions

import (
	"errors"
	"syscall"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestPinKeepsOnlyWhatItsCloneSees pins the root with "skip" excluded: the
// excluded directory and what only it names are out of the pin's scope (a
// change to them keeps nothing), the rest in, and a file named both inside
// and outside the excluded directory (the excluded name first) in.
func TestPinKeepsOnlyWhatItsCloneSees(t *testing.T) {
	m := openMem(t)
	b := m.NewBatch()
	node := func(ino, parent uint64, name string, mode uint32) {
		n := schema.Inode{Mode: mode, Nlink: 1}
		testutil.Check(t, b.Set(schema.InodeKey(ino), n.Encode()))
		testutil.Check(t, b.Set(schema.ParentKey(ino, parent, name), nil))
	}
	node(2, rootIno, "skip", syscall.S_IFDIR|0o755)
	node(3, rootIno, "keep", syscall.S_IFDIR|0o755)
	node(4, 3, "a", syscall.S_IFREG|0o644)
	node(5, 2, "b", syscall.S_IFREG|0o644)
	node(6, 2, "l", syscall.S_IFREG|0o644)
	testutil.Check(t, b.Set(schema.ParentKey(6, 3, "l"), nil))
	node(7, 2, "sub", syscall.S_IFDIR|0o755)
	node(8, 7, "c", syscall.S_IFREG|0o644)
	testutil.Check(t, b.Commit(false))

	r, err := NewRetainer(m)
	testutil.Check(t, err)
	r.SetExcluder(func(pin uint64) (func(string, bool) bool, error) {
		if pin != 10 {
			return nil, nil
		}
		return func(rel string, dir bool) bool { return rel == "skip" }, nil
	})
	r.Add(Pinned{Version: 10, Pin: schema.Pin{Root: rootIno, NextIno: 100, Held: true}})
	for ino, want := range map[uint64]bool{2: false, 3: true, 4: true, 5: false, 6: true, 7: false, 8: false} {
		in, known, err := r.InScope(10, ino)
		testutil.Check(t, err)
		if !known || in != want {
			t.Errorf("inode %d: in scope %v (known %v), want %v", ino, in, known, want)
		}
		b := m.NewBatch()
		key := schema.ExtentKey(ino, 0)
		testutil.Check(t, r.BeforeChange(b, key, func(schema.Extent, int64) {}))
		_, err = b.Get(schema.RetainedKey(key, 10))
		if kept := !errors.Is(err, meta.ErrNotFound); kept != want {
			t.Errorf("inode %d: change kept a version %v, want %v", ino, kept, want)
		}
		b.Close()
	}
}

// TestScopeWalkAboveRootEnds asks whether an inode is below a pin's root
// when its parents above the root loop as of the pin. They can: the pin
// keeps no version of records outside its scope, so reading them as of
// it mixes versions (the clone model test met one such loop and overflowed
// the stack). The answer is "not below", and the walk must end.
func TestScopeWalkAboveRootEnds(t *testing.T) {
	m := openMem(t)
	b := m.NewBatch()
	dir := func(ino, parent uint64, name string) {
		n := schema.Inode{Mode: syscall.S_IFDIR | 0o755, Nlink: 2}
		testutil.Check(t, b.Set(schema.InodeKey(ino), n.Encode()))
		testutil.Check(t, b.Set(schema.ParentKey(ino, parent, name), nil))
	}
	dir(2, rootIno, "root-of-pin")
	dir(3, 4, "a") // 3 and 4 hold each other
	dir(4, 3, "b")
	dir(5, 3, "c")
	testutil.Check(t, b.Commit(false))
	r, err := NewRetainer(m)
	testutil.Check(t, err)
	r.Add(Pinned{Version: 10, Pin: schema.Pin{Root: 2, NextIno: 100, Held: true}})
	for _, ino := range []uint64{3, 4, 5} {
		in, known, err := r.InScope(10, ino)
		testutil.Check(t, err)
		if !known || in {
			t.Errorf("inode %d: in scope %v (known %v), want false", ino, in, known)
		}
	}
}
