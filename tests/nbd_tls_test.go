package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/tlstest"
)

// TestNBDOverTLS exports a file of a mounted volume over TCP with TLS and
// client certificates: libnbd's clients with the credentials read and
// write it, clients without TLS or without a certificate are refused, and
// doppel status says how the server is protected.
func TestNBDOverTLS(t *testing.T) {
	requireNBDTools(t, "nbdcopy")
	creds := tlstest.New(t)
	v := newVolume(t)
	disk := v.path("disk.img")
	srv := startNBD(t, "--listen", "tcp:127.0.0.1:0", "--tls-cert", creds.ServerCert, "--tls-key", creds.ServerKey,
		"--tls-client-ca", creds.CACert, "--create", "8M", disk)
	if !strings.Contains(srv.output(), "(TLS with client certificates)") || !strings.Contains(srv.output(), "nbds://") {
		t.Errorf("doppel nbd does not say that it requires TLS:\n%s", srv.output())
	}
	addr := strings.TrimPrefix(srv.Listen, "tcp:")
	uri := "nbds://" + addr + "/disk.img?tls-certificates=" + creds.ClientDir

	data := testutil.SeededBytes(15, 8*mib)
	runClient(t, "nbdcopy", "--flush", writeTemp(t, data), uri)
	if b, err := os.ReadFile(disk); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the mount does not show what nbdcopy wrote over TLS (err %v)", err)
	}

	for _, c := range []struct{ what, uri string }{
		{"without TLS", "nbd://" + addr + "/disk.img"},
		{"without a client certificate", "nbds://" + addr + "/disk.img?tls-certificates=" + creds.AnonDir},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "nbdinfo", c.uri).CombinedOutput()
		cancel()
		if err == nil {
			t.Errorf("a client %s was served:\n%s", c.what, out)
		}
	}

	found := false
	for _, s := range nbdServers(t, v.Mnt) {
		found = found || (s.Listen == srv.Listen && s.TLS && s.ClientAuth)
	}
	if !found {
		t.Errorf("doppel status --json does not list %s with TLS and client certificates: %+v", srv.Listen, nbdServers(t, v.Mnt))
	}
	srv.Stop(t)
}
