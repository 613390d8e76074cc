package tests

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"
)

// TestNBDCommandErrors checks that doppel nbd refuses what it cannot do,
// with a message that says why, and serves nothing.
func TestNBDCommandErrors(t *testing.T) {
	requireNBDTools(t)
	store := newStore(t)
	srv := startNBD(t, "--store", store, "--create", "1M", "/a.img")
	for _, c := range []struct {
		want string
		args []string
	}{
		{"need at least one FILE", nil},
		{"another server answers on it", []string{"--store", store, "/a.img"}}, // the volume is held, the socket in use
		{"exists; --create makes new files only", []string{"--store", store, "--listen", "unix:" + filepath.Join(t.TempDir(), "s"), "--create", "1M", "/a.img"}},
		{"no such file or directory (--create SIZE makes it)", []string{"--store", store, "--listen", "unix:" + filepath.Join(t.TempDir(), "s"), "/missing.img"}},
		{"two files would be exported as", []string{"--store", store, "/a.img", "/a.img"}},
		{"--name names one export", []string{"--store", store, "--name", "x", "/a.img", "/b.img"}},
		{"bad --listen", []string{"--store", store, "--listen", "udp:1", "/a.img"}},
		{"bad --create size", []string{"--store", store, "--create", "12Q", "/b.img"}},
		{"--tls-cert and --tls-key go together", []string{"--store", store, "--tls-cert", "/etc/hostname", "/a.img"}},
		{"--tls-cert and --tls-key go together", []string{"--store", store, "--tls-client-ca", "/etc/hostname", "/a.img"}},
		{"TLS certificate: stat /nonexistent/cert.pem: no such file", []string{"--store", store, "--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/etc/hostname", "/a.img"}},
		{"failed to find any PEM data", []string{"--store", store, "--tls-cert", "/etc/hostname", "--tls-key", "/etc/hostname", "/a.img"}},
		{"the volume's root is a directory", []string{"--store", store, "--listen", "unix:" + filepath.Join(t.TempDir(), "s"), "/"}},
	} {
		out, err := runDoppel(time.Minute, append([]string{"nbd"}, c.args...)...)
		if err == nil || !bytes.Contains(out, []byte(c.want)) {
			t.Errorf("doppel nbd %q: %v, want an error saying %q:\n%s", c.args, err, c.want, out)
		}
	}
	// The first server still serves its export.
	qemuIO(t, srv.URI("a.img"), "write -P 1 0 4k", "read -P 1 0 4k")
}
