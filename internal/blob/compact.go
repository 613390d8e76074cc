package blob

// Compactable is implemented by stores whose segments cannot give a freed
// chunk's bytes back on their own (objects in S3 cannot be punched): a
// segment keeps its dead bytes until the content layer copies its live
// chunks elsewhere, re-points their records and retires it. The content
// layer's compactor (content/compact.go) drives it; the embedded store,
// which punches holes, does not implement it.
type Compactable interface {
	// SparseSegments lists sealed segments in the service whose live
	// bytes are below maxLive of their size, fewest live bytes first;
	// retired segments and those still being written are left out.
	SparseSegments(maxLive float64) []SegmentUse
	// ReadSegment returns all stored bytes of sealed segment num.
	ReadSegment(num uint32) ([]byte, error)
	// Retire marks all of sealed segment num dead: the caller guarantees
	// that no durable metadata names it any more. Its object is deleted
	// by DeleteRetired once no read that may have found it before can
	// still be under way.
	Retire(num uint32) error
	// DeleteRetired deletes the retired segments whose grace period has
	// passed and returns how many and their bytes.
	DeleteRetired() (int, int64, error)
	// Relist reads the list of segments from the service again, so that
	// a sweep sees segments this process did not write. An error means
	// the list may be incomplete: nothing may be deleted on its basis.
	Relist() error
	// DeadBytes reports the bytes of stored segments that no chunk uses
	// any more and that compaction (or retirement) would give back.
	DeadBytes() int64
}

// SegmentUse is how much of a segment is live.
type SegmentUse struct {
	Num  uint32
	Size int64 // bytes stored
	Live int64 // bytes of it that chunks still use (Align-rounded)
}
