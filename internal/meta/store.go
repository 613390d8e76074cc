package meta

import (
	"bytes"
	"errors"
	"time"
)

// ErrNotFound is returned by Get when a key does not exist.
var ErrNotFound = errors.New("meta: key not found")

// Reader reads keys. Values returned by Get are copies the caller owns.
type Reader interface {
	Get(key []byte) ([]byte, error)
	// NewIter returns an iterator over keys in [lower, upper); a nil upper
	// has no end, an upper at or below lower makes an empty range.
	NewIter(lower, upper []byte) (Iterator, error)
}

// Iterator walks keys in order. Key and Value are valid until the next move.
//
// A move that fails (a store a network away could not answer) leaves the
// iterator invalid, exactly as the end of its range does: a caller that
// stops when a move returns false must then check Error, which is nil at
// the true end of the range. Close returns the same error.
type Iterator interface {
	First() bool
	Last() bool
	// SeekGE moves to the first key >= key; SeekLT to the last key < key.
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() []byte
	Value() []byte
	// Error is the failure that stopped the iterator, nil if none.
	Error() error
	Close() error
}

// Batch is an atomic set of changes. Reads through a Batch see its own
// uncommitted writes on top of the committed state.
type Batch interface {
	Reader
	// Set and Delete copy their arguments: the caller may reuse them
	// once they return (storetest: SetCopiesArguments).
	Set(key, value []byte) error
	Delete(key []byte) error
	// Commit applies the batch atomically. On return the change survives the
	// process being killed; with sync it is also durable against power loss,
	// without only after the next Store.Sync.
	Commit(sync bool) error
	// Close releases the batch; closing an uncommitted batch discards it.
	Close() error
}

// Snapshot is a read-only view of the store frozen when it was taken:
// commits after that do not show through it. It must be closed.
type Snapshot interface {
	Reader
	Close() error
}

// Store is the metadata store of one volume.
type Store interface {
	Reader
	NewBatch() Batch
	// Snapshot lets a long reader (a walk of a large subtree) see one
	// consistent state without holding any lock against writers.
	Snapshot() Snapshot
	// Sync makes every committed batch durable. A store that can make
	// commits durable on its own schedule too (Pebble does when it rotates
	// its log or flushes a memtable) also implements DurabilityHook.
	Sync() error
	// DiskUsage is the space the store occupies on disk, in bytes.
	DiskUsage() int64
	Close() error
}

// DurabilityHook is implemented by stores that make commits durable on
// their own schedule: fn runs before each such event, and the caller makes
// the data the commits name durable in it.
type DurabilityHook interface {
	SetBeforeDurable(fn func() error)
	// SetCommitSync makes a batch committed with sync call fn once it is
	// written, instead of syncing the store itself: a synced commit makes
	// every commit before it durable too, and fn makes the data those
	// name durable first, with no commit slipping in between (the content
	// engine's Sync). fn must not be called with locks a commit needs. A
	// nil fn restores the store's own sync.
	SetCommitSync(fn func() error)
}

// CommitsDurable is implemented by stores whose every commit is durable
// when Commit returns, sync or not (PostgreSQL with synchronous_commit
// on). The chunk data a commit names must then be durable before the
// commit, not at the next Sync: the content engine syncs it first.
type CommitsDurable interface {
	CommitsDurable()
}

// AllSyncer is implemented by stores whose Sync makes durable only what
// this process committed, while other processes' commits it read may not
// be yet (PostgreSQL: commits without sync, async.go). SyncAll makes every
// commit of every process so far durable, or fails if a crash may have
// lost one this process read.
type AllSyncer interface {
	SyncAll() error
}

// MultiGetter is implemented by stores that read many keys in one round
// trip (PostgreSQL: one statement). A store a network away otherwise costs
// a round trip per Get, and an iterator seeking to scattered keys (chunk
// records, ordered by hash) one per page it fetches.
type MultiGetter interface {
	// GetMany returns the values of keys in their order, nil for a key
	// that does not exist.
	GetMany(keys [][]byte) ([][]byte, error)
}

// RangeDeleter is implemented by batches that delete a key range with one
// record (Pebble's range tombstone) instead of one per key.
type RangeDeleter interface {
	DeleteRange(lower, upper []byte) error
}

// Compacter is implemented by stores that can rewrite their files to drop
// deleted keys now rather than when their own compactions get to them.
type Compacter interface {
	Compact() error
}

// Counters is implemented by stores that can advance a counter record
// atomically against every other writer of the store, other processes and
// hosts included (a batch's read-modify-write is not, where commits are
// blind writes). The shared volume's pack numbers come from one.
type Counters interface {
	// Reserve sets the counter at key (8 bytes, big endian; a missing key
	// counts as 0) to max(its value, floor) + n in one atomic step and
	// returns the new value: the caller owns (new-n, new].
	Reserve(key []byte, n, floor uint64) (uint64, error)
}

// TxLocker is implemented by stores that several processes (hosts) write
// at once (PostgreSQL): a locked batch holds the store's transaction lock
// from its creation to its Commit or Close, so that the volume's
// transactions run one at a time across all of them, each seeing every
// earlier one (docs/SHARED.md, 9.2).
type TxLocker interface {
	// LockedBatch takes the lock and reads keys (their latest committed
	// values, nil for a missing key) in the same step.
	LockedBatch(keys ...[]byte) (Batch, [][]byte, error)
}

// CacheDropper is implemented by stores that cache what they read: the
// caller learned that another process wrote the store.
type CacheDropper interface {
	DropCaches()
}

// Leaser is implemented by stores that several processes (hosts) use at
// once: background work that one of them at a time must do runs only
// while TryLease grants its lease (docs/SHARED.md, 9.5).
type Leaser interface {
	// TryLease takes or renews the lease name for ttl; false means
	// another live process holds it.
	TryLease(name string, ttl time.Duration) (bool, error)
}

// ForeignChanges is implemented by a locked batch of a store that knows
// which keys other processes (hosts) changed since this process last
// looked: Changed reports whether they wrote or deleted a key in
// [lo, hi) (hi nil: no upper bound). A store without it, or that lost
// track (All), leaves the caller to assume that anything changed.
type ForeignChanges interface {
	ForeignChanges() Changes
}

// Changes are the keys and ranges other processes changed.
type Changes struct {
	All    bool // unknown: take everything as changed
	Keys   [][]byte
	Ranges [][2][]byte // [lo, hi); hi nil: to the end
}

// Changed reports whether a change falls in [lo, hi) (hi nil: no bound).
func (c Changes) Changed(lo, hi []byte) bool {
	if c.All {
		return true
	}
	in := func(k []byte) bool { return bytes.Compare(k, lo) >= 0 && (hi == nil || bytes.Compare(k, hi) < 0) }
	for _, k := range c.Keys {
		if in(k) {
			return true
		}
	}
	for _, r := range c.Ranges {
		// [r0, r1) and [lo, hi) overlap.
		if (hi == nil || bytes.Compare(r[0], hi) < 0) && (r[1] == nil || bytes.Compare(lo, r[1]) < 0) {
			return true
		}
	}
	return false
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return !c.All && len(c.Keys) == 0 && len(c.Ranges) == 0 }
