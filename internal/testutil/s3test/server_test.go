package s3test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// An object put survives a stop and restart of the server; while it is
// stopped, nothing listens on its address.
func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	c := s.Client()
	ctx := context.Background()
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("a/b"),
		Body: strings.NewReader("hello")})
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if conn, err := net.Dial("tcp", strings.TrimPrefix(s.Endpoint, "http://")); err == nil {
		conn.Close()
		t.Fatal("something still listens after Stop")
	}
	s.Restart(t)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("a/b")})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err != nil || !bytes.Equal(got, []byte("hello")) {
		t.Fatalf("read back %q, %v", got, err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("missing")})
	var nsk interface{ ErrorCode() string }
	if !errors.As(err, &nsk) || nsk.ErrorCode() != "NoSuchKey" {
		t.Fatalf("get of a missing key: %v, want NoSuchKey", err)
	}
}
