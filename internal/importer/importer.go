package importer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/vfs"
)

// Options tune an import.
type Options struct {
	// Jobs is how many regular files are copied at once; 0 means GOMAXPROCS.
	Jobs int
	// Mountpoint is where the destination volume is mounted ("" when it is
	// not) and StoreDir its store directory. The import refuses a SRC
	// inside either and never descends into them.
	Mountpoint, StoreDir string
	// OnProgress, when set, is called every ProgressInterval (default
	// 500 ms) while the import runs.
	OnProgress       func(Progress)
	ProgressInterval time.Duration
}

// maxJobs bounds Jobs: each file in flight may hold three 8 MiB windows.
const maxJobs = 64

// Target is what an import writes to: a namespace that creates whole
// files (vfs.FileCreator) besides the usual operations.
type Target interface {
	vfs.FS
	vfs.FileCreator
}

// Import copies the host path src into the volume vol at the volume path
// dst (see the package comment for the rules). Failures of single source
// entries are listed in the summary; the error is for failures of the
// whole import (bad arguments, volume errors, interruption).
func Import(ctx context.Context, vol Target, src, dst string, opt Options) (Summary, error) {
	im, st, err := prepare(vol, src, opt)
	if err != nil {
		return Summary{}, err
	}
	parent, name, target, err := resolveTarget(vol, dst, filepath.Base(im.src))
	if err != nil {
		return Summary{}, err
	}
	return im.run(ctx, st, parent, name, target)
}

// importer is the state of one import.
type importer struct {
	fs    Target
	src   string // absolute
	opt   Options
	guard guard
	start time.Time
	ctx   context.Context

	n counters

	mu       sync.Mutex
	failures []Failure
	warnings []string
	fatal    error
	stop     context.CancelFunc

	// Owned by the walker.
	links map[devIno]*node
	dirs  []dirAttr
	jobs  chan fileJob
}

type counters struct {
	files, dirs, symlinks, specials, hardLinks, bytes, failed, warnings atomic.Int64
	totalFiles, totalBytes                                              atomic.Int64
	counted                                                             atomic.Bool
}

// node is an entry of the source with several names. The first name is
// imported as the walk meets it; the others are linked to it at the end.
type node struct {
	ino   uint64 // in the volume; 0 until (or unless) it is imported
	path  string // of the first name
	extra []entryName
}

type entryName struct {
	parent uint64
	name   string
	path   string
}

type devIno struct{ dev, ino uint64 }

type dirAttr struct {
	ino uint64
	st  unix.Stat_t
}

// volumeError is a failure of the destination volume: it stops the import.
type volumeError struct {
	op, path string
	err      error
}

func (e *volumeError) Error() string {
	return fmt.Sprintf("volume: %s for %s: %v", e.op, e.path, e.err)
}

func (e *volumeError) Unwrap() error { return e.err }

func volErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &volumeError{op: op, path: path, err: err}
}

// prepare checks src and builds the importer.
func prepare(vol Target, src string, opt Options) (*importer, *unix.Stat_t, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasSuffix(src, "/") && abs != "/" { // like cp: "link/" means the directory
		if abs, err = filepath.EvalSymlinks(abs); err != nil {
			return nil, nil, err
		}
	}
	var st unix.Stat_t
	if err := unix.Lstat(abs, &st); err != nil {
		return nil, nil, fmt.Errorf("source %s: %w", abs, err)
	}
	g, err := newGuard(opt.Mountpoint, opt.StoreDir)
	if err != nil {
		return nil, nil, err
	}
	if err := g.refuse(abs, &st); err != nil {
		return nil, nil, err
	}
	if opt.Jobs <= 0 {
		opt.Jobs = runtime.GOMAXPROCS(0)
	}
	opt.Jobs = min(opt.Jobs, maxJobs)
	if opt.ProgressInterval <= 0 {
		opt.ProgressInterval = 500 * time.Millisecond
	}
	return &importer{fs: vol, src: abs, opt: opt, guard: g, links: map[devIno]*node{}}, &st, nil
}

