package namespace

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// The materializer copies non-lazy clones into their own records in the
// background (metadata only), so that their pins can be released. It
// throttles itself by its own progress: after each step it pauses as long
// as the step took, so foreground work keeps at least half the time.

func (v *FS) wakeMaterializer() {
	select {
	case v.materializeWake <- struct{}{}:
	default:
	}
}

func (v *FS) materializer() {
	v.worker(v.materializeWake, v.materializeAll, "background materialization failed; it resumes at the next mount")
}

// Background work on a volume of several hosts (docs/SHARED.md, 9.5) is
// done by one host at a time, whichever holds the work's lease (renewed
// at every step: a step of a dead host's is taken over once its lease
// expires). The others look again every workerPoll, since the work may
// have come from another host, or been left by one that died. Two hosts
// doing the same step would still be safe (each step is a transaction
// that reads its state again), only wasteful.
const (
	workerPoll = 30 * time.Second
	workerTTL  = time.Minute
)

// leased reports whether this host may do the background work name now
// (always, on a volume of one host).
func (v *FS) leased(name string) bool {
	return v.opt.Sessions == nil || v.eng.Leased(name, workerTTL)
}

// worker runs work at start and whenever woken, until the volume closes;
// with several hosts also every workerPoll, while it holds the lease of
// its name.
func (v *FS) worker(wake <-chan struct{}, work func() error, failed string) {
	defer v.wg.Done()
	var poll <-chan time.Time
	if v.opt.Sessions != nil {
		t := time.NewTicker(workerPoll)
		defer t.Stop()
		poll = t.C
	}
	for {
		if err := work(); err != nil && !errors.Is(err, errQuit) {
			v.log.Error(failed, "err", err)
		}
		select {
		case <-v.quit:
			return
		case <-wake:
		case <-poll:
		}
	}
}

var errQuit = errors.New("namespace: shutting down")

// materializeAll finishes every clone that waits for materialization
// (with several hosts, while it holds the lease).
func (v *FS) materializeAll() error {
	for {
		if !v.leased("materialize") {
			return nil
		}
		c, rec, ok, err := v.nextToMaterialize()
		if err != nil || !ok {
			return err
		}
		if err := v.materializeClone(c, rec); err != nil {
			return err
		}
	}
}

// nextToMaterialize finds a clone with stubs left that is not lazy, or
// was removed with stubs elsewhere.
func (v *FS) nextToMaterialize() (uint64, schema.Clone, bool, error) {
	var next uint64
	var nextRec schema.Clone
	err := eachClone(v.meta, func(c uint64, rec schema.Clone) error {
		if rec.Removed {
			if _, err := loadInode(v.meta, c); err == nil {
				return nil // the reaper frees its tree first
			}
		}
		if v.pinHeld(rec.Pin) && (!rec.Lazy || rec.Removed) {
			next, nextRec = c, rec
			return errStopScan
		}
		return nil
	})
	return next, nextRec, next != 0, err
}

func (v *FS) pinHeld(pin uint64) bool {
	for _, p := range v.ret.Pins() {
		if p.Version == pin {
			return p.Held
		}
	}
	return false
}

// materializeClone materializes clone c's tree breadth first, then any
// of its stubs that were moved out of it, then lets its pin go.
func (v *FS) materializeClone(c uint64, rec schema.Clone) error {
	if !rec.Removed {
		queue := []uint64{c}
		for steps := 1; len(queue) > 0; steps++ {
			dir := queue[0]
			queue = queue[1:]
			if steps%64 == 0 && !v.leased("materialize") {
				return nil // another host took the work over
			}
			if err := v.throttled(dir); err != nil {
				return err
			}
			subdirs, err := v.stubChildren(dir, c)
			if err != nil {
				return err
			}
			queue = append(queue, subdirs...)
		}
	}
	if err := v.materializeStray(c); err != nil {
		return err
	}
	if hook := materializedHook.Load(); hook != nil {
		(*hook)(c)
	}
	return v.endMaterialization(c)
}

