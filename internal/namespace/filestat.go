package namespace

import (
	"encoding/hex"
	"fmt"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
)

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

// ChunkPrefix is how extents name their chunk.
func ChunkPrefix(h schema.Hash) string { return hex.EncodeToString(h[:8]) }

// Stat reports how the file at path ("/"-rooted, inside the volume) is
// stored, after committing its buffered writes. It reads one metadata
// snapshot, so extents and refcounts agree with each other.
func (v *Volume) Stat(path string) (FileStat, error) {
	if err := v.flushBelow(path); err != nil {
		return FileStat{}, err
	}
	defer v.pinReads.begin()() // a stub's extents are read through its pin
	snap := v.meta.Snapshot()
	defer snap.Close()
	x, err := v.viewPath(snap, path)
	if err != nil {
		return FileStat{}, err
	}
	ino, n := x.ino, x.n
	if x.pin != 0 {
		ino = 0 // its directory is not materialized yet: no inode of its own
	}
	if isDir(n.Mode) {
		return FileStat{}, fmt.Errorf("%s: %w (doppel df reports on directories)", path, syscall.EISDIR)
	}
	st := FileStat{Path: path, Ino: ino, Type: typeName(n.Mode), Nlink: n.Nlink, SizeBytes: n.Size, Extents: []ExtentStat{}, Chunks: []ChunkStat{}}
	if n.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		st.SizeBytes = int64(len(n.Target))
	}
	tally := content.NewRefTally()
	src, err := x.source()
	if err != nil {
		return FileStat{}, err
	}
	st.ThroughPin = !x.own()
	fe, err := tally.AddFile(src.r, src.ino, x.own(), true)
	if err != nil {
		return FileStat{}, err
	}
	st.LogicalBytes = fe.Mapped
	chunks := map[schema.Hash]content.ChunkRefs{}
	if err := tally.Each(snap, func(c content.ChunkRefs) { chunks[c.Hash] = c }); err != nil {
		return FileStat{}, err
	}
	listed := map[schema.Hash]bool{}
	for _, p := range fe.Pieces {
		c := chunks[p.Hash]
		st.Extents = append(st.Extents, ExtentStat{Offset: p.Off, Length: int64(p.Length), Chunk: ChunkPrefix(p.Hash), ChunkOffset: int64(p.ChunkOff)})
		if !c.Exclusive() {
			st.SharedBytes += int64(p.Length)
		}
		if !listed[p.Hash] {
			listed[p.Hash] = true
			st.Chunks = append(st.Chunks, ChunkStat{Hash: hex.EncodeToString(p.Hash[:]), StoredBytes: int64(c.Stored), RawBytes: int64(c.Raw), Refs: c.Refs, FileRefs: c.Owned})
		}
	}
	return st, nil
}

func typeName(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		return "file"
	case syscall.S_IFDIR:
		return "dir"
	case syscall.S_IFLNK:
		return "symlink"
	case syscall.S_IFIFO:
		return "fifo"
	case syscall.S_IFSOCK:
		return "socket"
	case syscall.S_IFCHR:
		return "char"
	case syscall.S_IFBLK:
		return "block"
	}
	return fmt.Sprintf("mode %#o", mode&syscall.S_IFMT)
}
