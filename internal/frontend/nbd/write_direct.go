package nbd

import (
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// A plain write large enough to take a turn (a streaming client's) whose
// payload has all arrived is carried out by the connection's reader
// itself, with the bytes read from the connection straight into the
// backend's memory (StreamWriter): a copy of every byte written out of a
// request buffer, about a tenth of the server's CPU in nbdcopy over an
// export's data, is saved. Only when the payload is all there: the
// backend may hold the file's lock while it reads, and a client that
// stops in the middle of a payload must not hold up the other
// connections. The reader waits for the turns of the connection's writes
// before it, so the order of writes stays the one write_order.go keeps.
//
// A Unix socket never queues a whole 256 KiB payload (the sender's buffer
// is about 208 KiB), so nbdcopy's writes over one take the usual way; TCP
// queues megabytes. Tried: letting the backend's read wait up to 10 ms
// for a late tail, on Unix sockets. The copy over an export's data took
// 12.9 s instead of 7.5-8.3 s (one run each, on a machine busy with
// tests): a reader holding the file's lock while its client was busy
// elsewhere held up the other connections.

// payloadArrived reports whether n bytes of payload can be read without
// waiting: already in the reader's buffer, or queued on the socket (not
// through TLS, whose records the kernel cannot count).
func (s *session) payloadArrived(n int) bool {
	buffered := s.r.Buffered()
	if buffered >= n {
		return true
	}
	if s.tlsActive {
		return false
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
	var readErr error
	filled, err := sw.WriteFrom(int64(req.Offset), n, func(dst []byte) error {
		_, readErr = io.ReadFull(s.r, dst)
		return readErr
	})
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
