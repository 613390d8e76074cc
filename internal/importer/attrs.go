package importer

import (
	"errors"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/vfs"
)

// owner makes new entries belong to the source entry's owner.
func owner(st *unix.Stat_t) vfs.Caller { return vfs.Caller{Uid: st.Uid, Gid: st.Gid} }

// fullAttr sets mode, owner and times as the source has them. Creation
// already gave the entry its owner and mode, but a set-group-ID parent
// directory may have changed its group.
func fullAttr(st *unix.Stat_t) vfs.SetAttr {
	return vfs.SetAttr{
		SetMode: true, Mode: st.Mode & 0o7777,
		SetUid: true, Uid: st.Uid,
		SetGid: true, Gid: st.Gid,
		SetAtime: true, Atime: time.Unix(st.Atim.Sec, st.Atim.Nsec),
		SetMtime: true, Mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
	}
}

// copyXattrs gives the volume entry ino the extended attributes of the
// source entry at path; see setXattrs.
func (im *importer) copyXattrs(path string, ino uint64, inherits bool) bool {
	return im.setXattrs(path, ino, im.readXattrs(path), inherits)
}

// readXattrs reads the extended attributes of the source entry at path,
// but system.* ones. What cannot be read is a warning.
func (im *importer) readXattrs(path string) []vfs.Xattr {
	names, err := listXattrs(path)
	if err != nil {
		im.warn("%s: cannot list extended attributes: %v", path, err)
	}
	var out []vfs.Xattr
	for _, name := range names {
		if strings.HasPrefix(name, "system.") {
			im.warn("%s: extended attribute %s skipped (doppel does not enforce ACLs or system attributes)", path, name)
			continue
		}
		val, err := getXattr(path, name)
		if err != nil {
			im.warn("%s: cannot read extended attribute %s: %v", path, name, err)
			continue
		}
		out = append(out, vfs.Xattr{Name: name, Value: val})
	}
	return out
}

// setXattrs gives the volume entry ino the attributes xs, and, when its
// directory had attributes the volume may pass on to new entries, removes
// those the source entry lacks. What cannot be set is a warning. It
// reports whether the entry has attributes now.
func (im *importer) setXattrs(path string, ino uint64, xs []vfs.Xattr, inherits bool) bool {
	var kept []string
	for _, x := range xs {
		if err := im.fs.SetXattr(ino, x.Name, x.Value, 0); err != nil {
			im.warn("%s: cannot set extended attribute %s: %v", path, x.Name, err)
			continue
		}
		kept = append(kept, x.Name)
	}
	if inherits {
		got, _ := im.fs.ListXattr(ino)
		for _, name := range got {
			if !slices.Contains(kept, name) {
				if err := im.fs.RemoveXattr(ino, name); err != nil {
					im.warn("%s: cannot remove inherited extended attribute %s: %v", path, name, err)
				}
			}
		}
	}
	return len(kept) > 0
}

// listXattrs lists the extended attribute names of path itself (a
// symlink is not followed).
func listXattrs(path string) ([]string, error) {
	buf, err := growRead(func(b []byte) (int, error) { return unix.Llistxattr(path, b) })
	if err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		return nil, err
	}
	var names []string
	for _, n := range strings.Split(string(buf), "\x00") {
		if n != "" {
			names = append(names, n)
		}
	}
	return names, nil
}

func getXattr(path, name string) ([]byte, error) {
	return growRead(func(b []byte) (int, error) { return unix.Lgetxattr(path, name, b) })
}

// growRead calls an xattr function that fills b, asking for the size
// first, and again with a bigger buffer if the value grew meanwhile.
func growRead(read func([]byte) (int, error)) ([]byte, error) {
	for {
		n, err := read(nil)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		buf := make([]byte, n)
		n, err = read(buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
