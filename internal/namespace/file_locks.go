package namespace

import (
	"sync"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/filelock"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/vfs"
)

// fcntl and flock locks across hosts (docs/SHARED.md, 9.4). On a volume
// several hosts mount at once (Options.Sessions set) the kernel's locks
// would bind one host only, so the volume keeps them: a record per
// (inode, session, lock owner, kind) holds the owner's locks, read,
// checked and written in one transaction, which the volume's transaction
// lock orders against every other host's. Locks of a session that died
// do not count and are deleted where they are met, and by reapOpens.
// A waiting request (F_SETLKW, flock without LOCK_NB) tries again when
// a lock here goes, when other hosts commit (the listener) and every
// lockPoll. There is no deadlock detection across hosts.

var _ vfs.Locker = (*FS)(nil)

// lockPoll bounds how long a waiting request goes without trying again.
const lockPoll = 250 * time.Millisecond

// lockHolder names one owner's record on this host.
type lockHolder struct {
	ino, owner uint64
	kind       byte
}

// fileLocks is what this host knows of its own lock records (only it
// writes them), so that a close that holds none costs no transaction.
type fileLocks struct {
	mu      sync.Mutex
	held    map[lockHolder]bool
	changed chan struct{} // closed, and replaced, when a lock may have gone
}

func (f *fileLocks) holds(h lockHolder) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[h]
}

func (f *fileLocks) set(h lockHolder, holds bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[lockHolder]bool{}
	}
	if holds {
		f.held[h] = true
	} else {
		delete(f.held, h)
	}
}

// waitChan is closed at the next wake.
func (f *fileLocks) waitChan() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

// wake lets every waiting request try again.
func (f *fileLocks) wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

func lockKind(flock bool) byte {
	if flock {
		return schema.LockFlock
	}
	return schema.LockPosix
}

// SharesLocks reports whether the volume keeps locks: several hosts.
func (v *FS) SharesLocks() bool { return v.opt.Sessions != nil }

// inodeLocks is what the lock records of one inode hold for a request.
type inodeLocks struct {
	mine          []filelock.Lock // the requester's own
	others        []filelock.Lock // every other live owner's, of the same kind
	otherSessions []uint64        // their sessions, for GetLk's pid
	dead          [][]byte        // records of dead sessions, and undecodable ones
}

// readLocks reads the lock records of ino of one kind from r.
func (v *FS) readLocks(r meta.Reader, h lockHolder) (inodeLocks, error) {
	var out inodeLocks
	it, err := r.NewIter(schema.LockRangeOf(h.ino))
	if err != nil {
		return out, err
	}
	defer it.Close()
	own := v.opt.Sessions.Own()
	for ok := it.First(); ok; ok = it.Next() {
		_, session, owner, kind, err := schema.ParseLockKey(it.Key())
		ls, derr := filelock.Decode(it.Value())
		switch {
		case err != nil || derr != nil:
			v.log.Warn("deleting a lock record that does not decode", "key", it.Key())
			out.dead = append(out.dead, append([]byte(nil), it.Key()...))
		case kind != h.kind:
		case session == own && owner == h.owner:
			out.mine = ls
		case session != own && !v.opt.Sessions.Alive(session):
			out.dead = append(out.dead, append([]byte(nil), it.Key()...))
		default:
			for range ls {
				out.otherSessions = append(out.otherSessions, session)
			}
			out.others = append(out.others, ls...)
		}
	}
	return out, it.Error()
}

// GetLk returns the first lock of another owner in lk's way, or lk
// unlocked. A lock of another host reports pid 0: its pid means nothing
// here.
func (v *FS) GetLk(ino, owner uint64, flock bool, lk filelock.Lock) (filelock.Lock, error) {
	if !v.SharesLocks() {
		return lk, syscall.ENOSYS
	}
	if !lk.Valid() {
		return lk, syscall.EINVAL
	}
	held, err := v.readLocks(v.fresh(), lockHolder{ino, owner, lockKind(flock)})
	if err != nil {
		return lk, v.errno("lock", err)
	}
	for i, h := range held.others {
		if filelock.Conflicts(h, lk) {
			if held.otherSessions[i] != v.opt.Sessions.Own() {
				h.Pid = 0
			}
			return h, nil
		}
	}
	lk.Type = filelock.Unlock
	return lk, nil
}

