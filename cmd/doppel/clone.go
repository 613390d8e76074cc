package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/doppelfs/doppel/internal/control/wire"
	"github.com/doppelfs/doppel/internal/mountinfo"
)

// fastClone runs `doppel clone` or `doppel snapshot` through the daemon of
// the mounted volume holding both paths. ok is false when it cannot (help,
// --store, --exclude-from, paths outside a mounted volume, no daemon
// answering, a malformed command line): doppel-core then runs the command
// and explains whatever is wrong.
func fastClone(name string, args []string) (code int, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := wire.DefineCloneFlags(fs, name)
	// --store and --exclude-from (and --help, a malformed command line)
	// are doppel-core's to handle.
	if err := fs.Parse(args); err != nil || fs.NArg() != 2 || f.Store != "" || len(f.ExcludeFrom) > 0 {
		return 0, false
	}
	m, src, ok, err := mountinfo.Enclosing(fs.Arg(0))
	if err != nil || !ok {
		return 0, false
	}
	dm, dst, ok, err := mountinfo.Enclosing(fs.Arg(1))
	if err != nil || !ok || dm.Source != m.Source {
		return 0, false
	}
	req := f.Request(src, dst)
	c, err := wire.Dial(m.Source, 5*time.Minute)
	if err != nil {
		return 0, false
	}
	body, err := c.PostJSON("/v1/clone", req)
	var remote wire.RemoteError
	switch {
	case errors.As(err, &remote):
		fmt.Fprintf(os.Stderr, "doppel: %v\n", err)
		return 1, true
	case err != nil:
		return 0, false // the daemon went away: doppel-core finds out why
	}
	if f.JSON {
		var out bytes.Buffer
		if err := json.Indent(&out, body, "", "  "); err != nil {
			fmt.Fprintf(os.Stderr, "doppel: daemon reply: %v\n", err)
			return 1, true
		}
		out.WriteByte('\n')
		os.Stdout.Write(out.Bytes())
		return 0, true
	}
	var res wire.CloneResult
	if err := json.Unmarshal(body, &res); err != nil {
		fmt.Fprintf(os.Stderr, "doppel: daemon reply: %v\n", err)
		return 1, true
	}
	fmt.Println(res.Summary(fs.Arg(0), fs.Arg(1)))
	return 0, true
}

// patterns is a repeatable flag.
