package namespace_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// A patch of a file that changed after the diff took its snapshot, whose
// chunks the snapshot names were freed meanwhile, is left out with a
// note instead of failing the diff.
func TestDiffPatchOfFileChangedMeanwhile(t *testing.T) {
	v, _ := openPruned(t)
	src := testutil.Must(v.NS.Mkdir(root, vfs.RootIno, "src", 0o755)).Ino
	text := func(word string) string {
		return strings.Repeat(word+" line of text\n", 20000) // 400 KiB: chunks in segments
	}
	writeFile(t, v.NS, src, "f", []byte(text("first")))
	testutil.Must(v.NS.ClonePath("/src", "/c", namespace.CloneOptions{}))
	rewrite(t, v, src, "f", text("second"))
	namespace.OnDiffSnapshot(t, func() {
		before := v.Engine.ReclaimedBytes()
		rewrite(t, v, src, "f", text("third!"))
		testutil.Must(0, v.NS.SyncFS())
		for deadline := time.Now().Add(20 * time.Second); v.Engine.ReclaimedBytes() == before; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("the overwritten chunks were not reclaimed")
				return
			}
		}
	})
	d, err := v.NS.Diff(context.Background(), "/c", "/src", namespace.DiffOptions{Patch: true})
	if err != nil {
		t.Fatalf("diff --patch of a file changed meanwhile: %v", err)
	}
	if len(d.Entries) != 1 || !strings.Contains(d.Entries[0].Patch, "changed while compared") {
		t.Fatalf("diff --patch: %+v", d.Entries)
	}
}
