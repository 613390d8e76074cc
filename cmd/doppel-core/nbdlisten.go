package main

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// nbdSocketName is the default Unix socket of `doppel nbd`, in the store.
const nbdSocketName = "nbd.sock"

// nbdDefaultPort is NBD's registered TCP port.
const nbdDefaultPort = "10809"

// Who may use a server that listens beyond this machine, by its TLS
// settings (parseListen's warning).
const (
	anyoneInClear   = iota // no TLS
	anyoneEncrypted        // TLS without client certificates
	certified              // TLS with client certificates
)

// parseListen turns --listen into "unix:/absolute/path" or
// "tcp:HOST:PORT", and returns a warning to print when TCP listens beyond
// the loopback interface to clients who need no certificate.
func parseListen(arg, store string, access int) (listen, warning string, err error) {
	switch {
	case arg == "":
		return "unix:" + filepath.Join(store, nbdSocketName), "", nil
	case strings.HasPrefix(arg, "unix:"):
		p := strings.TrimPrefix(arg, "unix:")
		if p == "" {
			return "", "", fmt.Errorf("--listen unix: needs a path")
		}
		abs, err := filepath.Abs(p)
		return "unix:" + abs, "", err
	case strings.HasPrefix(arg, "tcp:"):
		hostPort := strings.TrimPrefix(arg, "tcp:")
		host, port, err := net.SplitHostPort(hostPort)
		if err != nil { // "tcp:10809"
			host, port = "", hostPort
		}
		if port == "" {
			port = nbdDefaultPort
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return "", "", fmt.Errorf("bad port in --listen %q", arg)
		}
		if host == "" {
			host = "127.0.0.1"
		}
		if !loopback(host) {
			switch access {
			case anyoneInClear:
				warning = "doppel nbd: WARNING: listening on " + host + ", beyond this machine, without TLS:\n" +
					"anyone who reaches port " + port + " can read and overwrite the exported files, and\n" +
					"the data crosses the network in the clear. Use a Unix socket or 127.0.0.1, or\n" +
					"--tls-cert/--tls-key with --tls-client-ca, unless you mean it."
			case anyoneEncrypted:
				warning = "doppel nbd: WARNING: listening on " + host + " with TLS but without --tls-client-ca:\n" +
					"the data is encrypted, but anyone who reaches port " + port + " can read and\n" +
					"overwrite the exported files."
			}
		}
		return "tcp:" + net.JoinHostPort(host, port), warning, nil
	}
	return "", "", fmt.Errorf("bad --listen %q: want unix:PATH or tcp:[HOST]:PORT", arg)
}

// loopback reports whether host names the loopback interface only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// nbdURI is the address of one export in the NBD URI form qemu and libnbd
// take (nbds: TLS).
func nbdURI(listen, name string, overTLS bool) string {
	scheme := "nbd"
	if overTLS {
		scheme = "nbds"
	}
	if p, ok := strings.CutPrefix(listen, "unix:"); ok {
		return scheme + "+unix:///" + url.PathEscape(name) + "?socket=" + p
	}
	return scheme + "://" + strings.TrimPrefix(listen, "tcp:") + "/" + url.PathEscape(name)
}
