package nbd

import (
	"math/bits"
	"sync"
)

// Payload buffers (READ replies' data, WRITE requests' data) come from
// pools by power-of-two size class. Allocated afresh, every 1 MiB request
// cost the runtime a large allocation zeroed before use and garbage right
// after: nbdcopy out of an export spent about 8 % of the server's CPU
// clearing memory that the read then overwrote.

const (
	minPayloadShift = 12 // the smallest class: 4 KiB
	maxPayloadShift = 25 // MaxPayload
)

var payloadPools [maxPayloadShift - minPayloadShift + 1]sync.Pool

// payloadClass is the index of the smallest class that holds n bytes, or
// -1 for more than MaxPayload.
func payloadClass(n int) int {
	shift := minPayloadShift
	if n > 1<<minPayloadShift {
		shift = bits.Len(uint(n - 1))
	}
	if shift > maxPayloadShift {
		return -1
	}
	return shift - minPayloadShift
}

// getPayload returns a buffer of n bytes whose contents are undefined: the
// caller overwrites all of it (a read fills it whole or fails, a request's
// payload is read into it whole).
func getPayload(n int) []byte {
	c := payloadClass(n)
	if n == 0 || c < 0 {
		return make([]byte, n)
	}
	if p, ok := payloadPools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(c+minPayloadShift))
}

// putPayload gives back a buffer from getPayload that nothing uses any
// more. Others are left to the garbage collector.
func putPayload(b []byte) {
	c := payloadClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minPayloadShift) {
		return
	}
	b = b[:cap(b)]
	payloadPools[c].Put(&b)
}
