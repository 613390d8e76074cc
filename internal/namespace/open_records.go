package namespace

import (
	"slices"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
)

// Files open on other hosts (docs/SHARED.md, 9.5). On a volume several
// hosts mount at once (Options.Sessions set), each host records, in a
// transaction, the inodes it has open (schema.OpenKey: inode, session)
// from its first open of one to its last close. An unlink that takes an
// inode's last name keeps the inode (an orphan) while any session has it
// open, here or elsewhere; the last close anywhere deletes it. Records of
// sessions that died are removed, and the orphans they kept deleted, by
// reapOpens, which every host runs at mount and then every reapEvery.

// Sessions says which session this host is and which others are alive.
type Sessions interface {
	Own() uint64
	Alive(session uint64) bool
}

// reapEvery is how often a host looks for open records of dead sessions.
const reapEvery = 30 * time.Second

// recordOpen commits f's open record, once per host while f is open.
// Concurrent first opens wait for the one that records; a failure leaves
// f unrecorded, and the caller fails its open.
func (v *FS) recordOpen(f *openFile) error {
	f.recordMu.Lock()
	defer f.recordMu.Unlock()
	if f.recorded {
		return nil
	}
	l := v.locks.of(f.ino)
	l.Lock()
	defer l.Unlock()
	tx, err := v.begin()
	if err != nil {
		return err
	}
	if err := tx.Batch().Set(schema.OpenKey(f.ino, v.opt.Sessions.Own()), nil); err != nil {
		tx.Abort()
		return err
	}
	if err := tx.Commit(false); err != nil {
		return err
	}
	f.recorded = true
	return nil
}

// recordCreated adds the open record of a file that tx creates.
func (v *FS) recordCreated(tx *content.Tx, ino uint64) error {
	if v.opt.Sessions == nil {
		return nil
	}
	return tx.Batch().Set(schema.OpenKey(ino, v.opt.Sessions.Own()), nil)
}

// openElsewhere reports whether another session has ino open (records of
// sessions that died count until reapOpens removes them: keeping an
// orphan a little longer is safe, deleting an open file is not).
func (v *FS) openElsewhere(tx *content.Tx, ino uint64) (bool, error) {
	if v.opt.Sessions == nil {
		return false, nil
	}
	it, err := tx.Batch().NewIter(schema.OpenRangeOf(ino))
	if err != nil {
		return false, err
	}
	defer it.Close()
	own := v.opt.Sessions.Own()
	for ok := it.First(); ok; ok = it.Next() {
		if _, s, err := schema.ParseOpenKey(it.Key()); err == nil && s != own {
			return true, nil
		}
	}
	return false, it.Error()
}

// releaseRecorded ends this host's open of ino (its last close): the
// record goes, and the inode too if its last name went and no session
// has it open any more. A file reopened here meanwhile keeps its record.
func (v *FS) releaseRecorded(ino uint64) error {
	l := v.locks.of(ino)
	l.Lock()
	defer l.Unlock()
	tx, err := v.begin()
	if err != nil {
		return err
	}
	if v.isOpen(ino) {
		tx.Abort()
		return nil
	}
	b := tx.Batch()
	if err := b.Delete(schema.OpenKey(ino, v.opt.Sessions.Own())); err != nil {
		tx.Abort()
		return err
	}
	n, err := loadInode(b, ino)
	if err == nil && n.Nlink == 0 && !isDir(n.Mode) {
		elsewhere, err := v.openElsewhere(tx, ino)
		if err != nil {
			tx.Abort()
			return err
		}
		if !elsewhere {
			if err := v.deleteInode(tx, ino); err != nil {
				tx.Abort()
				return err
			}
		}
	}
	return tx.Commit(false)
}

// reapOpens removes the open and lock records of sessions that died and
// deletes the orphans nobody has open any more. It runs in transactions of its
// own, a record at a time; on a volume of one host it is removeOrphans.
func (v *FS) reapOpens() error {
	if v.opt.Sessions == nil {
		return v.removeOrphans()
	}
	lo, hi := schema.OpenRange()
	dead, err := v.deadSessionRecords(lo, hi, func(k []byte) (uint64, error) {
		_, s, err := schema.ParseOpenKey(k)
		return s, err
	})
	if err != nil {
		return err
	}
	if err := v.reapLocks(); err != nil {
		return err
	}
	for _, k := range dead {
		tx, err := v.begin()
		if err != nil {
			return err
		}
		if err := tx.Batch().Delete(k); err != nil {
			tx.Abort()
			return err
		}
		if err := tx.Commit(false); err != nil {
			return err
		}
	}
	return v.removeOrphans()
}

// deadSessionRecords lists the keys in [lo, hi) of records that belong
// to sessions that died (sessionOf parses a key's session; keys it cannot
// parse are left alone).
func (v *FS) deadSessionRecords(lo, hi []byte, sessionOf func(key []byte) (uint64, error)) ([][]byte, error) {
	it, err := v.meta.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	var dead [][]byte
	own := v.opt.Sessions.Own()
	for ok := it.First(); ok; ok = it.Next() {
		s, err := sessionOf(it.Key())
		if err == nil && s != own && !v.opt.Sessions.Alive(s) {
			dead = append(dead, slices.Clone(it.Key()))
		}
	}
	return dead, it.Close()
}

// keepOrphan reports whether the orphan ino must stay: it is open here
// or, on a volume of several hosts, anywhere.
func (v *FS) keepOrphan(tx *content.Tx, ino uint64) (bool, error) {
	if v.isOpen(ino) {
		return true, nil
	}
	return v.openElsewhere(tx, ino)
}

// openReaper runs reapOpens every reapEvery (several hosts only).
func (v *FS) openReaper() {
	defer v.wg.Done()
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-v.quit:
			return
		case <-t.C:
			if err := v.reapOpens(); err != nil {
				v.log.Warn("removing dead sessions' open files", "err", err)
			}
		}
	}
}
