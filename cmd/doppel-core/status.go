package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/control"
	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/volume"
)

// volumeStatus is one mounted volume in `doppel status`.
type volumeStatus struct {
	Mountpoint string          `json:"mountpoint"`
	Store      string          `json:"store"`
	PID        int             `json:"pid,omitempty"` // holder of the store's lock
	Responding bool            `json:"responding"`
	Error      string          `json:"error,omitempty"`
	Daemon     *control.Status `json:"daemon,omitempty"`
}

// statusTimeout bounds the wait for each daemon, so that one hung daemon
// does not hold up the listing.
const statusTimeout = 5 * time.Second

func runStatus(args []string) error {
	fs := newFlags("status", "[--json] [--store DIR]",
		"List the mounted doppel volumes: mount point, store, daemon PID and uptime,\n"+
			"counters since the daemon started (FUSE requests, bytes written,\n"+
			"deduplicated, stored and reclaimed, the flush queue) and the NBD exports\n"+
			"it serves with their clients. The store named by --store (or the default\n"+
			"store) is listed too when it is not mounted but held by 'doppel nbd'.\n"+
			"A volume whose daemon does not answer is listed as such; that is not an\n"+
			"error of the command.")
	asJSON := fs.Bool("json", false, "print JSON")
	storeArg := storeFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	all, err := mounts()
	if err != nil {
		return fmt.Errorf("read the mount table: %w", err)
	}
	var vols []volumeStatus
	for _, m := range all {
		if m.FSType == fuseType {
			vols = append(vols, volumeStatus{Mountpoint: m.Point, Store: m.Source})
		}
	}
	vols = appendHeldStore(vols, *storeArg)
	var wg sync.WaitGroup
	for i := range vols {
		wg.Add(1)
		go func() {
			defer wg.Done()
			askDaemon(&vols[i])
		}()
	}
	wg.Wait()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Volumes []volumeStatus `json:"volumes"`
		}{append([]volumeStatus{}, vols...)})
	}
	printStatus(os.Stdout, vols)
	return nil
}

// askDaemon fills in what the daemon serving v says, or why it cannot.
func askDaemon(v *volumeStatus) {
	v.PID = volume.LockHolder(v.Store)
	if v.PID <= 0 {
		v.PID = 0
		v.Error = "no daemon holds the store: a stale mount left by a daemon that died (the next 'doppel mount' on it clears it)"
		return
	}
	c, err := control.DialTimeout(v.Store, statusTimeout)
	if err == nil {
		var s control.Status
		if s, err = c.Status(context.Background()); err == nil {
			v.Responding, v.Daemon = true, &s
			return
		}
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		v.Error = fmt.Sprintf("daemon %d does not answer (waited %v)", v.PID, statusTimeout)
	case errors.Is(err, control.ErrNoDaemon):
		v.Error = fmt.Sprintf("daemon %d does not answer: %v", v.PID, err)
	default: // it answered, but not with a status: an older doppel?
		v.Error = fmt.Sprintf("daemon %d gives no status: %v", v.PID, err)
	}
}

func printStatus(w io.Writer, vols []volumeStatus) {
	if len(vols) == 0 {
		fmt.Fprintln(w, "no doppel volume is mounted")
		return
	}
	for i, v := range vols {
		if i > 0 {
			fmt.Fprintln(w)
		}
		mp := v.Mountpoint
		if mp == "" {
			mp = "(not mounted)"
		}
		fmt.Fprintf(w, "%s\n  store      %s\n", mp, v.Store)
		d := v.Daemon
		if d == nil {
			fmt.Fprintf(w, "  daemon     %s\n", v.Error)
			continue
		}
		if d.MetaURL != "" {
			fmt.Fprintf(w, "  metadata   %s (schema %s)\n", d.MetaURL, d.MetaSchema)
			data := d.DataURL
			if data == "" {
				data = "segment files in the store directory"
			}
			fmt.Fprintf(w, "  data       %s\n", data)
			hosts := "one (doppel join on another host shares the volume)"
			switch {
			case d.MultiHost:
				hosts = "several at once"
			case d.DataURL == "":
				hosts = "one (its chunk data is in this store directory)"
			}
			fmt.Fprintf(w, "  hosts      %s\n", hosts)
		}
		up := time.Duration(d.UptimeSeconds * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(w, "  daemon     pid %d, up %v (since %s)\n", d.PID, up, d.Started.Local().Format(time.DateTime))
		fmt.Fprintf(w, "  requests   %d FUSE requests; %d answered with an error, %d of them EIO\n", d.Requests, d.RequestErrors, d.RequestEIO)
		fmt.Fprintf(w, "  written    %s: %s deduplicated, %s stored; %s reclaimed\n",
			human(d.WrittenBytes), human(d.DedupBytes), human(d.StoredBytes), human(d.ReclaimedBytes))
		if d.DedupBackground {
			fmt.Fprintf(w, "  dedup      in the background: new data is stored first, duplicates are returned later\n")
		}
		fmt.Fprintf(w, "  flush      %s waiting in %d files; %d files open\n", human(d.DirtyBytes), d.DirtyFiles, d.OpenFiles)
		fmt.Fprintf(w, "  space      %s logical, %s physical\n", human(d.LogicalBytes), human(d.PhysicalBytes))
		printExports(w, d.Exports)
		printSessions(w, d.Sessions, d.SessionsError)
	}
}

// printSessions lists a shared volume's sessions, on every host.
func printSessions(w io.Writer, sessions []ops.SessionStatus, errMsg string) {
	if errMsg != "" {
		fmt.Fprintf(w, "  sessions   cannot be listed: %s\n", errMsg)
		return
	}
	for i, s := range sessions {
		label := "sessions"
		if i > 0 {
			label = ""
		}
		state := "alive"
		if !s.Alive {
			state = "dead"
		}
		this := ""
		if s.This {
			this = " (this daemon)"
		}
		fmt.Fprintf(w, "  %-10s %d: host %s, pid %d, %s; %s, heartbeat %.1f s ago%s\n",
			label, s.ID, s.Host, s.PID, s.Mount, state, s.HeartbeatAgeSeconds, this)
	}
}

// appendHeldStore adds the store named by --store (or the default store)
// when a process holds it without mounting it: `doppel nbd` serving it.
func appendHeldStore(vols []volumeStatus, flagValue string) []volumeStatus {
	dir, err := storeDir(flagValue)
	if err != nil || volume.LockHolder(dir) <= 0 {
		return vols
	}
	for _, v := range vols {
		if v.Store == dir {
			return vols
		}
	}
	return append(vols, volumeStatus{Store: dir})
}

// printExports lists a daemon's NBD servers and their exports.
func printExports(w io.Writer, servers []ops.ExportStatus) {
	for _, s := range servers {
		about := ""
		for _, n := range serverNotes(s) {
			about += ", " + n
		}
		fmt.Fprintf(w, "  nbd        %s%s\n", s.Listen, about)
		for _, e := range s.Exports {
			fmt.Fprintf(w, "               %s  %s  %s  %d clients\n", e.Name, e.Path, human(e.Size), e.Clients)
		}
	}
}
