package s3store

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"net"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// A pack body that does not match its CRC32C header is refused by the
// server (what stands in for the payload signature put leaves out), and
// put's own uploads read back.
func TestPutChecksumRefused(t *testing.T) {
	srv := s3test.Start(t)
	o := newObjects(testConfig(t, srv, "crc"))
	data := bytes.Repeat([]byte("doppel"), 100000)
	if err := o.put(1, data, crc32.Checksum(data, castagnoli)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if err := o.get(1, 0, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %v", err)
	}
	damaged := append([]byte(nil), data...)
	damaged[len(damaged)/2] ^= 1
	_, err := o.c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &o.bucket, Key: aws.String(o.key(2)),
		Body: bytes.NewReader(damaged), ContentLength: aws.Int64(int64(len(damaged))),
		ChecksumCRC32C: aws.String(crc32cBase64(crc32.Checksum(data, castagnoli)))},
		s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware))
	if err == nil {
		t.Fatal("the server took a body that does not match its CRC32C")
	}
	if err := o.get(2, 0, got[:1]); err == nil {
		t.Fatal("the refused pack exists")
	}
}

// A pack's body goes to the socket with one write, from a pack's
// mapping and from the heap alike, and the object holds exactly its
// bytes, on every upload of it.
func TestPutWritesBodyWhole(t *testing.T) {
	m := newMappedPackMem(1 << 20)
	if m == nil {
		t.Skip("no anonymous mapping here")
	}
	defer m.release()
	srv := s3test.Start(t)
	o := newObjects(testConfig(t, srv, "whole"))
	mapped := append(m.data, bytes.Repeat([]byte("mapped"), 120000)...)
	heap := bytes.Repeat([]byte("heap!"), 70000)
	for num, data := range map[uint32][]byte{1: mapped, 2: mapped, 3: heap} {
		before := bodiesWrittenWhole.Load()
		if err := o.put(num, data, crc32.Checksum(data, castagnoli)); err != nil {
			t.Fatal(err)
		}
		if n := bodiesWrittenWhole.Load() - before; n != 1 {
			t.Errorf("pack %d: %d bodies written whole, want 1", num, n)
		}
		obj, err := o.head(num)
		if err != nil || obj.size != int64(len(data)) {
			t.Fatalf("pack %d: %d bytes (%v), want %d", num, obj.size, err, len(data))
		}
		got := make([]byte, len(data))
		if err := o.get(num, 0, got); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("pack %d reads back different (%v)", num, err)
		}
	}
}

// wholeWriteConn writes the unread rest of a wholeBody, up to net/http's
// limit, with one Write; other readers go through the connection's own
// ReadFrom or a copy.
func TestWholeWriteConnWritesOnce(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	body := &wholeBody{data: data}
	head := make([]byte, 100)
	if n, _ := body.Read(head); n != 100 {
		t.Fatal("short read")
	}
	rec := &writeRecorder{}
	c := wholeWriteConn{rec}
	lr := &io.LimitedReader{R: body, N: int64(len(data) - 100)}
	n, err := c.ReadFrom(lr)
	if err != nil || n != int64(len(data)-100) || len(rec.writes) != 1 || !bytes.Equal(rec.writes[0], data[100:]) {
		t.Fatalf("ReadFrom: %d, %v, %d writes", n, err, len(rec.writes))
	}
	if lr.N != 0 {
		t.Fatalf("limit left at %d", lr.N)
	}
	if m, err := body.Read(head); m != 0 || err != io.EOF {
		t.Fatalf("body after: %d, %v", m, err)
	}
	rec.writes = nil
	if n, err := c.ReadFrom(bytes.NewReader(data)); err != nil || n != int64(len(data)) || !bytes.Equal(bytes.Join(rec.writes, nil), data) {
		t.Fatalf("other reader: %d, %v", n, err)
	}
}

// writeRecorder is a net.Conn that keeps what is written to it.
type writeRecorder struct {
	net.Conn
	writes [][]byte
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return len(p), nil
}

var _ io.ReaderFrom = wholeWriteConn{} // what net/http hands the body to
