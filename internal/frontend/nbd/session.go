package nbd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// session is the state of one connection, from greeting to close.
type session struct {
	srv *Server
	// raw is the accepted connection; conn is what the session speaks
	// through: raw, or a TLS connection over it after NBD_OPT_STARTTLS.
	// Deadlines and the shutdown interrupt go to raw, which the TLS
	// connection reads and writes through.
	raw    net.Conn
	conn   net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	limits Limits

	shuttingDown atomic.Bool

	// Negotiated during the handshake.
	tlsActive  bool
	noZeroes   bool
	structured bool
	// metaExport is the export the last NBD_OPT_SET_META_CONTEXT named, when
	// it selected base:allocation; BLOCK_STATUS is allowed only if the client
	// then enters transmission on that same export.
	metaExport *Export

	// Fixed when transmission starts.
	export      *Export
	size        uint64
	flags       uint16
	blockStatus bool
}

func newSession(srv *Server, conn net.Conn) *session {
	return &session{
		srv:    srv,
		raw:    conn,
		conn:   conn,
		r:      bufio.NewReaderSize(conn, 64<<10),
		w:      bufio.NewWriterSize(conn, 64<<10),
		limits: srv.limits(),
	}
}

// interrupt starts a graceful shutdown: the blocked read of the next
// option or request returns at once, while replies still in flight get
// ShutdownGrace to reach the client.
func (s *session) interrupt() {
	s.shuttingDown.Store(true)
	if err := s.raw.SetReadDeadline(time.Unix(1, 0)); err != nil {
		// Without deadlines the only way to stop the reader is to close.
		s.raw.Close()
		return
	}
	_ = s.raw.SetWriteDeadline(time.Now().Add(s.limits.ShutdownGrace))
}

// negotiateWithin runs the handshake with a deadline of limit from now; a
// client that enters transmission has no deadline from then on.
func (s *session) negotiateWithin(limit time.Duration) (*Export, error) {
	if err := s.raw.SetDeadline(time.Now().Add(limit)); err != nil {
		return s.negotiate() // a connection without deadlines: no limit
	}
	if s.shuttingDown.Load() {
		s.interrupt() // its deadlines came before ours
	}
	exp, err := s.negotiate()
	if errors.Is(err, os.ErrDeadlineExceeded) && !s.shuttingDown.Load() {
		return nil, fmt.Errorf("nbd: handshake not done within %v", limit)
	}
	if err != nil || exp == nil {
		return exp, err
	}
	if err := s.raw.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	if s.shuttingDown.Load() {
		// A shutdown that began during the handshake set its deadlines
		// before they were cleared: set them again.
		s.interrupt()
	}
	return exp, nil
}

// filterErr turns the ends of a connection that are not failures (client
// hung up, server shut down) into nil.
func (s *session) filterErr(err error) error {
	switch {
	case err == nil, errors.Is(err, errClientGone):
		return nil
	case s.shuttingDown.Load():
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	}
	return err
}
