package ops

// FileStat is how a file is stored ("doppel stat FILE").
type FileStat struct {
	Path         string `json:"path"`
	Ino          uint64 `json:"ino"`
	Type         string `json:"type"` // file, symlink, fifo, socket, char, block
	Nlink        uint32 `json:"nlink"`
	SizeBytes    int64  `json:"size_bytes"`
	LogicalBytes int64  `json:"logical_bytes"` // bytes the extents map; the rest of the size is holes
	// SharedBytes are the bytes of the file whose chunks are referenced
	// from elsewhere too: by another file, or by a clone of this file's
	// data. (Hard links share the inode, not chunks: see Nlink.)
	SharedBytes int64        `json:"shared_bytes"`
	Extents     []ExtentStat `json:"extents"` // in file order; gaps are holes
	Chunks      []ChunkStat  `json:"chunks"`  // in order of first use
	// ThroughPin: a file of a clone not materialized yet; its extents are
	// its origin's as of the clone's pin, whose references the origin (or
	// the pin) holds, not this file: FileRefs is 0. Ino is 0 too when even
	// its directory is not materialized yet.
	ThroughPin bool `json:"through_pin,omitempty"`
}

// ExtentStat is one extent: file bytes [Offset, Offset+Length) are chunk
// bytes [ChunkOffset, ChunkOffset+Length).
type ExtentStat struct {
	Offset      int64  `json:"offset"`
	Length      int64  `json:"length"`
	Chunk       string `json:"chunk"` // the chunk hash's first 16 hex digits
	ChunkOffset int64  `json:"chunk_offset"`
}

// ChunkStat is one chunk the file uses.
type ChunkStat struct {
	Hash        string `json:"hash"` // BLAKE3-256, hex
	StoredBytes int64  `json:"stored_bytes"`
	RawBytes    int64  `json:"raw_bytes"`
	Refs        uint64 `json:"refs"`      // extent references in the whole volume
	FileRefs    uint64 `json:"file_refs"` // of those, from this file
}
