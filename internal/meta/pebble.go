package meta

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// Pebble is the embedded metadata store.
type Pebble struct {
	db  *pebble.DB
	wal *softWAL
	failStop
	lastUsage atomic.Int64
	// commitSync, if set, makes a synced commit durable (SetCommitSync).
	commitSync atomic.Pointer[func() error]
}

// OpenPebble opens (creating if needed) a Pebble store in dir.
func OpenPebble(dir string) (*Pebble, error) { return OpenPebbleFS(dir, vfs.Default) }

// OpenPebbleFS opens a Pebble store in dir of the file system fs; tests pass
// a file system that can simulate a power loss or inject errors.
func OpenPebbleFS(dir string, fs vfs.FS) (*Pebble, error) {
	wal := newSoftWAL(fs)
	p := &Pebble{wal: wal}
	cache := blockCacheSize(totalMemory())
	opts := &pebble.Options{
		FS:           wal,
		Comparer:     wholeKeys,
		Cache:        pebble.NewCache(cache),
		Logger:       slogLogger{},
		MemTableSize: memTableSize(cache),
		EventListener: &pebble.EventListener{
			BackgroundError: logBackgroundError,
			// Called with the memtables to flush chosen and before their
			// table is written and synced.
			// If the data cannot be made durable, the store stops taking
			// writes (the flush itself cannot be refused here).
			FlushBegin: func(pebble.FlushInfo) {
				if err := wal.makingDurable(); err != nil {
					p.stop(fmt.Errorf("cannot make chunk data durable before a metadata flush: %w", err))
				}
			},
		},
	}
	defer opts.Cache.Unref()
	opts.EnsureDefaults()
	levelOptions(opts)
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open metadata store %s: %w", dir, err)
	}
	p.db = db
	return p, nil
}

func (p *Pebble) Get(key []byte) ([]byte, error) { return getCopy(p.db, key) }

// iterOptions bounds an iterator to [lower, upper). An upper bound below
// the lower one is an empty range, as on PostgreSQL; Pebble calls it a
// programming error (with its invariants checked, under -race, a seek
// there ends the process), so it becomes [lower, lower).
func iterOptions(lower, upper []byte) *pebble.IterOptions {
	if upper != nil && bytes.Compare(upper, lower) < 0 {
		upper = lower
	}
	return &pebble.IterOptions{LowerBound: lower, UpperBound: upper}
}

func (p *Pebble) NewIter(lower, upper []byte) (Iterator, error) {
	it, err := p.db.NewIter(iterOptions(lower, upper))
	if err != nil {
		return nil, err
	}
	return it, nil
}

func (p *Pebble) Snapshot() Snapshot { return pebbleSnapshot{p.db.NewSnapshot()} }

func (p *Pebble) NewBatch() Batch { return &pebbleBatch{b: p.db.NewIndexedBatch(), p: p} }

// SetBeforeDurable registers fn, which runs before Pebble makes metadata
// durable on its own (a log closed at rotation, a memtable flushed to a
// table). The content engine makes chunk data durable in it, so that no
// metadata is ever durable before the data it names. fn must not call
// into the store. A nil fn removes the hook.
func (p *Pebble) SetBeforeDurable(fn func() error) {
	if fn == nil {
		p.wal.beforeDurable.Store(nil)
		return
	}
	p.wal.beforeDurable.Store(&fn)
}

// SetCommitSync implements DurabilityHook.
func (p *Pebble) SetCommitSync(fn func() error) {
	if fn == nil {
		p.commitSync.Store(nil)
		return
	}
	p.commitSync.Store(&fn)
}

// Sync makes every committed batch durable: the log is written out to the
// OS (pebble.Sync, made cheap by softWAL), then fsync'd.
func (p *Pebble) Sync() error {
	return p.guard(func() error {
		if err := p.db.LogData(nil, pebble.Sync); err != nil {
			return err
		}
		return p.wal.syncLogs()
	})
}

// DiskUsage asks Pebble, except after a failure: Pebble may hold the lock
// its metrics need for good, so the last answer is repeated.
func (p *Pebble) DiskUsage() int64 {
	if p.failure() != nil {
		return p.lastUsage.Load()
	}
	n := int64(p.db.Metrics().DiskSpaceUsage())
	p.lastUsage.Store(n)
	return n
}

