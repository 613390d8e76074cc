package fusefs

import (
	"errors"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/vfs"
)

// capHandleKillprivV2 (FUSE_HANDLE_KILLPRIV_V2, which go-fuse does not
// name) makes doppel, not the kernel, drop a file's privileges when its
// content or owner changes. Without it the kernel asks for the file's
// security.capability attribute before every write, one more round trip
// per write; with it the kernel's superblock is SB_NOSEC and it stops
// asking once it has seen a file without privileges.
const capHandleKillprivV2 = 1 << 28

// ExtraCapabilities are the FUSE capabilities, beyond go-fuse's defaults,
// that the adapter implements; the mount must ask for them
// (fuse.MountOptions.ExtraCapabilities).
const ExtraCapabilities = capHandleKillprivV2

// capsXattr holds a file's capabilities (setcap).
const capsXattr = "security.capability"

// noCapsTTL is how long "this file has no capabilities" is believed: the
// attribute cache timeout, the same bound as for any other change made
// without this mount (the control socket).
const noCapsTTL = cacheTimeout

// privs remembers which inodes were seen without file capabilities, so
// that a stream of writes checks once.
type privs struct {
	mu     sync.Mutex
	noCaps map[uint64]time.Time // when the absence was seen
}

func (p *privs) known(ino uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.noCaps[ino]
	return ok && time.Since(t) < noCapsTTL
}

func (p *privs) set(ino uint64, none bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !none {
		delete(p.noCaps, ino)
		return
	}
	if p.noCaps == nil || len(p.noCaps) > 1<<16 {
		p.noCaps = map[uint64]time.Time{} // a bound: forgetting costs a lookup
	}
	p.noCaps[ino] = time.Now()
}

// killPriv does, before a write, truncate or chown of ino, what the kernel
// leaves to the file system under FUSE_HANDLE_KILLPRIV_V2: file
// capabilities always go; with suidgid (the caller lacks CAP_FSETID, or it
// is a chown) set-user-ID goes, and set-group-ID when group execute is on.
// That is the VFS's own rule (file_remove_privs, and chown_common for every
// type but directories: fifos, sockets and device nodes lose them too).
func (f *FS) killPriv(c vfs.Caller, ino uint64, suidgid bool) error {
	if suidgid {
		a, err := f.v.GetAttr(ino)
		if err != nil {
			return err
		}
		if a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			kill := uint32(syscall.S_ISUID)
			if a.Mode&syscall.S_IXGRP != 0 {
				kill |= syscall.S_ISGID
			}
			if a.Mode&kill != 0 {
				if _, err := f.v.SetAttr(c, ino, vfs.SetAttr{SetMode: true, Mode: a.Mode &^ kill & 0o7777}); err != nil {
					return err
				}
			}
		}
	}
	if f.privs.known(ino) {
		return nil
	}
	_, err := f.v.GetXattr(ino, capsXattr)
	if errors.Is(err, syscall.ENODATA) {
		f.privs.set(ino, true)
		return nil
	}
	if err != nil {
		return err
	}
	err = f.v.RemoveXattr(ino, capsXattr)
	if errors.Is(err, syscall.ENODATA) {
		err = nil // removed meanwhile
	}
	return err
}

// setAttrKills reports whether a SETATTR must drop privileges, and
// whether set-user/group-ID go too: the kernel flags truncates by callers
// without CAP_FSETID and every chown of a non-directory.
//
// chown(path, -1, -1) changes no owner but still drops them on Linux
// (chown_common asks for it on every non-directory); FUSE strips that
// request and sends a SETATTR that sets nothing, which nothing else sends
// but the kernel's own removal of file capabilities before a privileged
// write (and that one, on a file that is also set-user-ID, is the only
// case this reading gets wrong: it drops the bit ext4 would keep). On a
// directory killPriv keeps the bits.
func setAttrKills(in *fuse.SetAttrIn) (kill, suidgid bool) {
	if in.Valid&^(fuse.FATTR_FH|fuse.FATTR_LOCKOWNER|fuse.FATTR_CTIME|fuse.FATTR_KILL_SUIDGID) == 0 {
		return true, true // chown(path, -1, -1)
	}
	suidgid = in.Valid&fuse.FATTR_KILL_SUIDGID != 0 && in.Valid&fuse.FATTR_MODE == 0
	return suidgid || in.Valid&(fuse.FATTR_SIZE|fuse.FATTR_UID|fuse.FATTR_GID) != 0, suidgid
}
