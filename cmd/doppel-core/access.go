package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/volume"
)

// withVolume runs fn on the volume in dir: through its daemon's control
// socket when it is mounted, otherwise on the store opened here for the
// command (through the daemon after all if it got mounted meanwhile).
func withVolume(dir string, fn func(ops.API) error) error {
	return withOpened(dir, openVolume, fn)
}

// openVolume opens an unmounted volume for a command (tests replace it).
var openVolume = func(dir string) (ops.API, func() error, error) {
	v, err := volume.Open(dir, slog.Default())
	if err != nil {
		return nil, nil, err
	}
	return v.Operations(), v.Close, nil
}

// withVolumeForCheck is withVolume for fsck: an unmounted volume is
// opened without starting the file system on it (volume.OpenForCheck).
func withVolumeForCheck(dir string, fn func(ops.API) error) error {
	return withOpened(dir, func(dir string) (ops.API, func() error, error) {
		c, err := volume.OpenForCheck(dir, slog.Default())
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}, fn)
}

// withOpened runs fn through the daemon if one serves dir, else on what
// open gives, which fails wrapping volume.ErrInUse if the volume is in
// use.
func withOpened(dir string, open func(string) (ops.API, func() error, error), fn func(ops.API) error) error {
	if volume.LockHolder(dir) > 0 {
		c, err := control.Dial(dir)
		if err != nil {
			return fmt.Errorf("volume %s is in use but its daemon does not answer: %w", dir, err)
		}
		return fn(c)
	}
	v, closeVolume, err := open(dir)
	if errors.Is(err, volume.ErrInUse) {
		return withOpened(dir, open, fn)
	}
	if err != nil {
		return err
	}
	err = fn(v)
	return errors.Join(err, closeVolume())
}
