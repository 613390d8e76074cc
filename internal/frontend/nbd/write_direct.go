package nbd

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A plain write large enough to take a turn (a streaming client's) is
// carried out by the connection's reader itself, with the bytes read from
// the connection straight into the backend's memory (StreamWriter): a
// copy of every byte written out of a request buffer, about a tenth of the
// server's CPU in nbdcopy over an export's data, is saved. The reader
// waits for the turns of the connection's writes before it, so the order
// of writes stays the one write_order.go keeps.
//
// The backend may hold the file's lock while it reads, and a client that
// stops in the middle of a payload must not hold up the other
// connections: unless the whole payload has arrived already, the read
// gets directPatience. If the rest is late, the bytes read so far move to
// a request buffer, the rest is read there without the backend, and the
// write goes through WriteAt. A Unix socket never queues a whole 256 KiB
// payload (the sender's buffer is about 208 KiB), so there the tail of
// each one arrives while the reader waits, within microseconds.

// directPatience is how long the backend's read of a payload may wait for
// bytes that have not arrived.
const directPatience = 10 * time.Millisecond

// payloadArrived reports whether n bytes of payload can be read without
// waiting: already in the reader's buffer, or queued on the socket.
func (s *session) payloadArrived(n int) bool {
	buffered := s.r.Buffered()
	if buffered >= n {
		return true
	}
	sc, ok := s.raw.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	queued := 0
	if rc.Control(func(fd uintptr) {
		queued, err = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	}) != nil || err != nil {
		return false
	}
	return buffered+queued >= n
}

// writeDirect carries out write request req through sw, its payload read
// from the connection into the backend's memory, and replies. It returns
// an error only when the connection is lost (the payload could not be
// read); the backend's errors go to the client.
func (s *session) writeDirect(rw *replyWriter, sw StreamWriter, req *request) error {
	n := int(req.Length)
	patient := !s.payloadArrived(n)
	var readErr error
	var late []byte // the payload, when its tail was late
	got := 0
	filled, err := sw.WriteFrom(int64(req.Offset), n, func(dst []byte) error {
		if patient {
			s.raw.SetReadDeadline(time.Now().Add(directPatience))
		}
		got, readErr = io.ReadFull(s.r, dst)
		if patient {
			s.raw.SetReadDeadline(time.Time{})
			if s.shuttingDown.Load() {
				s.interrupt() // its deadline may have come before ours
			}
		}
		if readErr != nil && errors.Is(readErr, os.ErrDeadlineExceeded) && !s.shuttingDown.Load() {
			late = getPayload(n)
			copy(late, dst[:got])
		}
		return readErr
	})
	if late != nil {
		defer putPayload(late)
		if _, err := io.ReadFull(s.r, late[got:]); err != nil {
			return err
		}
		filled, readErr, err = true, nil, s.export.Backend.WriteAt(late, int64(req.Offset), false)
	}
	if readErr != nil {
		return readErr
	}
	if !filled {
		// Refused before it read them: the bytes are still on the wire.
		if _, derr := io.CopyN(io.Discard, s.r, int64(n)); derr != nil {
			return derr
		}
		if err == nil {
			err = io.ErrShortWrite // a backend that took nothing and said nothing
		}
	}
	if err != nil {
		return s.sendError(rw, req, errnoOf(err))
	}
	return rw.send(appendSimpleReply(nil, 0, req.Cookie))
}
