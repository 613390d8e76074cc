package nbd

import (
	"errors"
	"io"
	"math"
)

// execute carries out one validated request against the backend and sends
// its reply.
func (s *session) execute(rw *replyWriter, req *request) {
	b := s.export.Backend
	off, length := int64(req.Offset), int64(req.Length)
	fua := req.Flags&cmdFlagFUA != 0
	var err error
	if length == 0 && (req.Type == cmdTrim || req.Type == cmdWriteZeroes || req.Type == cmdCache) {
		// The protocol leaves empty ranges unspecified; answering success
		// without a backend call spares backends that edge case.
		rw.send(appendSimpleReply(nil, 0, req.Cookie))
		return
	}
	switch req.Type {
	case cmdRead:
		s.read(rw, req)
		return
	case cmdBlockStatus:
		s.blockStatusReply(rw, req)
		return
	case cmdWrite:
		req.turn.wait()
		err = b.WriteAt(req.payload, off, fua)
		req.turn.done()
	case cmdFlush:
		err = b.Flush()
	case cmdTrim:
		err = b.Trim(off, length)
		if err == nil && fua {
			err = b.Flush()
		}
	case cmdCache:
		err = b.Cache(off, length)
	case cmdWriteZeroes:
		noHole := req.Flags&cmdFlagNoHole != 0
		if req.Flags&cmdFlagFastZero != 0 {
			// validate admits the flag only when the backend is a FastZeroer.
			if !b.(FastZeroer).ZeroIsFast(off, length, noHole) {
				s.sendError(rw, req, ENOTSUP)
				return
			}
		}
		err = b.Zero(off, length, noHole)
		if err == nil && fua {
			err = b.Flush()
		}
	}
	if err != nil {
		s.sendError(rw, req, errnoOf(err))
		return
	}
	rw.send(appendSimpleReply(nil, 0, req.Cookie))
}

// read answers NBD_CMD_READ. The data is read completely before the reply
// header goes out, so a backend error can still be reported cleanly (a
// simple reply cannot signal an error once its header is sent).
func (s *session) read(rw *replyWriter, req *request) {
	buf := getPayload(int(req.Length))
	defer putPayload(buf) // send has written or copied it when it returns
	n, err := s.export.Backend.ReadAt(buf, int64(req.Offset))
	if n == len(buf) && errors.Is(err, io.EOF) {
		err = nil
	}
	if err == nil && n < len(buf) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		s.sendError(rw, req, errnoOf(err))
		return
	}
	if !s.structured {
		rw.send(appendSimpleReply(nil, 0, req.Cookie), buf)
		return
	}
	if len(buf) == 0 {
		// OFFSET_DATA must carry at least one byte.
		rw.send(appendNoneChunk(nil, req.Cookie))
		return
	}
	// One chunk only, so NBD_CMD_FLAG_DF is always honoured.
	rw.send(appendOffsetDataHeader(nil, replyFlagDone, req.Cookie, req.Offset, len(buf)), buf)
}

// blockStatusReply answers NBD_CMD_BLOCK_STATUS for base:allocation.
func (s *session) blockStatusReply(rw *replyWriter, req *request) {
	extents, err := s.export.Backend.BlockStatus(int64(req.Offset), int64(req.Length))
	if err != nil {
		s.sendError(rw, req, errnoOf(err))
		return
	}
	wire := wireExtents(extents, req.Length, req.Flags&cmdFlagReqOne != 0)
	rw.send(appendBlockStatusChunk(nil, replyFlagDone, req.Cookie, metaContextIDBaseAllocation, wire))
}

// wireExtents turns a backend's answer into descriptors the protocol
// allows, whatever the backend returned: no empty extents, neighbours with
// equal flags merged, nothing beyond the requested length (so nothing beyond
// the export), only the two base:allocation bits, at most
// maxExtentsPerReply, one extent with reqOne, and at least one extent (flags
// 0, "allocated, contents unknown", is always a truthful answer).
func wireExtents(extents []Extent, length uint32, reqOne bool) []wireExtent {
	var out []wireExtent
	remaining := uint64(length)
	for _, e := range extents {
		if remaining == 0 || len(out) == maxExtentsPerReply {
			break
		}
		if e.Length <= 0 {
			continue
		}
		n := min(uint64(e.Length), remaining, math.MaxUint32)
		flags := uint32(e.Flags & (ExtentHole | ExtentZero))
		remaining -= n
		if k := len(out); k > 0 && out[k-1].Flags == flags && uint64(out[k-1].Length)+n <= math.MaxUint32 {
			out[k-1].Length += uint32(n)
			continue
		}
		out = append(out, wireExtent{Length: uint32(n), Flags: flags})
	}
	if len(out) == 0 {
		return []wireExtent{{Length: length, Flags: 0}}
	}
	if reqOne {
		out = out[:1]
	}
	return out
}

// sendError reports a failed request. With structured replies the error
// goes in an ERROR chunk (mandatory for READ, preferred otherwise); the
// message names the command, not backend details, since it is shown to
// whoever connects.
func (s *session) sendError(rw *replyWriter, req *request, errno Errno) error {
	if s.structured {
		return rw.send(appendErrorChunk(nil, req.Cookie, errno, commandName(req.Type)+": "+errno.Error()))
	}
	return rw.send(appendSimpleReply(nil, errno, req.Cookie))
}

func commandName(t uint16) string {
	switch t {
	case cmdRead:
		return "read"
	case cmdWrite:
		return "write"
	case cmdFlush:
		return "flush"
	case cmdTrim:
		return "trim"
	case cmdCache:
		return "cache"
	case cmdWriteZeroes:
		return "write zeroes"
	case cmdBlockStatus:
		return "block status"
	}
	return "unknown command"
}