// run imports the source (whose lstat is st) as name in the directory
// inode parent: walk and create, copy files in parallel, link the other
// names of hard-linked entries, set directory attributes last, then make
// it all durable.
func (im *importer) run(ctx context.Context, st *unix.Stat_t, parent uint64, name, target string) (Summary, error) {
	im.start = time.Now()
	ctx, im.stop = context.WithCancel(ctx)
	im.ctx = ctx
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		im.countTotals()
	}()
	defer func() { im.stop(); <-counted }()
	stopTicker := im.tick()
	im.jobs = make(chan fileJob, im.opt.Jobs)
	var wg sync.WaitGroup
	for range im.opt.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			im.worker()
		}()
	}
	if err := im.walk(im.src, st, parent, name, false); err != nil {
		im.record(im.src, err)
	}
	close(im.jobs)
	wg.Wait()
	stopTicker()
	if im.fatal == nil && ctx.Err() == nil {
		im.record("", im.linkRest())
		im.record("", im.setDirAttrs())
	}
	im.record("", volErr("sync", target, im.fs.SyncFS()))
	s := im.summary(target)
	s.parent, s.name = parent, name
	switch {
	case im.fatal != nil:
		return s, fmt.Errorf("import stopped; %s holds what was imported so far: %w", target, im.fatal)
	case ctx.Err() != nil:
		return s, fmt.Errorf("import interrupted; %s holds what was imported so far: %w", target, context.Cause(ctx))
	}
	return s, nil
}

// record notes err, which concerns path: volume errors stop the import,
// any other error fails the source entry.
func (im *importer) record(path string, err error) {
	if err == nil {
		return
	}
	var ve *volumeError
	if errors.As(err, &ve) || errors.Is(err, context.Canceled) {
		im.mu.Lock()
		if im.fatal == nil && !errors.Is(err, context.Canceled) {
			im.fatal = err
		}
		im.mu.Unlock()
		im.stop()
		return
	}
	im.n.failed.Add(1)
	im.mu.Lock()
	im.failures = append(im.failures, Failure{Path: path, Err: errText(err)})
	im.mu.Unlock()
}

// errText drops the path that os errors repeat (failures carry it).
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// warn notes a problem that does not fail the entry.
func (im *importer) warn(format string, args ...any) {
	if im.n.warnings.Add(1) > maxWarnings {
		return
	}
	im.mu.Lock()
	im.warnings = append(im.warnings, fmt.Sprintf(format, args...))
	im.mu.Unlock()
}

// linkRest gives entries with several names their other names.
func (im *importer) linkRest() error {
	for _, n := range im.links {
		for _, e := range n.extra {
			if n.ino == 0 {
				im.record(e.path, fmt.Errorf("a hard link to %s, which could not be imported", n.path))
				continue
			}
			if _, err := im.fs.Link(n.ino, e.parent, e.name); err != nil {
				return volErr("link", e.path, err)
			}
			im.n.hardLinks.Add(1)
		}
	}
	return nil
}

// setDirAttrs gives directories their source attributes once nothing
// more changes inside them.
func (im *importer) setDirAttrs() error {
	for i := len(im.dirs) - 1; i >= 0; i-- {
		d := &im.dirs[i]
		if _, err := im.fs.SetAttr(vfs.Caller{}, d.ino, fullAttr(&d.st)); err != nil {
			return volErr("setattr", fmt.Sprintf("directory inode %d", d.ino), err)
		}
	}
	return nil
}

func (im *importer) summary(target string) Summary {
	im.mu.Lock()
	defer im.mu.Unlock()
	return Summary{
		Progress: im.progress(), Target: target,
		Failures: im.failures, Warnings: im.warnings, WarnCount: im.n.warnings.Load(),
	}
}
