package blockfile

import (
	"io"

	"github.com/doppelfs/doppel/internal/vfs"
)

// ReadAt implements nbd.ReaderAt. A connection keeps the size the file
// had when it connected: if the file was shortened since, the bytes past
// its end read as zeros.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if br, ok := f.fs.(vfs.BlockReader); ok {
		if err := br.ReadBlock(f.h, off, p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if err := vfs.ReadBlockVia(f.fs, f.h, off, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteAt implements nbd.WriterAt: the bytes go to the file's write buffer,
// and with fua the file is committed and the volume synced before it
// returns.
func (f *File) WriteAt(p []byte, off int64, fua bool) error {
	n, err := f.fs.Write(f.h, off, p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if n > 0 {
		f.notify(off, int64(n))
	}
	if err != nil {
		return err
	}
	if fua {
		return f.Flush()
	}
	return nil
}

// Flush implements nbd.Flusher as fsync: the file's buffered writes are
// committed (those of every connection: they share the file's buffer) and
// the volume is synced.
func (f *File) Flush() error { return f.fs.Fsync(f.h, false) }

// Cache implements nbd.Cacher; the hint is ignored (readahead follows
// sequential readers anyway).
func (f *File) Cache(off, length int64) error { return nil }