// TableBytes reports the bytes of the tables that hold the store's data
// (live) and of tables no longer needed that wait to be deleted, because
// an open iterator or snapshot still reads them or their deletion is under
// way (pending).
func (p *Pebble) TableBytes() (live, pending int64) {
	m := p.db.Metrics()
	return int64(m.Total().Size), int64(m.Table.ObsoleteSize + m.Table.ZombieSize)
}

// LSM describes Pebble's levels and tables, for diagnosing space.
func (p *Pebble) LSM() string {
	out := p.db.Metrics().String()
	levels, err := p.db.SSTables(pebble.WithProperties())
	if err != nil {
		return out + err.Error()
	}
	for l, tables := range levels {
		for _, t := range tables {
			pr := t.Properties
			out += fmt.Sprintf("L%d %s: %d bytes, %d entries (%d deletions, %d range deletions), keys %d bytes, values %d bytes, %q..%q\n",
				l, t.FileNum, t.Size, pr.NumEntries, pr.NumDeletions, pr.NumRangeDeletions, pr.RawKeySize, pr.RawValueSize,
				t.Smallest.UserKey, t.Largest.UserKey)
		}
	}
	return out
}

// Compact compacts the whole key space, so that deleted keys leave the
// disk (measurements of metadata size want that).
func (p *Pebble) Compact() error {
	return p.guard(func() error {
		return p.db.Compact([]byte{0}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, true)
	})
}

// Close closes the store; a failed store is left as it is (closing it
// could hang), and the process's exit releases it.
func (p *Pebble) Close() error {
	if err := p.failure(); err != nil {
		return err
	}
	return p.db.Close()
}

type pebbleBatch struct {
	b      *pebble.Batch
	p      *Pebble
	closed bool
	// written holds the keys the batch has set or deleted, while there
	// are few (most namespace transactions). A Get of any other key reads
	// the store itself, which costs about half of a read through the
	// indexed batch (that one builds an iterator over batch, memtables and
	// tables) and returns the same: the batch has nothing to add.
	written map[string]struct{}
	many    bool // more keys written than tracked: every Get goes through the batch
}

// maxTrackedWrites bounds pebbleBatch.written.
const maxTrackedWrites = 64

func (b *pebbleBatch) wrote(key []byte) {
	switch {
	case b.many:
	case len(b.written) >= maxTrackedWrites:
		b.many, b.written = true, nil
	default:
		if b.written == nil {
			b.written = make(map[string]struct{}, 8)
		}
		b.written[string(key)] = struct{}{}
	}
}

func (b *pebbleBatch) Get(key []byte) ([]byte, error) {
	if _, ok := b.written[string(key)]; !ok && !b.many {
		return getCopy(b.p.db, key)
	}
	return getCopy(b.b, key)
}

func (b *pebbleBatch) NewIter(lower, upper []byte) (Iterator, error) {
	it, err := b.b.NewIter(iterOptions(lower, upper))
	if err != nil {
		return nil, err
	}
	return it, nil
}

func (b *pebbleBatch) Set(key, value []byte) error {
	b.wrote(key)
	return b.b.Set(key, value, nil)
}

func (b *pebbleBatch) Delete(key []byte) error {
	b.wrote(key)
	return b.b.Delete(key, nil)
}

// Commit applies the batch. The commit always reaches the OS before it
// returns (see softWAL), so it survives the daemon being killed; with sync
// it is also durable against power loss.
func (b *pebbleBatch) Commit(sync bool) error {
	return b.p.guard(func() error {
		if err := b.b.Commit(pebble.Sync); err != nil {
			return err
		}
		if !sync {
			return nil
		}
		if fn := b.p.commitSync.Load(); fn != nil {
			return (*fn)()
		}
		return b.p.wal.syncLogs()
	})
}

// DeleteRange deletes every key in [lower, upper) with one tombstone.
func (b *pebbleBatch) DeleteRange(lower, upper []byte) error {
	b.many, b.written = true, nil // Gets must see the deletion
	return b.b.DeleteRange(lower, upper, nil)
}

func (b *pebbleBatch) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	return b.b.Close()
}

type pebbleSnapshot struct{ s *pebble.Snapshot }

func (s pebbleSnapshot) Get(key []byte) ([]byte, error) { return getCopy(s.s, key) }

func (s pebbleSnapshot) NewIter(lower, upper []byte) (Iterator, error) {
	it, err := s.s.NewIter(iterOptions(lower, upper))
	if err != nil {
		return nil, err
	}
	return it, nil
}

func (s pebbleSnapshot) Close() error { return s.s.Close() }

type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

func getCopy(g getter, key []byte) ([]byte, error) {
	v, closer, err := g.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, nil
}
