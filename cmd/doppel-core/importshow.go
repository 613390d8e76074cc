package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/importer"
)

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// importDisplay shows an import's progress: a line redrawn in place on a
// terminal, a line every logEvery otherwise.
type importDisplay struct {
	w     *os.File
	tty   bool
	quiet bool
	last  time.Time
	shown bool
}

const logEvery = 5 * time.Second

func newImportDisplay(w *os.File, quiet bool) *importDisplay {
	return &importDisplay{w: w, tty: isTerminal(w), quiet: quiet, last: time.Now()}
}

// interval is how often an in-process import should report.
func (d *importDisplay) interval() time.Duration {
	if d.tty {
		return 200 * time.Millisecond
	}
	return time.Second
}

// progress is called from one goroutine at a time.
func (d *importDisplay) progress(p importer.Progress) {
	if d.quiet || (!d.tty && time.Since(d.last) < logEvery) {
		return
	}
	d.last = time.Now()
	line := fmt.Sprintf("import: %s files, %s read",
		ofTotal(fmt.Sprint(p.Files), fmt.Sprint(p.TotalFiles), p.Counted), ofTotal(human(p.Bytes), human(p.TotalBytes), p.Counted))
	if p.Counted && p.TotalBytes > 0 {
		line += fmt.Sprintf(" (%d%%)", min(100, p.Bytes*100/p.TotalBytes))
	}
	line += ", " + rate(p.Bytes, p.Elapsed)
	if p.Failed > 0 {
		line += fmt.Sprintf(", %d failed", p.Failed)
	}
	if d.tty {
		fmt.Fprintf(d.w, "\r%s\033[K", line)
		d.shown = true
	} else {
		fmt.Fprintln(d.w, line)
	}
}

func (d *importDisplay) done() {
	if d.shown {
		fmt.Fprint(d.w, "\r\033[K")
	}
}

// ofTotal shows done of a total that grows until it is final.
func ofTotal(done, total string, final bool) string {
	if final {
		return done + "/" + total
	}
	return done + "/" + total + "+"
}

func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return human(int64(float64(n)/d.Seconds())) + "/s"
}

// printImportSummary prints the outcome to out and failures and warnings
// to errw.
func printImportSummary(out, errw io.Writer, src, store string, s importer.Summary, complete bool) {
	for _, f := range s.Failures {
		fmt.Fprintf(errw, "doppel import: cannot import %s: %s\n", printable(f.Path), f.Err)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(errw, "doppel import: warning: %s\n", printable(w))
	}
	if more := s.WarnCount - int64(len(s.Warnings)); more > 0 {
		fmt.Fprintf(errw, "doppel import: %d more warnings\n", more)
	}
	verb := "imported"
	if !complete {
		verb = "partly imported (stopped)"
	}
	fmt.Fprintf(out, "%s %s -> %s (volume %s)\n", verb, printable(src), printable(s.Target), store)
	fmt.Fprintf(out, "  %d files, %d directories, %d symlinks, %d special files, %d hard links",
		s.Files, s.Dirs, s.Symlinks, s.Specials, s.HardLinks)
	if s.Failed > 0 {
		fmt.Fprintf(out, "; %d failed", s.Failed)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "  read %s, stored %s of new chunk data, in %.1f s (%s)\n",
		human(s.Bytes), human(s.StoredBytes), s.Elapsed.Seconds(), rate(s.Bytes, s.Elapsed))
}
