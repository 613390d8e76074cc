package s3store

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"syscall"
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
	if err := o.put(1, data, nil, crc32.Checksum(data, castagnoli)); err != nil {
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

// A pack sent from its memfd (sendfile) stores the file's first
// len(data) bytes, wherever the file's offset was and however much
// longer the file is, on every upload of it.
func TestPutFromMemfd(t *testing.T) {
	m := newMappedPackMem(1 << 20)
	if m == nil {
		t.Skip("no memfd here")
	}
	defer m.release()
	srv := s3test.Start(t)
	o := newObjects(testConfig(t, srv, "memfd"))
	data := append(m.data, bytes.Repeat([]byte("memfd!"), 120000)...)
	for num := uint32(1); num <= 2; num++ {
		if _, err := m.file.Seek(0, io.SeekEnd); err != nil {
			t.Fatal(err)
		}
		if f := m.fileOf(data); f != m.file {
			t.Fatalf("fileOf the mapping's bytes is %v", f)
		}
		if err := o.put(num, data, m.fileOf(data), crc32.Checksum(data, castagnoli)); err != nil {
			t.Fatal(err)
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
	if f := m.fileOf(append(data[:len(data):len(data)], 1)); f != nil {
		t.Fatal("fileOf a copy on the heap names the memfd")
	}
}

var _ syscall.Conn = fileBody{} // what makes net/http use sendfile
