package blob

import (
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/testutil"
)

// openDirectT opens a store with direct writes, skipping the test where
// the host file system refuses O_DIRECT.
func openDirectT(t *testing.T, opt Options) *Dir {
	t.Helper()
	d := openT(t, t.TempDir(), opt)
	put(t, d, []byte("probe"))       // opens the active segment
	if err := d.Sync(); err != nil { // and waits for its write: tests replace writevAt
		t.Fatal(err)
	}
	d.mu.Lock()
	direct := d.active.direct != nil
	d.mu.Unlock()
	if !direct {
		d.Close()
		t.Skip("the host file system refuses O_DIRECT")
	}
	return d
}

// residentPages counts the pages of f's first n bytes in the page cache.
func residentPages(t *testing.T, f *os.File, n int) int {
	t.Helper()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (n+os.Getpagesize()-1)/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(m))), uintptr(n), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		t.Fatal(errno)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident
}

// TestDirectWritesBypassPageCache: chunks written to the active segment
// do not land in the host's page cache (buffered ones do, and so do those
// written with StartPutManyCached), and read back intact.
func TestDirectWritesBypassPageCache(t *testing.T) {
	for _, mode := range []string{"direct", "buffered", "cached"} {
		var d *Dir
		if mode == "buffered" {
			d = openT(t, t.TempDir(), Options{BufferedWrites: true})
		} else {
			d = openDirectT(t, Options{})
		}
		r := rand.New(rand.NewPCG(40, 41))
		var all [][]byte
		for range 64 {
			all = append(all, testutil.RandBytes(r, 64<<10)) // 1 MiB writes: direct
		}
		var locs []Loc
		var err error
		if mode == "cached" {
			var w *Writing
			if w, err = d.StartPutManyCached(all); err == nil {
				locs, err = w.Locs, w.Wait()
			}
		} else {
			locs, err = d.PutMany(all)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(d.segPath(locs[0].Segment))
		if err != nil {
			t.Fatal(err)
		}
		end := int(locs[len(locs)-1].Offset) + len(all[len(all)-1])
		resident := residentPages(t, f, end)
		f.Close()
		t.Logf("%s: %d of %d pages resident", mode, resident, (end+4095)/4096)
		if mode != "direct" && resident < (end+4095)/4096/2 {
			t.Errorf("%s writes left %d of %d pages in the page cache", mode, resident, (end+4095)/4096)
		}
		if mode == "direct" && resident > 1 { // the probe's page may be cached
			t.Errorf("direct writes left %d pages in the page cache", resident)
		}
		for i, loc := range locs {
			checkRead(t, d, loc, all[i])
		}
		d.Close()
	}
}

// TestReadWaitsForDirectWrite: a read of a location whose direct write is
// still in flight (StartPutMany returned, Wait not yet) returns the
// written bytes, not what the disk held before.
func TestReadWaitsForDirectWrite(t *testing.T) {
	d := openDirectT(t, Options{})
	defer d.Close()
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	defer free() // before Close, which waits for the write
	entered := make(chan struct{}, 1)
	orig := writevAt
	writevAt = func(f *os.File, iovs [][]byte, off int64) (int, error) {
		entered <- struct{}{}
		<-release
		return orig(f, iovs, off)
	}
	defer func() { writevAt = orig }()
	data := testutil.RandBytes(rand.New(rand.NewPCG(42, 43)), directMinBytes+5) // large enough to go direct
	w, err := d.StartPutMany([][]byte{data})
	if err != nil {
		t.Fatal(err)
	}
	loc := w.Locs[0]
	<-entered
	read := make(chan error, 1)
	go func() {
		got, err := d.Read(loc, nil)
		if err == nil && string(got) != string(data) {
			err = errors.New("read returned other bytes than written")
		}
		read <- err
	}()
	select {
	case err := <-read:
		t.Fatalf("read finished before the write did: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	free()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestDirectWriteRefused: a host that accepts O_DIRECT on open but
// refuses the writes (EINVAL) gets the bytes through the page cache, and
// later segments are written buffered.
func TestDirectWriteRefused(t *testing.T) {
	d := openDirectT(t, Options{SegmentSize: 2 * directMinBytes})
	defer d.Close()
	var refused atomic.Int32
	orig := writevAt
	writevAt = func(f *os.File, iovs [][]byte, off int64) (int, error) {
		flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		if err == nil && flags&unix.O_DIRECT != 0 {
			refused.Add(1)
			return 0, syscall.EINVAL
		}
		return orig(f, iovs, off)
	}
	defer func() { writevAt = orig }()
	r := rand.New(rand.NewPCG(46, 47))
	a, b := testutil.RandBytes(r, directMinBytes), testutil.RandBytes(r, directMinBytes)
	la := put(t, d, a)
	if err := d.Sync(); err != nil { // the refusal is known from here on
		t.Fatal(err)
	}
	lb := put(t, d, b) // into a new segment
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	checkRead(t, d, la, a)
	checkRead(t, d, lb, b)
	if refused.Load() != 1 {
		t.Errorf("%d direct writes refused, want 1 (then buffered only)", refused.Load())
	}
}
