package namespace

import (
	"context"
	"io"
	"syscall"
)

// copyPiece is how much of a file CopyFile reads at a time.
const copyPiece = 1 << 20

// CopyFile writes the content of the regular file at path ("/"-rooted) to
// w, as a reader of the volume sees it, and returns the file's mode. It
// reads through clones' pins without materializing anything, so scanning
// an unmounted volume's clones writes nothing to them.
func (v *FS) CopyFile(ctx context.Context, path string, w io.Writer) (mode uint32, err error) {
	if err := v.flushBelow(path); err != nil {
		return 0, err
	}
	defer v.pinReads.begin()() // stubs are read through their pins
	x, err := v.viewPath(v.meta, path)
	if err != nil {
		return 0, err
	}
	if x.n.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0, &pathError{path, syscall.EINVAL}
	}
	r, ino, _, err := x.contents()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, min(x.n.Size, copyPiece))
	for off := int64(0); off < x.n.Size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		buf = buf[:min(int64(len(buf)), x.n.Size-off)]
		if err := v.eng.ReadAtFrom(r, ino, off, buf); err != nil {
			return 0, err
		}
		if _, err := w.Write(buf); err != nil {
			return 0, err
		}
	}
	return x.n.Mode, nil
}
