package namespace

import (
	"encoding/hex"
	"fmt"
	"syscall"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/schema"
)

// ChunkPrefix is how extents name their chunk.
func ChunkPrefix(h schema.Hash) string { return hex.EncodeToString(h[:8]) }

// Stat reports how the file at path ("/"-rooted, inside the volume) is
// stored, after committing its buffered writes. It reads one metadata
// snapshot, so extents and refcounts agree with each other.
func (v *FS) Stat(path string) (ops.FileStat, error) {
	if err := v.flushBelow(path); err != nil {
		return ops.FileStat{}, err
	}
	defer v.pinReads.begin()() // a stub's extents are read through its pin
	snap := v.meta.Snapshot()
	defer snap.Close()
	x, err := v.viewPath(snap, path)
	if err != nil {
		return ops.FileStat{}, err
	}
	ino, n := x.ino, x.n
	if x.pin != 0 {
		ino = 0 // its directory is not materialized yet: no inode of its own
	}
	if isDir(n.Mode) {
		return ops.FileStat{}, fmt.Errorf("%s: %w (doppel df reports on directories)", path, syscall.EISDIR)
	}
	st := ops.FileStat{Path: path, Ino: ino, Type: typeName(n.Mode), Nlink: n.Nlink, SizeBytes: n.Size, Extents: []ops.ExtentStat{}, Chunks: []ops.ChunkStat{}}
	if n.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		st.SizeBytes = int64(len(n.Target))
	}
	tally := content.NewRefTally()
	src, err := x.source()
	if err != nil {
		return ops.FileStat{}, err
	}
	st.ThroughPin = !x.own()
	fe, err := tally.AddFile(src.r, src.ino, x.own(), true)
	if err != nil {
		return ops.FileStat{}, err
	}
	st.LogicalBytes = fe.Mapped
	chunks := map[schema.Hash]content.ChunkRefs{}
	if err := tally.Each(snap, func(c content.ChunkRefs) { chunks[c.Hash] = c }); err != nil {
		return ops.FileStat{}, err
	}
	listed := map[schema.Hash]bool{}
	for _, p := range fe.Pieces {
		c := chunks[p.Hash]
		st.Extents = append(st.Extents, ops.ExtentStat{Offset: p.Off, Length: int64(p.Length), Chunk: ChunkPrefix(p.Hash), ChunkOffset: int64(p.ChunkOff)})
		if !c.Exclusive() {
			st.SharedBytes += int64(p.Length)
		}
		if !listed[p.Hash] {
			listed[p.Hash] = true
			st.Chunks = append(st.Chunks, ops.ChunkStat{Hash: hex.EncodeToString(p.Hash[:]), StoredBytes: int64(c.Stored), RawBytes: int64(c.Raw), Refs: c.Refs, FileRefs: c.Owned})
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
