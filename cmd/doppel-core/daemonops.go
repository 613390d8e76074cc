package main

import (
	"context"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/importer"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/volume"
)

// servedVolume is the volume as the daemon serves it on its control
// socket: its operations, plus what the mount adds: the kernel is told
// of the entries clones add and remove (it may have cached their absence
// or presence), imports stop at unmount, and status describes the daemon.
type servedVolume struct {
	ops.API
	vol     *volume.Volume
	srv     *fuse.Server
	imports *daemonImports
	status  func() ops.Status
}

func (s servedVolume) Clone(ctx context.Context, req ops.CloneRequest) (ops.CloneResult, error) {
	res, err := s.API.Clone(ctx, req)
	if err == nil {
		s.srv.EntryNotify(res.Parent, res.Name) // the kernel may remember DST did not exist
	}
	return res, err
}

func (s servedVolume) RemoveClone(ctx context.Context, path string) error {
	err := s.API.RemoveClone(ctx, path)
	if err == nil {
		if parent, name, ok := s.vol.NS.EntryOf(path); ok {
			s.srv.EntryNotify(parent, name) // the kernel may still have it cached
		}
	}
	return err
}

func (s servedVolume) Import(ctx context.Context, req ops.ImportRequest, progress func(importer.Progress)) (importer.Summary, error) {
	return s.imports.run(ctx, req, progress)
}

func (s servedVolume) Status(context.Context) (ops.Status, error) { return s.status(), nil }
