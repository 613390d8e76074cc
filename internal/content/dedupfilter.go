package content

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sync/atomic"

	"github.com/doppelfs/doppel/internal/schema"
)

// A dedupFilter answers most dedup lookups of new chunks from memory (Data
// Domain's "summary vector", Zhu et al., FAST 2008): a Bloom filter of
// every hash the chunk table holds. A hash the filter lacks has no record,
// so Prepare marks it missed without asking the metadata store. On a fresh
// copy into an export those lookups were a fifth of the server's CPU,
// mostly seeks in Pebble's memtables, which have no bloom filter
// (docs/BENCHMARKS.md, "Dedup lookups of new chunks from memory").
//
// A miss the filter reports must be true: the commit of a chunk missed at
// a createdLog gen skips its record lookup (knownMissing), and a record
// overwritten as new would lose its references. So the filter holds a
// superset of the table's hashes at all times it is ready:
//
//   - it is built (from the first lookup on) by a scan of the chunk
//     table that starts after the filter is installed in the createdLog,
//     and every commit adds the hashes whose records it created before
//     it bumps the log's gen (createdLog.record). A record visible before the scan began is
//     found by the scan; any later one is added by its commit.
//   - a lookup reads the gen before it asks the filter; a commit it does
//     not see in the filter bumps the gen after that read, so the commit of
//     the missed chunk looks its record up anyway (createdLog.mayExist).
//   - where other hosts create chunk records too (meta.TxLocker), the
//     filter holds the table's hashes as this engine last saw it under
//     the volume's transaction lock, and its own: a record another host
//     committed since is missing from it, as it is from a lookup made
//     before that commit. The Begin of the transaction that commits the
//     missed chunk takes the other hosts' changes first (foreignCommits)
//     and puts their chunk keys in the log (and the filter) at a gen
//     after the lookup's, so the commit looks the record up. Where the
//     store cannot say which keys changed, createdLog.foreign drops the
//     filter for the rest of the mount.
//
// Freed chunks stay in the filter (false positives cost a real lookup);
// when more hashes were added than it was sized for, it is replaced by a
// new one twice the size, built the same way, and lookups go to the store
// until that one is ready.
type dedupFilter struct {
	words  []atomic.Uint64 // blocks of filterBlockWords words
	blocks uint64
	room   int64 // hashes it was sized for
	added  atomic.Int64
	ready  atomic.Bool // the scan of the chunk table is done
}

const (
	filterBlockWords = 8  // 512 bits, one cache line: one miss per lookup
	filterBitsPerKey = 12 // with filterProbes, about 1 % false positives
	filterProbes     = 6  // 9 bits of the hash each
	// filterMinKeys and filterMaxKeys bound the size: 24 KiB at least,
	// 24 MiB at most. Sized for twice the table, that is 8 M chunks
	// (32 GiB of 4 KiB blocks, 512 GiB of 64 KiB chunks) at 3 bytes
	// each; a larger table gets no filter.
	filterMinKeys = 16 << 10
	filterMaxKeys = 16 << 20
)

// newDedupFilter returns an empty filter for keys hashes, or nil past
// filterMaxKeys.
func newDedupFilter(keys int64) *dedupFilter {
	keys = max(keys, filterMinKeys)
	if keys > filterMaxKeys {
		return nil
	}
	blocks := (uint64(keys)*filterBitsPerKey + filterBlockWords*64 - 1) / (filterBlockWords * 64)
	return &dedupFilter{words: make([]atomic.Uint64, blocks*filterBlockWords), blocks: blocks, room: keys}
}

// at returns the first word of h's block and the bits that pick its
// probes. A chunk's hash is BLAKE3, uniform already: its bytes are the
// filter's hash functions.
func (f *dedupFilter) at(h schema.Hash) (word int, x uint64) {
	block, _ := bits.Mul64(binary.LittleEndian.Uint64(h[0:8]), f.blocks) // in [0, blocks)
	return int(block * filterBlockWords), binary.LittleEndian.Uint64(h[8:16])
}

// add puts h in the filter.
func (f *dedupFilter) add(h schema.Hash) {
	w, x := f.at(h)
	for range filterProbes {
		f.words[w+int(x&511)/64].Or(1 << (x & 63))
		x >>= 9
	}
	f.added.Add(1)
}

// full reports whether the filter holds more hashes than it was sized for.
func (f *dedupFilter) full() bool { return f.added.Load() > f.room }

// mayHold reports whether h may be in the table: false only if no record
// of h was added.
func (f *dedupFilter) mayHold(h schema.Hash) bool {
	w, x := f.at(h)
	for range filterProbes {
		if f.words[w+int(x&511)/64].Load()&(1<<(x&63)) == 0 {
			return false
		}
		x >>= 9
	}
	return true
}

// lookupFilter returns the dedup filter lookups may trust, or nil. The
// first lookup starts its build: engines that never store new chunks
// (df, stat, fsck's checks) never scan the chunk table for it.
func (e *Engine) lookupFilter() *dedupFilter {
	if !e.filterStarted.Load() && e.filterStarted.CompareAndSwap(false, true) {
		e.statsMu.Lock()
		chunks := e.stats.Chunks
		e.statsMu.Unlock()
		e.startDedupFilter(chunks)
	}
	return e.created.readyFilter()
}

// readyFilter returns the filter lookups may trust, or nil.
func (l *createdLog) readyFilter() *dedupFilter {
	if f := l.filter.Load(); f != nil && f.ready.Load() {
		return f
	}
	return nil
}

// startDedupFilter installs a new, empty filter sized for twice keys
// hashes and fills it from the chunk table in the background; lookups
// trust it once the scan is done. At most one build runs at a time.
func (e *Engine) startDedupFilter(keys int64) {
	if !e.filterBuilding.CompareAndSwap(false, true) {
		return
	}
	select {
	case <-e.filterQuit: // closing
		e.filterBuilding.Store(false)
		return
	default:
	}
	f := newDedupFilter(2 * keys)
	e.created.filter.Store(f) // from here on every commit adds to it
	if f == nil {
		e.filterBuilding.Store(false)
		return
	}
	e.filterWG.Add(1)
	go func() {
		defer e.filterWG.Done()
		defer e.filterBuilding.Store(false)
		switch err := e.fillDedupFilter(f); {
		case err == nil:
			f.ready.Store(true)
		case errors.Is(err, errFilterQuit):
		default:
			e.created.filter.CompareAndSwap(f, nil)
			e.log.Warn("dedup lookups go to the metadata store: building their filter failed", "err", err)
		}
	}()
}

var errFilterQuit = errors.New("engine closing")

// stopDedupFilter stops a build in progress and keeps new ones from
// starting: Close calls it before the metadata store closes.
func (e *Engine) stopDedupFilter() {
	select {
	case <-e.filterQuit:
	default:
		close(e.filterQuit)
	}
	e.filterWG.Wait()
}

// fillDedupFilter adds every hash of the chunk table to f.
func (e *Engine) fillDedupFilter(f *dedupFilter) error {
	lower, upper := schema.ChunkRange()
	it, err := e.meta.NewIter(lower, upper)
	if err != nil {
		return err
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		h, err := schema.ChunkHash(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		f.add(h)
		if n++; n%(64<<10) == 0 {
			select {
			case <-e.filterQuit:
				it.Close()
				return errFilterQuit
			default:
			}
		}
	}
	return errors.Join(it.Error(), it.Close())
}
