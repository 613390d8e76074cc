package content

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/sharedtest"
)

// TestConcurrentWriters runs writers on separate inodes at once, as the
// namespace does: Prepare outside any transaction, in parallel, and
// transactions one at a time. The writers share material, so their chunks
// dedup against each other while others drop and re-reference them, and
// the reclaimer runs meanwhile. Run it with -race.
func TestConcurrentWriters(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "cdc:256:1K:4K"), CacheChunks: 16, VerifyReads: true})
	r := rand.New(rand.NewPCG(71, 72))
	var motifs [][]byte
	for range 3 {
		motifs = append(motifs, testutil.RandBytes(r, 16<<10))
	}
	const writers = 4
	steps := 40
	if testing.Short() || raceEnabled {
		steps = 20
	}
	files := make([][]byte, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 73))
			ino := uint64(200 + w)
			var ref []byte
			fail := func(format string, args ...any) {
				t.Errorf("writer %d: %s", w, fmt.Sprintf(format, args...))
			}
			for range steps {
				switch r.IntN(5) {
				case 0, 1, 2:
					off := r.Int64N(int64(len(ref)) + 4096)
					// A motif, whole or shifted, so writers share chunks.
					mo := motifs[r.IntN(len(motifs))]
					data := bytes.Clone(mo[r.IntN(1024):])
					ps, n, err := v.e.Prepare(off, data, true)
					if err != nil || n != len(data) {
						fail("Prepare: %d, %v", n, err)
						return
					}
					tx, err := v.e.Begin()
					if err != nil {
						fail("Begin: %v", err)
						return
					}
					tx.Adopt(ps)
					if _, err := tx.WriteChunks(ino, ps); err != nil {
						tx.Abort()
						fail("WriteChunks: %v", err)
						return
					}
					if err := tx.Commit(false); err != nil {
						fail("Commit: %v", err)
						return
					}
					if end := off + int64(len(data)); end > int64(len(ref)) {
						ref = append(ref, make([]byte, end-int64(len(ref)))...)
					}
					copy(ref[off:], data)
				case 3:
					tx, err := v.e.Begin()
					if err != nil {
						fail("Begin: %v", err)
						return
					}
					if err := tx.DropAll(ino); err != nil {
						tx.Abort()
						fail("DropAll: %v", err)
						return
					}
					if err := tx.Commit(false); err != nil {
						fail("Commit: %v", err)
						return
					}
					ref = nil
				default:
					got := make([]byte, len(ref))
					if err := v.e.ReadAt(ino, 0, got); err != nil {
						fail("ReadAt: %v", err)
						return
					}
					if i := firstDiff(got, ref); i >= 0 {
						fail("content differs at byte %d of %d", i, len(ref))
						return
					}
				}
			}
			files[w] = ref
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for w, ref := range files {
		v.checkContent(uint64(200+w), ref)
	}
	v.checkInvariants()
	v.reopen()
	for w, ref := range files {
		v.checkContent(uint64(200+w), ref)
	}
	if sharedtest.S3() {
		return // S3 packs keep freed bytes until compaction: no space check
	}
	// Every chunk starts on a 4 KiB boundary and occupies whole blocks.
	var live int64
	for _, c := range v.allChunks() {
		live += (int64(c.Stored) + 4095) &^ 4095
	}
	if u := v.usage(); u > live+64<<10 {
		t.Errorf("blob store holds %d bytes for %d bytes of live chunk blocks", u, live)
	}
}
