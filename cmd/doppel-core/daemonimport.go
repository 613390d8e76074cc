package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/importer"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/volume"
)

// daemonImports serves `doppel import` into the mounted volume: the
// daemon reads the source itself and writes through its namespace,
// without FUSE round trips. Imports still running when the volume is
// unmounted are interrupted, and waited for, before the volume closes.
type daemonImports struct {
	vol *volume.Volume
	srv *fuse.Server
	mp  string
	log *slog.Logger

	mu      sync.Mutex
	running sync.WaitGroup
	cancels map[*context.CancelCauseFunc]struct{}
	closed  bool
}

func (d *daemonImports) run(ctx context.Context, req ops.ImportRequest, progress func(importer.Progress)) (importer.Summary, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return importer.Summary{}, errUnmounted
	}
	if d.cancels == nil {
		d.cancels = map[*context.CancelCauseFunc]struct{}{}
	}
	d.cancels[&cancel] = struct{}{}
	d.running.Add(1)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.cancels, &cancel)
		d.mu.Unlock()
		d.running.Done()
	}()

	d.log.Info("import", "src", req.Src, "dst", req.Dst, "jobs", req.Jobs)
	opt := importer.Options{Jobs: req.Jobs, Mountpoint: d.mp, OnProgress: progress, ProgressInterval: req.ProgressEvery}
	s, err := d.vol.Import(ctx, req.Src, req.Dst, opt)
	if parent, name := s.TargetEntry(); parent != 0 && !d.isClosed() {
		// The kernel may remember that the name did not exist.
		d.srv.EntryNotify(parent, name)
	}
	d.log.Info("import done", "target", s.Target, "files", s.Files, "bytes", s.Bytes, "failed", s.Failed, "err", err)
	return s, err
}

var errUnmounted = errors.New("the volume is being unmounted")

func (d *daemonImports) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// stop refuses new imports, interrupts the running ones and waits for
// them to return.
func (d *daemonImports) stop() {
	d.mu.Lock()
	d.closed = true
	for c := range d.cancels {
		(*c)(errUnmounted)
	}
	d.mu.Unlock()
	d.running.Wait()
}
