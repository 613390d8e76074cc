package importer

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// guard keeps an import from reading the volume it writes: through its
// mount (which would copy the import into itself) or its store directory.
type guard struct {
	mount, store       string // resolved paths; "" if none
	mountDev           uint64 // device of the mounted volume
	storeDev, storeIno uint64
	hasMount, hasStore bool
}

func newGuard(mountpoint, storeDir string) (guard, error) {
	var g guard
	if mountpoint != "" {
		var st unix.Stat_t
		if err := unix.Stat(mountpoint, &st); err != nil {
			return g, fmt.Errorf("volume mount point %s: %w", mountpoint, err)
		}
		g.mount, g.mountDev, g.hasMount = resolved(mountpoint), st.Dev, true
	}
	if storeDir != "" {
		var st unix.Stat_t
		if err := unix.Stat(storeDir, &st); err != nil {
			return g, fmt.Errorf("volume store %s: %w", storeDir, err)
		}
		g.store, g.storeDev, g.storeIno, g.hasStore = resolved(storeDir), st.Dev, st.Ino, true
	}
	return g, nil
}

// resolved is p with symlinks resolved, or p when that fails.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// refuse rejects a source inside the destination volume or its store.
func (g guard) refuse(src string, st *unix.Stat_t) error {
	real := resolved(src)
	if g.hasMount && (within(real, g.mount) || st.Dev == g.mountDev) {
		return fmt.Errorf("source %s is inside the destination volume (mounted on %s); a volume cannot be imported into itself", src, g.mount)
	}
	if g.hasStore && within(real, g.store) {
		return fmt.Errorf("source %s is inside the destination volume's store %s", src, g.store)
	}
	return nil
}

// skip reports whether the directory st is the volume's mount or store,
// which a walk of a source above them must not enter.
func (g guard) skip(st *unix.Stat_t) bool {
	return (g.hasMount && st.Dev == g.mountDev) || (g.hasStore && st.Dev == g.storeDev && st.Ino == g.storeIno)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
