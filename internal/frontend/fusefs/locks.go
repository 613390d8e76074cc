package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/filelock"
	"github.com/doppelfs/doppel/internal/metrics"
	"github.com/doppelfs/doppel/internal/vfs"
)

// fcntl and flock locks. The kernel keeps them itself unless the mount
// asks it to forward them (LocksShared, set on a volume several hosts
// mount: docs/SHARED.md, 9.4); then they come here and go to the
// volume's vfs.Locker. A close releases the closer's fcntl locks
// (FLUSH carries its lock owner); the last close of a file its flock
// locks (RELEASE with FUSE_RELEASE_FLOCK_UNLOCK).

// LocksShared reports whether v keeps locks itself, so that the mount
// must forward them (fuse.MountOptions.EnableLocks).
func LocksShared(v vfs.FS) bool {
	l, ok := v.(vfs.Locker)
	return ok && l.SharesLocks()
}

func (f *FS) locker() vfs.Locker {
	if l, ok := f.v.(vfs.Locker); ok && l.SharesLocks() {
		return l
	}
	return nil
}

func lockOf(in *fuse.LkIn) (filelock.Lock, bool) {
	return filelock.Lock{Start: in.Lk.Start, End: in.Lk.End, Type: in.Lk.Typ, Pid: in.Lk.Pid},
		in.LkFlags&fuse.FUSE_LK_FLOCK != 0
}

func (f *FS) GetLk(_ <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) (st fuse.Status) {
	defer f.track(metrics.OpGetlk, in.NodeId, time.Now(), &st)
	l := f.locker()
	if l == nil {
		return fuse.ENOSYS
	}
	lk, flock := lockOf(in)
	got, err := l.GetLk(in.NodeId, in.Owner, flock, lk)
	if err != nil {
		return status(err)
	}
	out.Lk = fuse.FileLock{Start: got.Start, End: got.End, Typ: got.Type, Pid: got.Pid}
	return fuse.OK
}

func (f *FS) SetLk(cancel <-chan struct{}, in *fuse.LkIn) (st fuse.Status) {
	return f.setLk(cancel, in, false)
}

func (f *FS) SetLkw(cancel <-chan struct{}, in *fuse.LkIn) (st fuse.Status) {
	return f.setLk(cancel, in, true)
}

func (f *FS) setLk(cancel <-chan struct{}, in *fuse.LkIn, wait bool) (st fuse.Status) {
	op := metrics.OpSetlk
	if wait {
		op = metrics.OpSetlkw
	}
	defer f.track(op, in.NodeId, time.Now(), &st)
	l := f.locker()
	if l == nil {
		return fuse.ENOSYS
	}
	lk, flock := lockOf(in)
	return status(l.SetLk(cancel, in.NodeId, in.Owner, flock, lk, wait))
}

// releaseLocks drops owner's locks of a kind on ino after a close; a
// failure is logged (the close itself went through).
func (f *FS) releaseLocks(ino, owner uint64, flock bool) {
	if l := f.locker(); l != nil {
		if err := l.ReleaseLocks(ino, owner, flock); err != nil {
			f.log.Warn("releasing locks at close", "ino", ino, "flock", flock, "err", err)
		}
	}
}
