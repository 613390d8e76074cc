package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/doppelfs/doppel/internal/blob/s3store"
	"github.com/doppelfs/doppel/internal/testutil/voltest"
	dvolume "github.com/doppelfs/doppel/internal/volume"
)

// Reading and damaging the pack objects of an unmounted volume whose
// chunk data is in S3, for the tests of damage.

// needS3Data skips a test that damages pack objects unless the volume's
// chunk data is in S3.
func needS3Data(t testing.TB) {
	t.Helper()
	if !voltest.S3() {
		t.Skip("damages pack objects; the volume's chunk data is not in S3")
	}
}

// packObject is the bucket and key of pack num of the unmounted volume in
// store, from its shared.json.
func packObject(t *testing.T, store string, num uint32) (bucket, key string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(store, dvolume.SharedFile))
	if err != nil {
		t.Fatal(err)
	}
	var shared struct{ Data string }
	if err := json.Unmarshal(raw, &shared); err != nil {
		t.Fatalf("%s: %v", dvolume.SharedFile, err)
	}
	cfg, err := s3store.ParseURL(shared.Data)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Bucket, s3store.PackKey(cfg.Prefix, num)
}

// dropReadCache removes the unmounted volume's local read cache, so that
// the next mount reads chunks from the bucket (losing it loses no data).
func (d *damageFixture) dropReadCache(t *testing.T) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(d.v.Store, dvolume.S3Dir, "cache")); err != nil {
		t.Fatal(err)
	}
}

// editPack replaces pack num's object with what edit makes of its bytes.
func (d *damageFixture) editPack(t *testing.T, num uint32, edit func([]byte) []byte) {
	t.Helper()
	bucket, key := packObject(t, d.v.Store, num)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := voltest.S3Client()
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get pack %s: %v", key, err)
	}
	body, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatalf("get pack %s: %v", key, err)
	}
	body = edit(body)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("put pack %s: %v", key, err)
	}
}

// deletePack deletes pack num's object.
func (d *damageFixture) deletePack(t *testing.T, num uint32) {
	t.Helper()
	bucket, key := packObject(t, d.v.Store, num)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := voltest.S3Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete pack %s: %v", key, err)
	}
}
