package meta

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// Pebble is the embedded metadata store.
type Pebble struct {
	db *pebble.DB
}

// OpenPebble opens (creating if needed) a Pebble store in dir.
func OpenPebble(dir string) (*Pebble, error) {
	opts := &pebble.Options{
		Cache:         pebble.NewCache(64 << 20),
		Logger:        slogLogger{},
		EventListener: &pebble.EventListener{BackgroundError: logBackgroundError},
		// The WAL is preallocated at 110% of the memtable and one old WAL is
		// kept for recycling; Pebble's 4 MiB default keeps that overhead of
		// an idle volume near 9 MiB.
		MemTableSize: 4 << 20,
	}
	defer opts.Cache.Unref()
	opts.EnsureDefaults()
	// Dedup lookups of new chunks miss; bloom filters answer them without
	// reading data blocks.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		opts.Levels[i].FilterType = pebble.TableFilter
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open metadata store %s: %w", dir, err)
	}
	return &Pebble{db: db}, nil
}

func (p *Pebble) Get(key []byte) ([]byte, error) { return getCopy(p.db, key) }

func (p *Pebble) NewIter(lower, upper []byte) (Iterator, error) {
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return it, nil
}

func (p *Pebble) NewBatch() Batch { return &pebbleBatch{b: p.db.NewIndexedBatch()} }

func (p *Pebble) Sync() error { return p.db.LogData(nil, pebble.Sync) }

func (p *Pebble) DiskUsage() int64 { return int64(p.db.Metrics().DiskSpaceUsage()) }

func (p *Pebble) Close() error { return p.db.Close() }

type pebbleBatch struct {
	b      *pebble.Batch
	closed bool
}

func (b *pebbleBatch) Get(key []byte) ([]byte, error) { return getCopy(b.b, key) }

func (b *pebbleBatch) NewIter(lower, upper []byte) (Iterator, error) {
	it, err := b.b.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return it, nil
}

func (b *pebbleBatch) Set(key, value []byte) error { return b.b.Set(key, value, nil) }
func (b *pebbleBatch) Delete(key []byte) error     { return b.b.Delete(key, nil) }

func (b *pebbleBatch) Commit(sync bool) error {
	opt := pebble.NoSync
	if sync {
		opt = pebble.Sync
	}
	return b.b.Commit(opt)
}

func (b *pebbleBatch) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	return b.b.Close()
}

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
