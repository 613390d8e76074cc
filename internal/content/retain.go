package content

import (
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Retainer is told of every key a transaction is about to set or delete,
// before the change, so that it can keep the old value (package versions
// keeps the past that pins need). ref adjusts the references of an
// extent's chunk in the transaction, for old extents it keeps (kept as
// schema.Unowned makes them).
type Retainer interface {
	BeforeChange(b meta.Batch, key []byte, ref func(schema.Extent, int64)) error
	// Keeps reports whether changes to ino's keys in this transaction
	// may keep their old values (a pin covers ino): an owned block is
	// then not written over in place (Tx.overwriteOwned).
	Keeps(ino uint64) (bool, error)
}

// SetRetainer installs r for every later transaction.
func (e *Engine) SetRetainer(r Retainer) {
	e.txMu.Lock()
	e.retainer = r
	e.txMu.Unlock()
}

// retainBatch is a transaction's batch with the retainer in front of
// every change.
type retainBatch struct {
	meta.Batch
	r   Retainer
	ref func(schema.Extent, int64) // the Tx's RefExtent, bound once: a method value per change was an allocation per block written
}

func (b *retainBatch) Set(key, value []byte) error {
	if err := b.r.BeforeChange(b.Batch, key, b.ref); err != nil {
		return err
	}
	return b.Batch.Set(key, value)
}

func (b *retainBatch) Delete(key []byte) error {
	if err := b.r.BeforeChange(b.Batch, key, b.ref); err != nil {
		return err
	}
	return b.Batch.Delete(key)
}

// OnCommit runs fn after the transaction commits (not if it aborts).
func (t *Tx) OnCommit(fn func()) { t.after = append(t.after, fn) }

// OnCommitLocked runs fn once the transaction committed, before the next
// transaction may begin.
func (t *Tx) OnCommitLocked(fn func()) { t.locked = append(t.locked, fn) }

// OnAbort runs fn if the transaction aborts (also when its commit fails),
// before the next transaction may begin: state kept beside the metadata
// is undone there.
func (t *Tx) OnAbort(fn func()) { t.aborted = append(t.aborted, fn) }
