// Package tlstest makes throwaway X.509 credentials for tests of TLS
// servers: a certificate authority, a server certificate for 127.0.0.1,
// ::1 and localhost, and a client certificate, all signed by it. Files are
// laid out as qemu (tls-creds-x509) and libnbd (tls-certificates=DIR)
// expect them, so that real clients can be pointed at a directory.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Creds are one test's credentials and where their files are.
type Creds struct {
	// ServerCert and ServerKey are the server's certificate and key
	// (PEM); CACert is the authority that signed both certificates.
	ServerCert, ServerKey, CACert string
	// ClientDir holds ca-cert.pem, client-cert.pem and client-key.pem: a
	// client that trusts the server and can prove who it is.
	ClientDir string
	// AnonDir holds ca-cert.pem alone: a client that trusts the server
	// but has no certificate of its own.
	AnonDir string

	ca     *x509.Certificate
	server tls.Certificate
	client tls.Certificate
}

// New makes fresh credentials in t's temporary directory.
func New(t testing.TB) *Creds {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "doppel test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	c := &Creds{ca: ca, ClientDir: filepath.Join(dir, "client"), AnonDir: filepath.Join(dir, "anon")}
	for _, d := range []string{c.ClientDir, c.AnonDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	caPEM := pemBlock("CERTIFICATE", caDER)
	c.CACert = filepath.Join(dir, "ca-cert.pem")
	for _, p := range []string{c.CACert, filepath.Join(c.ClientDir, "ca-cert.pem"), filepath.Join(c.AnonDir, "ca-cert.pem")} {
		writeFile(t, p, caPEM)
	}

	serverTmpl := leaf(2, "localhost", now, x509.ExtKeyUsageServerAuth)
	serverTmpl.DNSNames = []string{"localhost"}
	serverTmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	c.ServerCert, c.ServerKey = filepath.Join(dir, "server-cert.pem"), filepath.Join(dir, "server-key.pem")
	c.server = sign(t, serverTmpl, ca, caKey, c.ServerCert, c.ServerKey)

	clientTmpl := leaf(3, "doppel test client", now, x509.ExtKeyUsageClientAuth)
	c.client = sign(t, clientTmpl, ca, caKey,
		filepath.Join(c.ClientDir, "client-cert.pem"), filepath.Join(c.ClientDir, "client-key.pem"))
	return c
}

// ServerConfig is a server's configuration; with clientAuth it asks for
// and checks a client certificate signed by the authority.
func (c *Creds) ServerConfig(clientAuth bool) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{c.server}, MinVersion: tls.VersionTLS12}
	if clientAuth {
		cfg.ClientCAs = c.pool()
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg
}

// ClientConfig is a client's configuration for a server at 127.0.0.1;
// withCert presents the client certificate.
func (c *Creds) ClientConfig(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: c.pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if withCert {
		cfg.Certificates = []tls.Certificate{c.client}
	}
	return cfg
}

func (c *Creds) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.ca)
	return p
}

func leaf(serial int64, name string, now time.Time, usage x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

// sign makes tmpl a certificate signed by the authority, writes it and
// its new key as PEM files, and returns the pair.
func sign(t testing.TB, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certPath, keyPath string) tls.Certificate {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER)
	writeFile(t, certPath, certPEM)
	writeFile(t, keyPath, keyPEM)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
