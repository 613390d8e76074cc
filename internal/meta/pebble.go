package meta

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"
)

// Pebble is the embedded metadata store.
type Pebble struct {
	db *pebble.DB
	failStop
	lastUsage atomic.Int64
}

// OpenPebble opens (creating if needed) a Pebble store in dir.
func OpenPebble(dir string) (*Pebble, error) { return openPebble(dir, vfs.Default) }

func openPebble(dir string, fs vfs.FS) (*Pebble, error) {
	opts := &pebble.Options{
		FS:     fs,
		Cache:  pebble.NewCache(64 << 20),
		Logger: quietLogger{},
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

func (p *Pebble) NewBatch() Batch { return &pebbleBatch{b: p.db.NewIndexedBatch(), fs: &p.failStop} }

func (p *Pebble) Sync() error {
	return p.guard(func() error { return p.db.LogData(nil, pebble.Sync) })
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
	fs     *failStop
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
	return b.fs.guard(func() error { return b.b.Commit(opt) })
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

// quietLogger drops Pebble's informational chatter; errors still reach the
// caller through return values.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	panic(newFatal(format, args))
}
