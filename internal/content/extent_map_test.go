package content

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// modelMaps keeps the model's files mapped (MapExtents) across its steps
// and engines: loads are held back until the step after they begin has
// committed (so that its changes wait in the pending list), and the maps
// are compared with the store record by record at each check.
type modelMaps struct {
	e       *Engine
	release map[uint64]func()
	gate    chan struct{} // closed after the step: the loads begun before it go on
}

// mapAll maps every file of the model on its current engine.
func (m *engineModel) mapAll() {
	mm := m.maps
	mm.e = m.v.e
	mm.release = map[uint64]func(){}
	for _, ino := range m.inos {
		mm.release[ino] = m.mapHeldBack(ino)
	}
}

// mapHeldBack maps ino with its load held back until the gate closes (or
// the engine closes: a reopen step).
func (m *engineModel) mapHeldBack(ino uint64) func() {
	mm := m.maps
	maps := mm.e.extentMaps
	gate, stop := mm.gate, maps.stop
	maps.mu.Lock()
	maps.loadHook = func() {
		select {
		case <-gate:
		case <-stop:
		}
	}
	maps.mu.Unlock()
	return mm.e.MapExtents(ino)
}

// beforeStep maps the files again on a new engine, and sometimes lets go
// of one file's map and maps it again, so that it loads while the step
// commits.
func (m *engineModel) beforeStep() {
	if m.maps == nil {
		return
	}
	if m.maps.gate == nil {
		m.maps.gate = make(chan struct{})
	}
	if m.maps.e != m.v.e {
		m.mapAll()
		return
	}
	if m.r.IntN(4) == 0 {
		ino := m.inos[m.r.IntN(len(m.inos))]
		m.maps.release[ino]()
		if m.r.IntN(2) == 0 {
			m.maps.release[ino]() // a second call does nothing
		}
		m.maps.release[ino] = m.mapHeldBack(ino)
		m.logf("map ino %d again", ino)
	}
}

// afterStep lets held-back loads go on and checks every map against the
// store once loaded.
func (m *engineModel) afterStep() {
	mm := m.maps
	if mm == nil || mm.e != m.v.e {
		return
	}
	close(mm.gate)
	mm.gate = make(chan struct{})
	maps := mm.e.extentMaps
	want := map[uint64][]mapItem{}
	for _, x := range m.v.allExtents() {
		want[x.ino] = append(want[x.ino], mapItem{off: x.off, x: x.Extent})
	}
	held := 0
	for _, ino := range m.inos {
		deadline := time.Now().Add(10 * time.Second)
		for {
			maps.mu.RLock()
			f := maps.files[ino]
			state := f.state
			var got []mapItem
			if state == mapReady {
				got = f.tree.all()
			}
			maps.mu.RUnlock()
			if state == mapReady {
				if !equalItems(got, want[ino]) {
					m.t.Fatalf("inode %d: the extent map holds %d records, the store %d; first difference at %d",
						ino, len(got), len(want[ino]), firstItemDiff(got, want[ino]))
				}
				held += len(got)
				break
			}
			if state != mapLoading {
				m.t.Fatalf("inode %d: extent map unusable", ino)
			}
			if time.Now().After(deadline) {
				m.t.Fatalf("inode %d: extent map still loading after 10 s", ino)
			}
			time.Sleep(time.Millisecond)
		}
	}
	maps.mu.RLock()
	defer maps.mu.RUnlock()
	if maps.held != held {
		m.t.Fatalf("the maps count %d records, they hold %d", maps.held, held)
	}
}

func equalItems(a, b []mapItem) bool { return firstItemDiff(a, b) < 0 }

func firstItemDiff(a, b []mapItem) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// A file's map is used only once loaded, for reads of the engine's own
// store, and not past its budget: a file with more extents than the
// budget allows is read from the store, and so is every file once a map
// was let go.
func TestExtentMapBudgetAndRelease(t *testing.T) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:4K"), ExtentMapBudget: 64})
	data := testutil.RandBytes(rand.New(rand.NewPCG(7, 7)), 48*4096)
	v.write(1, 0, data)
	v.write(2, 0, data)
	release1 := v.e.MapExtents(1)
	waitMapState(t, v.e, 1, mapReady)
	// File 2's 48 records would make 96: over the budget.
	release2 := v.e.MapExtents(2)
	waitMapState(t, v.e, 2, mapUnusable)
	hits := v.e.counters.mapHits.Load()
	if got := v.read(2, 4096, 8192); !bytes.Equal(got, data[4096:3*4096]) {
		t.Fatal("a read of the file over the budget differs")
	}
	if v.e.counters.mapHits.Load() != hits {
		t.Fatal("a file over the budget was read from a map")
	}
	if got := v.read(1, 4096, 8192); !bytes.Equal(got, data[4096:3*4096]) {
		t.Fatal("a read of the mapped file differs")
	}
	if v.e.counters.mapHits.Load() != hits+1 {
		t.Fatal("a read of the mapped file did not use its map")
	}
	// Writes after the map loaded reach it; a pinned reader does not use it.
	for i := range 4096 {
		data[5*4096+i] ^= 0x5a
	}
	v.write(1, 5*4096, data[5*4096:6*4096])
	if got := v.read(1, 5*4096, 4096); !bytes.Equal(got, data[5*4096:6*4096]) {
		t.Fatal("a read after a write differs")
	}
	release1()
	release2()
	if n := len(v.e.extentMaps.files); n != 0 || v.e.extentMaps.held != 0 {
		t.Fatalf("after every release: %d files mapped, %d records held", n, v.e.extentMaps.held)
	}
	hits = v.e.counters.mapHits.Load()
	v.read(1, 0, 4096)
	if v.e.counters.mapHits.Load() != hits {
		t.Fatal("a read after the release used a map")
	}
}

