package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/vfs"
)

// walk imports the source entry at path (whose lstat is st) as name in
// the directory inode parent. Source failures are recorded and walking
// goes on; the error returned stops the import (volume error,
// interruption). inherits says the new entry's directory got extended
// attributes, which the volume may have passed on to the new entry
// (regular files are created with exactly their own).
func (im *importer) walk(path string, st *unix.Stat_t, parent uint64, name string, inherits bool) error {
	if err := im.ctx.Err(); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
		if n := im.links[devIno{st.Dev, st.Ino}]; n != nil {
			n.extra = append(n.extra, entryName{parent, name, path})
			return nil
		}
	}
	var err error
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return im.importDir(path, st, parent, name, inherits)
	case unix.S_IFREG:
		err = im.importFile(path, parent, name) // gets exactly its own xattrs
	case unix.S_IFLNK:
		err = im.importSymlink(path, st, parent, name, inherits)
	default:
		err = im.importSpecial(path, st, parent, name, inherits)
	}
	im.record(path, err)
	return im.fatalOrNil()
}

// fatalOrNil returns the error that stops the import, if one happened.
func (im *importer) fatalOrNil() error {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.fatal != nil {
		return im.fatal
	}
	return im.ctx.Err()
}

// remember notes an entry whose other names (if it has any) are linked
// to it at the end.
func (im *importer) remember(st *unix.Stat_t, path string) *node {
	n := &node{path: path}
	if st.Nlink > 1 {
		im.links[devIno{st.Dev, st.Ino}] = n
	}
	return n
}

// importDir lists the directory first, so that one that cannot be read is
// not created, then creates it and walks its entries in name order.
func (im *importer) importDir(path string, st *unix.Stat_t, parent uint64, name string, inherits bool) error {
	names, err := readDirNames(path)
	if err != nil {
		im.record(path, err)
		return im.fatalOrNil()
	}
	a, err := im.fs.Mkdir(owner(st), parent, name, st.Mode&0o7777)
	if err != nil {
		return volErr("mkdir", path, err)
	}
	im.n.dirs.Add(1)
	im.dirs = append(im.dirs, dirAttr{ino: a.Ino, st: *st})
	hasXattrs := im.copyXattrs(path, a.Ino, inherits)
	for _, n := range names {
		p := filepath.Join(path, n)
		var cst unix.Stat_t
		if err := unix.Lstat(p, &cst); err != nil {
			im.record(p, &os.PathError{Op: "lstat", Path: p, Err: err})
			continue
		}
		if cst.Mode&unix.S_IFMT == unix.S_IFDIR && im.guard.skip(&cst) {
			im.warn("%s: skipped: it is the destination volume's mount or store", p)
			continue
		}
		if err := im.walk(p, &cst, a.Ino, n, hasXattrs); err != nil {
			return err
		}
	}
	return nil
}

// readDirNames lists a directory without following a symlink put in its
// place since it was seen.
func readDirNames(path string) ([]string, error) {
	fd, err := openNoAtime(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		return nil, &os.PathError{Op: "open directory", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func (im *importer) importSymlink(path string, st *unix.Stat_t, parent uint64, name string, inherits bool) error {
	target, err := os.Readlink(path)
	if err != nil {
		return err
	}
	a, err := im.fs.Symlink(owner(st), parent, name, target)
	if err != nil {
		return volErr("symlink", path, err)
	}
	im.remember(st, path).ino = a.Ino
	im.copyXattrs(path, a.Ino, inherits)
	in := fullAttr(st)
	in.SetMode = false // a symlink's mode is always 0777
	if _, err := im.fs.SetAttr(vfs.Caller{}, a.Ino, in); err != nil {
		return volErr("setattr", path, err)
	}
	im.n.symlinks.Add(1)
	return nil
}

// importSpecial creates fifos, sockets and device nodes.
func (im *importer) importSpecial(path string, st *unix.Stat_t, parent uint64, name string, inherits bool) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
	default:
		return fmt.Errorf("unknown file type %#o", st.Mode&unix.S_IFMT)
	}
	// st_rdev from stat(2) is the kernel's 32-bit device encoding, which
	// is what FUSE passes to mknod too.
	a, err := im.fs.Mknod(owner(st), parent, name, st.Mode, uint32(st.Rdev))
	if err != nil {
		return volErr("mknod", path, err)
	}
	im.remember(st, path).ino = a.Ino
	im.copyXattrs(path, a.Ino, inherits)
	if _, err := im.fs.SetAttr(vfs.Caller{}, a.Ino, fullAttr(st)); err != nil {
		return volErr("setattr", path, err)
	}
	im.n.specials.Add(1)
	return nil
}
