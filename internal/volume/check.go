package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/schema"
)

// Checker is an unmounted volume opened for fsck: its stores, locked, and
// no file system started on them. Starting one would delete orphans and
// needs intact counters, while a check must only read (unless repairing)
// and must work on a damaged volume.
type Checker struct {
	ops.Unsupported
	Stores fsck.Stores
	lock   *os.File
	log    *slog.Logger
}

var errCheckOnly = errors.New("the volume is open for checking only")

// OpenForCheck opens the volume in dir for fsck. A volume in use gives an
// error wrapping ErrInUse.
func OpenForCheck(dir string, log *slog.Logger) (*Checker, error) {
	f, err := readFormat(dir)
	if err != nil {
		return nil, err // not a volume, or one this doppel must not touch
	}
	lock, err := lockFile(dir)
	if err != nil {
		return nil, err
	}
	c := &Checker{Unsupported: ops.Unsupported{Err: errCheckOnly}, lock: lock, log: log}
	if c.Stores, err = openStoresForCheck(dir, f); err != nil {
		lock.Close()
		return nil, err
	}
	return c, nil
}

func openStoresForCheck(dir string, f formatInfo) (fsck.Stores, error) {
	var m meta.Store
	var shared *sharedInfo
	if f.Kind == KindShared {
		pg, s, err := openSharedMeta(dir, f.UUID, "fsck")
		if err != nil {
			return fsck.Stores{}, err
		}
		m, shared = pg, &s
	} else {
		metaDir := filepath.Join(dir, "meta")
		if _, err := os.Stat(metaDir); err != nil {
			return fsck.Stores{}, fmt.Errorf("metadata store: %w", err)
		}
		pb, err := meta.OpenPebble(metaDir)
		if err != nil {
			return fsck.Stores{}, err
		}
		m = pb
	}
	if raw, err := m.Get(schema.KeyConfig); err == nil {
		// fsck reports a bad config; one of a newer doppel it must not touch.
		if _, err := schema.DecodeConfig(raw); errors.Is(err, schema.ErrNewerFormat) {
			m.Close()
			return fsck.Stores{}, fmt.Errorf("%s: %w", dir, err)
		}
	}
	var b blob.Store
	var err error
	if shared != nil {
		b, err = openSharedData(dir, *shared, m)
	} else {
		b, err = blob.OpenDir(filepath.Join(dir, "chunks"), blob.Options{})
	}
	if err != nil {
		m.Close()
		return fsck.Stores{}, err
	}
	return fsck.Stores{Dir: dir, Meta: m, Blobs: b}, nil
}

// Fsck checks or repairs the unmounted volume.
func (c *Checker) Fsck(_ context.Context, req ops.FsckRequest, progress func(fsck.Progress)) (ops.FsckResult, error) {
	opt := fsck.Options{VerifyData: req.VerifyData, Progress: progress}
	if req.Repair {
		rr, err := fsck.Repair(c.Stores, opt, c.log)
		return ops.FsckResult{Repair: rr}, err
	}
	rep, err := fsck.Check(c.Stores, opt)
	return ops.FsckResult{Report: rep}, err
}

// Close releases the stores and the lock.
func (c *Checker) Close() error {
	err := errors.Join(c.Stores.Blobs.Close(), c.Stores.Meta.Close())
	c.lock.Close()
	return err
}
