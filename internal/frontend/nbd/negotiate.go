package nbd

import (
	"errors"
	"fmt"
	"io"
)

// negotiate runs the fixed newstyle handshake. It returns the export the
// client chose, or nil if the client aborted.
func (s *session) negotiate() (*Export, error) {
	s.w.Write(appendGreeting(nil, handshakeFixedNewstyle|handshakeNoZeroes))
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	clientFlags, err := readClientFlags(s.r)
	if err != nil {
		return nil, err
	}
	if clientFlags&^clientKnownFlags != 0 {
		// The protocol requires dropping a client with flags we did not offer.
		return nil, fmt.Errorf("nbd: unknown client flags %#x", clientFlags)
	}
	s.noZeroes = clientFlags&clientNoZeroes != 0

	for n := 0; ; n++ {
		if n == maxOptions {
			return nil, fmt.Errorf("nbd: more than %d options", maxOptions)
		}
		var hb [optionHeaderLen]byte
		if _, err := io.ReadFull(s.r, hb[:]); err != nil {
			return nil, err
		}
		h, err := parseOptionHeader(hb)
		if err != nil {
			return nil, err
		}
		if h.Length > maxOptionLen {
			return nil, fmt.Errorf("nbd: option %d with %d bytes of data", h.Option, h.Length)
		}
		data := make([]byte, h.Length)
		if _, err := io.ReadFull(s.r, data); err != nil {
			return nil, err
		}
		done, err := s.handleOption(h.Option, data)
		if err == nil {
			err = s.w.Flush()
		}
		if err != nil || done {
			if err == nil && s.export == nil {
				err = errClientGone // NBD_OPT_ABORT
			}
			return s.export, err
		}
	}
}

// handleOption answers one option; done reports the end of the handshake.
func (s *session) handleOption(opt uint32, data []byte) (done bool, err error) {
	if s.shuttingDown.Load() && opt != optAbort {
		if opt == optExportName {
			return true, errors.New("nbd: shutting down") // cannot be answered with an error
		}
		s.replyErr(opt, repErrShutdown, "server is shutting down")
		return false, nil
	}
	if s.srv.TLSConfig != nil && !s.tlsActive {
		return s.beforeTLS(opt, data)
	}
	switch opt {
	case optExportName:
		return true, s.optExportName(data)
	case optAbort:
		s.reply(opt, repAck, nil)
		return true, nil
	case optList:
		s.optList(data)
	case optInfo, optGo:
		return s.optInfoGo(opt, data), nil
	case optStructuredReply:
		if len(data) != 0 {
			s.replyErr(opt, repErrInvalid, "structured reply option takes no data")
			break
		}
		s.structured = true
		s.reply(opt, repAck, nil)
	case optListMetaContext, optSetMetaContext:
		s.optMetaContext(opt, data)
	case optStartTLS:
		if s.tlsActive {
			s.replyErr(opt, repErrInvalid, "TLS is already in use")
			break
		}
		s.replyErr(opt, repErrUnsup, "this server runs without TLS")
	default:
		s.replyErr(opt, repErrUnsup, "option not supported")
	}
	return false, nil
}

func (s *session) reply(opt, replyType uint32, payload []byte) {
	s.w.Write(appendOptionReply(nil, opt, replyType, payload))
}

func (s *session) replyErr(opt, replyType uint32, msg string) {
	s.reply(opt, replyType, []byte(msg))
}

// optExportName ends the handshake the old way; an unknown export can only
// be refused by hanging up.
func (s *session) optExportName(data []byte) error {
	if len(data) > maxStringLen {
		return fmt.Errorf("nbd: export name of %d bytes", len(data))
	}
	exp := s.srv.lookupExport(string(data))
	if exp == nil {
		return fmt.Errorf("nbd: unknown export %q", data)
	}
	s.enter(exp)
	s.w.Write(appendExportNameReply(nil, s.size, s.flags, s.noZeroes))
	return nil
}

// enter fixes what the transmission phase needs to know about the export.
func (s *session) enter(exp *Export) {
	s.export = exp
	s.size = uint64(exp.Backend.Size())
	s.flags = exp.transmissionFlags(s.structured)
	s.blockStatus = s.structured && s.metaExport == exp
}

func (s *session) optList(data []byte) {
	if len(data) != 0 {
		s.replyErr(optList, repErrInvalid, "list option takes no data")
		return
	}
	for _, e := range s.srv.exportList() {
		s.reply(optList, repServer, serverPayload(e.Name, e.Description))
	}
	s.reply(optList, repAck, nil)
}

// optInfoGo answers NBD_OPT_INFO and NBD_OPT_GO; it reports whether
// transmission starts.
func (s *session) optInfoGo(opt uint32, data []byte) bool {
	req, err := parseInfoRequest(data)
	if err != nil {
		s.replyErr(opt, repErrInvalid, err.Error())
		return false
	}
	exp := s.srv.lookupExport(req.Name)
	if exp == nil {
		s.replyErr(opt, repErrUnknown, "no such export")
		return false
	}
	size := uint64(exp.Backend.Size())
	flags := exp.transmissionFlags(s.structured)
	s.reply(opt, repInfo, infoExportPayload(size, flags))
	// Block sizes are always sent: clients ignore unrequested information
	// and the maximum payload is worth knowing.
	s.reply(opt, repInfo, infoBlockSizePayload(MinBlockSize, PreferredBlockSize, MaxPayload))
	sent := map[uint16]bool{infoExport: true, infoBlockSize: true}
	for _, t := range req.InfoReqs {
		if sent[t] {
			continue
		}
		sent[t] = true
		switch t {
		case infoName:
			s.reply(opt, repInfo, infoStringPayload(infoName, exp.Name))
		case infoDescription:
			s.reply(opt, repInfo, infoStringPayload(infoDescription, exp.Description))
		}
	}
	s.reply(opt, repAck, nil)
	if opt != optGo {
		return false
	}
	s.enter(exp)
	return true
}

// optMetaContext answers NBD_OPT_LIST_META_CONTEXT and
// NBD_OPT_SET_META_CONTEXT for the base:allocation context.
func (s *session) optMetaContext(opt uint32, data []byte) {
	set := opt == optSetMetaContext
	if set {
		// A SET replaces the selection even when it fails.
		s.metaExport = nil
	}
	if !s.structured {
		s.replyErr(opt, repErrInvalid, "negotiate structured replies first")
		return
	}
	req, err := parseMetaContextRequest(data)
	if err != nil {
		s.replyErr(opt, repErrInvalid, err.Error())
		return
	}
	exp := s.srv.lookupExport(req.Name)
	if exp == nil {
		s.replyErr(opt, repErrUnknown, "no such export")
		return
	}
	match := !set && len(req.Queries) == 0 // an empty LIST lists everything
	for _, q := range req.Queries {
		if q == metaContextBaseAllocation || (!set && q == "base:") {
			match = true
		}
	}
	if match {
		id := uint32(0) // the protocol reserves the id in LIST replies
		if set {
			id = metaContextIDBaseAllocation
			s.metaExport = exp
		}
		s.reply(opt, repMetaContext, metaContextPayload(id, metaContextBaseAllocation))
	}
	s.reply(opt, repAck, nil)
}
