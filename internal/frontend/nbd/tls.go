package nbd

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
)

// beforeTLS answers an option on a server that requires TLS (the
// protocol's FORCEDTLS mode) while the connection is still plain: only
// NBD_OPT_STARTTLS and NBD_OPT_ABORT are honoured, anything else is
// refused with NBD_REP_ERR_TLS_REQD, and NBD_OPT_EXPORT_NAME, which
// cannot be refused, ends the connection.
func (s *session) beforeTLS(opt uint32, data []byte) (done bool, err error) {
	switch opt {
	case optStartTLS:
		return false, s.startTLS(data)
	case optAbort:
		s.reply(opt, repAck, nil)
		return true, nil
	case optExportName:
		return true, errors.New("nbd: client asked for an export without TLS, which this server requires")
	}
	s.replyErr(opt, repErrTLSReqd, "this server requires TLS (NBD_OPT_STARTTLS)")
	return false, nil
}

// startTLS acknowledges NBD_OPT_STARTTLS and runs the server side of the
// TLS handshake; the rest of the session goes through it. What the client
// negotiated before is forgotten, as the protocol requires.
func (s *session) startTLS(data []byte) error {
	if len(data) != 0 {
		s.replyErr(optStartTLS, repErrInvalid, "NBD_OPT_STARTTLS takes no data")
		return nil
	}
	if s.r.Buffered() != 0 {
		// Bytes sent after STARTTLS but before our reply were sent in
		// the clear and would be taken as if they had come through TLS
		// (the STARTTLS injection of other protocols): refuse them.
		return errors.New("nbd: client sent data after NBD_OPT_STARTTLS before the server's reply")
	}
	s.reply(optStartTLS, repAck, nil)
	if err := s.w.Flush(); err != nil {
		return err
	}
	// The handshake limit (negotiateWithin) bounds the TLS handshake too.
	conn := tls.Server(s.conn, s.srv.TLSConfig)
	if err := conn.Handshake(); err != nil {
		return fmt.Errorf("nbd: TLS handshake: %w", err)
	}
	s.conn = conn
	s.r = bufio.NewReaderSize(conn, 64<<10)
	s.w = bufio.NewWriterSize(conn, 64<<10)
	s.tlsActive = true
	s.structured = false
	s.metaExport = nil
	return nil
}
