package main

import (
	"fmt"
	"io"
	"os"

	"github.com/doppelfs/doppel/internal/fsck"
)

// printRepair prints what a repair did and what is left, and returns the
// exit status: 0 if the volume is clean now.
func printRepair(dir string, rr *fsck.RepairReport, verified, asJSON bool) (int, error) {
	after := rr.After
	if after == nil {
		after = rr.Before
	}
	if asJSON {
		err := printJSON(struct {
			fsckJSON
			Repairs     []fsck.Repaired  `json:"repairs"`
			Lost        []fsck.LostRange `json:"lost"`
			NeedOffline int              `json:"need_offline"`
			Before      *fsck.Report     `json:"before"`
		}{fsckJSON{dir, after.Clean(), after.Errors(), after}, rr.Repairs, rr.Lost, rr.NeedOffline, rr.Before})
		return exitStatus(after), err
	}
	w := os.Stdout
	for _, r := range rr.Repairs {
		fmt.Fprintf(w, "repaired\t%s\t%s\t%s\n", r.Kind, printable(r.Path), r.Action)
	}
	for _, l := range rr.Lost {
		fmt.Fprintf(w, "LOST DATA\t%s\t%s\t%s\n", printable(l.Path), lostRange(l), l.Why)
	}
	if len(rr.Repairs) > 0 {
		fmt.Fprintf(w, "%d repairs made; %d problems were found before\n", len(rr.Repairs), rr.Before.Errors())
	}
	if len(rr.Lost) > 0 {
		fmt.Fprintf(os.Stderr, "doppel fsck: WARNING: %d byte ranges of files lost their data and now read as zeros (LOST DATA lines)\n", len(rr.Lost))
	}
	printFsck(w, dir, after, verified)
	printNeedOffline(w, dir, rr.NeedOffline)
	return exitStatus(after), nil
}

func lostRange(l fsck.LostRange) string {
	if l.End <= l.Start {
		return fmt.Sprintf("from byte %d (length unknown)", l.Start)
	}
	return fmt.Sprintf("bytes %d..%d (%s)", l.Start, l.End, human(l.End-l.Start))
}

func printNeedOffline(w io.Writer, dir string, n int) {
	if n > 0 {
		fmt.Fprintf(w, "%d problems can only be repaired with the volume unmounted: "+
			"run 'doppel umount MOUNTPOINT', then 'doppel fsck --repair --store %s'\n", n, dir)
	}
}

func exitStatus(r *fsck.Report) int {
	if r.Clean() {
		return 0
	}
	return 1
}
