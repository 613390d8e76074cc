package blob

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Dir is a Store kept in segment files of one local directory. It holds an
// exclusive flock on the directory while open.
type Dir struct {
	path    string
	segSize int64
	direct  bool     // write the active segment with O_DIRECT where the host allows
	dirf    *os.File // the directory: lock holder and fsync target

	syncMu sync.Mutex // serialises syncs of stored segments, and Close
	// overSyncMu serialises syncs of all (Sync, Close): taken before
	// syncMu, it is held while the segments written in place are synced.
	overSyncMu sync.Mutex

	mu     sync.Mutex
	closed bool
	segs   map[uint32]*segment // every existing segment file
	lru    list.List           // cached handles of sealed segments, most recent first
	active *segment            // segment appended to; nil until the first Put
	next   uint32              // highest segment number ever used, as in the "next" file
	dirty  map[uint32]*segment // written since the last Sync; each holds a reference
	// overwritten: written over in place (Overwrite) since the last Sync,
	// which SyncStored leaves; each holds a reference.
	overwritten map[uint32]*segment
	dirDirty    bool // a segment file was created or removed since the last Sync
	// Direct writes in flight (direct.go): a slot each, and their ranges.
	directSlots chan struct{}
	inflight    []*directWrite
	// sessionStart is the first segment number this open may create.
	sessionStart uint32
	slots        slotPool // freed blocks to write new one-block chunks into (slots.go)
}

var (
	_ Store        = (*Dir)(nil)
	_ Overwriter   = (*Dir)(nil)
	_ StoredSyncer = (*Dir)(nil)
)

const (
	nextName    = "next"
	nextTmpName = "next.tmp"
)

// OpenDir opens (creating if needed) a segment store in dir; a missing
// directory is created with mode 0700. Segments without data are deleted.
// Appending resumes in a new segment numbered after the highest ever used.
func OpenDir(dir string, opt Options) (*Dir, error) {
	segSize := opt.SegmentSize
	if segSize <= 0 {
		segSize = defaultSegmentSize
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	dirf, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	err = withFd(dirf, func(fd int) error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if err != nil {
		dirf.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("blob: %s is already open by another store", dir)
		}
		return nil, fmt.Errorf("blob: lock %s: %w", dir, err)
	}
	d := &Dir{
		path:    dir,
		segSize: segSize,
		direct:  !opt.BufferedWrites,
		dirf:    dirf,
		segs:    make(map[uint32]*segment),
		dirty:   make(map[uint32]*segment),
		slots:   slotPool{taken: make(map[slotKey]struct{})},

		directSlots: make(chan struct{}, maxDirectWrites),
	}
	if err := d.load(); err != nil {
		dirf.Close()
		return nil, err
	}
	return d, nil
}

// load reads the "next" file and the existing segments, deleting empty ones.
func (d *Dir) load() error {
	stored, err := d.readNext()
	if err != nil {
		return err
	}
	next := stored
	if err := os.Remove(filepath.Join(d.path, nextTmpName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob: %w", err)
	}
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	var nums []uint32
	for _, e := range ents {
		if num := parseSegName(e.Name()); num != 0 && e.Type().IsRegular() {
			nums = append(nums, num)
			next = max(next, num)
		}
	}
	// Persist the highest number before any deletion can hide it.
	if next != stored {
		if err := d.writeNext(next); err != nil {
			return err
		}
	}
	d.next = next
	d.sessionStart = next + 1
	removed := false
	for _, num := range nums {
		f, err := os.Open(d.segPath(num))
		if err != nil {
			return fmt.Errorf("blob: %w", err)
		}
		empty, err := isEmpty(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("blob: %w", err)
		}
		if empty {
			if err := os.Remove(d.segPath(num)); err != nil {
				return fmt.Errorf("blob: delete empty segment: %w", err)
			}
			removed = true
			continue
		}
		d.segs[num] = &segment{num: num}
	}
	if removed {
		if err := d.dirf.Sync(); err != nil {
			return fmt.Errorf("blob: sync directory: %w", err)
		}
	}
	return nil
}

// readNext returns the number in the "next" file, 0 if there is none.
func (d *Dir) readNext() (uint32, error) {
	b, err := os.ReadFile(filepath.Join(d.path, nextName))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("blob: %w", err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	n, err := strconv.ParseUint(s, 16, 32)
	if err != nil || len(s) != 8 {
		return 0, fmt.Errorf("blob: bad %q file %q: %w", nextName, b, ErrCorrupt)
	}
	return uint32(n), nil
}

// writeNext durably replaces the "next" file with num.
func (d *Dir) writeNext(num uint32) error {
	tmp := filepath.Join(d.path, nextTmpName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("blob: %w", err)
	}
	_, err = fmt.Fprintf(f, "%08x\n", num)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(d.path, nextName))
	}
	if err == nil {
		err = d.dirf.Sync()
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("blob: write %q file: %w", nextName, err)
	}
	return nil
}

// Sync makes every Put that returned before the call durable, and every
// Overwrite. After an error the durability of those writes is unknown.
func (d *Dir) Sync() error { return d.syncOpen(true) }

// SyncStored is Sync for what metadata about to become durable may name:
// the bytes Put stored, not those Overwrite wrote over chunks in place,
// whose crash safety is the caller's (StoredSyncer). Segments written
// both ways are synced whole.
func (d *Dir) SyncStored() error { return d.syncOpen(false) }

// syncOpen is Sync (all) or SyncStored on a store not closed. The
// segments written only in place are synced last, with syncMu let go: a
// SyncStored then waits for no fdatasync of writes in place. Behind a
// periodic Sync of a disk image written over in place (seconds of
// writes), every intent record's commit, which syncs what was stored
// first, held a copy into the export about half a second.
func (d *Dir) syncOpen(all bool) error {
	if all {
		d.overSyncMu.Lock()
		defer d.overSyncMu.Unlock()
	}
	d.syncMu.Lock()
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		d.syncMu.Unlock()
		return fmt.Errorf("blob: sync: %w", os.ErrClosed)
	}
	sets := d.takeSyncSets(all)
	err := d.syncStored(sets)
	d.syncMu.Unlock()
	return errors.Join(err, d.syncSegments(sets.inPlace))
}

