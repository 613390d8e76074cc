package nbd

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

var (
	modelSeed  = flag.Int64("nbd.seed", 0, "seed of TestModelRandomOps (0: time-based); the test logs the seed it used")
	modelSteps = flag.Int("nbd.steps", 1500, "steps of TestModelRandomOps")
)

// refModel is the expected state: the image and the per-block allocation
// the memBackend rules produce (writes and NO_HOLE zeroes allocate every
// touched block, trims and plain zeroes punch the fully covered ones).
type refModel struct {
	data      []byte
	allocated []bool
}

func (m *refModel) markAllocated(off, n int64) {
	for b := off / memBlock; n > 0 && b <= (off+n-1)/memBlock; b++ {
		m.allocated[b] = true
	}
}

func (m *refModel) punch(off, n int64) {
	size := int64(len(m.data))
	for b := int64(0); b < int64(len(m.allocated)); b++ {
		start, end := b*memBlock, min((b+1)*memBlock, size)
		if start >= off && end <= off+n {
			m.allocated[b] = false
			clear(m.data[start:end])
		}
	}
}

// TestModelRandomOps drives random commands through two real connections
// (one with simple replies, one with structured replies and block status)
// and compares the export with the reference model after every step.
// Replay a failure with -nbd.seed=N.
// It runs twice with the same seed: on a backend that takes payloads in
// WriteAt, and on one that takes large plain writes from the connection
// (StreamWriter, write_direct.go).
func TestModelRandomOps(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -nbd.seed=%d)", seed, seed)
	t.Run("WriteAt", func(t *testing.T) { modelRandomOps(t, seed, false) })
	t.Run("WriteFrom", func(t *testing.T) { modelRandomOps(t, seed, true) })
}

func modelRandomOps(t *testing.T, seed int64, direct bool) {
	rng := rand.New(rand.NewSource(seed))

	const size = 256<<10 + 777 // an unaligned tail on purpose
	be := newMemBackend(size)
	ref := &refModel{data: make([]byte, size), allocated: make([]bool, len(be.allocated))}
	var backend Backend = be
	streaming := &streamBackend{memBackend: be}
	if direct {
		backend = streaming
	}
	ts := newTestServer(t, Export{Name: "m", Backend: backend})
	simple := ts.connect(t, clientConfig{export: "m", socket: direct})
	structured := ts.connect(t, clientConfig{export: "m", structured: true, meta: true, socket: direct})

	randRange := func() (uint64, uint32) {
		var off, n int64
		switch rng.Intn(4) {
		case 0: // block aligned
			off = int64(rng.Intn(size/memBlock)) * memBlock
			n = int64(1+rng.Intn(8)) * memBlock
		case 1: // anything
			off = rng.Int63n(size)
			n = 1 + rng.Int63n(20000)
		case 2: // up to the end
			off = rng.Int63n(size)
			n = size - off
		case 3: // sometimes past the end: must fail and change nothing
			off = rng.Int63n(size)
			n = 1 + rng.Int63n(3*memBlock)
		}
		return uint64(off), uint32(n)
	}
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
	}

	for step := 0; step < *modelSteps; step++ {
		c := simple
		if rng.Intn(2) == 0 {
			c = structured
		}
		off, n := randRange()
		inRange := off+uint64(n) <= size
		var op string
		var r *testReply
		var err error
		switch k := rng.Intn(7); k {
		case 0, 1:
			op = "write"
			p := make([]byte, n)
			rng.Read(p)
			if rng.Intn(4) == 0 {
				clear(p) // explicit zeroes are data, not holes
			}
			r, err = c.do(cmdWrite, uint16(rng.Intn(2))*cmdFlagFUA, off, n, p)
			if inRange {
				copy(ref.data[off:], p)
				ref.markAllocated(int64(off), int64(n))
			}
		case 2:
			op = "trim"
			r, err = c.do(cmdTrim, 0, off, n, nil)
			if inRange {
				ref.punch(int64(off), int64(n))
			}
		case 3, 4:
			noHole := k == 4
			op = fmt.Sprintf("write zeroes (no hole %v)", noHole)
			var flags uint16
			if noHole {
				flags = cmdFlagNoHole
			}
			r, err = c.do(cmdWriteZeroes, flags, off, n, nil)
			if inRange {
				clear(ref.data[off : off+uint64(n)])
				if noHole {
					ref.markAllocated(int64(off), int64(n))
				} else {
					ref.punch(int64(off), int64(n))
				}
			}
		case 5:
			op = "flush"
			off, n, inRange = 0, 0, true
			r, err = c.do(cmdFlush, 0, 0, 0, nil)
		case 6:
			op = "read"
			r, err = c.do(cmdRead, 0, off, n, nil)
			if err == nil && inRange && r.errno == 0 && !bytes.Equal(r.data, ref.data[off:off+uint64(n)]) {
				fail(step, "read [%d,+%d) differs", off, n)
			}
		}
		if err != nil {
			fail(step, "%s [%d,+%d): %v", op, off, n, err)
		}
		if inRange != (r.errno == 0) {
			fail(step, "%s [%d,+%d) in range %v: errno %d", op, off, n, inRange, r.errno)
		}

		// Compare after every step: the backend itself, a full read through
		// a connection, and the full allocation map through BLOCK_STATUS.
		data, alloc := be.snapshot()
		if !bytes.Equal(data, ref.data) {
			fail(step, "after %s [%d,+%d): backend image differs", op, off, n)
		}
		for b := range alloc {
			if alloc[b] != ref.allocated[b] {
				fail(step, "after %s [%d,+%d): block %d allocated %v, want %v", op, off, n, b, alloc[b], ref.allocated[b])
			}
		}
		read := mustDo(t, c, cmdRead, 0, 0, size, nil)
		if !bytes.Equal(read.data, ref.data) {
			fail(step, "after %s: full read differs", op)
		}
		st := mustDo(t, structured, cmdBlockStatus, 0, 0, size, nil)
		want := wireExtents(memExtents(ref.allocated, size, 0, size), size, false)
		if fmt.Sprint(st.extents) != fmt.Sprint(want) {
			fail(step, "after %s: block status %v, want %v", op, st.extents, want)
		}
		pos := uint64(0)
		for _, e := range st.extents {
			if e.Flags&uint32(ExtentZero) != 0 && !bytes.Equal(ref.data[pos:pos+uint64(e.Length)], make([]byte, e.Length)) {
				fail(step, "extent at %d reported zero but holds data", pos)
			}
			pos += uint64(e.Length)
		}
	}
	if be.outOfRange.Load() != 0 {
		t.Fatalf("seed %d: backend accessed out of range", seed)
	}
	if direct && *modelSteps >= 500 && streaming.direct.Load() == 0 {
		t.Fatalf("seed %d: no write was taken from the connection", seed)
	}
}
