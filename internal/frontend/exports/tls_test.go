package exports

import (
	"crypto/tls"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/ops"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/testutil/tlstest"
)

// handshake runs one TLS handshake between a server with cfg and a client
// with client, and returns the client's error.
func handshake(t *testing.T, cfg, client *tls.Config) error {
	t.Helper()
	c, s := testutil.SocketPair(t)
	defer c.Close()
	defer s.Close()
	go func() {
		srv := tls.Server(s, cfg)
		srv.Handshake()
		srv.Close()
	}()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	conn := tls.Client(c, client)
	err := conn.Handshake()
	if err == nil {
		// TLS 1.3 checks the client's certificate after the client's
		// handshake is done: a read sees the server's verdict.
		if _, rerr := conn.Read(make([]byte, 1)); rerr != nil && !errors.Is(rerr, io.EOF) {
			err = rerr
		}
	}
	return err
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTLSConfigReloadsRenewedCertificate(t *testing.T) {
	a, b := tlstest.New(t), tlstest.New(t)
	dir := t.TempDir()
	cert, key := dir+"/cert.pem", dir+"/key.pem"
	copyFile(t, a.ServerCert, cert)
	copyFile(t, a.ServerKey, key)
	cfg, err := TLSConfig(&ops.ExportTLS{Cert: cert, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, cfg, a.ClientConfig(false)); err != nil {
		t.Fatalf("with the first certificate: %v", err)
	}
	// A renewal that is caught half done (the certificate replaced, not
	// yet its key) keeps the certificate loaded before.
	copyFile(t, b.ServerCert, cert)
	later := time.Now().Add(time.Second)
	os.Chtimes(cert, later, later)
	if err := handshake(t, cfg, a.ClientConfig(false)); err != nil {
		t.Fatalf("during a renewal: %v", err)
	}
	copyFile(t, b.ServerKey, key)
	os.Chtimes(key, later, later)
	if err := handshake(t, cfg, b.ClientConfig(false)); err != nil {
		t.Fatalf("after the renewal: %v", err)
	}
	if err := handshake(t, cfg, a.ClientConfig(false)); err == nil {
		t.Fatal("the replaced certificate is still served")
	}
}

func TestTLSConfigClientCertificates(t *testing.T) {
	a := tlstest.New(t)
	cfg, err := TLSConfig(&ops.ExportTLS{Cert: a.ServerCert, Key: a.ServerKey, ClientCA: a.CACert}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, cfg, a.ClientConfig(true)); err != nil {
		t.Fatalf("with a client certificate: %v", err)
	}
	if err := handshake(t, cfg, a.ClientConfig(false)); err == nil {
		t.Fatal("a client without a certificate was let in")
	}
	for _, bad := range []ops.ExportTLS{
		{Cert: a.ServerCert},
		{Cert: a.ServerCert, Key: a.CACert},
		{Cert: a.ServerCert, Key: a.ServerKey, ClientCA: a.ServerKey},
		{Cert: a.ServerCert, Key: a.ServerKey, ClientCA: "/nonexistent"},
	} {
		if _, err := TLSConfig(&bad, nil); err == nil {
			t.Errorf("TLSConfig(%+v) accepted", bad)
		}
	}
}
