package blob

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// withFd runs fn on f's descriptor; the descriptor cannot be closed meanwhile.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// punchHole deallocates [off, off+n) of f without changing its size. On a
// file system without hole punching the error wraps errors.ErrUnsupported.
func punchHole(f *os.File, off, n int64) error {
	if n <= 0 {
		return nil
	}
	err := withFd(f, func(fd int) error {
		for {
			err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return &os.PathError{Op: "punch hole", Path: f.Name(), Err: err}
	}
	return nil
}

// isEmpty reports whether f holds no data at all: SEEK_DATA from 0 finds
// nothing (ENXIO). A file system that cannot answer counts as non-empty.
func isEmpty(f *os.File) (bool, error) {
	var empty bool
	err := withFd(f, func(fd int) error {
		_, err := unix.Seek(fd, 0, unix.SEEK_DATA)
		switch {
		case err == nil:
		case err == unix.ENXIO:
			empty = true
		case err == unix.EINVAL || errors.Is(err, errors.ErrUnsupported):
		default:
			return err
		}
		return nil
	})
	if err != nil {
		return false, &os.PathError{Op: "seek data", Path: f.Name(), Err: err}
	}
	return empty, nil
}

// fdatasync flushes f's data and the metadata needed to read it back.
func fdatasync(f *os.File) error {
	err := withFd(f, func(fd int) error {
		for {
			err := unix.Fdatasync(fd)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
