package volume

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestForeignCommitDuringOwnCommit: host a creates a file, and host b
// creates one in the moment between a's COMMIT (which frees the volume's
// transaction lock) and a's writes reaching its record cache, and a's
// listener hears of b's commit in that moment too. a's next create must
// take a new inode number. It took b's (a's cache kept the inode counter
// a had written, older than b's), so the two files were one inode and b's
// name read a's bytes: right size, wrong content, as a clone's file read
// once in TestMultiHostCloneWhileWriting (docs/SHARED.md, 9.3).
func TestForeignCommitDuringOwnCommit(t *testing.T) {
	e := newS3Env(t)
	first := filepath.Join(t.TempDir(), "first")
	testutil.Check(t, Init(first, InitOptions{Meta: e.dsn, Data: e.dataURL("race")}))
	second := filepath.Join(t.TempDir(), "second")
	_, _, err := Join(second, JoinOptions{Meta: e.dsn})
	testutil.Check(t, err)
	a, err := Open(first, quietLog())
	testutil.Check(t, err)
	defer a.Close()
	b, err := Open(second, quietLog())
	testutil.Check(t, err)
	defer b.Close()
	content := func(name string) []byte { return []byte(fmt.Sprintf("content of %s\n", name)) }
	for _, f := range []struct {
		v    *Volume
		name string
	}{{a, "a0"}, {b, "b0"}, {a, "a1"}} {
		testutil.Check(t, writeFile(t, f.v, f.name, content(f.name), false))
	}

	store := a.Meta.(*pgstore.Store)
	fired := false
	store.OnCommitted(func() {
		store.OnCommitted(nil)
		fired = true
		if err := writeFile(t, b, "b1", content("b1"), false); err != nil {
			t.Error(err)
		}
		a.Meta.(meta.CacheDropper).DropCaches() // what a's listener does on b's notification
	})
	testutil.Check(t, writeFile(t, a, "a2", content("a2"), false))
	if !fired {
		t.Fatal("no commit of a ran the hook")
	}
	testutil.Check(t, writeFile(t, a, "a3", content("a3"), false))

	for _, v := range []*Volume{a, b} {
		inos := map[uint64]string{}
		for _, name := range []string{"a0", "b0", "a1", "a2", "b1", "a3"} {
			at, err := v.NS.Lookup(1, name)
			testutil.Check(t, err)
			if other, dup := inos[at.Ino]; dup {
				t.Errorf("%s and %s are both inode %d", other, name, at.Ino)
			}
			inos[at.Ino] = name
			if got := readFile(t, v, name); string(got) != string(content(name)) {
				t.Errorf("%s reads %q, want %q", name, got, content(name))
			}
		}
	}
}
