package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/frontend/exports"
	"github.com/doppelfs/doppel/internal/frontend/fusefs"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/metrics"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/volume"
)

// serve runs the daemon in this process until the volume is unmounted or
// SIGTERM/SIGINT arrives, then flushes everything and releases the store.
func serve(dir, mp string, mf mountFlags) (err error) {
	var notify *os.File
	if mf.notifyFd > 0 {
		notify = os.NewFile(uintptr(mf.notifyFd), "notify")
		defer func() {
			if err != nil {
				fmt.Fprintf(notify, "error: %v\n", err)
			}
			notify.Close()
		}()
	}
	log := slog.Default() // parse installed it at --log-level
	started := time.Now()
	limitMemory()
	stopProfiles, err := recordProfiles()
	if err != nil {
		return err
	}
	defer stopProfiles()
	vol, err := volume.OpenHost(dir, log, volume.HostOptions{DeferDedup: mf.dedup == "background"})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := vol.Close(); cerr != nil {
			log.Error("closing volume", "err", cerr)
			if err == nil {
				err = cerr
			}
		}
	}()
	opts := &fuse.MountOptions{
		FsName:        dir,
		Name:          "doppel",
		AllowOther:    os.Geteuid() == 0,
		Options:       []string{"default_permissions"},
		MaxWrite:      1 << 20,
		MaxReadAhead:  1 << 20,
		MaxBackground: 64,
		// The adapter drops privileges on write itself, which spares
		// every write a GETXATTR round trip.
		ExtraCapabilities: fusefs.ExtraCapabilities,
		// On a volume several hosts mount, fcntl and flock locks are
		// the volume's (docs/SHARED.md, 9.4); else the kernel's.
		EnableLocks: fusefs.LocksShared(vol.NS),
		Debug:       mf.fuseDebug,
		Logger:      slog.NewLogLogger(log.With("component", "go-fuse").Handler(), slog.LevelInfo),
	}
	var fuseOps metrics.Ops
	srv, err := fuse.NewServer(fusefs.New(vol.NS, &fuseOps, log), mp, opts)
	if err != nil {
		return fmt.Errorf("mount %s: %w", mp, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		return fmt.Errorf("mount %s: %w", mp, err)
	}
	setKernelReadahead(mp, volume.KernelReadahead, log)
	// NBD exports (doppel nbd) of this volume's files keep the kernel's
	// view of them coherent: pages they change are dropped, names they
	// create are looked up again.
	vol.Exports.SetHooks(exports.Hooks{
		Changed: func(ino uint64, off, length int64) { srv.InodeNotify(ino, off, length) },
		Created: func(parent uint64, name string) { srv.EntryNotify(parent, name) },
		Warn:    func(msg string) { log.Warn(msg) },
	})
	imports := &daemonImports{vol: vol, srv: srv, mp: mp, log: log}
	served := servedVolume{API: vol.Operations(), vol: vol, srv: srv, imports: imports,
		status: func() ops.Status { return daemonStatus(vol, mp, started, &fuseOps) }}
	stopControl, err := control.Serve(context.Background(), dir, served,
		metrics.Handler(metrics.NewRegistry(&fuseOps, vol.Figures), log))
	if err != nil {
		srv.Unmount()
		return err
	}
	defer stopControl()
	vol.SetInvalidator(fusefs.NewInvalidator(srv))
	if err := vol.SetMount(mp); err != nil {
		log.Warn("cannot record the mount point in the volume's session", "err", err)
	}
	log.Info("mounted", "store", dir, "mountpoint", mp, "pid", os.Getpid())
	if notify != nil {
		fmt.Fprintln(notify, "ready")
		notify.Close()
		notify = nil
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			log.Info("signal: unmounting", "signal", s.String())
			if err := srv.Unmount(); err != nil {
				log.Warn("unmount busy; detaching lazily", "err", err)
				syscall.Unmount(mp, syscall.MNT_DETACH)
			}
		}
	}()
	srv.Wait()
	signal.Stop(sigs)
	imports.stop() // before the volume closes under them
	log.Info("unmounted; flushing", "mountpoint", mp)
	return nil
}

// daemonStatus answers `doppel status` for the volume this daemon serves.
func daemonStatus(vol *volume.Volume, mp string, started time.Time, fuseOps *metrics.Ops) ops.Status {
	c, n, s := vol.Engine.Counters(), vol.NS.Counters(), vol.Engine.Stats()
	st := ops.Status{
		Store: vol.Dir, Mountpoint: mp, PID: os.Getpid(), Started: started,
		// shared.json keeps the URL without its password; Redact again
		// so that no status can ever show one.
		MetaURL: pgstore.Redact(vol.MetaURL), MetaSchema: vol.MetaSchema, DataURL: vol.DataURL, MultiHost: vol.MultiHost,
		DedupBackground: vol.DeferDedup(),
		UptimeSeconds:   time.Since(started).Seconds(),
		WrittenBytes:    n.WrittenBytes, DedupBytes: c.DeduplicatedBytes, StoredBytes: c.StoredBytes,
		ReclaimedBytes: c.ReclaimedBytes, DirtyBytes: n.DirtyBytes, DirtyFiles: n.DirtyFiles,
		OpenFiles: n.OpenFiles, LogicalBytes: s.LogicalBytes, PhysicalBytes: s.PhysicalBytes,
		Exports: vol.Exports.Status(),
	}
	t := fuseOps.Totals()
	st.Requests, st.RequestErrors, st.RequestEIO = t.Count, t.Errors, t.EIO
	st.Sessions, st.SessionsError = sessionStatus(vol)
	return st
}

// sessionStatus lists the sessions of a shared volume for doppel status.
func sessionStatus(vol *volume.Volume) ([]ops.SessionStatus, string) {
	all, err := vol.Sessions()
	if err != nil {
		return nil, err.Error()
	}
	this := vol.SessionID()
	out := make([]ops.SessionStatus, 0, len(all))
	for _, s := range all {
		out = append(out, ops.SessionStatus{ID: s.ID, Host: s.Host, PID: s.PID, Mount: s.Mount, This: s.ID == this,
			Alive: s.Alive(), Started: s.Started, HeartbeatAgeSeconds: s.Since.Seconds()})
	}
	return out, ""
}

// daemonMemoryLimit is the daemon's soft limit on Go heap memory, unless
// GOMEMLIMIT sets another. Write buffers are bounded (namespace.Options
// DirtyLimit), but the garbage collector lets the heap reach twice what is
// live before it collects; near the limit it collects sooner, keeping the
// daemon's RSS within about 300 MiB plus Pebble's block cache (64 to
// 256 MiB by the machine's memory, outside the Go heap: meta/pebbleopts.go).
const daemonMemoryLimit = 192 << 20

func limitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(daemonMemoryLimit)
	}
}
