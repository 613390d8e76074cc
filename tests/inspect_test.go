package tests

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// subtreeUsage is the output of doppel df --json PATH.
type subtreeUsage struct {
	Path           string `json:"path"`
	Files          int64  `json:"files"`
	SizeBytes      int64  `json:"size_bytes"`
	LogicalBytes   int64  `json:"logical_bytes"`
	PhysicalBytes  int64  `json:"physical_bytes"`
	ExclusiveBytes int64  `json:"exclusive_bytes"`
}

// fileStat is the output of doppel stat --json FILE.
type fileStat struct {
	SizeBytes    int64 `json:"size_bytes"`
	LogicalBytes int64 `json:"logical_bytes"`
	SharedBytes  int64 `json:"shared_bytes"`
	Extents      []struct {
		Offset, Length int64
		Chunk          string
	} `json:"extents"`
	Chunks []struct {
		Hash     string `json:"hash"`
		Refs     uint64 `json:"refs"`
		FileRefs uint64 `json:"file_refs"`
	} `json:"chunks"`
}

// inspect runs a doppel command that prints JSON and decodes it into out.
// path is inside the volume: through the mount when mounted, with --store
// otherwise.
func (v *volume) inspect(t *testing.T, out any, cmd, path string) {
	t.Helper()
	args := []string{cmd, "--json", v.Mnt + path}
	if !v.mounted {
		args = []string{cmd, "--json", "--store", v.Store, path}
	}
	b, err := runDoppel(time.Minute, args...)
	if err != nil {
		t.Fatalf("doppel %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("doppel %s: output is not the expected JSON: %v\n%s", strings.Join(args, " "), err, b)
	}
}

func TestInspect(t *testing.T) {
	const size = 3 * MiB
	v := newVolume(t)
	testutil.Check(t, os.Mkdir(v.path("d"), 0o755))
	writeFileSync(t, v.path("orig"), testutil.SeededBytes(40, size))
	// cp shares extents through copy_file_range: the copy stores nothing.
	runTool(t, v.Mnt, nil, "cp", "orig", "d/copy")

	// Both views of the volume must agree: the daemon's and the store's.
	var views [2]struct {
		st   fileStat
		copy subtreeUsage
		dir  subtreeUsage
	}
	for i := range views {
		w := &views[i]
		v.inspect(t, &w.st, "stat", "/d/copy")
		v.inspect(t, &w.dir, "df", "/d")
		v.inspect(t, &w.copy, "df", "/d/copy")
		if w.st.SizeBytes != size || w.st.LogicalBytes != size || w.st.SharedBytes != size || len(w.st.Extents) == 0 {
			t.Errorf("mounted=%v: stat of the copy: size %d logical %d shared %d, %d extents; want %d, all shared",
				v.mounted, w.st.SizeBytes, w.st.LogicalBytes, w.st.SharedBytes, len(w.st.Extents), size)
		}
		for _, c := range w.st.Chunks {
			if c.Refs < 2 || c.FileRefs != 1 {
				t.Errorf("mounted=%v: chunk %.16s has %d refs, %d from the copy; want the original's too", v.mounted, c.Hash, c.Refs, c.FileRefs)
			}
		}
		for _, u := range []subtreeUsage{w.dir, w.copy} {
			if u.Files != 1 || u.LogicalBytes != size || u.PhysicalBytes != size || u.ExclusiveBytes != 0 {
				t.Errorf("mounted=%v: df %s: %+v; want 1 file of %d bytes, none exclusive", v.mounted, u.Path, u, size)
			}
		}
		if i == 0 {
			v.umount(t)
		}
	}
	if !reflect.DeepEqual(views[0], views[1]) {
		t.Errorf("the daemon and the store disagree:\nmounted   %+v\nunmounted %+v", views[0], views[1])
	}

	// Without the original, the copy holds its chunks alone.
	v.mount(t)
	testutil.Check(t, os.Remove(v.path("orig")))
	for range 2 {
		var dir subtreeUsage
		var st fileStat
		v.inspect(t, &dir, "df", "/d")
		v.inspect(t, &st, "stat", "/d/copy")
		if dir.ExclusiveBytes != size || st.SharedBytes != 0 {
			t.Errorf("mounted=%v, original deleted: exclusive %d, shared %d; want %d and 0", v.mounted, dir.ExclusiveBytes, st.SharedBytes, size)
		}
		if v.mounted {
			v.umount(t)
		}
	}
	v.fsck(t)
}

func TestInspectSeesUnflushedWrites(t *testing.T) {
	// The daemon commits a file's buffered writes before answering, so
	// that stat and df report what was written even while it is open. The
	// test asks the control socket itself: running a command would fork,
	// and the child's closing of its copy of the descriptor would flush
	// the file anyway.
	v := newVolume(t)
	f, err := os.Create(v.path("open"))
	testutil.Check(t, err)
	defer f.Close()
	if _, err := f.Write(testutil.SeededBytes(41, MiB)); err != nil {
		t.Fatal(err)
	}
	var st fileStat
	v.control(t, &st, "/v1/stat?path=/open")
	var u subtreeUsage
	v.control(t, &u, "/v1/usage?path=/")
	if st.SizeBytes != MiB || st.LogicalBytes != MiB || u.ExclusiveBytes != MiB {
		t.Errorf("open file: size %d logical %d exclusive %d; want %d", st.SizeBytes, st.LogicalBytes, u.ExclusiveBytes, MiB)
	}
}

// control GETs path from the daemon's control socket and decodes the JSON
// answer into out.
func (v *volume) control(t *testing.T, out any, path string) {
	t.Helper()
	sock := filepath.Join(v.Store, "control.sock")
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Get("http://doppel" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", path, resp.Status, err, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
}

func TestInspectOutputAndErrors(t *testing.T) {
	v := newVolume(t)
	testutil.Check(t, os.Mkdir(v.path("d"), 0o755))
	writeFileSync(t, v.path("d", "f"), testutil.SeededBytes(42, 200<<10))
	testutil.Check(t, os.Truncate(v.path("d", "f"), MiB)) // a hole at the end

	out, err := runDoppel(time.Minute, "stat", v.path("d", "f"))
	if err != nil {
		t.Fatalf("doppel stat: %v\n%s", err, out)
	}
	for _, want := range []string{"size     1.0 MiB", "OFFSET", "hole", "FILE REFS"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doppel stat output lacks %q:\n%s", want, out)
		}
	}
	out, err = runDoppel(time.Minute, "df", v.path("d"))
	if err != nil {
		t.Fatalf("doppel df: %v\n%s", err, out)
	}
	for _, want := range []string{"exclusive", "200.0 KiB", "1 file, 1 directory"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doppel df PATH output lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{
		{"stat", v.path("d")},       // a directory
		{"stat", v.path("missing")}, // no such file
		{"df", v.path("missing")},
		{"stat"},
		{"df", v.path("d"), v.path("d")},
	} {
		if out, err := runDoppel(time.Minute, args...); err == nil {
			t.Errorf("doppel %s succeeded:\n%s", strings.Join(args, " "), out)
		}
	}
}
