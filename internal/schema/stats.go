package schema

// Stats are volume-wide space counters, updated in the same batch as the
// change they count.
type Stats struct {
	LogicalBytes  int64 // bytes referenced by extents of all files
	PhysicalBytes int64 // stored bytes of all chunks and owned blocks
	RawBytes      int64 // uncompressed bytes of all chunks and owned blocks
	Chunks        int64 // chunk records
	Inodes        int64
	// OwnedBlocks are blocks owned by their extent, without a chunk
	// record (Extent.Owned).
	OwnedBlocks int64
}

// KeyOwnedUnshared counts the owned blocks kept since the last pass of
// the dedup of owned blocks (content/owned_dedup.go), so that a pass
// still owed when the volume closed runs after it opens again.
var KeyOwnedUnshared = []byte("\x00owned_unshared")

// Stats record formats: 1 without owned blocks, 2 with them (written only
// when there are some, so that a volume without any keeps format 1).
const (
	statsFormat      = 1
	statsFormatOwned = 2
)

// Encode returns the record bytes.
func (s *Stats) Encode() []byte {
	e := enc{}
	if s.OwnedBlocks != 0 {
		e.raw([]byte{statsFormatOwned})
	} else {
		e.raw([]byte{statsFormat})
	}
	e.i(s.LogicalBytes)
	e.i(s.PhysicalBytes)
	e.i(s.RawBytes)
	e.i(s.Chunks)
	e.i(s.Inodes)
	if s.OwnedBlocks != 0 {
		e.i(s.OwnedBlocks)
	}
	return e.b
}

// DecodeStats parses a stats record.
func DecodeStats(b []byte) (Stats, error) {
	d := dec{b: b}
	f := d.raw(1)
	if d.err != nil || (f[0] != statsFormat && f[0] != statsFormatOwned) {
		return Stats{}, ErrBadRecord
	}
	s := Stats{LogicalBytes: d.i(), PhysicalBytes: d.i(), RawBytes: d.i(), Chunks: d.i(), Inodes: d.i()}
	if f[0] == statsFormatOwned {
		if s.OwnedBlocks = d.i(); d.err == nil && s.OwnedBlocks == 0 {
			return Stats{}, ErrBadRecord // not canonical: Encode writes format 1
		}
	}
	return s, d.end()
}

// Journal operations. The journal is an ordered log of which inodes changed
// at which version; it drives diff, background dedup and cache invalidation.
const (
	OpCreate  = 1
	OpData    = 2
	OpAttr    = 3
	OpLink    = 4 // a name was added to or removed from the inode
	OpDelete  = 5
	OpDirents = 6 // entries of a directory changed
)

// JournalEntry is the value of a journal key.
type JournalEntry struct{ Op uint8 }

// Encode returns the record bytes.
func (j JournalEntry) Encode() []byte { return []byte{1, j.Op} }

// DecodeJournalEntry parses a journal record.
func DecodeJournalEntry(b []byte) (JournalEntry, error) {
	if len(b) != 2 || b[0] != 1 || b[1] == 0 || b[1] > OpDirents {
		return JournalEntry{}, ErrBadRecord
	}
	return JournalEntry{Op: b[1]}, nil
}

// Stored is how many pieces of data the volume stores: chunks (records)
// and owned blocks.
func (s Stats) Stored() int64 { return s.Chunks + s.OwnedBlocks }
