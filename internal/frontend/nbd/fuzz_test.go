package nbd

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// Decoder fuzz targets: each decoder must either reject its input or
// return values that encode back to the same bytes.

func FuzzParseRequestHeader(f *testing.F) {
	f.Add(appendRequestHeader(nil, requestHeader{Type: cmdWrite, Flags: cmdFlagFUA, Cookie: 7, Offset: 4096, Length: 512}))
	f.Add(make([]byte, requestHeaderLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < requestHeaderLen {
			return
		}
		h, err := parseRequestHeader([requestHeaderLen]byte(b))
		if err != nil {
			return
		}
		if got := appendRequestHeader(nil, h); !bytes.Equal(got, b[:requestHeaderLen]) {
			t.Fatalf("round trip %x -> %x", b[:requestHeaderLen], got)
		}
	})
}

func FuzzParseOptionHeader(f *testing.F) {
	f.Add(append(binary.BigEndian.AppendUint64(nil, magicIHaveOpt), 0, 0, 0, 7, 0, 0, 0, 6))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < optionHeaderLen {
			return
		}
		h, err := parseOptionHeader([optionHeaderLen]byte(b))
		if err != nil {
			return
		}
		got := binary.BigEndian.AppendUint64(nil, magicIHaveOpt)
		got = binary.BigEndian.AppendUint32(got, h.Option)
		got = binary.BigEndian.AppendUint32(got, h.Length)
		if !bytes.Equal(got, b[:optionHeaderLen]) {
			t.Fatalf("round trip %x -> %x", b[:optionHeaderLen], got)
		}
	})
}

func FuzzParseInfoRequest(f *testing.F) {
	f.Add(infoData("disk", infoName, infoBlockSize))
	f.Add(infoData(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := parseInfoRequest(b)
		if err != nil {
			return
		}
		if got := infoData(req.Name, req.InfoReqs...); !bytes.Equal(got, b) {
			t.Fatalf("round trip %x -> %x", b, got)
		}
	})
}

func FuzzParseMetaContextRequest(f *testing.F) {
	f.Add(metaContextData("disk", "base:allocation"))
	f.Add(metaContextData("", "base:", "qemu:dirty-bitmap:a"))
	f.Add(metaContextData("x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := parseMetaContextRequest(b)
		if err != nil {
			return
		}
		if got := metaContextData(req.Name, req.Queries...); !bytes.Equal(got, b) {
			t.Fatalf("round trip %x -> %x", b, got)
		}
	})
}

const fuzzExportSize = 64<<10 + 3

// serveOne runs ServeConn on one end of a socket pair and returns the
// other end and a channel closed when the server is done.
func serveOne(t testing.TB, be *memBackend) (*net.UnixConn, chan struct{}) {
	return serveOneTLS(t, be, nil)
}

// serveOneTLS is serveOne for a server that requires TLS when cfg is set.
func serveOneTLS(t testing.TB, be *memBackend, cfg *tls.Config) (*net.UnixConn, chan struct{}) {
	srv := NewServer()
	srv.TLSConfig = cfg
	srv.Limits = Limits{MaxInFlight: 4}
	if err := srv.AddExport(Export{Name: "f", Backend: be}); err != nil {
		t.Fatal(err)
	}
	client, server := testutil.SocketPair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeConn(t.Context(), server)
	}()
	client.SetDeadline(time.Now().Add(5 * time.Second))
	return client, done
}

