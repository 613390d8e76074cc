package crashtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/doppelfs/doppel/internal/blob"
	"golang.org/x/sys/unix"
)

var errPowerLost = errors.New("crashtest: the power is off")

// putRecord is a Put no Sync covers yet; seq orders the Puts.
type putRecord struct {
	seq uint64
	loc blob.Loc
}

// lossyBlobs is a blob.Dir that remembers which Puts no completed Sync
// covers, so that a simulated power loss can drop them: their bytes are
// punched out (they were never on disk), and segment files no Sync saw are
// deleted (their directory entry was never on disk). Frees are durable at
// once, the harsher choice: a punch that a crash undoes only leaves space.
type lossyBlobs struct {
	*blob.Dir
	path string

	mu       sync.Mutex
	off      bool
	unsynced []putRecord
	puts     uint64          // Puts so far
	durable  map[uint32]bool // segments whose file a Sync made durable
}

func openLossyBlobs(path string) (*lossyBlobs, error) {
	d, err := blob.OpenDir(path, blob.Options{SegmentSize: 4 << 20})
	if err != nil {
		return nil, err
	}
	l := &lossyBlobs{Dir: d, path: path, durable: map[uint32]bool{}}
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
		l.mu.Lock()
		l.puts++
		l.unsynced = append(l.unsynced, putRecord{l.puts, loc})
		l.mu.Unlock()
	}
	return loc, err
}

func (l *lossyBlobs) PutMany(data [][]byte) ([]blob.Loc, error) {
	if l.powerIsOff() {
		return nil, errPowerLost
	}
	locs, err := l.Dir.PutMany(data)
	if err == nil {
		l.mu.Lock()
		for _, loc := range locs {
			l.puts++
			l.unsynced = append(l.unsynced, putRecord{l.puts, loc})
		}
		l.mu.Unlock()
	}
	return locs, err
}

func (l *lossyBlobs) StartPutMany(data [][]byte) (*blob.Writing, error) {
	if l.powerIsOff() {
		return nil, errPowerLost
	}
	w, err := l.Dir.StartPutMany(data)
	if err == nil {
		l.mu.Lock()
		for _, loc := range w.Locs {
			l.puts++
			l.unsynced = append(l.unsynced, putRecord{l.puts, loc})
		}
		l.mu.Unlock()
	}
	return w, err
}

// Sync covers the Puts that returned before it started.
func (l *lossyBlobs) Sync() error {
	l.mu.Lock()
	if l.off {
		l.mu.Unlock()
		return errPowerLost
	}
	covered := l.puts
	l.mu.Unlock()
	nums, err := l.Dir.Segments()
	if err != nil {
		return err
	}
	if err := l.Dir.Sync(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.off {
		return errPowerLost
	}
	l.unsynced = slices.DeleteFunc(l.unsynced, func(p putRecord) bool { return p.seq <= covered })
	for _, num := range nums {
		l.durable[num] = true
	}
	return nil
}

// SyncStored is Sync: the embedded store's SyncStored would sync without
// the bookkeeping above (the engine's metadata hook calls it), and this
// store keeps no record of writes in place to leave out.
func (l *lossyBlobs) SyncStored() error { return l.Sync() }

func (l *lossyBlobs) Free(loc blob.Loc) error {
	if l.powerIsOff() {
		return errPowerLost
	}
	return l.Dir.Free(loc)
}

func (l *lossyBlobs) Reclaim(num uint32, live []blob.Span) (int64, error) {
	if l.powerIsOff() {
		return 0, errPowerLost
	}
	return l.Dir.Reclaim(num, live)
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
	for _, p := range l.unsynced {
		loc := p.loc
		if !l.durable[loc.Segment] {
			dropped++
			continue
		}
		f, err := os.OpenFile(filepath.Join(l.path, fmt.Sprintf("seg-%08x", loc.Segment)), os.O_RDWR, 0)
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
