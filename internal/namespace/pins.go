package namespace

import (
	"errors"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/exclude"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
)

// A pin lives while its clone reads through it (Held) or a later pin
// depends on it. Then the releaser frees its retained versions in the
// background, a bounded batch per transaction, and the pins it depended
// on may go in turn.

// dropClone ends clone c (record rec) whose root is being deleted: its
// record and link map go, and its pin is no longer held.
func (v *FS) dropClone(tx *content.Tx, c uint64, rec schema.Clone) error {
	b := tx.Batch()
	// A later pin may hold stubs of it, which need its exclusions and
	// origin, and its maps to count links through it: keep them until no
	// such pin is left.
	keep := v.pinAfter(rec.Pin)
	if err := retireClone(b, c, rec, keep); err != nil {
		return err
	}
	if err := v.settleLinks(tx, c); err != nil {
		return err
	}
	if !keep {
		if err := deleteMaps(b, c); err != nil {
			return err
		}
	}
	return v.unholdPin(tx, rec.Pin)
}

// unholdPin marks the pin at version pin as no longer read by its clone.
func (v *FS) unholdPin(tx *content.Tx, pin uint64) error {
	p, found, err := v.ret.Unhold(tx, pin)
	if err != nil || !found {
		return err
	}
	if p.Dependents == 0 {
		tx.OnCommit(func() { v.queueRelease(pin) })
	}
	return nil
}

func loadPin(r meta.Reader, pin uint64) (schema.Pin, error) { return versions.LoadPin(r, pin) }

// queueRelease hands a pin to the releaser.
func (v *FS) queueRelease(pin uint64) {
	v.releaseMu.Lock()
	v.toRelease = append(v.toRelease, pin)
	v.releaseMu.Unlock()
	select {
	case v.releaseWake <- struct{}{}:
	default:
	}
}

// releaser frees released pins' retained versions in the background.
func (v *FS) releaser() {
	defer v.wg.Done()
	for {
		v.releaseMu.Lock()
		var pin uint64
		if len(v.toRelease) > 0 {
			pin, v.toRelease = v.toRelease[0], v.toRelease[1:]
		}
		v.releaseMu.Unlock()
		if pin == 0 {
			select {
			case <-v.quit:
				return
			case <-v.releaseWake:
			}
			continue
		}
		if err := v.releasePin(pin); err != nil {
			v.log.Error("releasing a pin failed; it is retried at the next mount", "version", pin, "err", err)
		}
	}
}

// releasePinBatch bounds the retained versions freed per transaction.
const releasePinBatch = 2048

// releasePin frees the retained versions of a pin nothing needs, then its
// record, then releases the pins it depended on that nothing else needs.
func (v *FS) releasePin(pin uint64) error {
	v.ret.StartRelease(pin)
	v.pinReads.wait()
	for done := false; !done; {
		select {
		case <-v.quit:
			return nil // the next mount finishes it
		default:
		}
		tx, err := v.begin()
		if err != nil {
			return err
		}
		// The older pin is chosen in each transaction, from the pins as
		// it found them: another host may have released the one the
		// last step moved versions to.
		older := v.olderPin(pin)
		if done, _, err = versions.ReleaseStep(tx.Batch(), pin, older, releasePinBatch, tx.RefExtent); err != nil {
			tx.Abort()
			return err
		}
		if done {
			err = v.finishRelease(tx, pin)
		}
		if err != nil {
			tx.Abort()
			return err
		}
		if err := tx.Commit(false); err != nil {
			return err
		}
	}
	v.ret.Released(pin)
	return nil
}

// olderPin is the newest pin below version pin, 0 if none.
func (v *FS) olderPin(pin uint64) uint64 {
	older := uint64(0)
	for _, p := range v.ret.Pins() {
		if p.Version < pin {
			older = p.Version
		}
	}
	return older
}

// finishRelease deletes the pin record and lowers its dependencies'
// counts, queueing those that are free now.
func (v *FS) finishRelease(tx *content.Tx, pin uint64) error {
	b := tx.Batch()
	p, err := loadPin(b, pin)
	if errors.Is(err, meta.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, d := range p.Deps {
		free, _, err := versions.DropDependent(b, d)
		if err != nil {
			return err
		}
		if free {
			tx.OnCommit(func() { v.queueRelease(d) })
		}
	}
	if err := versions.DeletePin(b, pin); err != nil {
		return err
	}
	return v.forgetGone(b)
}

// pinAfter reports whether a pin newer than version exists.
func (v *FS) pinAfter(version uint64) bool {
	pins := v.ret.Pins()
	return len(pins) > 0 && pins[len(pins)-1].Version > version
}

// forgetGone deletes the records of gone clones that no pin needs any
// more.
func (v *FS) forgetGone(b meta.Batch) error {
	return eachGone(b, func(c uint64, rec schema.Clone) error {
		if v.pinAfter(rec.Pin) {
			return nil
		}
		if err := deleteMaps(b, c); err != nil {
			return err
		}
		return deleteGone(b, c)
	})
}

// queueFreePins queues, at mount, every pin that nothing needs.
func (v *FS) queueFreePins() {
	for _, p := range v.ret.Pins() {
		if !p.Held && p.Dependents == 0 {
			v.queueRelease(p.Version)
		}
	}
}

// forgetClone updates clone bookkeeping for an inode being deleted: a
// stub no longer waits to be materialized, and a clone's root takes the
// clone with it.
func (v *FS) forgetClone(tx *content.Tx, ino uint64) error {
	b := tx.Batch()
	n, err := loadInode(b, ino)
	if err != nil {
		return err
	}
	if n.Stub {
		if err := countStubs(tx, n.Clone, -1, 0); err != nil {
			return err
		}
	}
	if n.Clone != ino {
		return nil
	}
	rec, err := loadClone(b, ino)
	if errors.Is(err, meta.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.Stubs > 0 {
		// Stubs of it live elsewhere (moved out of its tree): the
		// materializer gives them their own records, then drops it.
		rec.Removed = true
		tx.OnCommit(v.wakeMaterializer)
		return saveClone(b, ino, rec)
	}
	return v.dropClone(tx, ino, rec)
}

// PinCount is the number of pins not released yet.
func (v *FS) PinCount() int { return len(v.ret.Pins()) }

// pinExcluder tells the retainer which paths the clone of the pin at
// version pin leaves out, so that the pin keeps only what the clone can
// see (versions.Excluder). The clone's record, or its gone-clone record,
// says; a pin with neither keeps everything.
func (v *FS) pinExcluder(pin uint64) (func(string, bool) bool, error) {
	if m, ok := v.pinExcludes.Load(pin); ok {
		return m.(func(string, bool) bool), nil
	}
	var match func(string, bool) bool
	err := eachCloneOrGone(v.meta, func(_ uint64, rec schema.Clone) error {
		if rec.Pin != pin {
			return nil
		}
		xs, err := exclude.Parse(rec.Excludes)
		match = xs.Matcher()
		return err
	})
	if err != nil {
		return nil, err
	}
	v.pinExcludes.Store(pin, match)
	return match, nil
}
