package volume

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob/s3store"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// TestCompactionUnderLoad is the randomized test of compaction and the
// orphan sweep (issue 14, "Space returns"). A volume with its data in S3
// in small packs (8 KiB chunks: ones under 4 KiB would go inline in their
// records) is written with a random model workload (fresh and
// repeated data, overwrites, truncations, deletions, fsyncs) while the
// compactor rewrites every pack less than 95 % live and sweeps for
// orphans every few milliseconds, with a grace period of 20 ms before a
// rewritten pack is deleted; a reader rereads files that never change,
// whose chunks compaction keeps moving. Every read must match the model.
// Before the load, a pack that no metadata names is left in the bucket by
// an earlier session (an upload whose commit never came); the sweep must
// delete it. At the end, compaction must have rewritten and deleted
// packs (so the run tested something), a reopen with an empty read cache
// must read every file, and fsck, verifying every chunk, must be clean.
//
// DOPPEL_COMPACT_SEED replays a run; DOPPEL_COMPACT_OPS sets its length.
func TestCompactionUnderLoad(t *testing.T) {
	seed := uint64(testutil.EnvInt(t, "DOPPEL_COMPACT_SEED", int(rand.Uint32())))
	ops := testutil.EnvInt(t, "DOPPEL_COMPACT_OPS", 1500)
	t.Logf("seed %d (DOPPEL_COMPACT_SEED=%d replays it), %d ops", seed, seed, ops)
	e := newS3Env(t)
	dir := filepath.Join(t.TempDir(), "store")
	testutil.Check(t, Init(dir, InitOptions{Meta: e.dsn, Data: e.dataURL("compact"), Chunking: "fixed:8K", CacheBytes: 4 << 20}))
	tuneS3 = func(c *s3store.Config) { c.PackSize = 64 << 10 }
	t.Cleanup(func() { tuneS3 = nil })

	orphan := leaveOrphanPack(t, dir)
	t.Setenv(CompactEnv, "interval=5ms,max-live=0.95,min-reclaim=0,retire-grace=20ms,sweep=50ms")
	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	closed := false
	defer func() {
		if !closed {
			v.Close()
		}
	}()

	m := newFileModel(v, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	frozen := m.writeFrozen(t, 6)
	frozenData := map[string][]byte{} // the reader's own copy: m.files changes under the steps
	for _, name := range frozen {
		frozenData[name] = m.files[name]
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readErr := make(chan error, 1)
	readers.Add(1)
	go func() {
		defer readers.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := frozen[i%len(frozen)]
			if err := m.check(name, frozenData[name]); err != nil {
				readErr <- fmt.Errorf("frozen file: %w", err)
				return
			}
		}
	}()
	for i := range ops {
		if err := m.step(); err != nil {
			close(stop)
			readers.Wait()
			t.Fatalf("op %d (seed %d): %v", i, seed, err)
		}
	}
	close(stop)
	readers.Wait()
	select {
	case err := <-readErr:
		t.Fatalf("seed %d: %v", seed, err)
	default:
	}
	for name, want := range m.all() {
		if err := m.check(name, want); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	c := v.Engine.Counters()
	t.Logf("compaction: %d packs retired, %d deleted, %d bytes moved", c.PacksRetired, c.PacksDeleted, c.CompactedBytes)
	if c.PacksRetired == 0 || c.PacksDeleted == 0 || c.CompactedBytes == 0 {
		t.Fatalf("seed %d: compaction did nothing (%+v): the test exercised nothing", seed, c)
	}
	if slices.Contains(e.objects(t, "compact"), orphanKey(orphan)) {
		t.Errorf("orphan pack %d still in the bucket after the sweeps", orphan)
	}
	files := m.all()
	closed = true
	testutil.Check(t, v.Close())

	checkClean(t, dir)
	testutil.Check(t, os.RemoveAll(filepath.Join(dir, S3Dir)))
	v, err = Open(dir, quietLog())
	testutil.Check(t, err)
	closed = false
	m.v = v
	for name, want := range files {
		if err := m.check(name, want); err != nil {
			t.Fatalf("after reopening with an empty cache (seed %d): %v", seed, err)
		}
	}
	// The reopened volume compacts and sweeps the first session's packs.
	for _, name := range frozen {
		testutil.Check(t, m.write(name, 0, m.data(4096), true))
	}
	time.Sleep(200 * time.Millisecond)
	testutil.Check(t, v.Close())
	testutil.Check(t, os.RemoveAll(filepath.Join(dir, S3Dir)))
	checkClean(t, dir)
}

// leaveOrphanPack opens the volume in dir once, uploads a pack no
// metadata names and closes it cleanly: recovery leaves such a pack to
// the sweep.
func leaveOrphanPack(t *testing.T, dir string) uint32 {
	t.Helper()
	t.Setenv(CompactEnv, "interval=off")
	v, err := Open(dir, quietLog())
	testutil.Check(t, err)
	loc, err := v.Blobs.Put(testutil.SeededBytes(9, 40<<10))
	testutil.Check(t, err)
	testutil.Check(t, v.Blobs.Sync())
	testutil.Check(t, v.Close())
	return loc.Segment
}

func orphanKey(num uint32) string { return fmt.Sprintf("compact/packs/%08x", num) }

// fileModel is the reference: the bytes each file should hold.
type fileModel struct {
	v     *Volume
	r     *rand.Rand
	mu    sync.Mutex // files, for the reader of frozen files
	files map[string][]byte
	pool  [][]byte // blocks written again and again: shared chunks
}

func newFileModel(v *Volume, r *rand.Rand) *fileModel {
	m := &fileModel{v: v, r: r, files: map[string][]byte{}}
	for i := range 8 {
		m.pool = append(m.pool, testutil.SeededBytes(uint64(100+i), 4096))
	}
	return m
}

func (m *fileModel) all() map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]byte, len(m.files))
	for k, b := range m.files {
		out[k] = b
	}
	return out
}