// syncLocked does the work of Sync (all) or SyncStored; d.syncMu, and
// for all d.overSyncMu, must be held.
func (d *Dir) syncLocked(all bool) error {
	sets := d.takeSyncSets(all)
	return errors.Join(d.syncStored(sets), d.syncSegments(sets.inPlace))
}

// syncSets is what one Sync makes durable: the segments Put wrote to (and
// the directory, when a segment file came or went) and, for a Sync of
// all, those only written over in place. Each segment holds a reference.
type syncSets struct {
	stored, inPlace map[uint32]*segment
	dirDirty        bool
}

// takeSyncSets takes from d what the next Sync (all) or SyncStored must
// make durable, once every write started is in its file.
func (d *Dir) takeSyncSets(all bool) syncSets {
	d.drain()
	d.mu.Lock()
	defer d.mu.Unlock()
	sets := syncSets{stored: d.dirty, dirDirty: d.dirDirty}
	d.dirty, d.dirDirty = make(map[uint32]*segment), false
	if all {
		sets.inPlace, d.overwritten = d.overwritten, nil
		for num, s := range sets.inPlace {
			if sets.stored[num] != nil {
				d.release(s) // synced whole with the stored: one reference stays
				delete(sets.inPlace, num)
			}
		}
	}
	return sets
}

// syncStored syncs the stored segments of sets, then the directory.
func (d *Dir) syncStored(sets syncSets) error {
	err := d.syncSegments(sets.stored)
	if sets.dirDirty {
		if derr := d.dirf.Sync(); derr != nil {
			err = errors.Join(err, fmt.Errorf("blob: sync directory: %w", derr))
		}
		if err != nil {
			d.mu.Lock()
			d.dirDirty = true
			d.mu.Unlock()
		}
	}
	return err
}

// syncSegments fdatasyncs segs and lets go of their references.
func (d *Dir) syncSegments(segs map[uint32]*segment) error {
	var errs []error
	for _, s := range segs {
		if err := fdatasync(s.f); err != nil {
			errs = append(errs, fmt.Errorf("blob: %w", err))
		}
	}
	d.mu.Lock()
	for _, s := range segs {
		d.release(s)
	}
	d.mu.Unlock()
	return errors.Join(errs...)
}

// Usage reports the allocated bytes and number of the segment files.
func (d *Dir) Usage() (allocated int64, segments int, err error) {
	nums, err := d.Segments()
	if err != nil {
		return 0, 0, err
	}
	for _, num := range nums {
		var st unix.Stat_t
		if err := unix.Stat(d.segPath(num), &st); err != nil {
			if err == unix.ENOENT {
				continue // deleted meanwhile
			}
			return 0, 0, fmt.Errorf("blob: stat %s: %w", segName(num), err)
		}
		allocated += st.Blocks * 512
		segments++
	}
	return allocated, segments, nil
}

// Segments lists the existing segment numbers in increasing order.
func (d *Dir) Segments() ([]uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("blob: segments: %w", os.ErrClosed)
	}
	nums := make([]uint32, 0, len(d.segs))
	for num := range d.segs {
		nums = append(nums, num)
	}
	slices.Sort(nums)
	return nums, nil
}

// Close syncs the store, closes its files and releases the directory.
// Calls still running keep their files open until they finish.
func (d *Dir) Close() error {
	d.overSyncMu.Lock()
	defer d.overSyncMu.Unlock()
	d.syncMu.Lock()
	defer d.syncMu.Unlock()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return fmt.Errorf("blob: close: %w", os.ErrClosed)
	}
	d.closed = true
	d.mu.Unlock()

	err := d.syncLocked(true)
	d.mu.Lock()
	for d.lru.Len() > 0 {
		d.uncache(d.lru.Back().Value.(*segment))
	}
	if a := d.active; a != nil {
		d.active = nil
		d.endDirect(a)
		d.release(a)
	}
	d.mu.Unlock()
	if cerr := d.dirf.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("blob: %w", cerr)
	}
	return err
}
