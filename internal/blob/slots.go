package blob

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// SlotReuser is implemented by stores that can write a new chunk of one
// block into the block of a freed one instead of punching that block out
// and appending the new chunk. A punch of one 4 KiB block costs ext4 about
// 80 µs and holds back writes through its journal; a random writer of a
// block export frees one block per block it writes.
//
// The content layer keeps each freed location's free record (written with
// the drop) until the location is claimed or punched: a crash before the
// commit that claims a slot leaves the record, and recovery punches bytes
// that no durable metadata names.
type SlotReuser interface {
	// OfferSlots pools the locations of freed that span one block, to be
	// written into by later puts of one-block chunks, and returns the
	// others, which the caller frees. The metadata that freed them must
	// be durable.
	OfferSlots(freed []Loc) (rest []Loc)
	// ExpireSlots takes out of the pool, to be freed by the caller, the
	// slots pooled at least age ago (all of them for 0).
	ExpireSlots(age time.Duration) []Loc
	// ClaimSlot reports whether loc is a slot a put wrote into that was
	// not claimed yet; from then on the slot is the chunk's own. The
	// caller deletes the slot's free record in the batch that names loc.
	// Free of a slot not claimed returns it to the pool.
	ClaimSlot(loc Loc) bool
}

var _ SlotReuser = (*Dir)(nil)

// maxSlots bounds the pool: beyond it freed blocks are punched at once.
// The pool must hold what a writer frees between the reclaimer's passes
// and while the blocks wait to be taken: a copy over an export's blocks
// frees about 60,000 a second on this project's test machines, and with a
// pool of 65,536 most of them overflowed into punches while the copy's new
// blocks were appended. A pooled slot takes 16 bytes.
const maxSlots = 1 << 18

type slotKey struct {
	seg uint32
	off uint64
}

type pooledSlot struct {
	seg   uint32
	block uint32        // offset / Align
	at    time.Duration // when it entered the pool, since slotEpoch
}

// slotEpoch is the origin of pooledSlot.at: a monotonic clock in 8 bytes.
var slotEpoch = time.Now()

func newPooledSlot(l Loc, at time.Duration) pooledSlot {
	return pooledSlot{seg: l.Segment, block: uint32(l.Offset / Align), at: at}
}

// loc is the slot's location, one block long.
func (p pooledSlot) loc() Loc {
	return Loc{Segment: p.seg, Offset: uint64(p.block) * Align, Length: Align}
}

// slotPool is guarded by Dir.mu.
type slotPool struct {
	free  []pooledSlot         // oldest first, then by segment and offset
	taken map[slotKey]struct{} // written into by a put, not claimed yet
}

func slotOf(l Loc) slotKey { return slotKey{l.Segment, l.Offset} }

// compareSlots orders the pool: the oldest slots are taken first, so that
// few expire unused, and within one pass's in file order, so that slots
// side by side take one write.
func compareSlots(a, b pooledSlot) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seg, b.seg), cmp.Compare(a.block, b.block))
}

// OfferSlots implements SlotReuser.
func (d *Dir) OfferSlots(freed []Loc) []Loc {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rest []Loc
	n, now := len(d.slots.free), time.Since(slotEpoch)
	for _, l := range freed {
		s := d.segs[l.Segment]
		if d.closed || l.Length == 0 || l.Length > Align || checkLoc(l) != nil || s == nil || s.removed || len(d.slots.free) >= maxSlots || l.Offset/Align > math.MaxUint32 {
			rest = append(rest, l)
			continue
		}
		d.slots.free = append(d.slots.free, newPooledSlot(l, now))
	}
	// The new slots are the youngest: sorting them is enough, unless
	// the clock did not move since the last ones.
	added := d.slots.free[n:]
	slices.SortFunc(added, compareSlots)
	if n > 0 && len(added) > 0 && compareSlots(d.slots.free[n-1], added[0]) > 0 {
		slices.SortFunc(d.slots.free, compareSlots)
	}
	return rest
}

