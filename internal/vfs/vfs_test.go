package vfs

import (
	"bytes"
	"errors"
	"testing"
)

// shortReader serves data at most three bytes a call, then EOF (0 bytes),
// or fails at offset failAt.
type shortReader struct {
	data   []byte
	failAt int64
}

var errRead = errors.New("read failed")

func (r shortReader) Read(_ Handle, off int64, buf []byte) (int, error) {
	if r.failAt > 0 && off >= r.failAt {
		return 0, errRead
	}
	if off >= int64(len(r.data)) {
		return 0, nil
	}
	return copy(buf[:min(len(buf), 3)], r.data[off:]), nil
}

// TestReadBlockVia: short reads are continued, the rest past the file's
// end is zeroed (whatever buf held), and a failure is returned.
func TestReadBlockVia(t *testing.T) {
	data := []byte("0123456789")
	buf := bytes.Repeat([]byte{0xff}, 16)
	if err := ReadBlockVia(shortReader{data: data}, 1, 2, buf); err != nil {
		t.Fatal(err)
	}
	want := append([]byte("23456789"), make([]byte, 8)...)
	if !bytes.Equal(buf, want) {
		t.Fatalf("got %q, want %q", buf, want)
	}
	if err := ReadBlockVia(shortReader{data: data, failAt: 6}, 1, 0, buf); !errors.Is(err, errRead) {
		t.Fatalf("err = %v, want the read's failure", err)
	}
}
