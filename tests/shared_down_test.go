package tests

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestSharedVolumeServicesDownAtMount (issue 14, item 6): with the S3
// server, or PostgreSQL, down, doppel mount fails within a bounded time,
// with a non-zero exit and a message that names the service that could
// not be reached, and leaves nothing mounted; once the service is back,
// the volume mounts and reads back what was written before.
func TestSharedVolumeServicesDownAtMount(t *testing.T) {
	v, srv, pg := s3Volume(t, "down")
	data := testutil.SeededBytes(21, 1<<20)
	testutil.Check(t, writeSynced(v.path("f"), data))
	v.umount(t)

	mountFails := func(service string, want ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		out, err := exec.CommandContext(ctx, doppelBin, "mount", "--store", v.Store, v.Mnt).CombinedOutput()
		took := time.Since(start)
		if err == nil || isMounted(v.Mnt) {
			v.mounted = isMounted(v.Mnt)
			t.Fatalf("%s down: doppel mount succeeded (%v)\n%s", service, err, out)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s down: doppel mount did not give up within 5 minutes\n%s", service, out)
		}
		msg := strings.ToLower(string(out))
		for _, w := range want {
			if !strings.Contains(msg, strings.ToLower(w)) {
				t.Errorf("%s down: doppel mount says\n%s\nwant it to mention %q", service, out, w)
			}
		}
		t.Logf("%s down: doppel mount failed after %.1f s: %s", service, took.Seconds(), strings.TrimSpace(string(out)))
	}

	srv.Stop()
	mountFails("S3", "s3", strings.TrimPrefix(srv.Endpoint, "http://"))
	srv.Restart(t)

	pg.Stop()
	mountFails("PostgreSQL", "postgres")
	pg.Resume(t)

	v.mount(t)
	wantFile(t, v.path("f"), data)
}
