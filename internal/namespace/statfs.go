package namespace

import (
	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/vfs"
)

// StatFS implements vfs.FS. Free space is the host file system's, since
// that is what the volume can still grow into; the block count adds what
// the volume stores so that df's "used" means something.
func (v *FS) StatFS() (vfs.StatFS, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(v.opt.StoreDir, &st); err != nil {
		return vfs.StatFS{}, v.errno("statfs", err)
	}
	const bs = 4096
	// The space kept for metadata is not free for file data.
	reserve := uint64(v.opt.Headroom.Reserve())
	free := sub(st.Bfree*uint64(st.Bsize), reserve) / bs
	avail := sub(st.Bavail*uint64(st.Bsize), reserve) / bs
	s := v.eng.Stats()
	used := uint64(s.PhysicalBytes+v.meta.DiskUsage()) / bs
	return vfs.StatFS{
		BlockSize: bs, Blocks: free + used, BlocksFree: free, BlocksAvail: avail,
		Files: 1 << 32, FilesFree: 1<<32 - uint64(s.Inodes), NameMax: nameMax,
	}, nil
}

// sub is a-b, or 0 if b > a.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
