package s3store

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Allocator hands out pack numbers. The metadata side of a shared volume
// provides it (one counter per volume, e.g. a PostgreSQL row updated with
// RETURNING), so that no two hosts ever write the same pack.
type Allocator interface {
	// Allocate durably reserves n consecutive pack numbers, each greater
	// than above and than every number it handed out before (to any
	// host), and returns the first.
	Allocate(n, above uint32) (first uint32, err error)
}

// LocalAllocator is an Allocator for one host: the highest number handed
// out is kept in a file, replaced atomically and synced.
type LocalAllocator struct {
	mu   sync.Mutex
	path string
}

// NewLocalAllocator keeps its counter in dir/next.
func NewLocalAllocator(dir string) *LocalAllocator {
	return &LocalAllocator{path: filepath.Join(dir, "next")}
}

// Allocate implements Allocator.
func (a *LocalAllocator) Allocate(n, above uint32) (uint32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	last, err := a.read()
	if err != nil {
		return 0, err
	}
	last = max(last, above)
	if n == 0 || uint64(last)+uint64(n) > math.MaxUint32 {
		return 0, errors.New("s3: pack numbers exhausted")
	}
	if err := a.write(last + n); err != nil {
		return 0, err
	}
	return last + 1, nil
}

func (a *LocalAllocator) read() (uint32, error) {
	b, err := os.ReadFile(a.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("s3: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 16, 32)
	if err != nil {
		return 0, fmt.Errorf("s3: %s: %w", a.path, err)
	}
	return uint32(n), nil
}

func (a *LocalAllocator) write(n uint32) error {
	tmp := a.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("s3: %w", err)
	}
	_, err = fmt.Fprintf(f, "%08x\n", n)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(a.path))
	}
	if err != nil {
		return fmt.Errorf("s3: write %s: %w", a.path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
