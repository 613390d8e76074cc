package crashtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/frontend/blockfile"
	dvfs "github.com/doppelfs/doppel/internal/vfs"
)

// TestPowerLossInPlace is TestPowerLoss for disk images: two files cut in
// fixed 4 KiB blocks, written through the block export's file layer, so
// that most writes go over owned blocks in place (their bytes reach the
// segment files before the commit that names them, and only a Sync, not a
// metadata flush, makes them durable), with trims, copies between the two
// files (shared blocks, written copy-on-write), repeated blocks (dedup),
// zero blocks, FUA writes and flushes. After the cut:
//   - every block no write touched since its file's last flush holds
//     exactly what it held then;
//   - every other block holds, in each 512-byte sector, that sector of
//     what the block held at the last flush or of something written to
//     it since: a write not flushed may be lost, whole or torn, but a
//     block never shows bytes that were not written to it;
//   - fsck, reading and hashing all data, finds nothing at all.
//
// The chunk store undoes unsynced writes in place wholly, in part or not
// at all (lossyBlobs). 40 cuts by default (about 10 s): each of the three
// faults this test found failed it once in 50 to 400 cuts.
// DOPPEL_POWERLOSS_ROUNDS and -seed as for TestPowerLoss.
func TestPowerLossInPlace(t *testing.T) {
	var overwritten int64
	runPowerLoss(t, "TestPowerLossInPlace", 40, "fixed:4K", func(target *powerTarget, r *rand.Rand, seed uint64) powerWorkload {
		return &diskWriter{target: target, r: r, seed: seed, steps: 30 + r.IntN(150), overwritten: &overwritten}
	})
	if overwritten == 0 {
		t.Error("no block was written in place: the test does not exercise what it is for")
	}
	t.Logf("%d blocks written in place before the cuts", overwritten)
}

const diskBlock = 4096

// disk is one disk image file and what each of its blocks may hold.
type disk struct {
	name    string
	ino     uint64
	file    *blockfile.File
	h       dvfs.Handle // for copies between the disks
	now     [][]byte    // each block's content (nil: zeros)
	flushed [][]byte    // each block at the file's last flush
	since   [][][]byte  // what each block was given since
}

func (d *disk) blocks() int { return len(d.now) }

// give records that block b now holds data.
func (d *disk) give(b int, data []byte) {
	d.now[b] = data
	d.since[b] = append(d.since[b], data)
}

func (d *disk) flush() {
	copy(d.flushed, d.now)
	clear(d.since)
}

// diskWriter applies random block commands to two disk images.
type diskWriter struct {
	target      *powerTarget
	fs          dvfs.FS
	r           *rand.Rand
	seed        uint64
	steps       int
	disks       []*disk
	written     [][]byte // blocks written so far, for repeats
	checks      int      // blocks checked after the cut
	exact       int      // of them, flushed and untouched since
	overwritten *int64   // blocks written in place, over all rounds
}

// Run implements Workload.
func (w *diskWriter) Run(*atomic.Bool) error {
	w.fs = w.target.v.NS
	for i := range 2 {
		d, err := w.createDisk(fmt.Sprintf("disk%d.img", i), 16+w.r.IntN(300))
		if err != nil {
			return fmt.Errorf("seed %d: %w", w.seed, err)
		}
		w.disks = append(w.disks, d)
	}
	err := runSteps(w.r, w.seed, w.steps, w.step)
	*w.overwritten += w.target.v.Engine.Counters().OverwrittenBlocks
	return err
}

// createDisk makes a sparse disk image of n blocks, flushed.
func (w *diskWriter) createDisk(name string, n int) (*disk, error) {
	a, h, err := w.fs.Create(caller, dvfs.RootIno, name, 0o644, uint32(os.O_RDWR))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := w.fs.SetAttr(caller, a.Ino, dvfs.SetAttr{SetSize: true, Size: int64(n) * diskBlock}); err != nil {
		return nil, fmt.Errorf("size %s: %w", name, err)
	}
	f, err := blockfile.Open(w.fs, a.Ino, false, nil)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	if err := f.Flush(); err != nil {
		return nil, fmt.Errorf("flush %s: %w", name, err)
	}
	return &disk{name: name, ino: a.Ino, file: f, h: h, now: make([][]byte, n), flushed: make([][]byte, n), since: make([][][]byte, n)}, nil
}

