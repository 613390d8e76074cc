package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/volume"
)

// onVolume runs mounted through the daemon's control socket when the volume
// in dir is mounted, and offline on the opened store otherwise (retrying
// through the daemon if it got mounted meanwhile).
func onVolume(dir string, mounted func(*control.Client) error, offline func(*volume.Volume) error) error {
	return onStore(dir, mounted, openVolume, offline)
}

func openVolume(dir string) (*volume.Volume, func() error, error) {
	v, err := volume.Open(dir, slog.Default())
	if err != nil {
		return nil, nil, err
	}
	return v, v.Close, nil
}

// onStore is onVolume for a command that opens the unmounted store its
// own way (fsck opens it without starting the file system). open fails
// with an error wrapping volume.ErrInUse if the volume is in use.
func onStore[S any](dir string, mounted func(*control.Client) error, open func(string) (S, func() error, error), offline func(S) error) error {
	if volume.LockHolder(dir) > 0 {
		c, err := control.Dial(dir)
		if err != nil {
			return fmt.Errorf("volume %s is in use but its daemon does not answer: %w", dir, err)
		}
		return mounted(c)
	}
	s, closeStore, err := open(dir)
	if errors.Is(err, volume.ErrInUse) {
		return onStore(dir, mounted, open, offline)
	}
	if err != nil {
		return err
	}
	err = offline(s)
	return errors.Join(err, closeStore())
}
