package nbd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Conformance with real clients: nbdinfo and nbdcopy (libnbd-bin), qemu-io
// and qemu-img (qemu-utils), each against a server started in-process on a
// temporary Unix socket. A test is skipped when its client is not installed.

func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (apt-get install libnbd-bin qemu-utils); skipping", name)
	}
	return path
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, needTool(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func nbdURI(sock, export string) string {
	return fmt.Sprintf("nbd+unix:///%s?socket=%s", export, sock)
}

func TestConformanceNbdinfo(t *testing.T) {
	needTool(t, "nbdinfo")
	be := newMemBackend(8<<20 + 512)
	ts := newTestServer(t,
		Export{Name: "disk", Description: "doppel test", Backend: be},
		Export{Name: "ro", Backend: newMemBackend(1 << 20), ReadOnly: true})
	sock := ts.listenUnix(t)

	var info struct {
		Exports []map[string]any `json:"exports"`
	}
	if err := json.Unmarshal([]byte(runTool(t, "nbdinfo", "--json", nbdURI(sock, "disk"))), &info); err != nil || len(info.Exports) != 1 {
		t.Fatalf("nbdinfo --json: %v %v", err, info)
	}
	e := info.Exports[0]
	if e["export-size"] != float64(8<<20+512) || e["description"] != "doppel test" {
		t.Errorf("size/description: %v %v", e["export-size"], e["description"])
	}
	for _, key := range []string{"can_trim", "can_zero", "can_fast_zero", "can_multi_conn", "can_flush", "can_fua", "can_cache", "can_df"} {
		if e[key] != true {
			t.Errorf("%s = %v", key, e[key])
		}
	}
	if e["is_read_only"] != false || e["block_size_maximum"] != float64(MaxPayload) || e["block_size_preferred"] != float64(4096) {
		t.Errorf("read-only/block sizes: %v %v %v", e["is_read_only"], e["block_size_maximum"], e["block_size_preferred"])
	}

	out := runTool(t, "nbdinfo", "--json", nbdURI(sock, "ro"))
	if !strings.Contains(out, `"is_read_only": true`) {
		t.Errorf("read-only export:\n%s", out)
	}
	if out := runTool(t, "nbdinfo", "--list", "--json", nbdURI(sock, "")); !strings.Contains(out, `"disk"`) || !strings.Contains(out, `"ro"`) {
		t.Errorf("nbdinfo --list:\n%s", out)
	}

	// --map: fully written, then a discard and a zero write that may unmap
	// make holes, while a zero write that may not (NBD_CMD_FLAG_NO_HOLE)
	// stays allocated.
	full := bytes.Repeat([]byte{0x5a}, 8<<20+512)
	be.WriteAt(full, 0, false)
	if m := nbdMap(t, sock, "disk"); len(m) != 1 || m[0] != (mapEntry{0, 8<<20 + 512, 0}) {
		t.Fatalf("map of written disk: %v", m)
	}
	runTool(t, "qemu-io", "-f", "raw", "-c", "discard 1M 1M", "-c", "write -z -u 4M 512k", "-c", "write -z 6M 512k", nbdURI(sock, "disk"))
	want := []mapEntry{{0, 1 << 20, 0}, {1 << 20, 1 << 20, 3}, {2 << 20, 2 << 20, 0}, {4 << 20, 512 << 10, 3}, {4<<20 + 512<<10, 4<<20 - 512<<10 + 512, 0}}
	if m := nbdMap(t, sock, "disk"); fmt.Sprint(m) != fmt.Sprint(want) {
		t.Fatalf("map after discard and write -z:\n got %v\nwant %v", m, want)
	}
}

type mapEntry struct {
	Offset, Length int64
	Type           int
}

// nbdMap parses `nbdinfo --map` (offset, length, type, description).
func nbdMap(t *testing.T, sock, export string) []mapEntry {
	var m []mapEntry
	for _, line := range strings.Split(strings.TrimSpace(runTool(t, "nbdinfo", "--map", nbdURI(sock, export))), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("map line %q", line)
		}
		off, _ := strconv.ParseInt(f[0], 10, 64)
		n, _ := strconv.ParseInt(f[1], 10, 64)
		typ, _ := strconv.Atoi(f[2])
		m = append(m, mapEntry{off, n, typ})
	}
	return m
}

func TestConformanceQemuIo(t *testing.T) {
	needTool(t, "qemu-io")
	be := newMemBackend(4 << 20)
	ts := newTestServer(t, Export{Name: "disk", Backend: be}, Export{Name: "ro", Backend: newMemBackend(1 << 20), ReadOnly: true})
	sock := ts.listenUnix(t)
	out := runTool(t, "qemu-io", "-f", "raw",
		"-c", "write -P 0xab 0 256k",
		"-c", "write -f -P 0xcd 300k 4k", // FUA
		"-c", "write -P 0x11 1001 3333", // unaligned
		"-c", "read -P 0xab 0 1001",
		"-c", "read -P 0x11 1001 3333",
		"-c", "read -P 0xcd 300k 4k",
		"-c", "discard 64k 64k",
		"-c", "write -z 128k 64k",
		"-c", "read -P 0 128k 64k",
		"-c", "write -z -u 192k 8k", // may unmap
		"-c", "read -P 0 192k 8k",
		"-c", "flush",
		"-c", "read -P 0xab 200k 56k",
		nbdURI(sock, "disk"))
	if strings.Contains(out, "fail") || strings.Contains(out, "error") {
		t.Fatalf("qemu-io:\n%s", out)
	}
	data, alloc := be.snapshot()
	if data[0] != 0xab || data[1001] != 0x11 || data[300<<10] != 0xcd || data[128<<10] != 0 {
		t.Error("backend does not hold what qemu-io wrote")
	}
	if alloc[(64<<10)/memBlock] || alloc[(192<<10)/memBlock] {
		t.Error("discard / write -z -u left the range allocated")
	}
	if !alloc[(128<<10)/memBlock] {
		t.Error("write -z without -u (NO_HOLE) punched a hole")
	}
	// A read-only export is seen as such: qemu refuses to open it for
	// writing (EPERM on the wire is covered by TestReadOnlyExport).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ro, err := exec.CommandContext(ctx, "qemu-io", "-f", "raw", "-c", "write 0 4k", nbdURI(sock, "ro")).CombinedOutput()
	if err == nil || !strings.Contains(string(ro), "Permission denied") {
		t.Errorf("write to read-only export:\n%s", ro)
	}
}

