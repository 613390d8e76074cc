package nbd

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

const testSize = 1 << 20

func oneExport(t *testing.T) (*testServer, *memBackend) {
	be := newMemBackend(testSize)
	return newTestServer(t, Export{Name: "disk", Description: "test disk", Backend: be}), be
}

func TestGoReportsExportInformation(t *testing.T) {
	ts, _ := oneExport(t)
	c, err := startClient(ts.pipe(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.simpleOption(optStructuredReply, nil); err != nil {
		t.Fatal(err)
	}
	infos, err := c.infoOrGo(optInfo, "disk", infoName, infoDescription, infoBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	exp := infos[infoExport]
	if len(exp) != 12 || binary.BigEndian.Uint64(exp[2:]) != testSize {
		t.Fatalf("NBD_INFO_EXPORT %x", exp)
	}
	want := flagHasFlags | flagSendFlush | flagSendFUA | flagSendTrim | flagSendWriteZeroes |
		flagSendFastZero | flagCanMultiConn | flagSendCache | flagSendDF
	if got := binary.BigEndian.Uint16(exp[10:]); got != want {
		t.Errorf("flags %#x, want %#x", got, want)
	}
	if got := string(infos[infoName][2:]); got != "disk" {
		t.Errorf("name %q", got)
	}
	if got := string(infos[infoDescription][2:]); got != "test disk" {
		t.Errorf("description %q", got)
	}
	bs := infos[infoBlockSize]
	if len(bs) != 14 || binary.BigEndian.Uint32(bs[2:]) != 1 || binary.BigEndian.Uint32(bs[6:]) != 4096 || binary.BigEndian.Uint32(bs[10:]) != 32<<20 {
		t.Errorf("block size %x", bs)
	}
	// INFO does not end the handshake; an unknown export is an error.
	if _, err := c.infoOrGo(optGo, "nope"); err != optionError(repErrUnknown) {
		t.Errorf("GO unknown export: %v", err)
	}
	if _, err := c.infoOrGo(optGo, "disk"); err != nil {
		t.Fatal(err)
	}
	c.structured = true
	c.size = testSize
	wantErrno(t, mustDo(t, c, cmdFlush, 0, 0, 0, nil), 0)
}

func TestExportNameWithAndWithoutZeroes(t *testing.T) {
	for _, noZeroes := range []bool{false, true} {
		ts, _ := oneExport(t)
		c := ts.connect(t, clientConfig{export: "disk", exportName: true, noZeroes: noZeroes})
		if c.size != testSize || c.flags&flagHasFlags == 0 {
			t.Fatalf("size %d flags %#x", c.size, c.flags)
		}
		r := mustDo(t, c, cmdRead, 0, 0, 512, nil)
		wantErrno(t, r, 0)
	}
}

func TestExportNameUnknownHangsUp(t *testing.T) {
	ts, _ := oneExport(t)
	c, err := startClient(ts.pipe(), true)
	if err != nil {
		t.Fatal(err)
	}
	c.sendOption(optExportName, []byte("nope"))
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("read after refused EXPORT_NAME: %v", err)
	}
}

func TestDefaultExportOnlyWhenUnique(t *testing.T) {
	ts, _ := oneExport(t)
	c := ts.connect(t, clientConfig{export: ""})
	if c.size != testSize {
		t.Fatalf("default export size %d", c.size)
	}
	ts2 := newTestServer(t,
		Export{Name: "a", Backend: newMemBackend(4096)},
		Export{Name: "b", Backend: newMemBackend(8192)})
	c2, err := startClient(ts2.pipe(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.infoOrGo(optGo, ""); err != optionError(repErrUnknown) {
		t.Fatalf("default export among two: %v", err)
	}
}

func TestListAbortAndUnknownOptions(t *testing.T) {
	ts := newTestServer(t,
		Export{Name: "b", Description: "second", Backend: newMemBackend(4096)},
		Export{Name: "a", Backend: newMemBackend(4096)})
	c, err := startClient(ts.pipe(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []uint32{optStartTLS, 4, 11, 0xdeadbeef} {
		if err := c.simpleOption(opt, []byte("junk")); err != optionError(repErrUnsup) {
			t.Errorf("option %d: %v", opt, err)
		}
	}
	if err := c.simpleOption(optList, []byte("x")); err != optionError(repErrInvalid) {
		t.Errorf("LIST with data: %v", err)
	}
	if err := c.simpleOption(optStructuredReply, []byte("x")); err != optionError(repErrInvalid) {
		t.Errorf("STRUCTURED_REPLY with data: %v", err)
	}
	c.sendOption(optList, nil)
	var names []string
	for {
		_, typ, payload, err := c.readOptionReply()
		if err != nil {
			t.Fatal(err)
		}
		if typ == repAck {
			break
		}
		n := binary.BigEndian.Uint32(payload)
		names = append(names, string(payload[4:4+n])+"|"+string(payload[4+n:]))
	}
	if len(names) != 2 || names[0] != "a|" || names[1] != "b|second" {
		t.Errorf("list %q", names)
	}
	if err := c.simpleOption(optAbort, nil); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("after abort: %v", err)
	}
}

func TestUnknownClientFlagsHangUp(t *testing.T) {
	ts, _ := oneExport(t)
	conn := ts.pipe()
	io.ReadFull(conn, make([]byte, 18))
	conn.Write([]byte{0, 0, 0, 4})
	if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after bad client flags: %v", err)
	}
}

func TestMetaContextNegotiation(t *testing.T) {
	ts, _ := oneExport(t)
	c, err := startClient(ts.pipe(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.simpleOption(optSetMetaContext, metaContextData("disk", metaContextBaseAllocation)); err != optionError(repErrInvalid) {
		t.Errorf("SET before structured replies: %v", err)
	}
	if err := c.simpleOption(optStructuredReply, nil); err != nil {
		t.Fatal(err)
	}
	list := func(queries ...string) []string {
		c.sendOption(optListMetaContext, metaContextData("disk", queries...))
		var got []string
		for {
			_, typ, payload, err := c.readOptionReply()
			if err != nil {
				t.Fatal(err)
			}
			if typ == repAck {
				return got
			}
			if typ != repMetaContext {
				t.Fatalf("list reply %#x", typ)
			}
			got = append(got, string(payload[4:]))
		}
	}
	for _, tc := range []struct {
		queries []string
		want    int
	}{{nil, 1}, {[]string{"base:"}, 1}, {[]string{"base:allocation"}, 1}, {[]string{"qemu:dirty-bitmap:x", "base:other"}, 0}} {
		if got := list(tc.queries...); len(got) != tc.want {
			t.Errorf("list %q: %q", tc.queries, got)
		}
	}
	if err := c.simpleOption(optSetMetaContext, []byte{0, 0, 0, 9}); err != optionError(repErrInvalid) {
		t.Errorf("truncated SET: %v", err)
	}
	// "base:" selects nothing on SET, so BLOCK_STATUS stays forbidden.
	if err := c.simpleOption(optSetMetaContext, metaContextData("disk", "base:")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.infoOrGo(optGo, "disk"); err != nil {
		t.Fatal(err)
	}
	c.structured, c.size = true, testSize
	wantErrno(t, mustDo(t, c, cmdBlockStatus, 0, 0, 4096, nil), EINVAL)
}

func TestReadWriteAndErrors(t *testing.T) {
	for _, structured := range []bool{false, true} {
		ts, _ := oneExport(t)
		c := ts.connect(t, clientConfig{export: "disk", structured: structured, meta: structured})
		data := bytes.Repeat([]byte("doppel!"), 1000)
		wantErrno(t, mustDo(t, c, cmdWrite, cmdFlagFUA, 1000, uint32(len(data)), data), 0)
		r := mustDo(t, c, cmdRead, 0, 1000, uint32(len(data)), nil)
		wantErrno(t, r, 0)
		if !bytes.Equal(r.data, data) {
			t.Fatal("read back differs")
		}
		wantErrno(t, mustDo(t, c, cmdRead, 0, testSize-10, 11, nil), EINVAL)
		wantErrno(t, mustDo(t, c, cmdRead, 0, 1<<63, 1, nil), EINVAL)
		wantErrno(t, mustDo(t, c, cmdTrim, 0, testSize, 1, nil), EINVAL)
		wantErrno(t, mustDo(t, c, cmdWrite, 0, testSize-1, 2, []byte{1, 2}), ENOSPC)
		wantErrno(t, mustDo(t, c, cmdWriteZeroes, 0, testSize-1, 2, nil), ENOSPC)
		wantErrno(t, mustDo(t, c, 99, 0, 0, 0, nil), EINVAL)
		wantErrno(t, mustDo(t, c, cmdWrite, cmdFlagNoHole, 0, 1, []byte{1}), EINVAL)
		wantErrno(t, mustDo(t, c, cmdFlush, 0, 0, 1, nil), EINVAL)
		wantErrno(t, mustDo(t, c, cmdCache, 0, 0, 4096, nil), 0)
		wantErrno(t, mustDo(t, c, cmdRead, 0, 0, 0, nil), 0)
		wantErrno(t, mustDo(t, c, cmdWrite, 0, 0, 0, nil), 0)
		if !structured {
			wantErrno(t, mustDo(t, c, cmdRead, cmdFlagDF, 0, 1, nil), EINVAL)
			wantErrno(t, mustDo(t, c, cmdBlockStatus, 0, 0, 1, nil), EINVAL)
		} else {
			wantErrno(t, mustDo(t, c, cmdRead, cmdFlagDF, 0, 1, nil), 0)
		}
		// The final read proves the server stayed in step after every error.
		r = mustDo(t, c, cmdRead, 0, 1000, 7, nil)
		if string(r.data) != "doppel!" {
			t.Fatalf("after errors read %q", r.data)
		}
	}
}

func TestOversizedRequests(t *testing.T) {
	be := newMemBackend(64 << 20)
	ts := newTestServer(t, Export{Name: "big", Backend: be})
	for _, structured := range []bool{false, true} {
		c := ts.connect(t, clientConfig{export: "big", structured: structured})
		want := EINVAL
		if structured {
			want = EOVERFLOW
		}
		wantErrno(t, mustDo(t, c, cmdRead, 0, 0, MaxPayload+1, nil), want)
		// An oversized write is skipped, not buffered, and the stream stays usable.
		big := make([]byte, MaxPayload+4096)
		big[len(big)-1] = 7
		wantErrno(t, mustDo(t, c, cmdWrite, 0, 0, uint32(len(big)), big), EINVAL)
		wantErrno(t, mustDo(t, c, cmdWrite, 0, 0, MaxPayload, big[:MaxPayload]), 0)
		// Requests without payload may exceed the maximum payload.
		wantErrno(t, mustDo(t, c, cmdWriteZeroes, 0, 0, 48<<20, nil), 0)
		wantErrno(t, mustDo(t, c, cmdTrim, 0, 0, 48<<20, nil), 0)
	}
	if be.outOfRange.Load() != 0 {
		t.Fatal("backend accessed out of range")
	}
}

func TestReadOnlyExport(t *testing.T) {
	be := newMemBackend(testSize)
	be.WriteAt([]byte("keep"), 0, false)
	ts := newTestServer(t, Export{Name: "ro", Backend: be, ReadOnly: true})
	c := ts.connect(t, clientConfig{export: "ro", structured: true, meta: true})
	if c.flags&flagReadOnly == 0 || c.flags&(flagSendTrim|flagSendWriteZeroes|flagSendFastZero) != 0 {
		t.Fatalf("read-only flags %#x", c.flags)
	}
	wantErrno(t, mustDo(t, c, cmdWrite, 0, 0, 4, []byte("lose")), EPERM)
	wantErrno(t, mustDo(t, c, cmdTrim, 0, 0, 4096, nil), EPERM)
	wantErrno(t, mustDo(t, c, cmdWriteZeroes, 0, 0, 4096, nil), EPERM)
	r := mustDo(t, c, cmdRead, 0, 0, 4, nil)
	if string(r.data) != "keep" {
		t.Fatalf("read-only export changed: %q", r.data)
	}
}

func TestTrimZeroesAndBlockStatus(t *testing.T) {
	ts, be := oneExport(t)
	c := ts.connect(t, clientConfig{export: "disk", structured: true, meta: true})
	status := func(off uint64, length uint32, flags uint16) []wireExtent {
		t.Helper()
		r := mustDo(t, c, cmdBlockStatus, flags, off, length, nil)
		wantErrno(t, r, 0)
		return r.extents
	}
	if got := status(0, testSize, 0); len(got) != 1 || got[0] != (wireExtent{testSize, 3}) {
		t.Fatalf("fresh export: %v", got)
	}
	data := bytes.Repeat([]byte{0xff}, 16384)
	mustDo(t, c, cmdWrite, 0, 0, 16384, data)
	if got := status(0, testSize, 0); len(got) != 2 || got[0] != (wireExtent{16384, 0}) {
		t.Fatalf("after write: %v", got)
	}
	if got := status(0, testSize, cmdFlagReqOne); len(got) != 1 || got[0] != (wireExtent{16384, 0}) {
		t.Fatalf("REQ_ONE: %v", got)
	}
	if got := status(100, 50, 0); len(got) != 1 || got[0] != (wireExtent{50, 0}) {
		t.Fatalf("short query: %v", got)
	}
	wantErrno(t, mustDo(t, c, cmdTrim, cmdFlagFUA, 4096, 4096, nil), 0)
	if got := status(0, 16384, 0); len(got) != 3 || got[1] != (wireExtent{4096, 3}) {
		t.Fatalf("after trim: %v", got)
	}
	// NO_HOLE zeroes stay allocated; plain zeroes may (here do) punch.
	wantErrno(t, mustDo(t, c, cmdWriteZeroes, cmdFlagNoHole, 8192, 4096, nil), 0)
	wantErrno(t, mustDo(t, c, cmdWriteZeroes, 0, 12288, 4096, nil), 0)
	got := status(0, 16384, 0)
	want := []wireExtent{{4096, 0}, {4096, 3}, {4096, 0}, {4096, 3}}
	if len(got) != len(want) || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("after zeroes: %v", got)
	}
	r := mustDo(t, c, cmdRead, 0, 8192, 8192, nil)
	if !bytes.Equal(r.data, make([]byte, 8192)) {
		t.Fatal("zeroed range does not read as zero")
	}
	// FAST_ZERO: NO_HOLE would be a write here, so it fails untouched.
	mustDo(t, c, cmdWrite, 0, 0, 4096, data[:4096])
	wantErrno(t, mustDo(t, c, cmdWriteZeroes, cmdFlagFastZero|cmdFlagNoHole, 0, 4096, nil), ENOTSUP)
	if r := mustDo(t, c, cmdRead, 0, 0, 1, nil); r.data[0] != 0xff {
		t.Fatal("failed fast zero changed data")
	}
	wantErrno(t, mustDo(t, c, cmdWriteZeroes, cmdFlagFastZero, 0, 4096, nil), 0)
	wantErrno(t, mustDo(t, c, cmdBlockStatus, 0, testSize, 1, nil), EINVAL)
	wantErrno(t, mustDo(t, c, cmdBlockStatus, 0, 0, 0, nil), EINVAL)
	if be.flushes.Load() == 0 {
		t.Error("FUA trim did not flush")
	}
}

// failingBackend fails reads with EIO and writes with ENOSPC (as a full
// file system would), everything else from the embedded backend.
type failingBackend struct{ *memBackend }

func (failingBackend) ReadAt(p []byte, off int64) (int, error)     { return 0, syscall.EIO }
func (failingBackend) WriteAt(p []byte, off int64, fua bool) error { return syscall.EDQUOT }
func (failingBackend) BlockStatus(off, length int64) ([]Extent, error) {
	return nil, errors.New("opaque")
}

func TestBackendErrorsMapped(t *testing.T) {
	ts := newTestServer(t, Export{Name: "bad", Backend: failingBackend{newMemBackend(testSize)}})
	for _, structured := range []bool{false, true} {
		c := ts.connect(t, clientConfig{export: "bad", structured: structured, meta: structured})
		wantErrno(t, mustDo(t, c, cmdRead, 0, 0, 512, nil), EIO)
		wantErrno(t, mustDo(t, c, cmdWrite, 0, 0, 3, []byte("abc")), ENOSPC)
		if structured {
			r := mustDo(t, c, cmdBlockStatus, 0, 0, 512, nil)
			wantErrno(t, r, EIO)
			if r.msg == "" {
				t.Error("structured error without message")
			}
		}
	}
}

func TestWireExtentsNormalises(t *testing.T) {
	got := wireExtents([]Extent{{0, 1}, {100, 1}, {50, 1 | 8}, {-3, 0}, {1 << 40, 2}}, 1000, false)
	want := []wireExtent{{150, 1}, {850, 2}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("%v", got)
	}
	if got := wireExtents(nil, 77, true); len(got) != 1 || got[0] != (wireExtent{77, 0}) {
		t.Fatalf("empty: %v", got)
	}
}

// gatedBackend blocks writes until released, to hold requests in flight.
type gatedBackend struct {
	*memBackend
	entered chan struct{}
	release chan struct{}
}

func (g *gatedBackend) WriteAt(p []byte, off int64, fua bool) error {
	g.entered <- struct{}{}
	<-g.release
	return g.memBackend.WriteAt(p, off, fua)
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	be := &gatedBackend{newMemBackend(testSize), make(chan struct{}, 8), make(chan struct{})}
	ts := newTestServer(t, Export{Name: "disk", Backend: be})
	ts.listenUnix(t)
	conn := ts.dialUnix(t)
	defer conn.Close()
	c, err := newTestClient(conn, clientConfig{export: "disk"})
	if err != nil {
		t.Fatal(err)
	}
	cookie, _ := c.send(cmdWrite, 0, 0, 3, []byte("abc"))
	<-be.entered
	if n := len(ts.srv.Clients("disk")); n != 1 {
		t.Fatalf("clients of disk: %d", n)
	}
	flushesBefore := be.flushes.Load()
	ts.cancel()
	time.Sleep(50 * time.Millisecond) // let the shutdown reach the reader
	close(be.release)
	r, err := c.readReply()
	if err != nil || r.cookie != cookie || r.errno != 0 {
		t.Fatalf("in-flight write: %+v %v", r, err)
	}
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("after shutdown: %v", err)
	}
	ts.wg.Wait()
	if be.flushes.Load() == flushesBefore {
		t.Error("shutdown did not flush")
	}
	if n := len(ts.srv.AllClients()); n != 0 {
		t.Errorf("%d clients left", n)
	}
}

// TestPipelinedRequests keeps many requests in flight on one connection,
// more than MaxInFlight, reading replies concurrently, and checks each
// reply matches its request.
func TestPipelinedRequests(t *testing.T) {
	ts, _ := oneExport(t)
	ts.srv.Limits = Limits{MaxInFlight: 4, MaxBufferBytes: 1}
	ts.listenUnix(t)
	conn := ts.dialUnix(t)
	defer conn.Close()
	c, err := newTestClient(conn, clientConfig{export: "disk", structured: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	go func() {
		for i := 0; i < n; i++ {
			block := bytes.Repeat([]byte{byte(i)}, 4096)
			if _, err := c.send(cmdWrite, 0, uint64(i%256)*4096, 4096, block); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < n; i++ {
		r, err := c.readReply()
		if err != nil {
			t.Fatal(err)
		}
		wantErrno(t, r, 0)
	}
	r := mustDo(t, c, cmdRead, 0, 199*4096, 4096, nil)
	if r.data[0] != 199 {
		t.Fatalf("last block holds %d", r.data[0])
	}
	c.disconnect()
	if _, err := c.r.ReadByte(); err != io.EOF {
		t.Fatalf("after DISC: %v", err)
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	srv := NewServer()
	srv.AddExport(Export{Name: "x", Backend: newMemBackend(4096)})
	l, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- srv.Serve(ctx, l) }()
	// A client idle in the handshake must not keep Serve from returning.
	conn, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.ReadFull(conn, make([]byte, 18))
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

// TestHandshakeLimit: a client that does not finish its handshake in
// time is cut off; one in transmission may stay idle for longer.
func TestHandshakeLimit(t *testing.T) {
	ts, _ := oneExport(t)
	ts.srv.Limits.HandshakeLimit = 200 * time.Millisecond
	idle := ts.socket(t)
	defer idle.Close()
	idle.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(idle); err != nil {
		t.Fatalf("an idle client's connection: %v, want a hang-up", err)
	}
	c := ts.connect(t, clientConfig{export: "disk"})
	time.Sleep(400 * time.Millisecond)
	mustDo(t, c, cmdRead, 0, 0, 512, nil)
}
