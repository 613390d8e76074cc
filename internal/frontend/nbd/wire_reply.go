package nbd

import "encoding/binary"

// Encoding of transmission-phase replies: simple replies and structured
// reply chunks.

const (
	simpleReplyHeaderLen = 16
	structHeaderLen      = 20
)

// appendSimpleReply encodes a simple reply header; READ data follows it.
func appendSimpleReply(b []byte, errno Errno, cookie uint64) []byte {
	b = binary.BigEndian.AppendUint32(b, magicSimpleReply)
	b = binary.BigEndian.AppendUint32(b, uint32(errno))
	return binary.BigEndian.AppendUint64(b, cookie)
}

// appendChunkHeader encodes a structured reply chunk header.
func appendChunkHeader(b []byte, flags, chunkType uint16, cookie uint64, length uint32) []byte {
	b = binary.BigEndian.AppendUint32(b, magicStructReply)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint16(b, chunkType)
	b = binary.BigEndian.AppendUint64(b, cookie)
	return binary.BigEndian.AppendUint32(b, length)
}

// appendOffsetDataHeader encodes the header and offset of an OFFSET_DATA
// chunk; dataLen bytes of data must follow.
func appendOffsetDataHeader(b []byte, flags uint16, cookie, offset uint64, dataLen int) []byte {
	b = appendChunkHeader(b, flags, replyTypeOffsetData, cookie, uint32(8+dataLen))
	return binary.BigEndian.AppendUint64(b, offset)
}

// appendErrorChunk encodes a complete ERROR chunk (always the final chunk
// here); the message is cut to the protocol's string limit.
func appendErrorChunk(b []byte, cookie uint64, errno Errno, msg string) []byte {
	if len(msg) > maxStringLen {
		msg = msg[:maxStringLen]
	}
	b = appendChunkHeader(b, replyFlagDone, replyTypeError, cookie, uint32(6+len(msg)))
	b = binary.BigEndian.AppendUint32(b, uint32(errno))
	b = binary.BigEndian.AppendUint16(b, uint16(len(msg)))
	return append(b, msg...)
}

// appendNoneChunk encodes the empty final chunk.
func appendNoneChunk(b []byte, cookie uint64) []byte {
	return appendChunkHeader(b, replyFlagDone, replyTypeNone, cookie, 0)
}

// wireExtent is one block status descriptor.
type wireExtent struct {
	Length uint32
	Flags  uint32
}

// appendBlockStatusChunk encodes a complete BLOCK_STATUS chunk for one
// metadata context.
func appendBlockStatusChunk(b []byte, flags uint16, cookie uint64, contextID uint32, extents []wireExtent) []byte {
	b = appendChunkHeader(b, flags, replyTypeBlockStatus, cookie, uint32(4+8*len(extents)))
	b = binary.BigEndian.AppendUint32(b, contextID)
	for _, e := range extents {
		b = binary.BigEndian.AppendUint32(b, e.Length)
		b = binary.BigEndian.AppendUint32(b, e.Flags)
	}
	return b
}
