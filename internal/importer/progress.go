package importer

import (
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// progress is a snapshot of the counters.
func (im *importer) progress() Progress {
	return Progress{
		Files: im.n.files.Load(), Dirs: im.n.dirs.Load(), Symlinks: im.n.symlinks.Load(),
		Specials: im.n.specials.Load(), HardLinks: im.n.hardLinks.Load(),
		Bytes: im.n.bytes.Load(), Failed: im.n.failed.Load(),
		TotalFiles: im.n.totalFiles.Load(), TotalBytes: im.n.totalBytes.Load(), Counted: im.n.counted.Load(),
		Elapsed: time.Since(im.start),
	}
}

// tick reports progress periodically until the returned func is called.
func (im *importer) tick() (stop func()) {
	if im.opt.OnProgress == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(im.opt.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				im.opt.OnProgress(im.progress())
			}
		}
	}()
	return func() { close(quit); <-done }
}

// countTotals counts the distinct regular files under the source and
// their bytes, for the progress totals, alongside the import. It only
// lists (without moving directory atimes, where the kernel lets it) and
// stats; errors are the import's to report.
func (im *importer) countTotals() {
	seen := map[devIno]bool{}
	var walk func(p string, st *unix.Stat_t)
	walk = func(p string, st *unix.Stat_t) {
		switch {
		case im.ctx.Err() != nil:
		case st.Mode&unix.S_IFMT == unix.S_IFREG:
			if st.Nlink > 1 {
				if seen[devIno{st.Dev, st.Ino}] {
					return
				}
				seen[devIno{st.Dev, st.Ino}] = true
			}
			im.n.totalFiles.Add(1)
			im.n.totalBytes.Add(st.Size)
		case st.Mode&unix.S_IFMT == unix.S_IFDIR && (p == im.src || !im.guard.skip(st)):
			names, _ := readDirNames(p)
			for _, name := range names {
				var cst unix.Stat_t
				if unix.Lstat(filepath.Join(p, name), &cst) == nil {
					walk(filepath.Join(p, name), &cst)
				}
			}
		}
	}
	var st unix.Stat_t
	if unix.Lstat(im.src, &st) == nil {
		walk(im.src, &st)
	}
	im.n.counted.Store(im.ctx.Err() == nil)
}
