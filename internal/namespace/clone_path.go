package namespace

import (
	"fmt"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// ClonePath clones the tree at src to the new path dst; both are
// "/"-rooted paths inside the volume.
func (v *FS) ClonePath(src, dst string, o CloneOptions) (ops.CloneResult, error) {
	start := time.Now()
	res := ops.CloneResult{Src: path.Clean(src), Dst: path.Clean(dst), ReadOnly: o.ReadOnly, Lazy: o.Lazy}
	srcIno, err := v.lookupPath(res.Src)
	if err != nil {
		return res, fmt.Errorf("%s: %w", src, err)
	}
	dir, name := path.Split(res.Dst)
	if name == "" {
		return res, fmt.Errorf("%s: %w: the clone needs a new name", dst, syscall.EEXIST)
	}
	if res.Parent, err = v.lookupPath(dir); err != nil {
		return res, fmt.Errorf("%s: %w", dir, err)
	}
	res.Name = name
	a, err := v.Clone(srcIno, res.Parent, name, o)
	if err != nil {
		return res, fmt.Errorf("clone %s to %s: %w", src, dst, err)
	}
	res.Ino = a.Ino
	n, err := loadInode(v.meta, a.Ino)
	if err == nil {
		res.Pin = n.Origin.Pin
	}
	res.ElapsedNs = time.Since(start).Nanoseconds()
	return res, nil
}

// lookupPath walks a "/"-rooted path like the kernel would, materializing
// the directories it passes. Symlinks are not followed.
func (v *FS) lookupPath(p string) (uint64, error) {
	ino := uint64(vfs.RootIno)
	for _, name := range strings.Split(p, "/") {
		if name == "" || name == "." {
			continue
		}
		var d schema.Dirent
		err := v.materializing(func() (err error) {
			d, err = lookupEntry(v.meta, ino, name)
			return err
		})
		if err != nil {
			return 0, err
		}
		ino = d.Ino
	}
	return ino, nil
}