// block returns new bytes for a block: random, a repeat of one written
// before (a shared chunk), or zeros (nil: stored as a hole).
func (w *diskWriter) block() []byte {
	switch k := w.r.IntN(20); {
	case k < 3:
		return nil
	case k < 7 && len(w.written) > 0:
		return w.written[w.r.IntN(len(w.written))]
	}
	b := make([]byte, diskBlock)
	for i := 0; i < len(b); i += 8 {
		v := w.r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	w.written = append(w.written, b)
	return b
}

// span picks a run of up to max blocks of d.
func (w *diskWriter) span(d *disk, max int) (start, n int) {
	start = w.r.IntN(d.blocks())
	return start, 1 + w.r.IntN(min(max, d.blocks()-start))
}

func (w *diskWriter) step() error {
	d := w.disks[w.r.IntN(len(w.disks))]
	switch op := w.r.IntN(100); {
	case op < 55:
		start, n := w.span(d, 16)
		buf := make([]byte, 0, n*diskBlock)
		for b := start; b < start+n; b++ {
			data := w.block()
			d.give(b, data)
			if data == nil {
				data = make([]byte, diskBlock)
			}
			buf = append(buf, data...)
		}
		fua := w.r.IntN(10) == 0
		if err := d.file.WriteAt(buf, int64(start)*diskBlock, fua); err != nil {
			return fmt.Errorf("write %s blocks %d+%d: %w", d.name, start, n, err)
		}
		if fua {
			d.flush()
		}
		return nil
	case op < 67:
		start, n := w.span(d, 32)
		for b := start; b < start+n; b++ {
			d.give(b, nil)
		}
		if err := d.file.Trim(int64(start)*diskBlock, int64(n)*diskBlock); err != nil {
			return fmt.Errorf("trim %s blocks %d+%d: %w", d.name, start, n, err)
		}
		return nil
	case op < 77:
		src := w.disks[1-w.diskIndex(d)]
		start, n := w.span(src, 32)
		at := w.r.IntN(d.blocks())
		n = min(n, d.blocks()-at)
		if _, err := w.fs.CopyFileRange(src.h, int64(start)*diskBlock, d.h, int64(at)*diskBlock, int64(n)*diskBlock); err != nil {
			return fmt.Errorf("copy %s blocks %d+%d to %s at %d: %w", src.name, start, n, d.name, at, err)
		}
		for i := range n {
			d.give(at+i, src.now[start+i])
		}
		return nil
	case op < 90:
		if err := d.file.Flush(); err != nil {
			return fmt.Errorf("flush %s: %w", d.name, err)
		}
		d.flush()
		return nil
	default:
		start, n := w.span(d, 64)
		got := make([]byte, n*diskBlock)
		if _, err := d.file.ReadAt(got, int64(start)*diskBlock); err != nil {
			return fmt.Errorf("read %s blocks %d+%d: %w", d.name, start, n, err)
		}
		for i := range n {
			if want := orZeros(d.now[start+i]); !bytes.Equal(got[i*diskBlock:(i+1)*diskBlock], want) {
				return fmt.Errorf("%s block %d reads other bytes than were written to it", d.name, start+i)
			}
		}
		return nil
	}
}

func (w *diskWriter) diskIndex(d *disk) int {
	if w.disks[0] == d {
		return 0
	}
	return 1
}

// Verify implements Workload.
func (w *diskWriter) Verify(t *testing.T) bool {
	t.Helper()
	w.fs = w.target.v.NS
	failed := t.Failed()
	for _, d := range w.disks {
		w.verifyDisk(t, d)
	}
	return failed || !t.Failed()
}

func (w *diskWriter) verifyDisk(t *testing.T, d *disk) {
	t.Helper()
	a, err := w.fs.Lookup(dvfs.RootIno, d.name)
	if err != nil {
		t.Errorf("seed %d: %s after power loss: %v", w.seed, d.name, err)
		return
	}
	got, err := readAll(w.fs, a.Ino)
	if err != nil {
		t.Errorf("seed %d: read %s after power loss: %v", w.seed, d.name, err)
		w.findUnreadable(t, d, a.Ino)
		return
	}
	if len(got) != d.blocks()*diskBlock {
		t.Errorf("seed %d: %s has %d bytes after power loss, not %d", w.seed, d.name, len(got), d.blocks()*diskBlock)
		return
	}
	for b := range d.blocks() {
		w.checks++
		block := got[b*diskBlock : (b+1)*diskBlock]
		if len(d.since[b]) == 0 {
			w.exact++
			if !bytes.Equal(block, orZeros(d.flushed[b])) {
				t.Errorf("seed %d: %s block %d was flushed with %s and not written since, but it holds %s", w.seed, d.name, b, w.describe(d.flushed[b]), w.describe(block))
			}
			continue
		}
		if sector := foreignSector(block, append([][]byte{d.flushed[b]}, d.since[b]...)); sector >= 0 {
			t.Errorf("seed %d: %s block %d, sector %d, holds %s, never written there (it held %s at the flush; since: %v)",
				w.seed, d.name, b, sector, w.describe(block), w.describe(d.flushed[b]), w.describeAll(d.since[b]))
		}
	}
}

func (w *diskWriter) checked() (int, int) { return w.checks, w.exact }

// foreignSector returns the first 512-byte sector of block that is not
// that sector of any of candidates (nil: zeros), or -1.
func foreignSector(block []byte, candidates [][]byte) int {
	const sector = 512
	for s := 0; s < len(block); s += sector {
		found := false
		for _, c := range candidates {
			if bytes.Equal(block[s:s+sector], orZeros(c)[s:s+sector]) {
				found = true
				break
			}
		}
		if !found {
			return s / sector
		}
	}
	return -1
}

var zeroBlock = make([]byte, diskBlock)

func orZeros(b []byte) []byte {
	if b == nil {
		return zeroBlock
	}
	return b
}

// readAll reads the whole file ino of fs.
func readAll(fs dvfs.FS, ino uint64) ([]byte, error) {
	a, err := fs.GetAttr(ino)
	if err != nil {
		return nil, err
	}
	h, err := fs.Open(ino, uint32(os.O_RDONLY))
	if err != nil {
		return nil, err
	}
	defer fs.Release(h)
	buf := make([]byte, a.Size)
	for off := 0; off < len(buf); {
		n, err := fs.Read(h, int64(off), buf[off:])
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("short read at %d of %d", off, len(buf))
		}
		off += n
	}
	return buf, nil
}

