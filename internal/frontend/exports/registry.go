package exports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/doppelfs/doppel/internal/frontend/blockfile"
	"github.com/doppelfs/doppel/internal/frontend/nbd"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/vfs"
)

// Hooks tell the process serving the volume what an export does. Any may
// be nil.
type Hooks struct {
	// Changed: a block command changed a range of a file (a mount drops
	// the kernel's cached pages of it).
	Changed blockfile.Changed
	// Created: --create made a new name (a mount forgets a cached
	// absence of it).
	Created func(parent uint64, name string)
	// Warn: something the user should hear about.
	Warn func(msg string)
}

// Registry runs the NBD servers of one volume.
type Registry struct {
	fs  vfs.FS
	log *slog.Logger

	mu      sync.Mutex
	hooks   Hooks
	running map[*running]struct{}
}

type running struct {
	srv      *nbd.Server
	listen   string
	readOnly bool
	// tls: clients must use TLS; clientAuth: and present a certificate.
	tls, clientAuth bool
	files           []ops.ExportFile
	backends        []*blockfile.File
}

// NewRegistry returns the registry of the volume fs.
func NewRegistry(fs vfs.FS, log *slog.Logger) *Registry {
	return &Registry{fs: fs, log: log, running: map[*running]struct{}{}}
}

// SetHooks installs the hooks of exports started from now on.
func (r *Registry) SetHooks(h Hooks) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hooks = h
}

// Serve runs one export request until ctx is done, then stops accepting,
// lets the connected clients' requests finish, flushes the files and
// closes them. started is called (if not nil) once the server listens.
func (r *Registry) Serve(ctx context.Context, req ops.ExportRequest, started func(ops.ExportStatus)) (err error) {
	if len(req.Files) == 0 {
		return errors.New("no file to export")
	}
	r.mu.Lock()
	hooks := r.hooks
	r.mu.Unlock()
	run := &running{srv: nbd.NewServer(), readOnly: req.ReadOnly, files: req.Files}
	run.srv.Logger = r.log
	if req.TLS != nil {
		cfg, err := TLSConfig(req.TLS, r.log)
		if err != nil {
			return err
		}
		run.srv.TLSConfig = cfg
		run.tls, run.clientAuth = true, req.TLS.ClientCA != ""
	}
	defer func() {
		for _, b := range run.backends {
			if cerr := b.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("flush on exit: %w", cerr))
			}
		}
	}()
	for _, f := range req.Files {
		b, err := openFile(r.fs, f, req, hooks)
		if err != nil {
			return err
		}
		run.backends = append(run.backends, b)
		if err := run.srv.AddExport(nbd.Export{Name: f.Name, Description: "doppel " + f.Path, Backend: b, ReadOnly: req.ReadOnly}); err != nil {
			return err
		}
	}
	ln, err := listen(req.Listen)
	if err != nil {
		return err
	}
	run.listen = address(ln)
	r.mu.Lock()
	r.running[run] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.running, run)
		r.mu.Unlock()
	}()
	if r.log != nil {
		r.log.Info("nbd export started", "listen", run.listen, "exports", len(req.Files), "read_only", req.ReadOnly, "tls", run.tls, "client_auth", run.clientAuth)
	}
	if started != nil {
		started(run.status())
	}
	err = run.srv.Serve(ctx, ln)
	if r.log != nil {
		r.log.Info("nbd export stopped", "listen", run.listen, "err", err)
	}
	return err
}

// status describes a running server and its clients.
func (run *running) status() ops.ExportStatus {
	st := ops.ExportStatus{Listen: run.listen, ReadOnly: run.readOnly, TLS: run.tls, ClientAuth: run.clientAuth}
	for i, f := range run.files {
		st.Exports = append(st.Exports, ops.ExportInfo{Name: f.Name, Path: f.Path,
			Size: run.backends[i].Size(), Clients: len(run.srv.Clients(f.Name))})
	}
	return st
}

// Status lists the running servers, by listen address.
func (r *Registry) Status() []ops.ExportStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ops.ExportStatus
	for run := range r.running {
		out = append(out, run.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Listen < out[j].Listen })
	return out
}
