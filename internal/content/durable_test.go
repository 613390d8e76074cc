package content

import (
	"math/rand/v2"
	"testing"

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

// TestDurableCommitsSyncDataFirst: on a store whose commits are durable
// when they return, a commit that brings new chunks makes their bytes
// durable before it (ordered mode), and one that brings none does not
// sync; on Pebble (durable at Sync, with its hook) a Commit(false) does
// not sync the data.
func TestDurableCommitsSyncDataFirst(t *testing.T) {
	for _, durable := range []bool{false, true} {
		v := newEnv(t, Config{Chunking: policy(t, "fixed:64K")})
		if _, ok := v.meta.(meta.CommitsDurable); ok && !durable {
			// A shared kind's PostgreSQL store: every commit is durable,
			// so there is no store of the other kind to test here.
			continue
		}
		v.e.Close()
		cb := &countingBlobs{Store: v.blobs}
		var m meta.Store = v.meta
		if durable {
			m = durableStore{v.meta}
		}
		e, err := New(m, cb, v.cfg, v.e.log)
		testutil.Check(t, err)
		v.e = e
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
