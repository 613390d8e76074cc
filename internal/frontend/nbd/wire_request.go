package nbd

import "encoding/binary"

// Decoding of transmission-phase requests.

const requestHeaderLen = 28

// requestHeader is a decoded request; the payload of NBD_CMD_WRITE follows
// it on the wire and is read separately.
type requestHeader struct {
	Flags  uint16
	Type   uint16
	Cookie uint64
	Offset uint64
	Length uint32
}

// parseRequestHeader decodes the 28-byte request header.
func parseRequestHeader(b [requestHeaderLen]byte) (requestHeader, error) {
	if binary.BigEndian.Uint32(b[0:4]) != magicRequest {
		return requestHeader{}, errBadMagic
	}
	return requestHeader{
		Flags:  binary.BigEndian.Uint16(b[4:6]),
		Type:   binary.BigEndian.Uint16(b[6:8]),
		Cookie: binary.BigEndian.Uint64(b[8:16]),
		Offset: binary.BigEndian.Uint64(b[16:24]),
		Length: binary.BigEndian.Uint32(b[24:28]),
	}, nil
}

// appendRequestHeader encodes a request header; the server never sends one,
// but tests and fuzzers build traffic with it.
func appendRequestHeader(b []byte, h requestHeader) []byte {
	b = binary.BigEndian.AppendUint32(b, magicRequest)
	b = binary.BigEndian.AppendUint16(b, h.Flags)
	b = binary.BigEndian.AppendUint16(b, h.Type)
	b = binary.BigEndian.AppendUint64(b, h.Cookie)
	b = binary.BigEndian.AppendUint64(b, h.Offset)
	return binary.BigEndian.AppendUint32(b, h.Length)
}
