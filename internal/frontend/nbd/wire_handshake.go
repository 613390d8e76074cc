package nbd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Encoding and decoding of the handshake phase: greeting, client flags,
// option requests and option replies. No session state lives here.

var errBadMagic = errors.New("nbd: bad magic")

// appendGreeting encodes the server's opening of fixed newstyle negotiation.
func appendGreeting(b []byte, flags uint16) []byte {
	b = binary.BigEndian.AppendUint64(b, magicNBD)
	b = binary.BigEndian.AppendUint64(b, magicIHaveOpt)
	return binary.BigEndian.AppendUint16(b, flags)
}

// readClientFlags reads the client's 32-bit flags field.
func readClientFlags(r io.Reader) (uint32, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b[:]), nil
}

// optionHeader is the fixed part of a client option.
type optionHeader struct {
	Option uint32
	Length uint32
}

const optionHeaderLen = 16

// parseOptionHeader decodes the 16-byte option header.
func parseOptionHeader(b [optionHeaderLen]byte) (optionHeader, error) {
	if binary.BigEndian.Uint64(b[0:8]) != magicIHaveOpt {
		return optionHeader{}, errBadMagic
	}
	return optionHeader{
		Option: binary.BigEndian.Uint32(b[8:12]),
		Length: binary.BigEndian.Uint32(b[12:16]),
	}, nil
}

// appendOptionReply encodes one option reply with its payload.
func appendOptionReply(b []byte, option, replyType uint32, payload []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, magicOptionReply)
	b = binary.BigEndian.AppendUint32(b, option)
	b = binary.BigEndian.AppendUint32(b, replyType)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// appendExportNameReply encodes the reply to NBD_OPT_EXPORT_NAME.
func appendExportNameReply(b []byte, size uint64, flags uint16, noZeroes bool) []byte {
	b = binary.BigEndian.AppendUint64(b, size)
	b = binary.BigEndian.AppendUint16(b, flags)
	if !noZeroes {
		b = append(b, make([]byte, exportNameZeroPad)...)
	}
	return b
}

// Payloads of NBD_REP_INFO and NBD_REP_SERVER replies.

func infoExportPayload(size uint64, flags uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, infoExport)
	b = binary.BigEndian.AppendUint64(b, size)
	return binary.BigEndian.AppendUint16(b, flags)
}

func infoStringPayload(infoType uint16, s string) []byte {
	b := binary.BigEndian.AppendUint16(nil, infoType)
	return append(b, s...)
}

func infoBlockSizePayload(min, preferred, max uint32) []byte {
	b := binary.BigEndian.AppendUint16(nil, infoBlockSize)
	b = binary.BigEndian.AppendUint32(b, min)
	b = binary.BigEndian.AppendUint32(b, preferred)
	return binary.BigEndian.AppendUint32(b, max)
}

func serverPayload(name, description string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	b = append(b, name...)
	return append(b, description...)
}

func metaContextPayload(id uint32, name string) []byte {
	b := binary.BigEndian.AppendUint32(nil, id)
	return append(b, name...)
}

// infoRequest is the data of NBD_OPT_INFO and NBD_OPT_GO.
type infoRequest struct {
	Name     string
	InfoReqs []uint16
}

// parseInfoRequest decodes NBD_OPT_INFO / NBD_OPT_GO data; the name length
// and the request count must account for every byte.
func parseInfoRequest(data []byte) (infoRequest, error) {
	if len(data) < 6 {
		return infoRequest{}, fmt.Errorf("nbd: info request of %d bytes", len(data))
	}
	nameLen := binary.BigEndian.Uint32(data[0:4])
	if uint64(nameLen) > uint64(len(data)-6) || nameLen > maxStringLen {
		return infoRequest{}, fmt.Errorf("nbd: export name length %d does not fit", nameLen)
	}
	rest := data[4+nameLen:]
	n := int(binary.BigEndian.Uint16(rest[0:2]))
	rest = rest[2:]
	if len(rest) != 2*n {
		return infoRequest{}, fmt.Errorf("nbd: %d information requests in %d bytes", n, len(rest))
	}
	req := infoRequest{Name: string(data[4 : 4+nameLen]), InfoReqs: make([]uint16, n)}
	for i := range req.InfoReqs {
		req.InfoReqs[i] = binary.BigEndian.Uint16(rest[2*i:])
	}
	return req, nil
}

// metaContextRequest is the data of NBD_OPT_LIST_META_CONTEXT and
// NBD_OPT_SET_META_CONTEXT.
type metaContextRequest struct {
	Name    string
	Queries []string
}

// parseMetaContextRequest decodes meta context option data. The query count
// is not trusted for allocation: each query needs at least 4 bytes.
func parseMetaContextRequest(data []byte) (metaContextRequest, error) {
	if len(data) < 8 {
		return metaContextRequest{}, fmt.Errorf("nbd: meta context request of %d bytes", len(data))
	}
	nameLen := binary.BigEndian.Uint32(data[0:4])
	if uint64(nameLen) > uint64(len(data)-8) || nameLen > maxStringLen {
		return metaContextRequest{}, fmt.Errorf("nbd: export name length %d does not fit", nameLen)
	}
	req := metaContextRequest{Name: string(data[4 : 4+nameLen])}
	rest := data[4+nameLen:]
	n := binary.BigEndian.Uint32(rest[0:4])
	rest = rest[4:]
	if uint64(n)*4 > uint64(len(rest)) {
		return metaContextRequest{}, fmt.Errorf("nbd: %d queries in %d bytes", n, len(rest))
	}
	req.Queries = make([]string, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(rest) < 4 {
			return metaContextRequest{}, errors.New("nbd: truncated query")
		}
		qLen := binary.BigEndian.Uint32(rest[0:4])
		rest = rest[4:]
		if uint64(qLen) > uint64(len(rest)) || qLen > maxStringLen {
			return metaContextRequest{}, fmt.Errorf("nbd: query length %d does not fit", qLen)
		}
		req.Queries = append(req.Queries, string(rest[:qLen]))
		rest = rest[qLen:]
	}
	if len(rest) != 0 {
		return metaContextRequest{}, fmt.Errorf("nbd: %d trailing bytes after queries", len(rest))
	}
	return req, nil
}
