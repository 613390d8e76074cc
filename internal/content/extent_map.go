package content

import (
	"errors"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Extent maps: the whole extent map of a file, in memory, kept in step
// with every commit. A random read of a block export otherwise looks its
// extent up in the store (a Pebble Get: a fifth to a quarter of the
// server's CPU per 4 KiB read, more after random writes filled the
// memtable; docs/BENCHMARKS.md, "Where a random read's CPU goes"), and
// random reads over a large export almost never read a block twice, so no
// cache filled by reads helps: only the whole map, loaded once.
//
// A file is mapped while someone holds it (MapExtents: an NBD export, for
// as long as it is served). The map is loaded in the background from a
// snapshot of the store taken under the transaction lock; from that
// moment every transaction notes the extent records it sets or deletes
// for the file (extentMapBatch, below, which sees every change a
// transaction makes through its batch), and applies them when it commits,
// before the transaction lock goes, so a write acknowledged after its
// commit is seen by every read after. Changes that commit while the map
// loads wait in a list and are applied once it is loaded. A commit whose
// outcome is unknown drops the map (reads go to the store again). Only
// the engine's own store is mapped, and only where no other process
// commits to it (as for extent windows); clones' pinned reads are not.

// mapItem is one extent record of a mapped file: the extent at off.
type mapItem struct {
	off int64
	x   schema.Extent
}

// extentOp is one change a transaction made to a mapped file's extent
// records: the record at off set to x, or deleted.
type extentOp struct {
	ino uint64
	off int64
	del bool
	x   schema.Extent
}

// DefaultExtentMapBudget bounds the extent records held by every map
// together: 2 Mi records, the extents of 8 GiB of 4 KiB blocks, about 160
// MiB (80 bytes a record). A file that would go past it is not mapped.
const DefaultExtentMapBudget = 2 << 20

// mapState is where a file's map is in its life.
type mapState uint8

const (
	mapLoading  mapState = iota // read from a snapshot; commits wait in pending
	mapReady                    // tree is the file's extent map
	mapUnusable                 // too large, or a load or commit failed: reads go to the store
)

// fileMap is the map of one file.
type fileMap struct {
	holders int
	state   mapState
	tree    *pagedExtents // when ready
	pending []extentOp    // committed while loading, in order
}

// extentMaps is the engine's set of mapped files.
type extentMaps struct {
	mu     sync.RWMutex
	files  map[uint64]*fileMap
	held   int // records in all ready maps
	budget int
	// loadHook, when set (by tests, under mu), runs between the scan of
	// a load begun after it was set and its taking of the changes
	// committed meanwhile.
	loadHook func()
	loads    sync.WaitGroup
	stop     chan struct{} // closed when the engine closes: loads end
	closed   bool
}

func newExtentMaps(budget int) *extentMaps {
	if budget <= 0 {
		budget = DefaultExtentMapBudget
	}
	return &extentMaps{files: map[uint64]*fileMap{}, budget: budget, stop: make(chan struct{})}
}

// close ends the loads under way, which hold snapshots of the store, and
// lets go of every map.
func (m *extentMaps) close() {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.stop)
	}
	for ino, f := range m.files {
		m.setState(f, mapUnusable)
		delete(m.files, ino)
	}
	m.mu.Unlock()
	m.loads.Wait()
}

// MapExtents keeps ino's extent map in memory until release is called
// (once per call), if the engine keeps maps and the file fits the
// budget; loading starts in the background. Reads of ino use the map once
// it is loaded.
func (e *Engine) MapExtents(ino uint64) (release func()) {
	m := e.extentMaps
	if m == nil {
		return func() {}
	}
	e.txMu.Lock() // no transaction under way: every later one notes its changes
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		e.txMu.Unlock()
		return func() {}
	}
	f, ok := m.files[ino]
	if !ok {
		f = &fileMap{state: mapLoading}
		m.files[ino] = f
	}
	f.holders++
	var snap meta.Snapshot
	hook := m.loadHook
	if !ok {
		snap = e.meta.Snapshot()
		m.loads.Add(1)
	}
	m.mu.Unlock()
	e.txMu.Unlock()
	if snap != nil {
		go e.loadExtentMap(ino, f, snap, hook)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if f.holders--; f.holders == 0 && m.files[ino] == f {
				m.setState(f, mapUnusable)
				delete(m.files, ino)
			}
		})
	}
}

// setState moves f to state, letting go of its tree unless it stays
// ready. m.mu is held.
func (m *extentMaps) setState(f *fileMap, state mapState) {
	if f.state == mapReady && state != mapReady {
		m.held -= f.tree.len()
		f.tree = nil
	}
	f.state, f.pending = state, nil
}