// ExpireSlots implements SlotReuser.
func (d *Dir) ExpireSlots(age time.Duration) []Loc {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Loc
	kept := d.slots.free[:0]
	now := time.Since(slotEpoch)
	for _, p := range d.slots.free {
		if age <= 0 || now-p.at >= age {
			out = append(out, p.loc())
		} else {
			kept = append(kept, p)
		}
	}
	clear(d.slots.free[len(kept):])
	d.slots.free = kept
	return out
}

// ClaimSlot implements SlotReuser.
func (d *Dir) ClaimSlot(loc Loc) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.slots.taken[slotOf(loc)]; !ok {
		return false
	}
	delete(d.slots.taken, slotOf(loc))
	return true
}

// unclaimed returns loc to the pool if it is a slot a put wrote into and
// nobody claimed (its chunk was not committed), and reports whether it
// was. Its free record still stands, so it may be written again or
// punched. d.mu must be held.
func (d *Dir) unclaimed(loc Loc) bool {
	k := slotOf(loc)
	if _, ok := d.slots.taken[k]; !ok {
		return false
	}
	delete(d.slots.taken, k)
	p := newPooledSlot(loc, time.Since(slotEpoch))
	i, _ := slices.BinarySearchFunc(d.slots.free, p, compareSlots)
	d.slots.free = slices.Insert(d.slots.free, i, p)
	return true
}

// dropSlotsOf forgets the pooled slots of segment num, whose file is
// deleted. d.mu must be held.
func (d *Dir) dropSlotsOf(num uint32) {
	d.slots.free = slices.DeleteFunc(d.slots.free, func(p pooledSlot) bool { return p.seg == num })
}

// putInSlots writes the one-block chunks of data into pooled slots while
// the pool lasts and returns their locations, the zero Loc for chunks left
// to append; nil if it placed none. Slots side by side take one write.
func (d *Dir) putInSlots(data [][]byte) ([]Loc, error) {
	d.mu.Lock()
	if d.closed || len(d.slots.free) == 0 {
		d.mu.Unlock()
		return nil, nil
	}
	var idx []int
	for i, p := range data {
		if len(p) > 0 && len(p) <= Align && len(idx) < len(d.slots.free) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		d.mu.Unlock()
		return nil, nil
	}
	take := d.slots.free[:len(idx)]
	locs := make([]Loc, len(data))
	segs := map[uint32]*segment{}
	var err error
	for j, i := range idx {
		l := take[j].loc()
		locs[i] = Loc{Segment: l.Segment, Offset: l.Offset, Length: uint32(len(data[i]))}
		if segs[l.Segment] == nil {
			s, aerr := d.acquire(l.Segment)
			if aerr != nil {
				err = aerr
				break
			}
			s.pending++
			segs[l.Segment] = s
		}
	}
	if err != nil { // a segment cannot be opened: append instead
		for _, s := range segs {
			s.pending--
			d.release(s)
		}
		d.mu.Unlock()
		return nil, nil
	}
	for _, i := range idx {
		d.slots.taken[slotOf(locs[i])] = struct{}{}
	}
	d.slots.free = d.slots.free[len(idx):] // no copy; appends and expiry reallocate
	d.mu.Unlock()

	for start := 0; start < len(idx) && err == nil; {
		end := start + 1
		for end < len(idx) && end-start < maxBatch && locs[idx[end]].Segment == locs[idx[start]].Segment &&
			locs[idx[end]].Offset == locs[idx[end-1]].Offset+Align { // within IOV_MAX, as appends
			end++
		}
		run := make([][]byte, 0, end-start)
		for _, i := range idx[start:end] {
			run = append(run, data[i])
		}
		first := locs[idx[start]]
		if _, werr := writevAt(segs[first.Segment].f, paddedIovecs(run), int64(first.Offset)); werr != nil {
			err = fmt.Errorf("blob: write segment %d: %w", first.Segment, werr)
		}
		start = end
	}
	for _, s := range segs {
		d.finish(s, err)
	}
	if err != nil {
		d.mu.Lock()
		for _, i := range idx {
			d.unclaimed(locs[i])
		}
		d.mu.Unlock()
		return nil, err
	}
	return locs, nil
}
