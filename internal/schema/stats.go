package schema

// Stats are volume-wide space counters, updated in the same batch as the
// change they count.
type Stats struct {
	LogicalBytes  int64 // bytes referenced by extents of all files
	PhysicalBytes int64 // stored bytes of all chunks
	RawBytes      int64 // uncompressed bytes of all chunks
	Chunks        int64
	Inodes        int64
}

const statsFormat = 1

// Encode returns the record bytes.
func (s *Stats) Encode() []byte {
	e := enc{}
	e.raw([]byte{statsFormat})
	e.i(s.LogicalBytes)
	e.i(s.PhysicalBytes)
	e.i(s.RawBytes)
	e.i(s.Chunks)
	e.i(s.Inodes)
	return e.b
}

// DecodeStats parses a stats record.
func DecodeStats(b []byte) (Stats, error) {
	d := dec{b: b}
	d.format(statsFormat)
	s := Stats{LogicalBytes: d.i(), PhysicalBytes: d.i(), RawBytes: d.i(), Chunks: d.i(), Inodes: d.i()}
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
