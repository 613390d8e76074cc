package exports

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/doppelfs/doppel/internal/ops"
)

// TLSConfig loads an export request's TLS files and returns the servers'
// configuration: TLS 1.2 or later, the server certificate re-read when
// its files change (a renewed certificate takes effect at the next
// connection, without a restart), and, with a client CA, client
// certificates required and checked. Errors name the file at fault.
func TLSConfig(t *ops.ExportTLS, log *slog.Logger) (*tls.Config, error) {
	if t.Cert == "" || t.Key == "" {
		return nil, errors.New("TLS needs both a certificate and its key")
	}
	certs := &certReloader{certFile: t.Cert, keyFile: t.Key, log: log}
	if err := certs.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}
	if t.ClientCA != "" {
		pem, err := os.ReadFile(t.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA %s: no PEM certificate in it", t.ClientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// certReloader hands out the server certificate, loading it again when
// either file's modification time changed since the last load.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu              sync.Mutex
	cert            *tls.Certificate
	certMod, keyMod time.Time
}

func (r *certReloader) load() error {
	certMod, keyMod, err := r.modTimes()
	if err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s with key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.certMod, r.keyMod = &pair, certMod, keyMod
	return nil
}

func (r *certReloader) modTimes() (cert, key time.Time, err error) {
	st, err := os.Stat(r.certFile)
	if err != nil {
		return cert, key, fmt.Errorf("TLS certificate: %w", err)
	}
	sk, err := os.Stat(r.keyFile)
	if err != nil {
		return cert, key, fmt.Errorf("TLS key: %w", err)
	}
	return st.ModTime(), sk.ModTime(), nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	certMod, keyMod, err := r.modTimes()
	if err == nil && (!certMod.Equal(r.certMod) || !keyMod.Equal(r.keyMod)) {
		err = r.load()
		if err == nil && r.log != nil {
			r.log.Info("nbd: TLS certificate reloaded", "cert", r.certFile)
		}
	}
	if err != nil && r.log != nil {
		// A renewal caught half-written, or files removed: keep serving
		// with the certificate loaded last.
		r.log.Warn("nbd: TLS certificate not reloaded; the previous one stays", "err", err)
	}
	return r.cert, nil
}
