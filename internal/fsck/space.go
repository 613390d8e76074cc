package fsck

import (
	"errors"
	"os"

	"github.com/doppelfs/doppel/internal/blob"
)

// orphanSpace reports the data of segment num that no live chunk covers.
// live holds the Align-rounded ranges of its chunks in offset order. Data
// ranges come from SEEK_DATA/SEEK_HOLE; where the host file system cannot
// tell, the whole file counts as data.
func (c *checker) orphanSpace(num uint32, live []blob.Span) error {
	f, err := os.Open(c.segPath(num))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := blob.DataSpans(f)
	if err != nil {
		return &os.PathError{Op: "seek data", Path: f.Name(), Err: err}
	}
	unused := blob.Unused(data, live)
	var bytes int64
	for _, u := range unused {
		bytes += u.End - u.Start
	}
	if ranges := len(unused); ranges > 0 {
		first := unused[0].Start
		c.rep.ReclaimableBytes += bytes
		c.reportSev(KindOrphanSpace, SeverityReclaimable, noIno,
			"segment %d (%s): %d bytes in %d ranges hold no live chunk (first at offset %d)",
			num, f.Name(), bytes, ranges, first)
	}
	return nil
}
