package blockfile

import "github.com/doppelfs/doppel/internal/vfs"

// punchMode is fallocate's PUNCH_HOLE, which must keep the size.
const punchMode = vfs.FallocPunchHole | vfs.FallocKeepSize

// Trim implements nbd.Trimmer: the range becomes a hole at once, as
// fallocate(PUNCH_HOLE) on the file would make it, and its chunks that
// nothing else references are freed.
func (f *File) Trim(off, length int64) error { return f.punch(off, length) }

// Zero implements nbd.Zeroer by punching, with or without noHole. A
// copy-on-write store has nothing to provision: a later write of the range
// stores new chunks whatever the range holds now, and zeros written out
// would be stored as a hole too (all-zero chunks are never stored).
func (f *File) Zero(off, length int64, noHole bool) error { return f.punch(off, length) }

// ZeroIsFast implements nbd.FastZeroer: zeroing edits the extent map only.
func (f *File) ZeroIsFast(off, length int64, noHole bool) bool { return true }

func (f *File) punch(off, length int64) error {
	if length == 0 {
		return nil
	}
	if err := f.fs.Fallocate(f.h, punchMode, off, length); err != nil {
		return err
	}
	f.notify(off, length)
	return nil
}
