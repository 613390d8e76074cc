package s3store

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// Every range a prefetch may GET gets a buffer that holds its record and
// wastes at most a fifth of it (plus the slack for header and sums); a
// default pack's whole range fits the 4 MiB class.
func TestBufferClassesFitTheirRanges(t *testing.T) {
	for n := 1; n <= 80<<20; n += 1 + n/97 {
		rb := pooledRecordBuf(n)
		size := int(cacheRecordSize(uint32(n)))
		if len(rb.data) != n || len(rb.whole) != size || &rb.data[0] != &rb.whole[headerSize] {
			t.Fatalf("range of %d bytes: data %d, whole %d bytes; want %d and %d", n, len(rb.data), len(rb.whole), n, size)
		}
		if c := cap(rb.whole); size >= minPooled && c > size+size/5+classSlack {
			t.Fatalf("range of %d bytes (record %d) got a buffer of %d", n, size, c)
		}
		if (cap(rb.whole)+blob.Align-1)&^(blob.Align-1) != cap(rb.whole) {
			t.Fatalf("buffer of %d bytes is not a multiple of %d", cap(rb.whole), blob.Align)
		}
		rb.recycle()
	}
	if i := classOf(int(cacheRecordSize(defaultPackSize))); classSizes[i] > defaultPackSize+classSlack {
		t.Fatalf("a whole pack's range takes a buffer of %d bytes", classSizes[i])
	}
}

// A prefetch's buffer goes back to the pool only when no read copies
// from it: readers of random windows of chunks, each prefetching its
// window first, over a tight budget so that ranges are dropped, recycled
// and reused all the time, always read the right bytes. (Run with -race
// too: a buffer reused under a read is a race on its bytes.)
func TestPrefetchedBuffersRecycledOnlyWhenFree(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "recycle")
	cfg.PackSize = 1 << 20
	cfg.PrefetchBytes = 3 << 20
	cfg.CacheBytes = -1 // every read from memory or S3
	s := mustOpen(t, cfg)
	defer s.Close()
	r := testutil.Rand(t)
	locs, data := putSynced(t, s, r, 400) // about 8 MiB in 8 packs
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		seed := r.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			gr := rand.New(rand.NewPCG(seed, uint64(g)))
			buf := make([]byte, 64<<10)
			for range 40 {
				from := gr.IntN(len(locs) - 40)
				window := locs[from : from+40]
				s.Prefetch(window)
				for i, l := range window {
					got, err := s.Read(l, buf)
					if err != nil || !bytes.Equal(got, data[from+i]) {
						errs <- "a prefetched chunk read wrong bytes"
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	s.prefetching.Wait()
}
