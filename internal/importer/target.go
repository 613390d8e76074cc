package importer

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"syscall"

	"github.com/doppelfs/doppel/internal/vfs"
)

// resolveTarget finds where dst (a path inside the volume) puts the
// import of a source named base: DST/base if DST is a directory, else DST
// itself, whose parent must exist. Symlinks in dst are not followed. The
// entry must not exist yet.
func resolveTarget(vol vfs.FS, dst, base string) (parent uint64, name, target string, err error) {
	target = path.Clean("/" + dst)
	ino, missing, err := lookupPath(vol, target)
	switch {
	case err != nil:
		return 0, "", "", err
	case missing == "": // dst exists
		a, err := vol.GetAttr(ino)
		if err != nil {
			return 0, "", "", fmt.Errorf("volume: %s: %w", target, err)
		}
		if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return 0, "", "", fmt.Errorf("%s already exists in the volume; an import never replaces anything", target)
		}
		if base == "/" || base == "." {
			return 0, "", "", fmt.Errorf("%s already exists; name a new directory to import into", target)
		}
		parent, name, target = ino, base, path.Join(target, base)
		if _, err := vol.Lookup(parent, name); err == nil {
			return 0, "", "", fmt.Errorf("%s already exists in the volume; an import never replaces or merges into anything", target)
		} else if !errors.Is(err, syscall.ENOENT) {
			return 0, "", "", fmt.Errorf("volume: lookup %s: %w", target, err)
		}
		return parent, name, target, nil
	case strings.Contains(missing, "/"):
		return 0, "", "", fmt.Errorf("%s does not exist in the volume", path.Dir(target))
	}
	return ino, missing, target, nil
}

// lookupPath walks the absolute volume path p. It returns the inode of p,
// or, when only the last component is missing, the inode of its parent
// and the missing rest of the path ("a/b" when more is missing).
func lookupPath(vol vfs.FS, p string) (ino uint64, missing string, err error) {
	ino = vfs.RootIno
	rest := strings.TrimPrefix(p, "/")
	for rest != "" {
		comp, after, _ := strings.Cut(rest, "/")
		a, err := vol.Lookup(ino, comp)
		if errors.Is(err, syscall.ENOENT) {
			return ino, rest, nil
		}
		if err != nil {
			return 0, "", fmt.Errorf("volume: lookup %s: %w", p, err)
		}
		if after != "" && a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return 0, "", fmt.Errorf("%s: %s is not a directory in the volume", p, comp)
		}
		ino, rest = a.Ino, after
	}
	return ino, "", nil
}
