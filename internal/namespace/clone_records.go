package namespace

import (
	"errors"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// The clone records (schema.CloneKey): one per clone or snapshot, keyed by
// its root inode; and the gone-clone records (schema.GoneKey) that a
// removed clone leaves while a later pin may still read through it. Code
// outside this file reads and writes them through these functions.

// errStopScan ends an eachClone early without an error.
var errStopScan = errors.New("stop the scan")

// loadClone reads clone c's record; meta.ErrNotFound if c is not a clone
// (or is gone).
func loadClone(r meta.Reader, c uint64) (schema.Clone, error) {
	raw, err := r.Get(schema.CloneKey(c))
	if err != nil {
		return schema.Clone{}, err
	}
	return schema.DecodeClone(raw)
}

// loadCloneOrGone reads clone c's record, or the last one it had if it is
// gone.
func loadCloneOrGone(r meta.Reader, c uint64) (schema.Clone, error) {
	raw, err := r.Get(schema.CloneKey(c))
	if errors.Is(err, meta.ErrNotFound) {
		raw, err = r.Get(schema.GoneKey(c))
	}
	if err != nil {
		return schema.Clone{}, err
	}
	return schema.DecodeClone(raw)
}

func saveClone(b meta.Batch, c uint64, rec schema.Clone) error {
	return b.Set(schema.CloneKey(c), rec.Encode())
}

// retireClone deletes clone c's record; with keep, it stays as a
// gone-clone record.
func retireClone(b meta.Batch, c uint64, rec schema.Clone, keep bool) error {
	if err := b.Delete(schema.CloneKey(c)); err != nil || !keep {
		return err
	}
	return b.Set(schema.GoneKey(c), rec.Encode())
}

// eachClone calls fn with every clone record in order of root inode; fn
// may return errStopScan to end early. The records are read before fn
// runs, so fn may change them.
func eachClone(r meta.Reader, fn func(c uint64, rec schema.Clone) error) error {
	return eachCloneIn(r, schema.CloneRange, schema.CloneIno, fn)
}

// eachGone is eachClone over the gone-clone records.
func eachGone(r meta.Reader, fn func(c uint64, rec schema.Clone) error) error {
	return eachCloneIn(r, schema.GoneRange, schema.GoneIno, fn)
}

// eachCloneOrGone is eachClone, then eachGone.
func eachCloneOrGone(r meta.Reader, fn func(c uint64, rec schema.Clone) error) error {
	if err := eachClone(r, fn); err != nil {
		return err
	}
	return eachGone(r, fn)
}

func eachCloneIn(r meta.Reader, bounds func() ([]byte, []byte), inoOf func([]byte) (uint64, error), fn func(uint64, schema.Clone) error) error {
	lower, upper := bounds()
	err := scan(r, lower, upper, func(k, val []byte) error {
		c, err := inoOf(k)
		if err != nil {
			return err
		}
		rec, err := schema.DecodeClone(val)
		if err != nil {
			return err
		}
		return fn(c, rec)
	})
	if errors.Is(err, errStopScan) {
		return nil
	}
	return err
}

// anyClone reports whether the volume has a clone or gone-clone record.
func anyClone(r meta.Reader) (bool, error) {
	for _, bounds := range []func() ([]byte, []byte){schema.CloneRange, schema.GoneRange} {
		lower, upper := bounds()
		if ok, err := hasKey(r, lower, upper); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// deleteGone deletes gone clone c's record.
func deleteGone(b meta.Batch, c uint64) error { return b.Delete(schema.GoneKey(c)) }