// loadExtentMap reads ino's extents from snap into f and applies the
// changes committed since.
func (e *Engine) loadExtentMap(ino uint64, f *fileMap, snap meta.Snapshot, hook func()) {
	m := e.extentMaps
	defer m.loads.Done()
	defer snap.Close()
	m.mu.RLock()
	room := m.budget - m.held
	m.mu.RUnlock()
	began := time.Now()
	tree := newPagedExtents()
	err := m.loadExtents(snap, ino, tree, room)
	if hook != nil {
		hook()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.state != mapLoading {
		return // released, or a commit's outcome is unknown
	}
	if err == nil {
		for _, op := range f.pending {
			op.apply(tree)
		}
		if m.held+tree.len() > m.budget {
			err = errMapTooLarge
		}
	}
	if err != nil {
		e.log.Info("extent map: reads look extents up in the store", "ino", ino, "err", err)
		m.setState(f, mapUnusable)
		return
	}
	f.tree = tree
	m.setState(f, mapReady)
	m.held += tree.len()
	e.log.Debug("extent map loaded", "ino", ino, "extents", tree.len(), "took", time.Since(began))
}

// loadExtents puts every extent of ino that r holds into tree, which is
// empty, up to room of them.
func (m *extentMaps) loadExtents(r meta.Reader, ino uint64, tree *pagedExtents, room int) error {
	lower, upper := schema.ExtentRange(ino)
	it, err := r.NewIter(lower, upper)
	if err != nil {
		return err
	}
	defer it.Close()
	l := loader{t: tree}
	defer l.flush()
	for n, ok := 0, it.First(); ok; n, ok = n+1, it.Next() {
		p, err := piece(it)
		if err != nil {
			return &RecordError{Ino: ino, Record: "extent", Err: err}
		}
		if n >= room {
			return errMapTooLarge
		}
		if n%4096 == 0 {
			select {
			case <-m.stop:
				return errMapsClosed
			default:
			}
		}
		l.add(p.Off, p.Extent)
	}
	return it.Error()
}

var (
	errMapTooLarge = errors.New("the file's extents would go past the extent map budget")
	errMapsClosed  = errors.New("the volume is closing")
)

// apply makes op's change in tree and returns the change in its records.
func (op extentOp) apply(tree *pagedExtents) int {
	if op.del {
		return tree.del(op.off)
	}
	return tree.set(op.off, op.x)
}

// any reports whether a file is mapped: transactions begun while none is
// note nothing. It is asked under the transaction lock, under which
// files are mapped.
func (m *extentMaps) any() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.files) > 0
}

// watches reports whether the extent records of ino are to be noted.
func (m *extentMaps) watches(ino uint64) bool {
	m.mu.RLock()
	f := m.files[ino]
	m.mu.RUnlock()
	return f != nil && f.state != mapUnusable
}

// commit applies ops, the changes of a transaction that committed, to
// the maps (or to their pending lists while they load). txMu is held.
func (m *extentMaps) commit(ops []extentOp) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range ops {
		f := m.files[op.ino]
		if f == nil {
			continue
		}
		switch f.state {
		case mapReady:
			m.held += op.apply(f.tree)
		case mapLoading:
			f.pending = append(f.pending, op)
		}
	}
}

// drop makes the maps that ops change unusable: ops are those of a
// commit whose outcome is unknown. Their holders keep them; reads go to
// the store.
func (m *extentMaps) drop(ops []extentOp) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range ops {
		if f := m.files[op.ino]; f != nil {
			m.setState(f, mapUnusable)
		}
	}
}

// each calls fn, until it returns false, for every whole extent of ino
// overlapping [start, end) in its map, in file order, and reports whether
// ino has a loaded map (else it calls fn for none).
func (m *extentMaps) each(ino uint64, start, end int64, fn func(Piece) bool) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	f := m.files[ino]
	if f == nil || f.state != mapReady {
		return false
	}
	f.tree.each(start, end, fn)
	return true
}

// mapped returns the whole extents of ino overlapping [start, end) for a
// read from r, from ino's map if r may use it and the map is loaded.
func (e *Engine) mapped(r meta.Reader, ino uint64, start, end int64) ([]Piece, bool) {
	m := e.mapsFor(r)
	if m == nil {
		return nil, false
	}
	var out []Piece
	if !m.each(ino, start, end, func(p Piece) bool { out = append(out, p); return true }) {
		return nil, false
	}
	e.counters.mapHits.Add(1)
	return out, true
}

// extentsOverlapping is the package's extentsOverlapping, from ino's map
// when r may use it and the map is loaded.
func (e *Engine) extentsOverlapping(r meta.Reader, ino uint64, ranges [][2]int64) ([]Piece, error) {
	m := e.mapsFor(r)
	if m == nil {
		return extentsOverlapping(r, ino, ranges)
	}
	out := piecesFor(ranges)
	for _, rg := range ranges {
		if !m.each(ino, rg[0], rg[1], func(p Piece) bool {
			if n := len(out); n == 0 || out[n-1].Off < p.Off { // each once
				out = append(out, p)
			}
			return true
		}) {
			return extentsOverlapping(r, ino, ranges)
		}
	}
	e.counters.mapHits.Add(1)
	return out, nil
}

// mapsFor returns the engine's extent maps if reads from r may use them:
// r is the engine's own store and the engine keeps maps. Else nil.
func (e *Engine) mapsFor(r meta.Reader) *extentMaps {
	if e.extentMaps == nil || r != meta.Reader(e.meta) {
		return nil
	}
	return e.extentMaps
}

// extentMapBatch is a transaction's batch that notes the changes to the
// extent records of mapped files.
type extentMapBatch struct {
	meta.Batch
	t *Tx
}

func (b *extentMapBatch) Set(key, value []byte) error {
	if err := b.Batch.Set(key, value); err != nil {
		return err
	}
	if ino, off, ok := b.watched(key); ok {
		x, err := schema.DecodeExtent(value)
		if err != nil { // only a bug writes such a record
			return &RecordError{Ino: ino, Record: "extent", Err: err}
		}
		b.t.mapOps = append(b.t.mapOps, extentOp{ino: ino, off: off, x: x})
	}
	return nil
}

func (b *extentMapBatch) Delete(key []byte) error {
	if err := b.Batch.Delete(key); err != nil {
		return err
	}
	if ino, off, ok := b.watched(key); ok {
		b.t.mapOps = append(b.t.mapOps, extentOp{ino: ino, off: off, del: true})
	}
	return nil
}

// watched parses key as an extent key of a mapped file.
func (b *extentMapBatch) watched(key []byte) (uint64, int64, bool) {
	ino, off, err := schema.ParseExtentKey(key)
	if err != nil || !b.t.e.extentMaps.watches(ino) {
		return 0, 0, false
	}
	return ino, off, true
}
