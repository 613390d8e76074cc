package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/doppelfs/doppel/internal/blob"
	"golang.org/x/sys/unix"
)

var errPowerLost = errors.New("crashtest: the power is off")

// putRecord is a Put no Sync covers yet; seq orders the writes.
type putRecord struct {
	seq uint64
	loc blob.Loc
}

// overwriteRecord is an Overwrite no Sync covers yet, with the bytes it
// wrote over: a power loss may undo it, whole or in part.
type overwriteRecord struct {
	seq uint64
	loc blob.Loc
	old []byte
}

// lossyBlobs is a blob.Dir that remembers which Puts no completed Sync
// covers, so that a simulated power loss can drop them: their bytes are
// punched out (they were never on disk), and segment files no Sync saw are
// deleted (their directory entry was never on disk). Frees are durable at
// once, the harsher choice: a punch that a crash undoes only leaves space.
//
// Writes in place (Overwrite) are covered by Sync alone, not by
// SyncStored (which in a real store makes them durable when they share a
// segment with a Put: the harsher choice again). A power loss undoes each
// one not covered, from the newest back, wholly, in some of its 512-byte
// sectors (a torn write) or not at all, as the seeded tear decides.
type lossyBlobs struct {
	*blob.Dir
	path string
	tear *rand.Rand // which unsynced writes in place a power loss undoes

	overwriting sync.Mutex // one Overwrite at a time: its old bytes are read first
	mu          sync.Mutex
	off         bool
	unsynced    []putRecord
	overwrites  []overwriteRecord // unsynced, oldest first
	seq         uint64            // writes so far
	durable     map[uint32]bool   // segments whose file a Sync made durable
}

func openLossyBlobs(path string, tear *rand.Rand) (*lossyBlobs, error) {
	d, err := blob.OpenDir(path, blob.Options{SegmentSize: 4 << 20})
	if err != nil {
		return nil, err
	}
	l := &lossyBlobs{Dir: d, path: path, tear: tear, durable: map[uint32]bool{}}
	nums, err := d.Segments()
	for _, n := range nums {
		l.durable[n] = true
	}
	return l, err
}

func (l *lossyBlobs) powerIsOff() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.off
}

func (l *lossyBlobs) Put(data []byte) (blob.Loc, error) {
	if l.powerIsOff() {
		return blob.Loc{}, errPowerLost
	}
	loc, err := l.Dir.Put(data)
	if err == nil {
		l.stored([]blob.Loc{loc})
	}
	return loc, err
}

func (l *lossyBlobs) PutMany(data [][]byte) ([]blob.Loc, error) {
	if l.powerIsOff() {
		return nil, errPowerLost
	}
	locs, err := l.Dir.PutMany(data)
	if err == nil {
		l.stored(locs)
	}
	return locs, err
}

func (l *lossyBlobs) StartPutMany(data [][]byte) (*blob.Writing, error) {
	return l.startPut(data, l.Dir.StartPutMany)
}

// StartPutManyCached is StartPutMany through the page cache: the block
// export's writes come this way (the embedded store's would skip the
// bookkeeping).
func (l *lossyBlobs) StartPutManyCached(data [][]byte) (*blob.Writing, error) {
	return l.startPut(data, l.Dir.StartPutManyCached)
}

// startPut starts the puts of data with start and records them.
func (l *lossyBlobs) startPut(data [][]byte, start func([][]byte) (*blob.Writing, error)) (*blob.Writing, error) {
	if l.powerIsOff() {
		return nil, errPowerLost
	}
	w, err := start(data)
	if err == nil {
		l.stored(w.Locs)
	}
	return w, err
}

// stored records Puts that returned locs. A Put into a pooled slot goes
// over what a write in place left there, which is moot from then on.
func (l *lossyBlobs) stored(locs []blob.Loc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, loc := range locs {
		l.forgetOverwritesAt(loc)
		l.seq++
		l.unsynced = append(l.unsynced, putRecord{l.seq, loc})
	}
}

// Overwrite keeps the bytes each write in place goes over, for a power
// loss to put back.
func (l *lossyBlobs) Overwrite(locs []blob.Loc, data [][]byte) error {
	if l.powerIsOff() {
		return errPowerLost
	}
	l.overwriting.Lock()
	defer l.overwriting.Unlock()
	old := make([][]byte, len(locs))
	for i, loc := range locs {
		var err error
		if old[i], err = l.readAt(loc); err != nil {
			return err
		}
	}
	if err := l.Dir.Overwrite(locs, data); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, loc := range locs {
		l.seq++
		l.overwrites = append(l.overwrites, overwriteRecord{l.seq, loc, old[i]})
	}
	return nil
}

// readAt reads the bytes at loc from its segment file.
func (l *lossyBlobs) readAt(loc blob.Loc) ([]byte, error) {
	f, err := os.Open(l.segmentPath(loc.Segment))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, loc.Length)
	_, err = f.ReadAt(b, int64(loc.Offset))
	return b, err
}

func (l *lossyBlobs) segmentPath(num uint32) string {
	return filepath.Join(l.path, fmt.Sprintf("seg-%08x", num))
}