// randomImage writes a file mixing random blocks, zero blocks and repeated
// blocks, the shapes that exercise zero detection and holes.
func randomImage(t *testing.T, path string, size int, seed int64) []byte {
	rng := rand.New(rand.NewSource(seed))
	img := make([]byte, size)
	for off := 0; off < size; off += 64 << 10 {
		end := min(off+64<<10, size)
		switch rng.Intn(3) {
		case 0:
			rng.Read(img[off:end])
		case 1: // zeroes
		case 2:
			copy(img[off:end], bytes.Repeat([]byte{byte(rng.Intn(256))}, end-off))
		}
	}
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}
	return img
}

func TestConformanceQemuImg(t *testing.T) {
	needTool(t, "qemu-img")
	const size = 16<<20 + 4096
	dir := t.TempDir()
	src := filepath.Join(dir, "src.img")
	img := randomImage(t, src, size, 1)
	be := newMemBackend(size)
	be.WriteAt(bytes.Repeat([]byte{0xee}, size), 0, false) // stale data the copy must overwrite
	ts := newTestServer(t, Export{Name: "disk", Backend: be})
	sock := ts.listenUnix(t)

	runTool(t, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src, nbdURI(sock, "disk"))
	if data, _ := be.snapshot(); !bytes.Equal(data, img) {
		t.Fatal("export differs from the image after qemu-img convert in")
	}
	runTool(t, "qemu-img", "compare", "-f", "raw", "-F", "raw", src, nbdURI(sock, "disk"))
	out := filepath.Join(dir, "out.img")
	runTool(t, "qemu-img", "convert", "-f", "raw", "-O", "raw", nbdURI(sock, "disk"), out)
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("image read back through qemu-img convert differs (%v)", err)
	}
}

func TestConformanceNbdcopy(t *testing.T) {
	needTool(t, "nbdcopy")
	const size = 32 << 20
	dir := t.TempDir()
	src := filepath.Join(dir, "src.img")
	img := randomImage(t, src, size, 2)
	be := newMemBackend(size)
	be.WriteAt(bytes.Repeat([]byte{0x77}, size), 0, false)
	ts := newTestServer(t, Export{Name: "disk", Backend: be})
	sock := ts.listenUnix(t)

	// Count simultaneous clients while nbdcopy runs with several connections.
	var mu sync.Mutex
	maxClients := 0
	stop := make(chan struct{})
	var poll sync.WaitGroup
	poll.Add(1)
	go func() {
		defer poll.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			mu.Lock()
			maxClients = max(maxClients, len(ts.srv.Clients("disk")))
			mu.Unlock()
		}
	}()
	runTool(t, "nbdcopy", "--connections=4", src, nbdURI(sock, "disk"))
	out := filepath.Join(dir, "out.img")
	runTool(t, "nbdcopy", "--connections=4", nbdURI(sock, "disk"), out)
	close(stop)
	poll.Wait()

	if data, _ := be.snapshot(); !bytes.Equal(data, img) {
		t.Fatal("export differs from the image after nbdcopy in")
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("image copied out differs (%v)", err)
	}
	if maxClients < 2 {
		t.Errorf("at most %d simultaneous clients seen; nbdcopy should use several", maxClients)
	}
	t.Logf("up to %d simultaneous connections", maxClients)
}

// TestConformanceParallelClients runs several real clients at once on
// different regions of one export.
func TestConformanceParallelClients(t *testing.T) {
	needTool(t, "qemu-io")
	be := newMemBackend(8 << 20)
	ts := newTestServer(t, Export{Name: "disk", Backend: be})
	sock := ts.listenUnix(t)
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := fmt.Sprintf("%dM", i)
			pat := fmt.Sprintf("0x%x", 0x10+i)
			out, err := exec.Command("qemu-io", "-f", "raw",
				"-c", "write -P "+pat+" "+off+" 1M", "-c", "read -P "+pat+" "+off+" 1M",
				nbdURI(sock, "disk")).CombinedOutput()
			if err != nil || strings.Contains(string(out), "fail") {
				t.Errorf("client %d: %v\n%s", i, err, out)
			}
		}()
	}
	wg.Wait()
	data, _ := be.snapshot()
	for i := 0; i < 6; i++ {
		if data[i<<20] != byte(0x10+i) || data[i<<20+1<<20-1] != byte(0x10+i) {
			t.Errorf("region %d not written", i)
		}
	}
}
