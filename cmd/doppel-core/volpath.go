package main

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/doppelfs/doppel/internal/mountinfo"
)

// volumePath is a path inside a volume, as a command argument names it.
type volumePath struct {
	Store      string // the volume directory
	Path       string // "/"-rooted, cleaned path inside the volume
	Mountpoint string // where the volume is mounted; "" if the argument did not go through a mount
}

// Host returns the path on the host when the argument went through a mount.
func (p volumePath) Host() string {
	if p.Mountpoint == "" {
		return ""
	}
	return filepath.Join(p.Mountpoint, filepath.FromSlash(p.Path))
}

// resolveVolumePath interprets arg, in this order:
//  1. a host path at or below a mounted doppel volume: that volume and the
//     path relative to its mount point;
//  2. otherwise a path inside the store named by --store (storeFlagValue),
//     $DOPPEL_STORE or the default store, "/" being the volume's root.
//
// The volume need not be mounted in case 2; callers use onVolume to reach
// it either way.
func resolveVolumePath(arg, storeFlagValue string) (volumePath, error) {
	if arg == "" {
		return volumePath{}, fmt.Errorf("empty path")
	}
	if storeFlagValue == "" {
		if m, rel, ok, err := enclosingMount(arg); err != nil {
			return volumePath{}, err
		} else if ok {
			return volumePath{Store: m.Source, Path: rel, Mountpoint: m.Point}, nil
		}
	}
	dir, err := storeDir(storeFlagValue)
	if err != nil {
		return volumePath{}, err
	}
	return volumePath{Store: dir, Path: path.Clean("/" + filepath.ToSlash(arg))}, nil
}

// enclosingMount finds the innermost doppel mount holding the host path p
// (which need not exist yet) and p's "/"-rooted path inside it.
func enclosingMount(p string) (mountEntry, string, bool, error) { return mountinfo.Enclosing(p) }