// Sync covers the Puts and Overwrites that returned before it started.
func (l *lossyBlobs) Sync() error { return l.sync(true) }

// SyncStored covers the Puts alone (blob.StoredSyncer; the engine's
// metadata hook calls it).
func (l *lossyBlobs) SyncStored() error { return l.sync(false) }

func (l *lossyBlobs) sync(all bool) error {
	l.mu.Lock()
	if l.off {
		l.mu.Unlock()
		return errPowerLost
	}
	covered := l.seq
	l.mu.Unlock()
	nums, err := l.Dir.Segments()
	if err != nil {
		return err
	}
	if all {
		err = l.Dir.Sync()
	} else {
		err = l.Dir.SyncStored()
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.off {
		return errPowerLost
	}
	l.unsynced = slices.DeleteFunc(l.unsynced, func(p putRecord) bool { return p.seq <= covered })
	if all {
		l.overwrites = slices.DeleteFunc(l.overwrites, func(o overwriteRecord) bool { return o.seq <= covered })
	}
	for _, num := range nums {
		l.durable[num] = true
	}
	return nil
}

// Free punches loc at once; a write in place there is moot, as the punch
// came after it.
func (l *lossyBlobs) Free(loc blob.Loc) error {
	if l.powerIsOff() {
		return errPowerLost
	}
	l.mu.Lock()
	l.forgetOverwritesAt(loc)
	l.mu.Unlock()
	return l.Dir.Free(loc)
}

// Reclaim punches what live does not hold in segment num.
func (l *lossyBlobs) Reclaim(num uint32, live []blob.Span) (int64, error) {
	if l.powerIsOff() {
		return 0, errPowerLost
	}
	l.mu.Lock()
	l.overwrites = slices.DeleteFunc(l.overwrites, func(o overwriteRecord) bool {
		return o.loc.Segment == num && !slices.ContainsFunc(live, func(s blob.Span) bool {
			return s.Start <= int64(o.loc.Offset) && int64(o.loc.Offset)+int64(o.loc.Length) <= s.End
		})
	})
	l.mu.Unlock()
	return l.Dir.Reclaim(num, live)
}

// forgetOverwritesAt drops the records of unsynced writes in place that
// overlap loc, whose bytes something later punched or wrote anew. l.mu
// is held.
func (l *lossyBlobs) forgetOverwritesAt(loc blob.Loc) {
	l.overwrites = slices.DeleteFunc(l.overwrites, func(o overwriteRecord) bool {
		return o.loc.Segment == loc.Segment && o.loc.Offset < loc.Offset+uint64(loc.Length) && loc.Offset < o.loc.Offset+uint64(o.loc.Length)
	})
}

// cutPower makes every later call fail, as if the machine stopped.
func (l *lossyBlobs) cutPower() {
	l.mu.Lock()
	l.off = true
	l.mu.Unlock()
}

// loseUnsynced undoes, on the closed store's files, what was not durable.
// It returns the number of chunk writes dropped.
func (l *lossyBlobs) loseUnsynced() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ents, err := os.ReadDir(l.path)
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		var num uint32
		if _, err := fmt.Sscanf(e.Name(), "seg-%08x", &num); err != nil || l.durable[num] {
			continue
		}
		if err := os.Remove(filepath.Join(l.path, e.Name())); err != nil {
			return 0, err
		}
	}
	dropped := 0
	for i := len(l.overwrites) - 1; i >= 0; i-- {
		undone, err := l.undoOverwrite(l.overwrites[i])
		if err != nil {
			return dropped, err
		}
		if undone {
			dropped++
		}
	}
	for _, p := range l.unsynced {
		loc := p.loc
		if !l.durable[loc.Segment] {
			dropped++
			continue
		}
		f, err := os.OpenFile(l.segmentPath(loc.Segment), os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue // emptied and deleted since
		}
		if err != nil {
			return dropped, err
		}
		err = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(loc.Offset), int64(loc.Length))
		f.Close()
		if err != nil {
			return dropped, err
		}
		dropped++
	}
	return dropped, nil
}

// undoOverwrite puts back, in a durable segment, all, some or none of
// the 512-byte sectors an unsynced write in place went over, and reports
// whether it put any back.
func (l *lossyBlobs) undoOverwrite(o overwriteRecord) (bool, error) {
	if !l.durable[o.loc.Segment] {
		return false, nil // the file is gone
	}
	const sector = 512
	keep := l.tear.IntN(3) // 0: undone whole, 1: torn, 2: kept
	if keep == 2 {
		return false, nil
	}
	f, err := os.OpenFile(l.segmentPath(o.loc.Segment), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // emptied and deleted since
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	undone := false
	for at := 0; at < len(o.old); at += sector {
		if keep == 1 && l.tear.IntN(2) == 0 {
			continue
		}
		if _, err := f.WriteAt(o.old[at:min(at+sector, len(o.old))], int64(o.loc.Offset)+int64(at)); err != nil {
			return undone, err
		}
		undone = true
	}
	return undone, nil
}
