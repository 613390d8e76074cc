package filelock

import (
	"encoding/binary"
	"errors"
)

// recordSize is the encoded size of one lock: start, end, pid, type.
const recordSize = 8 + 8 + 4 + 1

// maxLocks bounds the locks one owner may hold on one file, so that a
// record stays small; a request past it fails with ENOLCK.
const maxLocks = 1024

// ErrDecode is returned for a value that is not an encoded lock list.
var ErrDecode = errors.New("filelock: bad lock record")

// Encode encodes an owner's locks.
func Encode(ls []Lock) []byte {
	b := make([]byte, 0, len(ls)*recordSize)
	for _, l := range ls {
		b = binary.BigEndian.AppendUint64(b, l.Start)
		b = binary.BigEndian.AppendUint64(b, l.End)
		b = binary.BigEndian.AppendUint32(b, l.Pid)
		b = append(b, byte(l.Type))
	}
	return b
}

// Decode decodes what Encode encoded; every lock must be valid and the
// list sorted without overlaps.
func Decode(b []byte) ([]Lock, error) {
	if len(b)%recordSize != 0 || len(b)/recordSize > maxLocks {
		return nil, ErrDecode
	}
	ls := make([]Lock, 0, len(b)/recordSize)
	for ; len(b) > 0; b = b[recordSize:] {
		l := Lock{
			Start: binary.BigEndian.Uint64(b),
			End:   binary.BigEndian.Uint64(b[8:]),
			Pid:   binary.BigEndian.Uint32(b[16:]),
			Type:  uint32(b[20]),
		}
		if !l.Valid() || l.Type == Unlock {
			return nil, ErrDecode
		}
		if n := len(ls); n > 0 && ls[n-1].End >= l.Start {
			return nil, ErrDecode
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// TooMany reports whether an owner may not hold ls (ENOLCK).
func TooMany(ls []Lock) bool { return len(ls) > maxLocks }