// FuzzNegotiate feeds arbitrary bytes as the client's side of the handshake
// (flags and options). The server must not panic, every message it sends
// before transmission must be a well-formed option reply (or the
// EXPORT_NAME answer), and it must hang up once the input ends.
func FuzzNegotiate(f *testing.F) {
	flags := []byte{0, 0, 0, 3}
	opt := func(o uint32, data []byte) []byte {
		b := binary.BigEndian.AppendUint64(nil, magicIHaveOpt)
		b = binary.BigEndian.AppendUint32(b, o)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		return append(b, data...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(cat(flags, opt(optStructuredReply, nil), opt(optSetMetaContext, metaContextData("f", "base:allocation")), opt(optGo, infoData("f", infoName))))
	f.Add(cat(flags, opt(optList, nil), opt(optInfo, infoData("", infoDescription)), opt(optAbort, nil)))
	f.Add(cat([]byte{0, 0, 0, 1}, opt(optExportName, []byte("f"))))
	f.Add(cat(flags, opt(optListMetaContext, metaContextData("f")), opt(99, []byte("x")), opt(optExportName, nil)))
	f.Fuzz(func(t *testing.T, in []byte) {
		be := newMemBackend(fuzzExportSize)
		out := exchange(t, be, nil, in)
		checkHandshakeOutput(t, out)
		if be.outOfRange.Load() != 0 {
			t.Fatal("backend accessed out of range")
		}
	})
}

// exchange sends in as a client's whole input to a server of one export
// (requiring TLS when cfg is set), and returns all the server said before
// it hung up.
func exchange(t *testing.T, be *memBackend, cfg *tls.Config, in []byte) []byte {
	client, done := serveOneTLS(t, be, cfg)
	defer client.Close()
	go func() {
		client.Write(in)
		client.CloseWrite()
	}()
	out, err := io.ReadAll(client)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading server output: %v", err)
	}
	waitServer(t, done)
	return out
}

func checkHandshakeOutput(t *testing.T, out []byte) {
	if len(out) < 18 || binary.BigEndian.Uint64(out) != magicNBD {
		t.Fatalf("no greeting: %x", out)
	}
	out = out[18:]
	for len(out) > 0 {
		if len(out) < 20 || binary.BigEndian.Uint64(out) != magicOptionReply {
			// Only the EXPORT_NAME answer has no magic: size then flags.
			if len(out) >= 10 && binary.BigEndian.Uint64(out) == fuzzExportSize {
				return
			}
			t.Fatalf("malformed option reply %x", out[:min(len(out), 32)])
		}
		opt, typ := binary.BigEndian.Uint32(out[8:]), binary.BigEndian.Uint32(out[12:])
		n := binary.BigEndian.Uint32(out[16:])
		if uint64(n) > uint64(len(out)-20) {
			t.Fatalf("option reply length %d exceeds output", n)
		}
		payload := out[20 : 20+n]
		out = out[20+n:]
		switch typ {
		case repInfo:
			if len(payload) < 2 {
				t.Fatalf("short NBD_REP_INFO")
			}
		case repServer:
			if len(payload) < 4 || uint64(binary.BigEndian.Uint32(payload)) > uint64(len(payload)-4) {
				t.Fatalf("bad NBD_REP_SERVER %x", payload)
			}
		case repMetaContext:
			if len(payload) < 5 {
				t.Fatalf("short NBD_REP_META_CONTEXT")
			}
		case repAck:
			if n != 0 {
				t.Fatalf("ACK with payload")
			}
			if opt == optGo {
				return // transmission phase follows
			}
		default:
			if typ&(1<<31) == 0 {
				t.Fatalf("unknown option reply type %#x", typ)
			}
		}
	}
}

// FuzzSession negotiates a valid session and then feeds arbitrary bytes as
// requests. The request cookies are rewritten to be unique (so that replies
// can be matched). To keep the fuzzer inside the interesting space, the
// magic is made valid unless a header starts with 0xff, and unless mode
// bit 2 asks for raw values, offsets and lengths are folded to about twice
// the export size. The server must not panic or touch the backend outside
// the export, and every complete request must get exactly one well-formed
// reply before a clean hang-up.
func FuzzSession(f *testing.F) {
	req := func(h requestHeader, payload []byte) []byte {
		return append(appendRequestHeader(nil, h), payload...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(byte(1), cat(
		req(requestHeader{Type: cmdWrite, Offset: 100, Length: 5}, []byte("hello")),
		req(requestHeader{Type: cmdRead, Offset: 98, Length: 9}, nil),
		req(requestHeader{Type: cmdBlockStatus, Flags: cmdFlagReqOne, Length: 8192}, nil),
		req(requestHeader{Type: cmdWriteZeroes, Flags: cmdFlagNoHole | cmdFlagFUA, Offset: 4096, Length: 4096}, nil),
		req(requestHeader{Type: cmdTrim, Offset: 0, Length: fuzzExportSize}, nil)))
	f.Add(byte(0), cat(
		req(requestHeader{Type: cmdWrite, Offset: fuzzExportSize - 2, Length: 4}, []byte("abcd")),
		req(requestHeader{Type: cmdFlush}, nil),
		req(requestHeader{Type: cmdWriteZeroes, Flags: cmdFlagFastZero, Length: 1}, nil),
		req(requestHeader{Type: cmdCache, Offset: 1, Length: 1}, nil),
		req(requestHeader{Type: cmdDisc}, nil)))
	f.Add(byte(2), cat(
		req(requestHeader{Type: cmdWrite, Length: MaxPayload + 1}, make([]byte, 64)),
		[]byte("garbage that is not a request header....")))
	f.Fuzz(func(t *testing.T, mode byte, in []byte) {
		cfg := clientConfig{export: "f", structured: mode&1 != 0, meta: mode&1 != 0, exportName: mode&2 != 0}
		be := newMemBackend(fuzzExportSize)
		conn, done := serveOne(t, be)
		defer conn.Close()
		c, err := newTestClient(conn, cfg)
		if err != nil {
			t.Fatalf("negotiate: %v", err)
		}
		stream, complete := rewriteRequests(c, in, mode&4 != 0)
		go func() {
			conn.Write(stream)
			conn.CloseWrite()
		}()
		for replies := 0; ; replies++ {
			if _, err := c.readReply(); err != nil {
				if err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("reply %d: %v", replies, err)
				}
				if replies != complete {
					t.Fatalf("%d replies to %d complete requests", replies, complete)
				}
				break
			}
		}
		waitServer(t, done)
		if be.outOfRange.Load() != 0 {
			t.Fatal("backend accessed out of range")
		}
	})
}

// waitServer fails the test, with every goroutine's stack, if the server
// does not finish after its client is done.
func waitServer(t *testing.T, done chan struct{}) {
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("server did not hang up:\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// rewriteRequests splits fuzz input into requests the way the server reads
// it, gives each a fresh cookie (registered as pending in c), and returns
// the stream to send and how many requests in it are complete. The stream
// stops after a DISC or a bad magic, and a truncated request is dropped, so
// the server always reaches a definite end.
func rewriteRequests(c *testClient, in []byte, raw bool) ([]byte, int) {
	var out []byte
	complete := 0
	r := bufio.NewReader(bytes.NewReader(in))
	for {
		var hb [requestHeaderLen]byte
		if _, err := io.ReadFull(r, hb[:]); err != nil {
			return out, complete
		}
		if hb[0] != 0xff {
			binary.BigEndian.PutUint32(hb[0:], magicRequest)
		}
		if !raw {
			off := binary.BigEndian.Uint64(hb[16:]) % (2 * fuzzExportSize)
			length := binary.BigEndian.Uint32(hb[24:]) % (2*fuzzExportSize + 1)
			binary.BigEndian.PutUint64(hb[16:], off)
			binary.BigEndian.PutUint32(hb[24:], length)
		}
		h, err := parseRequestHeader(hb)
		if err != nil {
			return append(out, hb[:]...), complete // the server hangs up here
		}
		if h.Type == cmdDisc {
			return append(out, hb[:]...), complete
		}
		var payload []byte
		if h.Type == cmdWrite {
			payload = make([]byte, h.Length)
			if uint64(h.Length) > uint64(len(in)) {
				return out, complete // cannot be complete: drop it
			}
			if _, err := io.ReadFull(r, payload); err != nil {
				return out, complete
			}
		}
		c.mu.Lock()
		c.cookie++
		h.Cookie = c.cookie
		c.pending[h.Cookie] = h
		c.mu.Unlock()
		out = append(appendRequestHeader(out, h), payload...)
		complete++
	}
}
