package namespace

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// errno turns a failure into what the caller of the file system sees.
// Errno values the namespace produces itself pass through. A full host
// disk (or quota) anywhere below is ENOSPC. Everything else coming from
// the stores (damage, I/O errors, a failed metadata store) is logged,
// naming the file when the error says which, and becomes EIO: an errno
// wrapped inside a store's error (say ENOENT for a missing segment file)
// describes the store, not the file, and must not reach the caller.
func (v *FS) errno(op string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	// A writer on a full disk may retry in a loop: these are logged now
	// and then.
	if errors.Is(err, meta.ErrFailed) {
		if logNow(&v.metaFailLogged) {
			v.log.Error("the metadata store failed: every change fails with EIO until the volume is unmounted and mounted again; reads go on", "op", op, "err", err)
		}
		if isNoSpace(err) { // the change that hit the full disk
			return syscall.ENOSPC
		}
		return syscall.EIO
	}
	if isNoSpace(err) {
		if logNow(&v.noSpaceLogged) {
			v.log.Warn("no space on the store's file system: refusing new data (deletes still work)", "op", op, "err", err)
		}
		return syscall.ENOSPC
	}
	args := []any{"op", op, "err", err}
	var re *content.RecordError
	if errors.As(err, &re) {
		args = append(args, "ino", re.Ino, "path", v.pathOf(re.Ino))
	}
	args = append(args, chunkArgs(err)...)
	v.log.Error("operation failed", args...)
	return syscall.EIO
}

// logNow reports whether it is time to log again: at most every 10 s per
// kind of message; last holds when it was last logged (unix ns).
func logNow(last *atomic.Int64) bool {
	l := last.Load()
	return time.Since(time.Unix(0, l)) > 10*time.Second && last.CompareAndSwap(l, time.Now().UnixNano())
}

// isNoSpace reports whether err comes from a full file system or quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// chunkArgs returns log fields naming the chunk err is about, if any.
func chunkArgs(err error) []any {
	var ce *content.ChunkError
	if !errors.As(err, &ce) {
		return nil
	}
	args := []any{"chunk", fmt.Sprintf("%x", ce.Hash[:])}
	switch {
	case ce.Object != "":
		args = append(args, "pack", ce.Object, "pack_offset", ce.Loc.Offset, "stored_length", ce.Loc.Length)
	case ce.Loc.Segment != 0:
		args = append(args, "segment", fmt.Sprintf("seg-%08x", ce.Loc.Segment), "segment_offset", ce.Loc.Offset, "stored_length", ce.Loc.Length)
	}
	return args
}

// decodeInode decodes ino's record, marking a failure as damage to ino.
func decodeInode(ino uint64, b []byte) (schema.Inode, error) {
	n, err := schema.DecodeInode(b)
	if err != nil {
		return n, &content.RecordError{Ino: ino, Record: "inode", Err: err}
	}
	return n, nil
}

// decodeDirent decodes entry name of directory dir.
func decodeDirent(dir uint64, name string, b []byte) (schema.Dirent, error) {
	d, err := schema.DecodeDirent(b)
	if err != nil {
		return d, &content.RecordError{Ino: dir, Record: fmt.Sprintf("directory entry %q", name), Err: err}
	}
	return d, nil
}

// readFailed logs a failed read of ino, naming the file and the chunk, and
// returns the errno the reader gets: EIO, since the data cannot be served.
func (v *FS) readFailed(ino uint64, off int64, n int, err error) error {
	args := []any{"ino", ino, "path", v.pathOf(ino), "offset", off, "length", n}
	args = append(args, chunkArgs(err)...)
	msg := "read failed"
	var re *content.RecordError
	switch {
	case errors.Is(err, content.ErrCorrupt):
		msg = "read failed: stored data is damaged"
	case errors.As(err, &re):
		msg = "read failed: metadata is damaged"
	}
	v.log.Error(msg, append(args, "err", err)...)
	return syscall.EIO
}
