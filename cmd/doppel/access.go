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
	if volume.LockHolder(dir) > 0 {
		c, err := control.Dial(dir)
		if err != nil {
			return fmt.Errorf("volume %s is in use but its daemon does not answer: %w", dir, err)
		}
		return mounted(c)
	}
	vol, err := volume.Open(dir, slog.Default())
	if errors.Is(err, volume.ErrInUse) {
		return onVolume(dir, mounted, offline)
	}
	if err != nil {
		return err
	}
	err = offline(vol)
	return errors.Join(err, vol.Close())
}
