package exports

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/frontend/blockfile"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/vfs"
)

// blockPolicy is the chunking of exported files: fixed 4 KiB blocks at
// file offsets, so that a rewritten block replaces exactly its chunk and an
// all-zero block is a hole.
const blockPolicy = "fixed:4K"

// lookupPath resolves a "/"-rooted path to its parent, last name and inode
// (0 when the last name does not exist).
func lookupPath(fs vfs.FS, p string) (parent uint64, name string, ino uint64, err error) {
	p = path.Clean("/" + p)
	if p == "/" {
		return 0, "", 0, errors.New("the volume's root is a directory")
	}
	parent = vfs.RootIno
	parts := strings.Split(p[1:], "/")
	for i, part := range parts {
		a, err := fs.Lookup(parent, part)
		if i == len(parts)-1 {
			if errors.Is(err, syscall.ENOENT) {
				return parent, part, 0, nil
			}
			return parent, part, a.Ino, err
		}
		if err != nil {
			return 0, "", 0, err
		}
		if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return 0, "", 0, syscall.ENOTDIR
		}
		parent = a.Ino
	}
	panic("unreachable")
}

// create makes a new sparse file of size bytes, cut in fixed 4 KiB blocks.
func create(fs vfs.FS, parent uint64, name string, size int64) (uint64, error) {
	c := vfs.Caller{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	a, h, err := fs.Create(c, parent, name, 0o644, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL)
	if err != nil {
		return 0, err
	}
	err = fs.SetXattr(a.Ino, vfs.ChunkingXattr, []byte(blockPolicy), 0)
	if err == nil {
		_, err = fs.SetAttr(c, a.Ino, vfs.SetAttr{SetSize: true, Size: size})
	}
	return a.Ino, errors.Join(err, fs.Release(h))
}

// ensurePolicy gives a writable exported file fixed 4 KiB chunking unless
// it has a policy of its own; it reports the policy it keeps otherwise.
func ensurePolicy(fs vfs.FS, ino uint64) (kept string, err error) {
	v, err := fs.GetXattr(ino, vfs.ChunkingXattr)
	if err == nil {
		return string(v), nil
	}
	if !errors.Is(err, syscall.ENODATA) {
		return "", err
	}
	return "", fs.SetXattr(ino, vfs.ChunkingXattr, []byte(blockPolicy), 0)
}

// openFile resolves (or creates) one requested file and opens it.
func openFile(fs vfs.FS, f ops.ExportFile, req ops.ExportRequest, hooks Hooks) (*blockfile.File, error) {
	parent, name, ino, err := lookupPath(fs, f.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	switch {
	case req.Create > 0 && ino != 0:
		return nil, fmt.Errorf("%s: exists; --create makes new files only", f.Path)
	case req.Create > 0:
		if ino, err = create(fs, parent, name, req.Create); err != nil {
			return nil, fmt.Errorf("create %s: %w", f.Path, err)
		}
		if hooks.Created != nil {
			hooks.Created(parent, name)
		}
	case ino == 0:
		return nil, fmt.Errorf("%s: %w (--create SIZE makes it)", f.Path, syscall.ENOENT)
	}
	if !req.ReadOnly {
		kept, err := ensurePolicy(fs, ino)
		if err != nil {
			return nil, fmt.Errorf("%s: chunking policy: %w", f.Path, err)
		}
		if kept != "" && kept != blockPolicy && hooks.Warn != nil {
			hooks.Warn(fmt.Sprintf("%s keeps its chunking policy %s: all-zero writes free space only in whole chunks of it", f.Path, kept))
		}
	}
	bf, err := blockfile.Open(fs, ino, req.ReadOnly, hooks.Changed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return bf, nil
}