// findUnreadable reports the first block of d that fails to read, and
// what it should hold.
func (w *diskWriter) findUnreadable(t *testing.T, d *disk, ino uint64) {
	t.Helper()
	h, err := w.fs.Open(ino, uint32(os.O_RDONLY))
	if err != nil {
		return
	}
	defer w.fs.Release(h)
	buf := make([]byte, diskBlock)
	for b := range d.blocks() {
		if _, err := w.fs.Read(h, int64(b)*diskBlock, buf); err != nil {
			t.Errorf("seed %d: %s block %d: %v (it held %s at the flush; since: %v)", w.seed, d.name, b, err, w.describe(d.flushed[b]), w.describeAll(d.since[b]))
			return
		}
	}
}

// describe names block content for a failure message: zeros, the n-th
// block the writer made, or other bytes.
func (w *diskWriter) describe(b []byte) string {
	if b == nil || bytes.Equal(b, zeroBlock) {
		return "zeros"
	}
	for i, x := range w.written {
		if bytes.Equal(x, b) {
			return fmt.Sprint("block #", i)
		}
	}
	return "other bytes"
}

func (w *diskWriter) describeAll(bs [][]byte) []string {
	var out []string
	for _, b := range bs {
		out = append(out, w.describe(b))
	}
	return out
}