// waitMapState waits until ino's map is in state.
func waitMapState(t *testing.T, e *Engine, ino uint64, state mapState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.extentMaps.mu.RLock()
		f := e.extentMaps.files[ino]
		got := f != nil && f.state == state
		e.extentMaps.mu.RUnlock()
		if got {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("inode %d: extent map not in state %d after 10 s", ino, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPagedExtentsModel: random sets and deletes of non-overlapping
// extents (short and long ones, across pages) against a plain map, and
// each over random ranges against a scan of that map. Seeded
// (DOPPEL_TEST_SEED replays it).
func TestPagedExtentsModel(t *testing.T) {
	r := testutil.Rand(t)
	const size = 8 << mapPageShift
	tree := newPagedExtents()
	model := map[int64]schema.Extent{} // by offset
	overlapping := func(start, end int64) []int64 {
		var offs []int64
		for off, x := range model {
			if off < end && off+int64(x.Length) > start {
				offs = append(offs, off)
			}
		}
		slices.Sort(offs)
		return offs
	}
	for step := range 20000 {
		off := int64(r.IntN(size/512)) * 512
		length := int64(512 * (1 + r.IntN(8)))
		if r.IntN(20) == 0 {
			length = int64(r.IntN(3<<mapPageShift)) + 1
		}
		switch r.IntN(3) {
		case 0, 1: // set, after deleting what it overlaps
			for _, o := range overlapping(off, off+length) {
				if tree.del(o) != -1 {
					t.Fatalf("step %d: del(%d) of a record that is there", step, o)
				}
				delete(model, o)
			}
			x := schema.Extent{Length: uint32(length), ChunkOff: uint32(step)}
			if d := tree.set(off, x); d != 1 {
				t.Fatalf("step %d: set(%d) of a new record returned %d", step, off, d)
			}
			model[off] = x
			if r.IntN(4) == 0 { // the same record again: replaced
				x.ChunkOff++
				if d := tree.set(off, x); d != 0 {
					t.Fatalf("step %d: set(%d) again returned %d", step, off, d)
				}
				model[off] = x
			}
		default: // delete one record, or nothing
			_, had := model[off]
			want := 0
			if had {
				want = -1
			}
			if d := tree.del(off); d != want {
				t.Fatalf("step %d: del(%d) returned %d, want %d", step, off, d, want)
			}
			delete(model, off)
		}
		if tree.len() != len(model) {
			t.Fatalf("step %d: %d records, want %d", step, tree.len(), len(model))
		}
		start := int64(r.IntN(size))
		end := start + int64(r.IntN(3<<mapPageShift))
		if r.IntN(2) == 0 {
			end = start + 4096
		}
		var got []int64
		tree.each(start, end, func(p Piece) bool {
			if x := model[p.Off]; x != p.Extent {
				t.Fatalf("step %d: each gave the record at %d as %+v, want %+v", step, p.Off, p.Extent, x)
			}
			got = append(got, p.Off)
			return true
		})
		if want := overlapping(start, end); !slices.Equal(got, want) {
			t.Fatalf("step %d: each(%d, %d) = %v, want %v", step, start, end, got, want)
		}
		if step%1000 == 999 { // the same records loaded in order
			loaded := newPagedExtents()
			l := loader{t: loaded}
			for _, off := range overlapping(0, math.MaxInt64) {
				l.add(off, model[off])
			}
			l.flush()
			if got, want := loaded.all(), tree.all(); !equalItems(got, want) || loaded.len() != len(want) {
				t.Fatalf("step %d: loaded %d records (counted %d), the tree holds %d; first difference at %d",
					step, len(got), loaded.len(), len(want), firstItemDiff(got, want))
			}
			for range 100 {
				start := int64(r.IntN(size))
				end := start + int64(r.IntN(2<<mapPageShift))
				var got []int64
				loaded.each(start, end, func(p Piece) bool { got = append(got, p.Off); return true })
				if want := overlapping(start, end); !slices.Equal(got, want) {
					t.Fatalf("step %d: each(%d, %d) of the loaded records = %v, want %v", step, start, end, got, want)
				}
			}
		}
	}
}
