package content

import (
	"bytes"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/testutil"
)

// durableStore is a store whose commits are durable at once (as
// PostgreSQL's are), without Pebble's durability hook.
type durableStore struct{ meta.Store }

func (durableStore) CommitsDurable() {}

// countingBlobs counts Sync calls.
type countingBlobs struct {
	blob.Store
	syncs int
}

func (c *countingBlobs) Sync() error { c.syncs++; return c.Store.Sync() }

// envWithBlobs is a test env whose engine sees the blob store through
// wrap, on a store whose commits are durable at once if durable (as
// PostgreSQL's are) or at Sync (Pebble's). It reports false where the
// matrix's store cannot be of the kind asked for (a shared kind's
// PostgreSQL store is always durable).
func envWithBlobs(t *testing.T, durable bool, wrap func(blob.Store) blob.Store) (*env, bool) {
	v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
	if _, ok := v.meta.(meta.CommitsDurable); ok && !durable {
		return nil, false
	}
	v.e.Close()
	var m meta.Store = v.meta
	if durable {
		m = durableStore{v.meta}
	}
	e, err := New(m, wrap(v.blobs), v.cfg, v.e.log)
	testutil.Check(t, err)
	v.e = e
	return v, true
}

// TestDurableCommitsSyncDataFirst: on a store whose commits are durable
// when they return, a commit that brings new chunks makes their bytes
// durable before it (ordered mode), and one that brings none does not
// sync; on Pebble (durable at Sync, with its hook) a Commit(false) does
// not sync the data.
func TestDurableCommitsSyncDataFirst(t *testing.T) {
	for _, durable := range []bool{false, true} {
		cb := &countingBlobs{}
		v, ok := envWithBlobs(t, durable, func(b blob.Store) blob.Store { cb.Store = b; return cb })
		if !ok {
			continue
		}
		data := testutil.RandBytes(rand.New(rand.NewPCG(7, 8)), 128<<10)
		v.write(5, 0, data)
		want := 0
		if durable {
			want = 1
		}
		if cb.syncs != want {
			t.Errorf("durable commits %v: %d data syncs for a commit of new chunks, want %d", durable, cb.syncs, want)
		}
		cb.syncs = 0
		v.do(func(tx *Tx) error { _, err := tx.Punch(5, 0, 4096); return err })
		if cb.syncs != 0 {
			t.Errorf("durable commits %v: %d data syncs for a commit without new chunks", durable, cb.syncs)
		}
	}
}

// blockingBlobs holds its Sync number blockAt (from 1) until release is
// closed.
type blockingBlobs struct {
	blob.Store
	entered, release chan struct{}
	blockAt          int
	syncs            atomic.Int32
}

func (b *blockingBlobs) Sync() error {
	if int(b.syncs.Add(1)) == b.blockAt {
		close(b.entered)
		<-b.release
	}
	return b.Store.Sync()
}

// TestSyncHoldsCommitsOnlyWhereCommitsAreNotDurable: while Engine.Sync
// waits for the blob store, a commit that brings new chunks waits for it
// on Pebble (its log is made durable by that Sync, after the data), and
// goes ahead where every commit is durable at once (it has synced its own
// chunks): a periodic sync must not stall a streaming writer there.
func TestSyncHoldsCommitsOnlyWhereCommitsAreNotDurable(t *testing.T) {
	for _, durable := range []bool{false, true} {
		// Where commits are not durable, Sync's first pass over the data
		// runs without the gate (commits go on), its second under it.
		bb := &blockingBlobs{entered: make(chan struct{}), release: make(chan struct{}), blockAt: 2}
		if durable {
			bb.blockAt = 1
		}
		v, ok := envWithBlobs(t, durable, func(b blob.Store) blob.Store { bb.Store = b; return bb })
		if !ok {
			continue
		}
		e := v.e
		synced := make(chan error, 1)
		go func() { synced <- e.Sync() }()
		<-bb.entered
		data := testutil.RandBytes(rand.New(rand.NewPCG(9, 10)), 128<<10)
		wrote := make(chan error, 1)
		go func() { wrote <- commitNew(e, 5, data) }()
		if durable {
			select { // the commit must not wait for the Sync, which waits for us
			case err := <-wrote:
				testutil.Check(t, err)
			case <-time.After(20 * time.Second):
				close(bb.release)
				t.Fatal("a commit of new chunks waited for a Sync where commits are durable")
			}
			close(bb.release)
		} else {
			select {
			case err := <-wrote:
				t.Fatalf("a commit of new chunks landed (err %v) while Sync made the data durable before the log", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(bb.release)
			testutil.Check(t, <-wrote)
		}
		testutil.Check(t, <-synced)
		if got := v.read(5, 0, len(data)); !bytes.Equal(got, data) {
			t.Errorf("durable commits %v: the file does not read back as written", durable)
		}
	}
}

// commitNew writes data at the start of ino in one transaction, as
// env.write does, returning errors instead of failing the test (it runs
// outside the test's goroutine).
func commitNew(e *Engine, ino uint64, data []byte) error {
	ps, _, err := e.Prepare(0, data, true)
	if err != nil {
		return err
	}
	tx, err := e.Begin()
	if err != nil {
		return err
	}
	if _, err := tx.WriteChunks(ino, ps); err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(false)
}
