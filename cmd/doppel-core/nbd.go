package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"syscall"

	"github.com/doppelfs/doppel/internal/frontend/exports"
	"github.com/doppelfs/doppel/internal/ops"
)

type nbdFlags struct {
	store, listen, name, create, logLevel string
	tlsCert, tlsKey, tlsClientCA          string
	readOnly, detach                      bool
	notifyFd                              int
}

const nbdAbout = `Serve files of a volume as NBD (Network Block Device) exports, for qemu,
nbd-client, nbdfuse, nbdcopy or any NBD client. Each export is named by its
file's base name (or --name, for one FILE). A FILE below a mounted volume
is served by that volume's daemon, so the mount and the block device show
the same data; with --store, a FILE is a path inside that volume, which,
if it is not mounted, this command opens and holds until it exits.

Space comes back as the client frees it: TRIM (discard) and WRITE_ZEROES
turn the range into a hole at once, a WRITE of all-zero 4 KiB blocks
stores nothing, and chunks no file or clone still uses are punched out of
the chunk store within a second, as for a deleted file. FLUSH and FUA make
data durable like fsync. Several connections to one export are safe.
Exported files are cut in fixed 4 KiB blocks (the chunking policy
fixed:4K is set on a file that has none).

Over a network, use TLS: with --tls-cert and --tls-key every client must
upgrade to TLS first (nbds:// URIs), and with --tls-client-ca it must also
present a certificate that CA signed, which is what keeps strangers out.
The certificate is read again when its files change, so a renewal needs
no restart.

Runs in the foreground until SIGINT or SIGTERM (-d: in the background,
its log in STORE/nbd.log), then flushes everything and stops.

Examples:
  doppel nbd --create 20G /mnt/vol/vm/disk.img
  qemu-img convert -p -O raw base.qcow2 'nbd+unix:///disk.img?socket=STORE/nbd.sock'
  doppel nbd --listen tcp:10809 /mnt/vol/vm/disk.img /mnt/vol/vm/clone.img
  qemu-system-x86_64 -drive file=nbd://127.0.0.1:10809/disk.img,format=raw,discard=unmap ...
  doppel nbd --listen tcp:0.0.0.0:10809 --tls-cert server-cert.pem --tls-key server-key.pem \
      --tls-client-ca ca-cert.pem /mnt/vol/vm/disk.img
  nbdinfo 'nbds://server:10809/disk.img?tls-certificates=/etc/pki/doppel'`

func runNBD(args []string) error {
	fs := newFlags("nbd", "[--store DIR] [--listen unix:PATH | tcp:[HOST]:PORT] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]] [--read-only] [--create SIZE] [--name NAME] [-d] FILE...", nbdAbout)
	var f nbdFlags
	fs.StringVar(&f.store, "store", "", storeHelp)
	fs.StringVar(&f.listen, "listen", "", "where to listen: unix:PATH, or tcp:[HOST]:PORT (HOST defaults to 127.0.0.1;\n"+
		"beyond loopback, anyone who reaches the port can read and write the files unless\n"+
		"--tls-client-ca is given). Default: unix:STORE/nbd.sock")
	fs.BoolVar(&f.readOnly, "read-only", false, "export read-only (writes, trims and zeroes fail with EPERM)")
	fs.StringVar(&f.create, "create", "", "create each FILE (which must not exist) as a sparse file of SIZE bytes\n"+
		"(suffixes K, M, G, T: powers of 1024) with fixed 4 KiB chunking")
	fs.StringVar(&f.name, "name", "", "export name, for one FILE (default: its base name)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "require TLS, with this server certificate (PEM; with its chain, if any)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	fs.StringVar(&f.tlsClientCA, "tls-client-ca", "", "require a client certificate signed by this CA (PEM; needs --tls-cert)")
	fs.BoolVar(&f.detach, "d", false, "run in the background once the exports are served")
	fs.IntVar(&f.notifyFd, "notify-fd", 0, "internal: file descriptor on which to report readiness")
	logLevel := logFlag(fs, "warn")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	f.logLevel = *logLevel
	req, store, err := nbdRequest(f, pos)
	if err != nil {
		return err
	}
	if f.detach {
		return spawnNBD(store, args)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serveNBD(ctx, store, req, newNBDNotifier(f.notifyFd))
}

// nbdRequest checks the command line and makes the export request and
// the store it goes to.
func nbdRequest(f nbdFlags, files []string) (ops.ExportRequest, string, error) {
	var req ops.ExportRequest
	if len(files) == 0 {
		return req, "", usagef("need at least one FILE (see --help)")
	}
	if f.name != "" && len(files) != 1 {
		return req, "", usagef("--name names one export; give one FILE")
	}
	req.ReadOnly = f.readOnly
	if f.create != "" {
		n, err := parseByteSize(f.create)
		if err != nil || n <= 0 {
			return req, "", usagef("bad --create size %q (e.g. 10G, 512M, 1073741824)", f.create)
		}
		if f.readOnly {
			return req, "", usagef("--create and --read-only exclude each other")
		}
		req.Create = n
	}
	var store string
	names := map[string]bool{}
	for _, arg := range files {
		vp, err := resolveVolumePath(arg, f.store)
		if err != nil {
			return req, "", err
		}
		if store != "" && vp.Store != store {
			return req, "", usagef("%s is on another volume than %s: one doppel nbd serves one volume", arg, files[0])
		}
		store = vp.Store
		name := f.name
		if name == "" {
			name = path.Base(vp.Path)
		}
		if names[name] {
			return req, "", usagef("two files would be exported as %q", name)
		}
		names[name] = true
		req.Files = append(req.Files, ops.ExportFile{Path: vp.Path, Name: name})
	}
	access := anyoneInClear
	if f.tlsCert != "" || f.tlsKey != "" || f.tlsClientCA != "" {
		t, err := nbdTLS(f)
		if err != nil {
			return req, "", err
		}
		req.TLS = t
		access = anyoneEncrypted
		if t.ClientCA != "" {
			access = certified
		}
	}
	listen, warn, err := parseListen(f.listen, store, access)
	if err != nil {
		return req, "", usagef("%v", err)
	}
	if warn != "" {
		fmt.Fprintln(os.Stderr, warn)
	}
	req.Listen = listen
	return req, store, nil
}

// nbdTLS checks the TLS flags and loads the files once here, so that a
// bad file is reported before anything is served; the serving process
// (which may be the volume's daemon) loads them itself from the absolute
// paths.
func nbdTLS(f nbdFlags) (*ops.ExportTLS, error) {
	if f.tlsCert == "" || f.tlsKey == "" {
		return nil, usagef("--tls-cert and --tls-key go together (and --tls-client-ca needs them)")
	}
	t := &ops.ExportTLS{}
	for _, p := range []struct {
		dst *string
		arg string
	}{{&t.Cert, f.tlsCert}, {&t.Key, f.tlsKey}, {&t.ClientCA, f.tlsClientCA}} {
		if p.arg == "" {
			continue
		}
		abs, err := filepath.Abs(p.arg)
		if err != nil {
			return nil, err
		}
		*p.dst = abs
	}
	if _, err := exports.TLSConfig(t, nil); err != nil {
		return nil, err
	}
	return t, nil
}
