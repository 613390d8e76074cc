package blob

import (
	"container/list"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxOpen bounds the cached handles of sealed segments. The active segment
// and handles in use are held open in addition.
const maxOpen = 64

// segment is the in-memory state of one segment file. All fields are
// guarded by Dir.mu.
type segment struct {
	num     uint32
	f       *os.File      // nil while not open
	direct  *os.File      // O_DIRECT write handle of the active segment; nil if none
	refs    int           // holders of f: the active role, ongoing calls, the dirty set
	elem    *list.Element // position in Dir.lru while cached
	end     int64         // reserved end (active segment only)
	pending int           // Puts reserved but not finished
	kicked  int64         // writeback of the bytes below was started (writeBehind)
	removed bool          // file deleted
}

func segName(num uint32) string { return fmt.Sprintf("seg-%08x", num) }

// parseSegName returns the number of a segment file name, or 0.
func parseSegName(name string) uint32 {
	hex, ok := strings.CutPrefix(name, "seg-")
	if !ok || len(hex) != 8 {
		return 0
	}
	n, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || segName(uint32(n)) != name {
		return 0
	}
	return uint32(n)
}

func (d *Dir) segPath(num uint32) string { return filepath.Join(d.path, segName(num)) }

// acquire returns segment num with its file open and a reference taken;
// the caller must release it. d.mu must be held.
func (d *Dir) acquire(num uint32) (*segment, error) {
	s := d.segs[num]
	if s == nil {
		return nil, fmt.Errorf("blob: segment %d: %w", num, os.ErrNotExist)
	}
	if s.f == nil {
		f, err := os.OpenFile(d.segPath(num), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("blob: segment %d: %w", num, err)
		}
		s.f = f
	}
	s.refs++
	if s.elem != nil {
		d.lru.MoveToFront(s.elem)
	} else if s != d.active {
		d.cache(s)
	}
	return s, nil
}

// cache puts s at the front of the handle cache and evicts the least
// recently used handles beyond maxOpen. d.mu must be held.
func (d *Dir) cache(s *segment) {
	s.elem = d.lru.PushFront(s)
	for d.lru.Len() > maxOpen {
		d.uncache(d.lru.Back().Value.(*segment))
	}
}

// uncache drops s from the handle cache, closing its file unless in use.
func (d *Dir) uncache(s *segment) {
	if s.elem != nil {
		d.lru.Remove(s.elem)
		s.elem = nil
	}
	d.closeIfIdle(s)
}

// release drops a reference taken by acquire. d.mu must be held.
func (d *Dir) release(s *segment) {
	s.refs--
	d.closeIfIdle(s)
}

func (d *Dir) closeIfIdle(s *segment) {
	if s.refs == 0 && s.elem == nil && s.f != nil {
		s.f.Close() // read/punch handle, or already synced or given up on
		s.f = nil
	}
}

// endDirect closes the direct write handle of s once s is no longer the
// active segment and no Put into it is in flight. d.mu must be held.
func (d *Dir) endDirect(s *segment) {
	if s.direct != nil && s != d.active && s.pending == 0 {
		s.direct.Close() // the data is written; syncs go through s.f
		s.direct = nil
	}
}

// maybeRemove deletes the file of s if s is sealed, has no Put in flight
// and holds no data. s.f must be open (the caller holds a reference).
// d.mu must be held.
func (d *Dir) maybeRemove(s *segment) error {
	if d.closed || s.removed || s == d.active || s.pending > 0 || s.f == nil {
		return nil
	}
	empty, err := isEmpty(s.f)
	if err != nil || !empty {
		return err
	}
	if err := os.Remove(d.segPath(s.num)); err != nil {
		return fmt.Errorf("blob: delete empty segment: %w", err)
	}
	s.removed = true
	delete(d.segs, s.num)
	d.dropSlotsOf(s.num)
	d.dirDirty = true
	d.uncache(s)
	return nil
}
