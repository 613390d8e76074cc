package nbd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil/tlstest"
)

// tlsServer is oneExport on a server that requires TLS.
func tlsServer(t *testing.T, clientAuth bool) (*testServer, *memBackend, *tlstest.Creds) {
	creds := tlstest.New(t)
	ts, be := oneExport(t)
	ts.srv.TLSConfig = creds.ServerConfig(clientAuth)
	return ts, be, creds
}

func TestTLSRequiredBeforeAnyOption(t *testing.T) {
	ts, _, _ := tlsServer(t, false)
	c, err := startClient(ts.pipe(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		opt  uint32
		data []byte
	}{
		{optList, nil},
		{optInfo, infoData("disk")},
		{optGo, infoData("disk")},
		{optStructuredReply, nil},
		{optListMetaContext, metaContextData("disk")},
		{99, []byte("x")},
	} {
		if err := c.simpleOption(o.opt, o.data); err != optionError(repErrTLSReqd) {
			t.Errorf("option %d without TLS: %v, want NBD_REP_ERR_TLS_REQD", o.opt, err)
		}
	}
	if err := c.simpleOption(optStartTLS, []byte("x")); err != optionError(repErrInvalid) {
		t.Errorf("STARTTLS with data: %v", err)
	}
	if err := c.simpleOption(optAbort, nil); err != nil {
		t.Errorf("ABORT: %v", err)
	}
}

func TestTLSExportNameWithoutTLSHangsUp(t *testing.T) {
	ts, be, _ := tlsServer(t, false)
	be.WriteAt([]byte("secret"), 0, false)
	c, err := startClient(ts.pipe(), true)
	if err != nil {
		t.Fatal(err)
	}
	c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.sendOption(optExportName, []byte("disk")); err != nil {
		t.Fatal(err)
	}
	// EXPORT_NAME cannot be refused: the server must hang up rather than
	// answer with the export's size and flags.
	if b, err := io.ReadAll(c.r); len(b) != 0 || err != nil {
		t.Fatalf("after EXPORT_NAME without TLS: read %x, %v; want a hang-up", b, err)
	}
}

func TestTLSSessionReadsAndWrites(t *testing.T) {
	ts, be, creds := tlsServer(t, false)
	c := ts.connect(t, clientConfig{export: "disk", structured: true, meta: true, tls: creds.ClientConfig(false)})
	if c.size != testSize {
		t.Fatalf("size %d", c.size)
	}
	data := bytes.Repeat([]byte("tls!"), 2048)
	mustDo(t, c, cmdWrite, cmdFlagFUA, 4096, uint32(len(data)), data)
	r := mustDo(t, c, cmdRead, 0, 4096, uint32(len(data)), nil)
	if !bytes.Equal(r.data, data) {
		t.Fatal("read back differs")
	}
	got := make([]byte, len(data))
	be.ReadAt(got, 4096)
	if !bytes.Equal(got, data) {
		t.Fatal("backend does not hold the write")
	}
	mustDo(t, c, cmdTrim, 0, 4096, 4096, nil)
	mustDo(t, c, cmdBlockStatus, 0, 0, 3*4096, nil)
	clients := ts.srv.Clients("disk")
	if len(clients) != 1 || !clients[0].TLS {
		t.Fatalf("clients %+v, want one over TLS", clients)
	}
	if err := c.disconnect(); err != nil {
		t.Fatal(err)
	}
}

func TestTLSStartTLSTwiceAndStateReset(t *testing.T) {
	ts, _, creds := tlsServer(t, false)
	c, err := startClient(ts.pipe(), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.startTLS(creds.ClientConfig(false)); err != nil {
		t.Fatal(err)
	}
	if err := c.simpleOption(optStartTLS, nil); err != optionError(repErrInvalid) {
		t.Fatalf("second STARTTLS: %v, want NBD_REP_ERR_INVALID", err)
	}
	if _, err := c.infoOrGo(optInfo, "disk"); err != nil {
		t.Fatalf("INFO over TLS: %v", err)
	}
}

func TestTLSClientCertificateRequired(t *testing.T) {
	ts, _, creds := tlsServer(t, true)
	conn := ts.socket(t)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	c, err := newTestClient(conn, clientConfig{export: "disk", tls: creds.ClientConfig(false)})
	if err == nil {
		t.Fatal("a client without a certificate negotiated")
	}
	if len(ts.srv.AllClients()) != 0 {
		t.Fatal("a client without a certificate is in transmission")
	}
	_ = c
	c = ts.connect(t, clientConfig{export: "disk", structured: true, tls: creds.ClientConfig(true)})
	mustDo(t, c, cmdRead, 0, 0, 512, nil)
}

func TestTLSWrongAuthorityRefused(t *testing.T) {
	ts, _, _ := tlsServer(t, false)
	other := tlstest.New(t) // a client that trusts another authority
	conn := ts.socket(t)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := newTestClient(conn, clientConfig{export: "disk", tls: other.ClientConfig(false)}); err == nil {
		t.Fatal("the client accepted a server certificate of an authority it does not trust")
	}
}

// TestTLSDataAfterStartTLSRefused: bytes a client (or a man in the
// middle) sends in the clear behind NBD_OPT_STARTTLS must not be taken as
// the first bytes of the TLS session.
func TestTLSDataAfterStartTLSRefused(t *testing.T) {
	creds := tlstest.New(t)
	client, done := serveOneTLS(t, newMemBackend(fuzzExportSize), creds.ServerConfig(false))
	defer client.Close()
	var g [18]byte
	if _, err := io.ReadFull(client, g[:]); err != nil {
		t.Fatal(err)
	}
	msg := binary.BigEndian.AppendUint32(nil, clientFixedNewstyle)
	msg = appendTestOption(msg, optStartTLS, nil)
	msg = appendTestOption(msg, optList, nil) // injected behind it
	if _, err := client.Write(msg); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(client)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal(err)
	}
	if len(out) != 0 {
		t.Fatalf("server answered %x to STARTTLS with data behind it; want a hang-up", out)
	}
	waitServer(t, done)
}

func appendTestOption(b []byte, opt uint32, data []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, magicIHaveOpt)
	b = binary.BigEndian.AppendUint32(b, opt)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// FuzzNegotiateTLSRequired feeds arbitrary plain-text handshakes to a
// server that requires TLS: it must not panic, must answer every option
// but STARTTLS and ABORT with NBD_REP_ERR_TLS_REQD, and must never enter
// transmission or describe an export in the clear.
func FuzzNegotiateTLSRequired(f *testing.F) {
	creds := tlstest.New(f)
	cfg := creds.ServerConfig(false)
	flags := []byte{0, 0, 0, 3}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(cat(flags, appendTestOption(nil, optStructuredReply, nil), appendTestOption(nil, optGo, infoData("f"))))
	f.Add(cat(flags, appendTestOption(nil, optList, nil), appendTestOption(nil, optExportName, []byte("f"))))
	f.Add(cat(flags, appendTestOption(nil, optStartTLS, []byte("x")), appendTestOption(nil, optAbort, nil)))
	f.Add(cat(flags, appendTestOption(nil, optStartTLS, nil), []byte{0x16, 3, 1, 0, 5, 1, 2, 3, 4, 5}))
	f.Fuzz(func(t *testing.T, in []byte) {
		be := newMemBackend(fuzzExportSize)
		out := exchange(t, be, cfg, in)
		if len(out) < 18 || binary.BigEndian.Uint64(out) != magicNBD {
			t.Fatalf("no greeting: %x", out)
		}
		out = out[18:]
		for len(out) >= 20 && binary.BigEndian.Uint64(out) == magicOptionReply {
			opt, typ := binary.BigEndian.Uint32(out[8:]), binary.BigEndian.Uint32(out[12:])
			n := binary.BigEndian.Uint32(out[16:])
			if uint64(n) > uint64(len(out)-20) {
				t.Fatalf("option reply length %d exceeds output", n)
			}
			out = out[20+n:]
			switch {
			case opt == optStartTLS && (typ == repAck || typ == repErrInvalid):
				if typ == repAck {
					return // what follows is TLS
				}
			case opt == optAbort && typ == repAck:
			case typ == repErrTLSReqd:
			default:
				t.Fatalf("option %d answered %#x without TLS", opt, typ)
			}
		}
		if len(out) != 0 {
			t.Fatalf("plain-text output that is not an option reply: %x", out[:min(len(out), 32)])
		}
		if be.outOfRange.Load() != 0 {
			t.Fatal("backend accessed out of range")
		}
	})
}
