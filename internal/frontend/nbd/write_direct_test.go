package nbd

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// A payload whose tail comes late is not read by the backend (which may
// hold locks meanwhile): it goes through a request buffer and WriteAt and
// lands whole. A payload that is all there goes to the backend directly.
func TestDirectWriteWithLateTail(t *testing.T) {
	be := &streamBackend{memBackend: newMemBackend(1 << 20)}
	ts := newTestServer(t, Export{Name: "m", Backend: be})
	c := ts.connect(t, clientConfig{export: "m", socket: true})
	r := rand.New(rand.NewPCG(1, 2))
	payload := make([]byte, 128<<10)
	for i := range payload {
		payload[i] = byte(r.Uint32())
	}

	cookie, err := c.send(cmdWrite, 0, 4096, uint32(len(payload)), payload[:len(payload)/2])
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := c.conn.Write(payload[len(payload)/2:]); err != nil {
		t.Fatal(err)
	}
	reply, err := c.readReply()
	if err != nil || reply.cookie != cookie || reply.errno != 0 {
		t.Fatalf("late write: reply %+v, %v", reply, err)
	}
	if got := be.direct.Load(); got != 0 {
		t.Fatalf("a write whose tail came late was taken from the connection (%d)", got)
	}
	got := mustDo(t, c, cmdRead, 0, 4096, uint32(len(payload)), nil)
	if !bytes.Equal(got.data, payload) {
		t.Fatal("the late write did not land whole")
	}

	// The server may read the header while the sender is still copying
	// the payload into the socket (a loaded machine): then that write
	// takes the usual way, rightly. Some of a few dozen must be direct.
	for i := 0; be.direct.Load() == 0; i++ {
		if i == 50 {
			t.Fatal("no write whose payload was sent whole was taken from the connection in 50 tries")
		}
		payload[0]++
		mustDo(t, c, cmdWrite, 0, 512<<10, uint32(len(payload)), payload)
		got = mustDo(t, c, cmdRead, 0, 512<<10, uint32(len(payload)), nil)
		if !bytes.Equal(got.data, payload) {
			t.Fatalf("write %d did not land whole (direct writes so far: %d)", i, be.direct.Load())
		}
	}
}

// A client that hangs up in the middle of a payload writes nothing.
func TestDirectWriteCutShortWritesNothing(t *testing.T) {
	be := &streamBackend{memBackend: newMemBackend(1 << 20)}
	ts := newTestServer(t, Export{Name: "m", Backend: be})
	c := ts.connect(t, clientConfig{export: "m", socket: true})
	payload := bytes.Repeat([]byte{0xab}, 128<<10)
	if _, err := c.send(cmdWrite, 0, 0, uint32(len(payload)), payload[:len(payload)/2]); err != nil {
		t.Fatal(err)
	}
	c.conn.Close()
	ts.stop() // waits for the connection's end
	if bytes.IndexByte(be.data, 0xab) >= 0 || be.direct.Load() != 0 {
		t.Fatal("a write cut short by a hang-up changed the image")
	}
}
