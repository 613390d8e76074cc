package importer

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/vfs"
)

// readSize is the size of each read from a source file and write to the
// volume: large, so that a file costs few calls, and a multiple of every
// chunk size.
const readSize = 4 << 20

// fileJob is a regular file created in the volume, whose content and
// attributes a worker copies.
type fileJob struct {
	path     string
	src      *os.File
	st       unix.Stat_t // of src, when it was opened
	h        vfs.Handle
	node     *node
	inherits bool
}

// openSource opens a regular file for reading: without following a
// symlink put in its place and without blocking on a fifo put there.
// Tests replace it.
var openSource = func(path string) (*os.File, error) {
	fd, err := openNoAtime(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openNoAtime opens path without changing its atime where the kernel lets
// us (O_NOATIME needs ownership or CAP_FOWNER), so that the source keeps
// the atimes that were imported.
func openNoAtime(path string, flags int) (int, error) {
	fd, err := unix.Open(path, flags|unix.O_NOATIME|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EPERM) {
		fd, err = unix.Open(path, flags|unix.O_CLOEXEC, 0)
	}
	return fd, err
}

// preadSource reads a source file; tests replace it to inject errors.
var preadSource = unix.Pread

// importFile opens the source file, creates it in the volume and queues
// it for a worker. A file that cannot be opened is not created.
func (im *importer) importFile(path string, parent uint64, name string, inherits bool) error {
	f, err := openSource(path)
	if err != nil {
		return err
	}
	j := fileJob{path: path, src: f, inherits: inherits}
	if err := unix.Fstat(int(f.Fd()), &j.st); err != nil {
		f.Close()
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if j.st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return errors.New("changed into something other than a regular file during the import")
	}
	a, h, err := im.fs.Create(owner(&j.st), parent, name, j.st.Mode&0o7777, syscall.O_WRONLY)
	if err != nil {
		f.Close()
		return volErr("create", path, err)
	}
	j.h = h
	j.node = im.remember(&j.st, a.Ino, parent, name)
	select {
	case im.jobs <- j:
		return nil
	case <-im.ctx.Done():
		im.fs.Release(h)
		f.Close()
		return im.ctx.Err()
	}
}

// worker copies queued files until the queue closes.
func (im *importer) worker() {
	buf := make([]byte, readSize)
	for j := range im.jobs {
		err := im.copyFile(j, buf)
		if err == nil {
			im.n.files.Add(1)
			continue
		}
		var ve *volumeError
		if !errors.As(err, &ve) {
			im.mu.Lock()
			im.failed = append(im.failed, j.node)
			im.mu.Unlock()
		}
		im.record(j.path, err)
	}
}

// copyFile copies one file's extended attributes (first, so that a
// chunking policy among them applies to the data), data and attributes.
func (im *importer) copyFile(j fileJob, buf []byte) error {
	defer j.src.Close()
	if err := im.ctx.Err(); err != nil {
		im.fs.Release(j.h)
		return err
	}
	im.copyXattrs(j.path, j.node.ino, j.inherits)
	size, end, err := im.copyData(j, buf)
	if rerr := im.fs.Release(j.h); rerr != nil && err == nil {
		err = volErr("close", j.path, rerr)
	}
	if err != nil {
		return err
	}
	in := fullAttr(&j.st)
	// Release committed size end; a trailing hole or a file that shrank
	// while read needs the size set.
	in.SetSize, in.Size = size != end, size
	if _, err := im.fs.SetAttr(vfs.Caller{}, j.node.ino, in); err != nil {
		return volErr("setattr", j.path, err)
	}
	return nil
}

// copyData writes the data ranges of the source into the volume file and
// skips its holes. It returns the file's size (less than the size seen at
// open if the file shrank since) and the end of the data written.
func (im *importer) copyData(j fileJob, buf []byte) (size, end int64, err error) {
	fd := int(j.src.Fd())
	size = j.st.Size
	for off := int64(0); off < size; {
		data, hole, err := nextData(fd, off, size)
		if err != nil {
			return 0, 0, fmt.Errorf("seek at offset %d: %w", off, err)
		}
		if data >= size {
			break
		}
		for off = data; off < hole; {
			if err := im.ctx.Err(); err != nil {
				return 0, 0, err
			}
			n, err := preadSource(fd, buf[:min(int64(len(buf)), hole-off)], off)
			if err != nil {
				return 0, 0, fmt.Errorf("read at offset %d: %w", off, err)
			}
			if n == 0 { // the file shrank under us
				return off, end, nil
			}
			if _, err := im.fs.Write(j.h, off, buf[:n]); err != nil {
				return 0, 0, volErr("write", j.path, err)
			}
			off += int64(n)
			end = off
			im.n.bytes.Add(int64(n))
		}
	}
	return size, end, nil
}

// nextData finds the data range at or after off: [data, hole). Without
// hole support in the source file system, all of [off, size) is data.
func nextData(fd int, off, size int64) (data, hole int64, err error) {
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
