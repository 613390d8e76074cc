package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// progressLine shows a long command's progress on w (stderr). On a
// terminal it redraws one line in place, from the first second on and at
// most five times a second. Otherwise (a log file, a pipe) it prints a
// line every ten seconds, so that a long run shows it is alive without
// flooding the log. Disabled (--json), it shows nothing.
type progressLine struct {
	w           *os.File
	tty, off    bool
	start, last time.Time
	shown       bool
}

func newProgressLine(w *os.File, enabled bool) *progressLine {
	_, err := unix.IoctlGetTermios(int(w.Fd()), unix.TCGETS)
	now := time.Now()
	return &progressLine{w: w, tty: err == nil, off: !enabled, start: now, last: now}
}

// show displays the line text returns, if it is time to; text is only
// called then. Calls come from one goroutine at a time.
func (p *progressLine) show(text func() string) {
	if p.off {
		return
	}
	now := time.Now()
	if p.tty {
		if now.Sub(p.start) < time.Second || now.Sub(p.last) < 200*time.Millisecond {
			return
		}
		p.last, p.shown = now, true
		fmt.Fprintf(p.w, "\r%s\033[K", text())
		return
	}
	if now.Sub(p.last) >= 10*time.Second {
		p.last = now
		fmt.Fprintln(p.w, text())
	}
}

// done clears the line from the terminal.
func (p *progressLine) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