// SetLk takes or releases lk for owner, waiting for a conflicting lock
// to go when wait is set.
func (v *FS) SetLk(cancel <-chan struct{}, ino, owner uint64, flock bool, lk filelock.Lock, wait bool) error {
	if !v.SharesLocks() {
		return syscall.ENOSYS
	}
	if !lk.Valid() {
		return syscall.EINVAL
	}
	h := lockHolder{ino, owner, lockKind(flock)}
	if lk.Type == filelock.Unlock && !v.fileLocks.holds(h) {
		return nil
	}
	for {
		changed := v.fileLocks.waitChan()
		blocked, err := v.tryLock(h, lk)
		if err != nil || !blocked {
			return err
		}
		if !wait {
			return syscall.EAGAIN
		}
		select {
		case <-cancel:
			return syscall.EINTR
		case <-v.quit:
			return syscall.EINTR
		case <-changed:
		case <-time.After(lockPoll):
		}
	}
}

// tryLock applies lk to h's locks in a transaction, unless another
// owner's lock is in the way (blocked).
func (v *FS) tryLock(h lockHolder, lk filelock.Lock) (blocked bool, err error) {
	tx, err := v.begin()
	if err != nil {
		return false, v.errno("lock", err)
	}
	b := tx.Batch()
	held, err := v.readLocks(b, h)
	if err != nil {
		tx.Abort()
		return false, v.errno("lock", err)
	}
	for _, k := range held.dead {
		if err := b.Delete(k); err != nil {
			tx.Abort()
			return false, v.errno("lock", err)
		}
	}
	if _, in := filelock.FirstConflict(held.others, lk); in {
		if len(held.dead) == 0 {
			tx.Abort()
			return true, nil
		}
		return true, v.errno("lock", tx.Commit(false))
	}
	next := filelock.Apply(held.mine, lk)
	if filelock.TooMany(next) {
		tx.Abort()
		return false, syscall.ENOLCK
	}
	key := schema.LockKey(h.ino, v.opt.Sessions.Own(), h.owner, h.kind)
	if len(next) == 0 {
		err = b.Delete(key)
	} else {
		err = b.Set(key, filelock.Encode(next))
	}
	if err != nil {
		tx.Abort()
		return false, v.errno("lock", err)
	}
	if err := tx.Commit(false); err != nil {
		return false, v.errno("lock", err)
	}
	v.fileLocks.set(h, len(next) > 0)
	if len(next) < len(held.mine) || lk.Type != filelock.Write {
		v.fileLocks.wake()
	}
	return false, nil
}

// ReleaseLocks drops owner's locks of one kind on ino; an owner that
// holds none costs nothing.
func (v *FS) ReleaseLocks(ino, owner uint64, flock bool) error {
	if !v.SharesLocks() {
		return nil
	}
	h := lockHolder{ino, owner, lockKind(flock)}
	if !v.fileLocks.holds(h) {
		return nil
	}
	if err := v.commit(func(tx *content.Tx) error {
		return tx.Batch().Delete(schema.LockKey(ino, v.opt.Sessions.Own(), owner, h.kind))
	}); err != nil {
		return v.errno("lock", err)
	}
	v.fileLocks.set(h, false)
	v.fileLocks.wake()
	return nil
}

// reapLocks deletes the lock records of sessions that died.
func (v *FS) reapLocks() error {
	lo, hi := schema.LockRange()
	dead, err := v.deadSessionRecords(lo, hi, func(k []byte) (uint64, error) {
		_, s, _, _, err := schema.ParseLockKey(k)
		return s, err
	})
	if err != nil || len(dead) == 0 {
		return err
	}
	err = v.commit(func(tx *content.Tx) error {
		for _, k := range dead {
			if err := tx.Batch().Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	v.fileLocks.wake()
	return err
}
