package crashtest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/namespace"
	dvfs "github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

var seedFlag = flag.Uint64("seed", 0, "seed for TestPowerLoss (0: time-based)")

// TestPowerLoss runs random file operations on a volume and cuts the power
// at a random moment: every write neither store synced is dropped. The
// volume is then opened again (crash recovery runs) and checked:
//   - every file fsync'd and not touched since holds exactly its content;
//   - every file holds a prefix of some content written to a file, never
//     zeros or bytes that were never written;
//   - fsck, reading and hashing all data, finds nothing at all, not even
//     space to reclaim.
//
// DOPPEL_POWERLOSS_ROUNDS sets the number of power cuts (default 12), each
// on a fresh volume; -seed replays one (timing varies: background flushes
// and syncs run on timers, so a replay may cut elsewhere).
func TestPowerLoss(t *testing.T) {
	runPowerLoss(t, "TestPowerLoss", 12, "cdc:4K:16K:64K", func(target *powerTarget, r *rand.Rand, seed uint64) powerWorkload {
		return &plWriter{target: target, r: r, seed: seed, steps: 20 + r.IntN(150), manifest: map[string][]byte{}, live: map[string][]byte{}}
	})
}

// powerWorkload is a Workload that says what it checked.
type powerWorkload interface {
	Workload
	checked() (files, fsynced int)
}

