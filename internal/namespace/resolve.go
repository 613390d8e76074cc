package namespace

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// resolvePath finds the inode a "/"-rooted path inside the volume names.
// Symlinks are not followed: inspection reports on the link itself, and a
// symlink in the middle of the path is ENOTDIR.
func resolvePath(r meta.Reader, path string) (uint64, schema.Inode, error) {
	ino, n, err := walkPath(r, path)
	if err != nil {
		return 0, schema.Inode{}, fmt.Errorf("%s: %w", path, err)
	}
	return ino, n, nil
}

func walkPath(r meta.Reader, path string) (uint64, schema.Inode, error) {
	ino := uint64(vfs.RootIno)
	n, err := loadInode(r, ino)
	if err != nil {
		return 0, n, err
	}
	for _, name := range strings.Split(path, "/") {
		if name == "" || name == "." {
			continue
		}
		if !isDir(n.Mode) {
			return 0, n, syscall.ENOTDIR
		}
		d, err := lookupEntry(r, ino, name)
		if err != nil {
			return 0, n, err
		}
		if n, err = loadInode(r, d.Ino); err != nil {
			return 0, n, err
		}
		ino = d.Ino
	}
	return ino, n, nil
}

// flushBelow commits the buffered writes of every open file at or below
// path, so that an inspection that follows sees what was written. Files
// opened or written meanwhile are not waited for.
func (v *FS) flushBelow(path string) error {
	top, n, err := resolvePath(v.meta, path)
	if err != nil {
		return nil // the inspection itself reports it
	}
	if !isDir(n.Mode) {
		return v.flushOpen(top)
	}
	for _, f := range v.openFiles() {
		below, err := v.isBelow(f.ino, top)
		if err != nil {
			return err
		}
		if below {
			if err := v.flushOpen(f.ino); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushOpen commits ino's buffered writes if it is open.
func (v *FS) flushOpen(ino uint64) error {
	l := v.locks.of(ino)
	l.Lock()
	defer l.Unlock()
	return v.flushOpenLocked(ino)
}

// isBelow reports whether some link of ino lies in the subtree rooted at
// directory top.
func (v *FS) isBelow(ino, top uint64) (bool, error) {
	if top == vfs.RootIno {
		return true, nil
	}
	var parents []uint64
	if err := eachName(v.meta, ino, func(p uint64, _ string) error {
		parents = append(parents, p)
		return nil
	}); err != nil {
		return false, err
	}
	for _, p := range parents {
		// A link moved away meanwhile is ENOENT here: not below.
		if in, err := isAncestor(v.meta, top, p); in || (err != nil && !errors.Is(err, syscall.ENOENT)) {
			return in, err
		}
	}
	return false, nil
}

// pathOf returns one path of ino relative to the volume root.
func pathOf(r meta.Reader, ino uint64) (string, error) {
	path := ""
	for depth := 0; ino != vfs.RootIno; depth++ {
		if depth > 1<<12 {
			return "", errors.New("namespace: parent chain too deep")
		}
		parent, name, err := firstName(r, ino)
		if err != nil {
			return "", err
		}
		if parent == 0 {
			return "", syscall.ENOENT
		}
		path = "/" + name + path
		ino = parent
	}
	if path == "" {
		path = "/"
	}
	return path, nil
}
