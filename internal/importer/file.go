package importer

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/vfs"
)

// fileJob is a regular file of the source, opened, for a worker to copy.
type fileJob struct {
	path   string
	src    *os.File
	st     unix.Stat_t // of src, when it was opened
	parent uint64      // where it goes
	name   string
	node   *node
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

// importFile opens the source file and queues it for a worker. A file
// that cannot be opened is not created.
func (im *importer) importFile(path string, parent uint64, name string) error {
	f, err := openSource(path)
	if err != nil {
		return err
	}
	j := fileJob{path: path, src: f, parent: parent, name: name}
	if err := unix.Fstat(int(f.Fd()), &j.st); err != nil {
		f.Close()
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if j.st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return errors.New("changed into something other than a regular file during the import")
	}
	j.node = im.remember(&j.st, path)
	select {
	case im.jobs <- j:
		return nil
	case <-im.ctx.Done():
		f.Close()
		return im.ctx.Err()
	}
}

// worker copies queued files until the queue closes.
func (im *importer) worker() {
	for j := range im.jobs {
		err := im.copyFile(&j)
		if err == nil {
			im.n.files.Add(1)
		}
		im.record(j.path, err)
	}
}

// copyFile creates one file in the volume, which reads its data from the
// source as it goes. A failure leaves nothing in the volume.
func (im *importer) copyFile(j *fileJob) error {
	defer j.src.Close()
	if err := im.ctx.Err(); err != nil {
		return err
	}
	r := &sourceReader{im: im, fd: int(j.src.Fd()), size: j.st.Size, sparse: j.st.Blocks*512 < j.st.Size}
	attr := fullAttr(&j.st)
	nf := vfs.NewFile{
		Mode: attr.Mode, Uid: attr.Uid, Gid: attr.Gid, Atime: attr.Atime, Mtime: attr.Mtime,
		Size: j.st.Size, Xattrs: im.readXattrs(j.path), ReadNext: r.next,
		XattrRefused: func(name string, err error) {
			im.warn("%s: cannot set extended attribute %s: %v", j.path, name, err)
		},
	}
	a, err := im.fs.CreateFile(j.parent, j.name, nf)
	var se *sourceError
	switch {
	case errors.As(err, &se):
		return se.err
	case errors.Is(err, context.Canceled):
		return err
	case err != nil:
		return volErr("create", j.path, err)
	}
	j.node.ino = a.Ino // read once the workers are done
	return nil
}
