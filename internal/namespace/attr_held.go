package namespace

import (
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// heldAttrs are attribute changes (chmod, chown, utimensat) made to a file
// while it has buffered writes. They are committed with those writes, in
// the flush's transaction, instead of in one transaction each: extracting
// an archive sets times, owner and mode on every file it has just
// written, before closing it, and those three commits cost more than the
// file's data did.
//
// Until the flush, the change is visible (GetAttr, Lookup and SetAttr's
// reply see it) but not committed: a daemon killed before the file is
// closed or synced loses it together with the writes it was made between,
// as it loses those writes (see docs/DURABILITY.md).
type heldAttrs struct {
	mode, uid, gid                    uint32
	atime                             int64
	setMode, setUid, setGid, setAtime bool
}

func (h *heldAttrs) any() bool { return h.setMode || h.setUid || h.setGid || h.setAtime }

// hold records in; mtime and ctime go to f, which keeps the file's
// pending times. t is the time of the change.
func (f *openFile) hold(in vfs.SetAttr, t int64) {
	h := &f.held
	if in.SetMode {
		h.mode, h.setMode = in.Mode&0o7777, true
	}
	if in.SetUid {
		h.uid, h.setUid = in.Uid, true
	}
	if in.SetGid {
		h.gid, h.setGid = in.Gid, true
	}
	if in.SetAtime {
		h.atime, h.setAtime = timeOrNow(in.Atime.UnixNano(), in.Atime.IsZero(), t), true
	}
	if in.SetMtime {
		f.mtime = timeOrNow(in.Mtime.UnixNano(), in.Mtime.IsZero(), t)
	}
	f.ctime = max(f.ctime, t)
}

// apply writes the held changes into n.
func (h *heldAttrs) apply(n *schema.Inode) {
	if h.setMode {
		n.Mode = n.Mode&^0o7777 | h.mode
	}
	if h.setUid {
		n.Uid = h.uid
	}
	if h.setGid {
		n.Gid = h.gid
	}
	if h.setAtime {
		n.Atime = h.atime
	}
}

// holdAttrs applies in to ino's open, pending file instead of committing
// it, when it can: the file must have buffered writes, and the change
// must not touch the size (a truncate changes data: it commits). It
// returns the attributes as they now appear. The caller holds ino's lock.
func (v *FS) holdAttrs(ino uint64, in vfs.SetAttr) (vfs.Attr, bool, error) {
	if in.SetSize {
		return vfs.Attr{}, false, nil
	}
	v.filesMu.Lock()
	f := v.files[ino]
	v.filesMu.Unlock()
	if f == nil || !f.pending {
		return vfs.Attr{}, false, nil
	}
	n, err := loadInode(v.meta, ino)
	if err != nil {
		return vfs.Attr{}, false, err
	}
	if err := v.checkWritable(&n); err != nil {
		return vfs.Attr{}, false, err
	}
	f.hold(in, now())
	f.overlay(&n)
	return toAttr(ino, &n), true, nil
}

// overlay applies f's pending size, times and held attributes to n, the
// inode as committed. The caller holds f's lock (shared is enough).
func (f *openFile) overlay(n *schema.Inode) {
	if !f.pending {
		return
	}
	n.Size = f.size
	n.Mtime, n.Ctime = f.mtime, max(n.Ctime, f.ctime)
	f.held.apply(n)
}