// runPowerLoss runs the power cuts of test (its name, for the replay
// line; rounds of them unless DOPPEL_POWERLOSS_ROUNDS says) on fresh
// volumes cut in chunks by chunking, each running the workload made for
// it.
func runPowerLoss(t *testing.T, test string, rounds int, chunking string, workload func(*powerTarget, *rand.Rand, uint64) powerWorkload) {
	if s := os.Getenv("DOPPEL_POWERLOSS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("DOPPEL_POWERLOSS_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	var files, fsynced, dropped int
	for i := range rounds {
		s := seed + uint64(i)
		f, m, d := powerLossRound(t, s, chunking, workload)
		if t.Failed() {
			t.Fatalf("round %d failed; replay: go test ./internal/crashtest -run '^%s$' -seed=%d (DOPPEL_POWERLOSS_ROUNDS=1)", i, test, s)
		}
		files, fsynced, dropped = files+f, fsynced+m, dropped+d
	}
	t.Logf("power loss: %d cuts (seeds %d..%d), %d files (or disk blocks) checked, %d of them synced and untouched since, %d unsynced chunk writes dropped or undone",
		rounds, seed, seed+uint64(rounds)-1, files, fsynced, dropped)
}

// powerLossRound runs one volume up to a power cut and checks it after.
func powerLossRound(t *testing.T, seed uint64, chunking string, workload func(*powerTarget, *rand.Rand, uint64) powerWorkload) (files, fsynced, dropped int) {
	r := rand.New(rand.NewPCG(seed, 1))
	target := &powerTarget{
		dir: t.TempDir(), memfs: vfs.NewStrictMem(), tear: rand.New(rand.NewPCG(seed, 2)),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		nsOpt: namespace.Options{
			FlushInterval: time.Duration(5+r.IntN(50)) * time.Millisecond,
			SyncInterval:  time.Duration(20+r.IntN(300)) * time.Millisecond,
			StreamFlush:   256 << 10,
		},
	}
	if err := target.memfs.MkdirAll("/meta", 0o755); err != nil {
		t.Fatal(err)
	}
	syncRoot(t, target.memfs)
	m, err := meta.OpenPebbleFS("/meta", target.memfs)
	if err != nil {
		t.Fatal(err)
	}
	if err := volume.InitOn(m, volume.InitOptions{Chunking: chunking}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	target.Restart(t)
	defer func() { target.v.Close() }()
	w := workload(target, r, seed)
	// The cut comes when the writer has made its steps: the run replays
	// exactly from its seed.
	Cycle(t, target, w, time.Hour)
	files, fsynced = w.checked()
	return files, fsynced, target.dropped
}

// powerTarget is a volume on stores that lose what was not synced when
// the power goes.
type powerTarget struct {
	dir     string
	memfs   *vfs.MemFS
	log     *slog.Logger
	nsOpt   namespace.Options
	boot    int
	tear    *rand.Rand // which unsynced writes in place the cut undoes
	v       *volume.Volume
	blobs   *lossyBlobs
	fence   *fence // this boot's metadata file system operations
	dropped int    // unsynced chunk writes the cut dropped
}

func (p *powerTarget) Crash(t *testing.T) {
	// Nothing written from now on is durable.
	p.memfs.SetIgnoreSyncs(true)
	p.blobs.cutPower()
	p.v.Close() // fails: the stores refuse or forget everything
	// A metadata store that failed is left open: nothing it does from
	// now on may reach the file system.
	p.fence.close()
	p.memfs.ResetToSyncedState()
	p.memfs.SetIgnoreSyncs(false)
	n, err := p.blobs.loseUnsynced()
	if err != nil {
		t.Fatal(err)
	}
	p.dropped += n
}

func (p *powerTarget) Restart(t *testing.T) {
	t.Helper()
	p.boot++
	p.fence = &fence{}
	m, err := meta.OpenPebbleFS("/meta", freshLocks{fencedFS{p.memfs, p.fence}, p.boot})
	if err != nil {
		t.Fatal(err)
	}
	if p.blobs, err = openLossyBlobs(filepath.Join(p.dir, "chunks"), p.tear); err != nil {
		t.Fatal(err)
	}
	if p.v, err = volume.OpenOn(p.dir, m, p.blobs, p.log, p.nsOpt); err != nil {
		t.Fatal(err)
	}
}

// Check runs fsck, reading and hashing all data: it must find nothing at
// all, not even space to reclaim.
func (p *powerTarget) Check(t *testing.T) {
	rep, err := fsck.Check(p.v.FsckStores(), fsck.Options{VerifyData: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range rep.Problems {
		t.Errorf("fsck after power loss: %s %s %s %s", pr.Severity, pr.Kind, pr.Path, pr.Detail)
	}
}

// freshLocks gives each boot its own lock files: the kernel drops a dead
// process's locks, but a store that failed at the power cut (it refuses to
// close) keeps its lock in the in-memory file system.
type freshLocks struct {
	vfs.FS
	boot int
}

func (f freshLocks) Lock(name string) (io.Closer, error) {
	return f.FS.Lock(fmt.Sprintf("%s.boot%d", name, f.boot))
}

func syncRoot(t *testing.T, fs vfs.FS) {
	t.Helper()
	d, err := fs.OpenDir("/")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// plWriter applies random operations to the volume's root directory and
// remembers what may legitimately be found after a power loss.
type plWriter struct {
	target   *powerTarget // the volume it writes to
	fs       dvfs.FS
	r        *rand.Rand
	seed     uint64
	steps    int // operations before the cut
	files    int // checked after it
	fsynced  int // of those, fsync'd and untouched since
	next     int
	written  [][]byte          // every content a file was given
	live     map[string][]byte // content after every operation
	manifest map[string][]byte // fsync'd and untouched since
}

var caller = dvfs.Caller{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}

func (w *plWriter) names() []string {
	out := make([]string, 0, len(w.live))
	for n := range w.live {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (w *plWriter) content() []byte {
	if len(w.written) > 0 && w.r.IntN(4) == 0 { // shared chunks
		return bytes.Clone(w.written[w.r.IntN(len(w.written))])
	}
	b := make([]byte, w.r.IntN(600<<10))
	for i := 0; i < len(b); i += 8 {
		v := w.r.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func (w *plWriter) step() error {
	names := w.names()
	pick := func() string { return names[w.r.IntN(len(names))] }
	switch op := w.r.IntN(10); {
	case op < 4 || len(names) == 0:
		w.next++
		return w.create(fmt.Sprintf("f%04d", w.next), w.content(), w.r.IntN(2) == 0)
	case op < 6:
		extra := w.content()
		return w.appendTo(pick(), extra[:min(len(extra), w.r.IntN(64<<10))], w.r.IntN(3) == 0)
	case op < 8:
		from, to := pick(), pick()
		if from == to {
			return nil
		}
		if err := w.fs.Rename(dvfs.RootIno, from, dvfs.RootIno, to, 0); err != nil {
			return fmt.Errorf("rename %s %s: %w", from, to, err)
		}
		w.live[to] = w.live[from]
		delete(w.live, from)
		delete(w.manifest, from)
		delete(w.manifest, to)
		return nil
	default:
		name := pick()
		if err := w.fs.Unlink(dvfs.RootIno, name); err != nil {
			return fmt.Errorf("unlink %s: %w", name, err)
		}
		delete(w.live, name)
		delete(w.manifest, name)
		return nil
	}
}

func (w *plWriter) create(name string, data []byte, fsync bool) error {
	w.written = append(w.written, data)
	_, h, err := w.fs.Create(caller, dvfs.RootIno, name, 0o644, uint32(os.O_WRONLY))
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	if err := w.writeAll(h, 0, data, fsync); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	w.live[name] = data
	delete(w.manifest, name)
	if fsync {
		w.manifest[name] = data
	}
	return nil
}

func (w *plWriter) appendTo(name string, extra []byte, fsync bool) error {
	a, err := w.fs.Lookup(dvfs.RootIno, name)
	if err != nil {
		return fmt.Errorf("lookup %s: %w", name, err)
	}
	h, err := w.fs.Open(a.Ino, uint32(os.O_WRONLY))
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	whole := append(bytes.Clone(w.live[name]), extra...)
	w.written = append(w.written, whole)
	if err := w.writeAll(h, a.Size, extra, fsync); err != nil {
		return fmt.Errorf("append to %s: %w", name, err)
	}
	w.live[name] = whole
	delete(w.manifest, name)
	if fsync {
		w.manifest[name] = whole
	}
	return nil
}

// writeAll writes data at off in pieces of random size, then optionally
// fsyncs, then closes.
func (w *plWriter) writeAll(h dvfs.Handle, off int64, data []byte, fsync bool) error {
	for len(data) > 0 {
		n := min(len(data), 1+w.r.IntN(128<<10))
		if _, err := w.fs.Write(h, off, data[:n]); err != nil {
			w.fs.Release(h)
			return err
		}
		off, data = off+int64(n), data[n:]
	}
	var err error
	if fsync {
		err = w.fs.Fsync(h, false)
	}
	return errors.Join(err, w.fs.Flush(h), w.fs.Release(h))
}

// Run implements crashtest.Workload: its steps, with pauses that let
// background flushes and syncs run.
func (w *plWriter) Run(*atomic.Bool) error {
	w.fs = w.target.v.NS
	return runSteps(w.r, w.seed, w.steps, w.step)
}

// runSteps runs step n times, pausing now and then for up to 30 ms so
// that background flushes and syncs run between steps.
func runSteps(r *rand.Rand, seed uint64, n int, step func() error) error {
	for i := range n {
		if err := step(); err != nil {
			return fmt.Errorf("seed %d: operation %d: %w", seed, i, err)
		}
		if r.IntN(8) == 0 {
			time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		}
	}
	return nil
}

// Verify implements crashtest.Workload.
func (w *plWriter) Verify(t *testing.T) bool {
	w.fs = w.target.v.NS
	failed := t.Failed()
	w.files, w.fsynced = w.verify(t, w.seed)
	return failed || !t.Failed()
}

func (w *plWriter) checked() (files, fsynced int) { return w.files, w.fsynced }

// verify checks the volume after the power loss and returns how many files
// it checked and how many of them were in the manifest.
func (w *plWriter) verify(t *testing.T, seed uint64) (files, fsynced int) {
	t.Helper()
	ents, err := w.fs.ReadDir(dvfs.RootIno)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, e := range ents {
		if e.Name == "." || e.Name == ".." {
			continue
		}
		found[e.Name] = true
		got, err := readAll(w.fs, e.Ino)
		if err != nil {
			t.Errorf("seed %d: read %s after power loss: %v", seed, e.Name, err)
			continue
		}
		files++
		if want, ok := w.manifest[e.Name]; ok {
			fsynced++
			if !bytes.Equal(got, want) {
				t.Errorf("seed %d: %s was fsync'd with %d bytes; after power loss it has %d", seed, e.Name, len(want), len(got))
			}
			continue
		}
		if !slices.ContainsFunc(w.written, func(c []byte) bool { return bytes.HasPrefix(c, got) }) {
			t.Errorf("seed %d: %s holds %d bytes that are not a prefix of anything written", seed, e.Name, len(got))
		}
	}
	for name := range w.manifest {
		if !found[name] {
			t.Errorf("seed %d: %s was fsync'd and not touched since, but it is gone", seed, name)
		}
	}
	return files, fsynced
}
