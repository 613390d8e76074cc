package s3store

import (
	"hash/crc32"
	"sync/atomic"
	"unsafe"

	"github.com/doppelfs/doppel/internal/blob"
)

var _ blob.Lender = (*Store)(nil)

// StartPutManyLent implements blob.Lender. In packs without padding a
// batch of at least half a pack whose chunks lie back to back in backing
// (a streaming writer's run, none of its chunks deduplicated) becomes a
// pack of its own whose bytes are the caller's: sealed at once, uploaded
// from backing, and backing released once the upload is done and no Read
// copies from it. Any other batch is copied (StartPutMany) and released at
// once.
func (s *Store) StartPutManyLent(data [][]byte, backing []byte, release func()) (*blob.Writing, error) {
	body, locs, ok := s.lendable(data, backing)
	if !ok {
		w, err := s.StartPutMany(data)
		release()
		return w, err
	}
	crc := crc32.Update(0, castagnoli, body)
	s.mu.Lock()
	defer s.mu.Unlock()
	num, err := s.takeNum()
	if err != nil {
		release() // nothing references it
		return nil, err
	}
	for i := range locs {
		locs[i].Segment = num
	}
	s.seal(&pack{num: num, buf: body, crc: crc, lent: release})
	lentPacks.Add(1)
	return &blob.Writing{Locs: locs}, nil
}

// lentPacks counts the packs made of lent batches, in this process.
var lentPacks atomic.Int64

// LentPacks is how many packs of lent batches this process's stores made
// (tests check that streaming writes take that way).
func LentPacks() int64 { return lentPacks.Load() }

// lendable returns the bytes of data as one slice of backing, and each
// chunk's location in it (but the pack's number), if the batch can be a
// pack of its own as it lies:
// packs without padding, at least half a pack, every chunk inside backing
// and right after the one before. Offsets are taken by address, within
// backing only.
func (s *Store) lendable(data [][]byte, backing []byte) ([]byte, []blob.Loc, bool) {
	if s.align != 1 || len(data) == 0 || cap(backing) == 0 {
		return nil, nil, false
	}
	full := backing[:cap(backing)]
	base := uintptr(unsafe.Pointer(unsafe.SliceData(full)))
	locs := make([]blob.Loc, len(data))
	var first, end int64
	for i, p := range data {
		if len(p) == 0 {
			return nil, nil, false
		}
		at := int64(uintptr(unsafe.Pointer(unsafe.SliceData(p))) - base)
		if at < 0 || at+int64(len(p)) > int64(len(full)) || i > 0 && at != end {
			return nil, nil, false
		}
		if i == 0 {
			first = at
		}
		locs[i] = blob.Loc{Offset: uint64(at - first), Length: uint32(len(p))}
		end = at + int64(len(p))
	}
	if end-first < s.cfg.PackSize/2 || uint64(end-first) > 1<<32 {
		return nil, nil, false
	}
	return full[first:end:end], locs, true
}
