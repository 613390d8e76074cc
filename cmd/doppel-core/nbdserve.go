package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/frontend/exports"
	"github.com/doppelfs/doppel/internal/metrics"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/volume"
)

// serveNBD runs the export request on the volume in store until ctx is
// done: through the daemon of a mounted volume (the export lives as long
// as this process's request to it), or on the volume opened here, which
// then serves its control socket too, so that other commands (df, clone,
// fsck, status) reach it while it is exported.
func serveNBD(ctx context.Context, store string, req ops.ExportRequest, n *nbdNotifier) (err error) {
	defer func() { n.done(err) }()
	if volume.LockHolder(store) > 0 {
		c, err := control.Dial(store)
		if err != nil {
			return fmt.Errorf("volume %s is in use but its daemon does not answer: %w", store, err)
		}
		return c.Export(ctx, req, n.started)
	}
	vol, err := volume.Open(store, slog.Default())
	if errors.Is(err, volume.ErrInUse) { // mounted meanwhile
		return serveNBD(ctx, store, req, n)
	}
	if err != nil {
		return err
	}
	stopProfiles, err := recordProfiles() // of the export served here
	if err != nil {
		vol.Close()
		return err
	}
	defer stopProfiles()
	defer func() {
		if cerr := vol.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing the volume: %w", cerr))
		}
	}()
	vol.Exports.SetHooks(exports.Hooks{Warn: func(msg string) { fmt.Fprintln(os.Stderr, "doppel nbd:", msg) }})
	began := time.Now()
	var none metrics.Ops // no FUSE requests: the volume is not mounted
	served := nbdServedVolume{API: vol.Operations(),
		status: func() ops.Status { return daemonStatus(vol, "", began, &none) }}
	stopControl, err := control.Serve(context.Background(), store, served, nil)
	if err != nil {
		return err
	}
	defer stopControl()
	return vol.Operations().Export(ctx, req, n.started)
}

// nbdServedVolume is an unmounted volume as `doppel nbd` serves it on its
// control socket: its operations, and a status naming its exports.
type nbdServedVolume struct {
	ops.API
	status func() ops.Status
}

func (s nbdServedVolume) Status(context.Context) (ops.Status, error) { return s.status(), nil }

// nbdNotifier tells the user, and the parent of a detached server, where
// the exports are served, or why they are not.
type nbdNotifier struct{ pipe *os.File }

func newNBDNotifier(fd int) *nbdNotifier {
	if fd <= 0 {
		return &nbdNotifier{}
	}
	return &nbdNotifier{pipe: os.NewFile(uintptr(fd), "notify")}
}

func (n *nbdNotifier) started(st ops.ExportStatus) {
	text := describeExportStatus(st)
	fmt.Print(text)
	if n.pipe != nil {
		io.WriteString(n.pipe, text+"ready\n")
		n.pipe.Close()
		n.pipe = nil
	}
}

func (n *nbdNotifier) done(err error) {
	if n.pipe != nil {
		msg := "stopped before serving"
		if err != nil {
			msg = strings.ReplaceAll(err.Error(), "\n", " ")
		}
		fmt.Fprintf(n.pipe, "error: %s\n", msg)
		n.pipe.Close()
		n.pipe = nil
	}
}

// serverNotes says what a server's clients may do and how they must
// connect, for status lines.
func serverNotes(st ops.ExportStatus) []string {
	var notes []string
	if st.ReadOnly {
		notes = append(notes, "read-only")
	}
	switch {
	case st.ClientAuth:
		notes = append(notes, "TLS with client certificates")
	case st.TLS:
		notes = append(notes, "TLS")
	}
	return notes
}

// describeExportStatus is what `doppel nbd` prints once it serves.
func describeExportStatus(st ops.ExportStatus) string {
	var b strings.Builder
	about := ""
	if notes := serverNotes(st); len(notes) > 0 {
		about = " (" + strings.Join(notes, ", ") + ")"
	}
	fmt.Fprintf(&b, "doppel nbd: serving on %s%s\n", st.Listen, about)
	for _, e := range st.Exports {
		fmt.Fprintf(&b, "  %s  %s  %s  %s\n", e.Name, e.Path, human(e.Size), nbdURI(st.Listen, e.Name, st.TLS))
	}
	return b.String()
}
