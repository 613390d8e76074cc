package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

const mib = 1 << 20

// TestNBDClients drives an export of an unmounted volume's new file with
// real clients: nbdinfo, qemu-io, qemu-img and nbdcopy, one and several
// at a time, and checks what they read back and the holes they see.
func TestNBDClients(t *testing.T) {
	requireNBDTools(t, "qemu-img", "nbdcopy")
	store := newStore(t)
	srv := startNBD(t, "--store", store, "--create", "64M", "/disk.img")
	if _, err := os.Stat(filepath.Join(store, "nbd.sock")); err != nil {
		t.Fatalf("the default socket is not in the store: %v", err)
	}
	uri := srv.URI("disk.img")
	if got := exportSize(t, uri); got != 64*mib {
		t.Fatalf("export size %d, want %d", got, 64*mib)
	}
	if m := nbdMap(t, uri); len(m) != 1 || !m[0].Hole {
		t.Fatalf("a new export is not one hole: %+v", m)
	}

	// qemu-io: data, a discard inside it, zeroes, an all-zero write.
	qemuIO(t, uri, "write -P 0x5a 0 4M", "discard 1M 1M", "write -z 2M 1M", "write -P 0 3M 1M",
		"read -P 0x5a 0 1M", "read -P 0 1M 3M")
	m := nbdMap(t, uri)
	want := []mapExtent{{0, 1 * mib, false}, {1 * mib, 63 * mib, true}}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Fatalf("map after write, discard, write -z and a zero write: %+v, want %+v", m, want)
	}

	// qemu-img: a random image in, compared, and out again.
	img := testutil.SeededBytes(1, 64*mib)
	clear(img[8*mib : 24*mib]) // a hole the copy must keep
	src := writeTemp(t, img)
	runClient(t, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src, uri)
	runClient(t, "qemu-img", "compare", "-f", "raw", "-F", "raw", src, uri)
	out := filepath.Join(t.TempDir(), "out.img")
	runClient(t, "qemu-img", "convert", "-f", "raw", "-O", "raw", uri, out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, img) {
		t.Fatal("qemu-img convert out of the export differs from what went in")
	}
	for _, e := range nbdMap(t, uri) {
		if !e.Hole && e.Off < 24*mib && e.Off+e.Len > 8*mib {
			t.Fatalf("the zero range 8-24 MiB written by qemu-img is not a hole: %+v", nbdMap(t, uri))
		}
	}

	// nbdcopy both ways.
	img2 := testutil.SeededBytes(2, 64*mib)
	runClient(t, "nbdcopy", writeTemp(t, img2), uri)
	out2 := filepath.Join(t.TempDir(), "out2.img")
	runClient(t, "nbdcopy", uri, out2)
	if got, _ := os.ReadFile(out2); !bytes.Equal(got, img2) {
		t.Fatal("nbdcopy out of the export differs from what went in")
	}

	// Several connections at once, each on its own 8 MiB, with flushes;
	// then every region read back on a new connection.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := exec.Command("qemu-io", "-f", "raw",
				"-c", fmt.Sprintf("write -P %d %dM 4M", i+1, i*8), "-c", "flush",
				"-c", fmt.Sprintf("discard %dM 4M", i*8+4), "-c", fmt.Sprintf("read -P %d %dM 4M", i+1, i*8), uri)
			if out, err := c.CombinedOutput(); err != nil || bytes.Contains(out, []byte("fail")) {
				errs <- fmt.Errorf("connection %d: %v\n%s", i, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var cmds []string
	for i := range 8 {
		cmds = append(cmds, fmt.Sprintf("read -P %d %dM 4M", i+1, i*8), fmt.Sprintf("read -P 0 %dM 4M", i*8+4))
	}
	qemuIO(t, uri, cmds...)
	srv.Stop(t)

	// Everything was flushed at exit: the file reads the same after.
	srv = startNBD(t, "--store", store, "--read-only", "/disk.img")
	qemuIORead(t, srv.URI("disk.img"), cmds...)
	if out, err := exec.Command("qemu-io", "-f", "raw", "-c", "write 0 4k", srv.URI("disk.img")).CombinedOutput(); err == nil && !bytes.Contains(out, []byte("ermission denied")) {
		t.Errorf("a read-only export took a write:\n%s", out)
	}
	srv.Stop(t)
	if out, err := runDoppel(5*time.Minute, "fsck", "--store", store); err != nil {
		t.Fatalf("doppel fsck: %v\n%s", err, out)
	}
}
