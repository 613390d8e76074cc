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
	if err := f.wrote(off, n, len(p), err); err != nil {
		return err
	}
	if fua {
		return f.Flush()
	}
	return nil
}

// WriteFrom implements nbd.StreamWriter: a plain write whose bytes fill
// reads straight into the file's write buffer when the file system can
// take them so (vfs.FromWriter); else into memory of its own, then
// WriteAt. ok reports whether fill was called: if not, the bytes are
// still on the connection.
func (f *File) WriteFrom(off int64, n int, fill func(dst []byte) error) (ok bool, err error) {
	counted := func(dst []byte) error {
		ok = true
		return fill(dst)
	}
	fw, direct := f.fs.(vfs.FromWriter)
	if !direct {
		p := make([]byte, n)
		if err := counted(p); err != nil {
			return ok, err
		}
		return ok, f.WriteAt(p, off, false)
	}
	written, err := fw.WriteFrom(f.h, off, n, counted)
	return ok, f.wrote(off, written, n, err)
}

// wrote tells the FUSE side of the written bytes of a write of want bytes
// at off that the file system took written of, and returns the write's
// error: err, or a short write.
func (f *File) wrote(off int64, written, want int, err error) error {
	if err == nil && written < want {
		err = io.ErrShortWrite
	}
	if written > 0 {
		f.notify(off, int64(written))
	}
	return err
}

// Flush implements nbd.Flusher as fsync: the file's buffered writes are
// committed (those of every connection: they share the file's buffer) and
// the volume is synced.
func (f *File) Flush() error { return f.fs.Fsync(f.h, false) }

// Cache implements nbd.Cacher; the hint is ignored (readahead follows
// sequential readers anyway).
func (f *File) Cache(off, length int64) error { return nil }
