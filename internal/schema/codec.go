package schema

import (
	"encoding/binary"
	"errors"
)

// ErrBadRecord is returned for a record that cannot be decoded.
var ErrBadRecord = errors.New("schema: malformed record")

// enc appends varint-encoded fields to a record.
type enc struct{ b []byte }

func (e *enc) u(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) i(v int64)    { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) raw(p []byte) { e.b = append(e.b, p...) }
func (e *enc) bytes(p []byte) {
	e.u(uint64(len(p)))
	e.b = append(e.b, p...)
}

// dec reads fields back; the first error sticks so callers check once.
type dec struct {
	b   []byte
	err error
}

func (d *dec) u() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = ErrBadRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) i() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = ErrBadRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) u32() uint32 {
	v := d.u()
	if v > 1<<32-1 {
		d.err = ErrBadRecord
	}
	return uint32(v)
}

func (d *dec) raw(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.b) < n {
		d.err = ErrBadRecord
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) bytes() []byte {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.err = ErrBadRecord
		return nil
	}
	return d.raw(int(n))
}

// format checks the leading format byte.
func (d *dec) format(want byte) {
	if p := d.raw(1); d.err == nil && p[0] != want {
		d.err = ErrBadRecord
	}
}

// end reports the sticky error, or ErrBadRecord if bytes are left over.
func (d *dec) end() error {
	if d.err == nil && len(d.b) != 0 {
		return ErrBadRecord
	}
	return d.err
}
