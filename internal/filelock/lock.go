package filelock

import "syscall"

// Types of a lock, as fcntl spells them.
const (
	Read   = syscall.F_RDLCK
	Write  = syscall.F_WRLCK
	Unlock = syscall.F_UNLCK
)

// MaxEnd is the end of a lock "to the end of the file" (the kernel's
// OFFSET_MAX), and of every flock lock.
const MaxEnd = 1<<63 - 1

// Lock is a lock on the bytes Start..End (inclusive) of a file.
type Lock struct {
	Start, End uint64
	Type       uint32 // Read, Write or Unlock
	Pid        uint32 // the process that took it, on its host
}

// Valid reports whether l is a lock or unlock request a client may make.
func (l Lock) Valid() bool {
	return l.Start <= l.End && l.End <= MaxEnd &&
		(l.Type == Read || l.Type == Write || l.Type == Unlock)
}

// Overlaps reports whether a and b share a byte.
func Overlaps(a, b Lock) bool { return a.Start <= b.End && b.Start <= a.End }

// Conflicts reports whether held, another owner's lock, stands in the way
// of req: they overlap and one of them is a write lock.
func Conflicts(held, req Lock) bool {
	return req.Type != Unlock && Overlaps(held, req) && (held.Type == Write || req.Type == Write)
}

// FirstConflict returns the first of held (another owner's locks) that
// stands in the way of req.
func FirstConflict(held []Lock, req Lock) (Lock, bool) {
	for _, h := range held {
		if Conflicts(h, req) {
			return h, true
		}
	}
	return Lock{}, false
}
