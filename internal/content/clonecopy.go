package content

import (
	"math"

	"github.com/doppelfs/doppel/internal/meta"
)

// CopyAll gives dst, which has no extents, references to every extent of
// src as r shows them (a clone's origin as of its pin): metadata only, the
// chunks gain a reference each. It returns dst's mapped bytes.
func (t *Tx) CopyAll(r meta.Reader, src, dst uint64) (int64, error) {
	var mapped int64
	err := scanExtents(r, src, 0, math.MaxInt64, func(p Piece) error {
		mapped += int64(p.Length)
		return t.put(dst, p)
	})
	t.delta.LogicalBytes += mapped
	return mapped, err
}
