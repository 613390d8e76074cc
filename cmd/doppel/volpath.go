package main

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
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
func enclosingMount(p string) (mountEntry, string, bool, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return mountEntry{}, "", false, err
	}
	all, err := mounts()
	if err != nil {
		return mountEntry{}, "", false, err
	}
	best, bestLen := -1, -1
	for i, m := range all { // later entries shadow earlier ones on the same point
		if !within(abs, m.Point) || len(m.Point) < bestLen {
			continue
		}
		best, bestLen = i, len(m.Point)
	}
	if best < 0 || all[best].FSType != fuseType {
		return mountEntry{}, "", false, nil
	}
	m := all[best]
	rel, err := filepath.Rel(m.Point, abs)
	if err != nil {
		return mountEntry{}, "", false, err
	}
	return m, path.Clean("/" + filepath.ToSlash(rel)), true, nil
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
