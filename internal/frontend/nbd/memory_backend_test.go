package nbd

import (
	"sync"
	"sync/atomic"
	"syscall"
)

// memBlock is the allocation granularity of memBackend: holes are punched
// and reported in whole blocks, as a sparse file would.
const memBlock = 4096

// memBackend is the reference Backend of the tests: an image in memory plus
// an allocation map, so that holes, BLOCK_STATUS and NO_HOLE are real.
// Unallocated blocks always hold zeroes. Any access outside the image is
// counted in outOfRange, which tests require to stay zero.
type memBackend struct {
	mu         sync.Mutex
	data       []byte
	allocated  []bool // per memBlock
	flushes    atomic.Int64
	outOfRange atomic.Int64
}

func newMemBackend(size int64) *memBackend {
	return &memBackend{
		data:      make([]byte, size),
		allocated: make([]bool, (size+memBlock-1)/memBlock),
	}
}

func (m *memBackend) Size() int64 { return int64(len(m.data)) }

func (m *memBackend) inRange(off, length int64) bool {
	if off < 0 || length < 0 || off > int64(len(m.data)) || length > int64(len(m.data))-off {
		m.outOfRange.Add(1)
		return false
	}
	return true
}

func (m *memBackend) ReadAt(p []byte, off int64) (int, error) {
	if !m.inRange(off, int64(len(p))) {
		return 0, syscall.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return copy(p, m.data[off:]), nil
}

func (m *memBackend) WriteAt(p []byte, off int64, fua bool) error {
	if !m.inRange(off, int64(len(p))) {
		return syscall.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	copy(m.data[off:], p)
	m.allocate(off, int64(len(p)))
	return nil
}

func (m *memBackend) Flush() error { m.flushes.Add(1); return nil }

func (m *memBackend) Trim(off, length int64) error {
	if !m.inRange(off, length) {
		return syscall.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.punch(off, length)
	return nil
}

func (m *memBackend) Zero(off, length int64, noHole bool) error {
	if !m.inRange(off, length) {
		return syscall.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.data[off : off+length])
	if noHole {
		m.allocate(off, length)
	} else {
		m.punch(off, length)
	}
	return nil
}

func (m *memBackend) Cache(off, length int64) error {
	if !m.inRange(off, length) {
		return syscall.EINVAL
	}
	return nil
}

// ZeroIsFast: punching holes is cheap, provisioning zeroes is a write.
func (m *memBackend) ZeroIsFast(off, length int64, noHole bool) bool { return !noHole }

func (m *memBackend) BlockStatus(off, length int64) ([]Extent, error) {
	if !m.inRange(off, length) {
		return nil, syscall.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return memExtents(m.allocated, int64(len(m.data)), off, length), nil
}

// allocate marks every block the range touches as allocated.
func (m *memBackend) allocate(off, length int64) {
	if length == 0 {
		return
	}
	for b := off / memBlock; b <= (off+length-1)/memBlock; b++ {
		m.allocated[b] = true
	}
}

// punch deallocates (and zeroes) the blocks the range covers completely,
// including a partial last block that ends the image.
func (m *memBackend) punch(off, length int64) {
	size := int64(len(m.data))
	first := (off + memBlock - 1) / memBlock
	end := off + length
	for b := first; b*memBlock < end; b++ {
		blockEnd := min((b+1)*memBlock, size)
		if blockEnd > end {
			break
		}
		m.allocated[b] = false
		clear(m.data[b*memBlock : blockEnd])
	}
}

// memExtents describes [off, off+length) from an allocation map: holes are
// hole+zero, allocated blocks are plain data.
func memExtents(allocated []bool, size, off, length int64) []Extent {
	var out []Extent
	end := off + length
	for pos := off; pos < end; {
		b := pos / memBlock
		next := min((b+1)*memBlock, end, size)
		var flags ExtentFlags
		if !allocated[b] {
			flags = ExtentHole | ExtentZero
		}
		if k := len(out); k > 0 && out[k-1].Flags == flags {
			out[k-1].Length += next - pos
		} else {
			out = append(out, Extent{Length: next - pos, Flags: flags})
		}
		pos = next
	}
	return out
}

// snapshot copies the image and allocation map.
func (m *memBackend) snapshot() ([]byte, []bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]byte(nil), m.data...), append([]bool(nil), m.allocated...)
}

// streamBackend is memBackend taking large plain writes straight from
// the connection (StreamWriter), as doppel's files do: under its lock,
// and nothing written unless the whole payload was read.
type streamBackend struct {
	*memBackend
	direct atomic.Int64 // writes taken so
}

func (m *streamBackend) WriteFrom(off int64, n int, fill func(dst []byte) error) (bool, error) {
	if !m.inRange(off, int64(n)) {
		return false, syscall.EINVAL
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	got := make([]byte, n)
	if err := fill(got); err != nil {
		return true, err
	}
	copy(m.data[off:], got)
	m.allocate(off, int64(n))
	m.direct.Add(1)
	return true, nil
}
