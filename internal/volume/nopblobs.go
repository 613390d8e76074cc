package volume

import (
	"errors"

	"github.com/doppelfs/doppel/internal/blob"
)

// nopBlobs stands in for the chunk store while init writes metadata only.
type nopBlobs struct{}

var errNoBlobs = errors.New("no chunk store during init")

func (nopBlobs) Put([]byte) (blob.Loc, error)         { return blob.Loc{}, errNoBlobs }
func (nopBlobs) PutMany([][]byte) ([]blob.Loc, error) { return nil, errNoBlobs }
func (nopBlobs) StartPutMany([][]byte) (*blob.Writing, error) {
	return nil, errNoBlobs
}
func (nopBlobs) Prefetch([]blob.Loc)                   {}
func (nopBlobs) Forget([]blob.Loc)                     {}
func (nopBlobs) Read(blob.Loc, []byte) ([]byte, error) { return nil, errNoBlobs }
func (nopBlobs) Free(blob.Loc) error                   { return errNoBlobs }
func (nopBlobs) Sync() error                           { return nil }
func (nopBlobs) Usage() (int64, int, error)            { return 0, 0, nil }
func (nopBlobs) Segments() ([]uint32, error)           { return nil, nil }
func (nopBlobs) Close() error                          { return nil }
func (nopBlobs) SessionStart() uint32                  { return 1 }
func (nopBlobs) Reclaim(uint32, []blob.Span) (int64, error) {
	return 0, errNoBlobs
}