// materializedHook, when tests set it, runs once a clone's tree is
// materialized, before the transaction that ends its materialization.
var materializedHook atomic.Pointer[func(c uint64)]

// endMaterialization lets the pin of clone c go once its tree is
// materialized; if rmclone removed the clone meanwhile and the reaper
// has deleted its root, it drops the clone. A removed clone whose root
// is still there is left to the reaper: its record is what marks the
// tree to free until the root goes (forgetClone), so dropping it here
// would leave the tree unreachable for good once the reaper stops (a
// crash, an unmount) or if it had not listed the clone yet.
func (v *FS) endMaterialization(c uint64) error {
	tx, err := v.begin()
	if err != nil {
		return err
	}
	b := tx.Batch()
	rec, err := loadClone(b, c)
	switch {
	case err != nil:
	case !rec.Removed:
		rec.Stubs = 0
		if err = saveClone(b, c, rec); err == nil {
			err = v.unholdPin(tx, rec.Pin)
		}
	default:
		if _, err = loadInode(b, c); err == nil {
			tx.Abort()
			v.wakeReaper()
			return nil
		}
		if errors.Is(err, syscall.ENOENT) {
			err = v.dropClone(tx, c, rec)
		}
	}
	if err != nil {
		tx.Abort()
		if errors.Is(err, meta.ErrNotFound) {
			return nil
		}
		return err
	}
	return tx.Commit(false)
}

// throttled materializes the stubs among inos, then pauses as long as
// that took.
func (v *FS) throttled(inos ...uint64) error {
	select {
	case <-v.quit:
		return errQuit
	default:
	}
	start := time.Now()
	if err := v.materializeMany(inos, true); err != nil {
		return err
	}
	time.Sleep(time.Since(start))
	return nil
}

// materializeBatch bounds the files the materializer gives their own
// records in one transaction: enough to spread a commit's cost, few
// enough that foreground work waits little for the transaction lock.
const materializeBatch = 64

// stubChildren materializes the files of directory dir that belong to
// clone c and returns its subdirectories that do.
func (v *FS) stubChildren(dir, c uint64) ([]uint64, error) {
	var subdirs, files []uint64
	flush := func() error {
		err := v.throttled(files...)
		files = files[:0]
		return err
	}
	err := eachEntry(v.meta, dir, func(_ string, d schema.Dirent) error {
		n, err := loadInode(v.meta, d.Ino)
		if err != nil || n.Clone != c {
			return nil // gone meanwhile, or not the clone's
		}
		if isDir(n.Mode) {
			subdirs = append(subdirs, d.Ino)
			return nil
		}
		if n.Stub {
			if files = append(files, d.Ino); len(files) == materializeBatch {
				return flush()
			}
		}
		return nil
	})
	if err == nil && len(files) > 0 {
		err = flush()
	}
	return subdirs, err
}

// materializeStray materializes the stubs of clone c found outside its
// tree by a scan of the inode table, if its count says some are left.
func (v *FS) materializeStray(c uint64) error {
	rec, err := loadClone(v.meta, c)
	if err != nil || rec.Stubs == 0 {
		return err
	}
	var stubs []uint64
	lower, upper := schema.InodeRange()
	err = scan(v.meta, lower, upper, func(k, val []byte) error {
		ino := schema.OwnerIno(k)
		n, err := decodeInode(ino, val)
		if err == nil && n.Stub && n.Clone == c {
			stubs = append(stubs, ino)
		}
		return err
	})
	if err != nil {
		return err
	}
	for len(stubs) > 0 {
		ino := stubs[0]
		stubs = stubs[1:]
		n, err := loadInode(v.meta, ino)
		if err != nil {
			continue
		}
		if err := v.throttled(ino); err != nil {
			return err
		}
		if isDir(n.Mode) {
			more, err := v.stubChildren(ino, c)
			if err != nil {
				return err
			}
			for _, d := range more {
				stubs = append(stubs, d)
			}
		}
	}
	return nil
}
