package versions

import (
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// A pin lives twice: as its record in the metadata store (schema.PinKey)
// and, while it retains versions, in the Retainer's memory. These write
// both in one transaction and undo the memory if the transaction aborts,
// so that no caller mirrors one into the other by hand.

// Txn is what the pin records need of a transaction (content.Tx).
type Txn interface {
	Batch() meta.Batch
	// OnAbort runs fn if the transaction aborts.
	OnAbort(fn func())
}

// LoadPin reads the record of the pin at version v.
func LoadPin(r meta.Reader, v uint64) (schema.Pin, error) {
	raw, err := r.Get(schema.PinKey(v))
	if err != nil {
		return schema.Pin{}, err
	}
	return schema.DecodePin(raw)
}

// AddPin writes the record of a new pin at version v and starts retaining
// for it. The transaction that writes it calls it before committing:
// transactions are serialized, so every later one retains.
func (r *Retainer) AddPin(tx Txn, v uint64, p schema.Pin) error {
	if err := tx.Batch().Set(schema.PinKey(v), p.Encode()); err != nil {
		return err
	}
	r.Add(Pinned{Version: v, Pin: p})
	tx.OnAbort(func() { r.Remove(v) })
	return nil
}

// Unhold records that the pin at version v is no longer read by its clone
// and returns its record; found is false if the pin is gone.
func (r *Retainer) Unhold(tx Txn, v uint64) (p schema.Pin, found bool, err error) {
	p, err = LoadPin(tx.Batch(), v)
	if errors.Is(err, meta.ErrNotFound) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	held := p.Held
	p.Held = false
	if err := tx.Batch().Set(schema.PinKey(v), p.Encode()); err != nil {
		return p, false, err
	}
	r.SetHeld(v, false)
	tx.OnAbort(func() { r.SetHeld(v, held) })
	return p, true, nil
}

// AddDependent counts one more pin among the dependents of the pin at
// version v (a newer pin whose clone may hold stubs of v's clone).
func AddDependent(b meta.Batch, v uint64) error {
	p, err := LoadPin(b, v)
	if err != nil {
		return err
	}
	p.Dependents++
	return b.Set(schema.PinKey(v), p.Encode())
}

// DropDependent counts one dependent fewer for the pin at version v and
// reports whether nothing keeps it any more (not held, no dependents);
// found is false if the pin is gone.
func DropDependent(b meta.Batch, v uint64) (free, found bool, err error) {
	p, err := LoadPin(b, v)
	if errors.Is(err, meta.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if p.Dependents > 0 {
		p.Dependents--
	}
	if err := b.Set(schema.PinKey(v), p.Encode()); err != nil {
		return false, false, err
	}
	return !p.Held && p.Dependents == 0, true, nil
}

// DeletePin deletes the record of the pin at version v, once its
// retained versions are released.
func DeletePin(b meta.Batch, v uint64) error { return b.Delete(schema.PinKey(v)) }