// writeFrozen writes n files that never change again, each between
// files that are deleted at once, so that their packs are mostly dead.
func (m *fileModel) writeFrozen(t *testing.T, n int) []string {
	var names []string
	for i := range n {
		name := "frozen" + strconv.Itoa(i)
		data := m.data(8<<10 + m.r.IntN(120<<10))
		testutil.Check(t, m.write(name, 0, data, m.r.IntN(2) == 0))
		testutil.Check(t, m.write("garbage", 0, m.data(200<<10), false))
		testutil.Check(t, m.v.NS.Unlink(1, "garbage"))
		m.mu.Lock()
		delete(m.files, "garbage")
		m.mu.Unlock()
		names = append(names, name)
	}
	return names
}

// data is n bytes, each 4 KiB block fresh or from the pool.
func (m *fileModel) data(n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		if m.r.IntN(2) == 0 {
			out = append(out, m.pool[m.r.IntN(len(m.pool))]...)
		} else {
			out = append(out, testutil.RandBytes(m.r, 4096)...)
		}
	}
	return out[:n]
}

// step does one random operation on the churned files.
func (m *fileModel) step() error {
	name := "f" + strconv.Itoa(m.r.IntN(8))
	m.mu.Lock()
	cur, exists := m.files[name]
	m.mu.Unlock()
	switch k := m.r.IntN(20); {
	case k < 10:
		off := 0
		if exists {
			off = m.r.IntN(len(cur) + 16<<10)
		}
		return m.write(name, off, m.data(1+m.r.IntN(96<<10)), m.r.IntN(8) == 0)
	case k < 13 && exists:
		size := m.r.IntN(len(cur) + 1)
		ino, err := m.v.NS.Lookup(1, name)
		if err != nil {
			return err
		}
		if _, err := m.v.NS.SetAttr(vfs.Caller{}, ino.Ino, vfs.SetAttr{SetSize: true, Size: int64(size)}); err != nil {
			return err
		}
		m.set(name, cur[:size:size])
	case k < 15 && exists:
		if err := m.v.NS.Unlink(1, name); err != nil {
			return err
		}
		m.mu.Lock()
		delete(m.files, name)
		m.mu.Unlock()
	case exists:
		return m.check(name, cur)
	}
	return nil
}

func (m *fileModel) set(name string, data []byte) {
	m.mu.Lock()
	m.files[name] = data
	m.mu.Unlock()
}

// write writes data at off of name (created if missing), closes it
// (with fsync if sync) and updates the model.
func (m *fileModel) write(name string, off int, data []byte, sync bool) error {
	m.mu.Lock()
	cur, exists := m.files[name]
	m.mu.Unlock()
	var h vfs.Handle
	var err error
	if exists {
		a, lerr := m.v.NS.Lookup(1, name)
		if lerr != nil {
			return lerr
		}
		h, err = m.v.NS.Open(a.Ino, syscall.O_WRONLY)
	} else {
		_, h, err = m.v.NS.Create(vfs.Caller{}, 1, name, 0o644, syscall.O_WRONLY)
	}
	if err != nil {
		return err
	}
	if _, err := m.v.NS.Write(h, int64(off), data); err != nil {
		m.v.NS.Release(h)
		return err
	}
	if sync {
		err = m.v.NS.Fsync(h, false)
	}
	if err = cmpErr(err, m.v.NS.Flush(h), m.v.NS.Release(h)); err != nil {
		return err
	}
	next := make([]byte, max(len(cur), off+len(data)))
	copy(next, cur)
	copy(next[off:], data)
	m.set(name, next)
	return nil
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// check reads name whole and compares it with want.
func (m *fileModel) check(name string, want []byte) error {
	a, err := m.v.NS.Lookup(1, name)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	h, err := m.v.NS.Open(a.Ino, syscall.O_RDONLY)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer m.v.NS.Release(h)
	got := make([]byte, len(want)+1)
	n, err := m.v.NS.Read(h, 0, got)
	if err != nil {
		return fmt.Errorf("%s: read: %w", name, err)
	}
	if !bytes.Equal(got[:n], want) {
		at := 0
		for at < min(n, len(want)) && got[at] == want[at] {
			at++
		}
		return fmt.Errorf("%s: %d bytes read, want %d; first difference at %d", name, n, len(want), at)
	}
	return nil
}
