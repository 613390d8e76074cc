package fsck

import (
	"errors"
	"os"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
)

// orphanSpace reports the data of segment num that no live chunk (and no
// pending free) covers. Data ranges come from SEEK_DATA/SEEK_HOLE; where
// the host file system cannot tell, the whole file counts as data. Online,
// segments of the running session are skipped: transactions in flight
// write there before they commit.
func (c *checker) orphanSpace(num uint32) error {
	if c.online && num >= c.liveFrom {
		return nil
	}
	data, name, err := c.segmentData(num)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	unused := blob.Unused(data, c.usedSpans(num))
	var bytes int64
	for _, u := range unused {
		bytes += u.End - u.Start
	}
	if ranges := len(unused); ranges > 0 {
		first := unused[0].Start
		c.rep.ReclaimableBytes += bytes
		c.reportSev(KindOrphanSpace, SeverityReclaimable, noIno,
			"segment %d (%s): %d bytes in %d ranges hold no live chunk (first at offset %d)",
			num, name, bytes, ranges, first)
		c.fix.orphanSegs = append(c.fix.orphanSegs, num)
	}
	return nil
}

// segmentData returns the spans of segment num that hold data, and its
// name: from the store (blob.Inspector), or from the segment file.
func (c *checker) segmentData(num uint32) ([]blob.Span, string, error) {
	if insp, ok := c.s.Blobs.(blob.Inspector); ok {
		data, err := insp.SegmentData(num)
		return data, insp.SegmentName(num), err
	}
	f, err := os.Open(c.segPath(num))
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	data, err := blob.DataSpans(f)
	if err != nil {
		return nil, "", &os.PathError{Op: "seek data", Path: f.Name(), Err: err}
	}
	return data, f.Name(), nil
}

// usedSpans are the spans of segment num that chunk records or free
// records name: live data, or space the free path will punch.
func (c *checker) usedSpans(num uint32) []blob.Span {
	used := slices.Clone(c.live[num])
	for _, f := range c.freed {
		if f.Segment == num {
			used = append(used, blob.SpanAt(f, c.align))
		}
	}
	return used
}
