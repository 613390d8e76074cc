package tests

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestNBDCrash kills doppel nbd (which holds the unmounted volume) with
// SIGKILL during a load of random writes, each made durable by a FLUSH or
// by FUA: after the crash fsck finds no damage (and nothing at all once
// the volume was opened again), every durable write reads back, and the
// write in flight left each of its 4 KiB blocks either old or new.
func TestNBDCrash(t *testing.T) {
	requireNBDTools(t, "nbdcopy")
	const regions, regionSize = 16, 4 * mib
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	store := newStore(t)
	srv := startNBD(t, "--store", store, "--create", fmt.Sprint(regions*regionSize), "/disk.img")
	uri := srv.URI("disk.img")

	durable := make([][]byte, regions) // what each region holds
	for r := range durable {
		durable[r] = make([]byte, regionSize)
	}
	killAfter := time.Duration(1000+rng.IntN(3000)) * time.Millisecond
	killed := make(chan struct{})
	go func() {
		time.Sleep(killAfter)
		srv.Kill()
		close(killed)
	}()
	dir := t.TempDir()
	inFlight := -1
	var next []byte
	for i := 0; ; i++ {
		r := rng.IntN(regions)
		data := testutil.SeededBytes(seed+uint64(i), regionSize)
		src := filepath.Join(dir, fmt.Sprint(i))
		testutil.Check(t, os.WriteFile(src, data, 0o644))
		write := fmt.Sprintf("write -s %s %d %d", src, r*regionSize, regionSize)
		args := []string{"-f", "raw", "-c", write, "-c", "flush", uri}
		if i%2 == 1 {
			args = []string{"-f", "raw", "-c", "write -f" + write[len("write"):], uri}
		}
		out, err := exec.Command("qemu-io", args...).CombinedOutput()
		os.Remove(src)
		if err == nil && !bytes.Contains(out, []byte("fail")) {
			durable[r] = data
			continue
		}
		<-killed
		inFlight, next = r, data
		t.Logf("killed after %v, during write %d (region %d)", killAfter, i, r)
		break
	}

	// Chunks stored or freed but not yet punched when it died are
	// reclaimable, not damage; reopening the volume reclaims them.
	vol := &volume{Store: store}
	vol.runFsck(t, false)
	srv = startNBD(t, "--store", store, "--read-only", "/disk.img")
	img := filepath.Join(t.TempDir(), "after.img")
	runClient(t, "nbdcopy", srv.URI("disk.img"), img)
	srv.Stop(t)
	vol.fsckStrict(t)
	got, err := os.ReadFile(img)
	testutil.Check(t, err)
	for r := range regions {
		region := got[r*regionSize : (r+1)*regionSize]
		for b := 0; b < regionSize; b += 4096 {
			block, want := region[b:b+4096], durable[r][b:b+4096]
			if bytes.Equal(block, want) || r == inFlight && bytes.Equal(block, next[b:b+4096]) {
				continue
			}
			t.Fatalf("region %d, block at %d: neither what was made durable nor (in flight: region %d) what was being written", r, b, inFlight)
		}
	}
}
