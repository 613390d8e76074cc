package importer

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"
)

// sourceError is a failure to read the source, as opposed to one of the
// volume, when both come back from the volume's CreateFile.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }

// preadSource reads a source file; tests replace it to inject errors.
var preadSource = unix.Pread

// sourceReader hands a source file's data to the volume
// (vfs.NewFile.ReadNext), range by range: holes, found with SEEK_DATA and
// SEEK_HOLE, are skipped.
type sourceReader struct {
	im         *importer
	fd         int
	size       int64 // when the file was opened
	sparse     bool  // it may have holes: fewer blocks than bytes
	off, until int64 // the next byte to read, the end of its data range
}

func (r *sourceReader) next(p []byte) (int64, int, error) {
	if err := r.im.ctx.Err(); err != nil {
		return 0, 0, err
	}
	if r.off >= r.until {
		if r.off >= r.size {
			return 0, 0, io.EOF
		}
		data, hole, err := r.off, r.size, error(nil)
		if r.sparse {
			data, hole, err = NextData(r.fd, r.off, r.size)
		}
		if err != nil {
			return 0, 0, &sourceError{fmt.Errorf("seek at offset %d: %w", r.off, err)}
		}
		if data >= r.size {
			return 0, 0, io.EOF
		}
		r.off, r.until = data, hole
	}
	n, err := preadSource(r.fd, p[:min(int64(len(p)), r.until-r.off)], r.off)
	if err != nil {
		return 0, 0, &sourceError{fmt.Errorf("read at offset %d: %w", r.off, err)}
	}
	if n == 0 {
		return 0, 0, &sourceError{fmt.Errorf("the file shrank to %d bytes while it was read", r.off)}
	}
	off := r.off
	r.off += int64(n)
	r.im.n.bytes.Add(int64(n))
	return off, n, nil
}

// NextData finds the data range at or after off in the open file fd of
// the given size: [data, hole). Without hole support in the source file
// system, all of [off, size) is data.
func NextData(fd int, off, size int64) (data, hole int64, err error) {
	data, err = unix.Seek(fd, off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		return size, size, nil // only a hole is left
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EOPNOTSUPP):
		return off, size, nil
	case err != nil:
		return 0, 0, err
	}
	hole, err = unix.Seek(fd, data, unix.SEEK_HOLE)
	if err != nil {
		return 0, 0, err
	}
	return data, min(hole, size), nil
}
