package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// TestCloneErrors checks that refused clone commands say why, exit
// non-zero and change nothing.
func TestCloneErrors(t *testing.T) {
	v := newVolume(t)
	other := newVolume(t)
	src := v.path("src")
	makeFiles(t, src, 2, 4, 3)
	testutil.Check(t, os.Mkdir(v.path("exists"), 0o755))
	before := treeDigest(t, v.Mnt)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"file exists", []string{"clone", src, v.path("exists")}},
		{"file exists", []string{"snapshot", src, v.path("exists")}},
		{"inside its own source", []string{"clone", src, filepath.Join(src, "inner")}},
		{"no such file", []string{"clone", v.path("missing"), v.path("x")}},
		{"no such file", []string{"clone", src, v.path("nodir", "x")}},
		{"not in the same volume", []string{"clone", src, other.path("x")}},
		{"negation is not supported", []string{"clone", "--exclude", "!x", src, v.path("x")}},
		{"no such file", []string{"clone", "--exclude-from", v.path("no-patterns"), src, v.path("x")}},
		{"need SRC and DST", []string{"clone", src}},
		{"not the root of a clone or snapshot", []string{"rmclone", src}},
		{"not the root of a clone or snapshot", []string{"rmclone", filepath.Join(src, "d00")}},
		{"no such file", []string{"rmclone", v.path("missing")}},
		{"not in the same volume", []string{"diff", src, other.Mnt}},
		{"need DIR... -- CMD", []string{"scan", src}},
	} {
		wantFailure(t, c.want, c.args...)
	}
	if treeDigest(t, v.Mnt) != before {
		t.Error("refused commands changed the volume")
	}
	if ents, err := os.ReadDir(other.Mnt); err != nil || len(ents) != 0 {
		t.Errorf("a refused clone into another volume left %v (%v)", ents, err)
	}
}

// TestCloneList checks doppel clones: the fields of --json for a lazy
// clone with an exclusion, a materialized clone and a snapshot, and the
// table.
func TestCloneList(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	makeFiles(t, src, 3, 30, 5)
	t0 := time.Now()
	doppelOK(t, "clone", "--lazy", "--exclude", "d02", src, v.path("lz"))
	doppelOK(t, "clone", src, v.path("full"))
	doppelOK(t, "snapshot", src, v.path("snap"))
	t1 := time.Now()
	writeFileSync(t, v.path("lz", "own"), testutil.SeededBytes(700, MiB))
	v.waitMaterialized(t)

	list := v.clones(t)
	if len(list) != 3 {
		t.Fatalf("doppel clones lists %d clones, want 3: %+v", len(list), list)
	}
	lz, _ := cloneAt(list, "/lz")
	full, _ := cloneAt(list, "/full")
	snap, _ := cloneAt(list, "/snap")
	for _, c := range []cloneInfo{lz, full, snap} {
		if c.Origin != "/src" || c.Created.Before(t0.Add(-time.Second)) || c.Created.After(t1.Add(time.Second)) || c.Version == 0 || c.MetaBytes <= 0 {
			t.Errorf("clone %+v: want origin /src, created between %v and %v, a version and metadata bytes", c, t0, t1)
		}
	}
	if !(lz.Version < full.Version && full.Version < snap.Version) {
		t.Errorf("pinned versions %d, %d, %d do not follow the order the clones were made in", lz.Version, full.Version, snap.Version)
	}
	if !lz.Lazy || lz.ReadOnly || lz.State != "lazy" || !slices.Equal(lz.Excludes, []string{"d02"}) || !lz.PinHeld || lz.Exclusive != MiB {
		t.Errorf("lazy clone listed as %+v; want lazy, writable, state lazy, excludes [d02], pin held, exclusive %d", lz, MiB)
	}
	if lz.Ino != inodes(t, v.path("lz"))["."] {
		t.Errorf("lazy clone listed with inode %d, its root has %d", lz.Ino, inodes(t, v.path("lz"))["."])
	}
	if !snap.ReadOnly || snap.State != "lazy" || snap.Exclusive != 0 {
		t.Errorf("snapshot listed as %+v; want read-only, lazy, nothing exclusive", snap)
	}
	if n := distinctInodes(t, v.path("full")); full.Lazy || full.ReadOnly || full.State != "materialized" || full.PinHeld || full.Stubs != 0 || full.Done != uint64(n) {
		t.Errorf("materialized clone listed as %+v; want state materialized, no pin, %d inodes materialized", full, n)
	}
	if c, _ := cloneAt(v.clones(t, "--no-space"), "/lz"); c.Exclusive != 0 || c.MetaBytes != 0 {
		t.Errorf("--no-space still reports space: %+v", c)
	}

	// The table: a header, then PATH KIND ORIGIN DATE TIME STATE ...
	lines := strings.Split(strings.TrimSpace(doppelOK(t, "clones", v.Mnt)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "PATH") {
		t.Fatalf("doppel clones prints:\n%s", strings.Join(lines, "\n"))
	}
	kinds := map[string]string{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) >= 6 && f[2] == "/src" {
			kinds[f[0]] = f[1] + " " + f[5]
		}
	}
	want := map[string]string{"/lz": "clone lazy", "/full": "clone materialized", "/snap": "snapshot lazy"}
	for p, k := range want {
		if kinds[p] != k {
			t.Errorf("doppel clones shows %s as %q, want %q:\n%s", p, kinds[p], k, strings.Join(lines, "\n"))
		}
	}

	// A clone of a clone names the clone as its origin; a removed clone
	// leaves the list once freed.
	doppelOK(t, "clone", v.path("full"), v.path("second"))
	if c, ok := cloneAt(v.clones(t), "/second"); !ok || c.Origin != "/full" {
		t.Errorf("clone of a clone listed as %+v (listed: %v)", c, ok)
	}
	doppelOK(t, "rmclone", v.path("lz"))
	waitFor(t, "the removed clone to leave the list", func() (bool, string) {
		list := v.clones(t, "--no-space")
		return len(list) == 3, fmt.Sprintf("%+v", list)
	})
}

// TestCloneRemove checks that rmclone returns with the clone gone, and
// that its space returns in the background: exactly what only the
// removed clones held, data their pins kept included. rm -rf of a clone
// frees it too.
func TestCloneRemove(t *testing.T) {
	v := newVolume(t)
	src := v.path("src")
	makeFiles(t, src, 3, 100, 6)
	for i, name := range []string{"f0", "f1", "f2"} {
		writeFileSync(t, filepath.Join(src, name), testutil.SeededBytes(uint64(500+i), MiB+i))
	}
	base := v.df(t)
	doppelOK(t, "clone", src, v.path("c1"))
	writeFileSync(t, v.path("c1", "own"), testutil.SeededBytes(600, 4*MiB))
	doppelOK(t, "clone", "--lazy", src, v.path("c2"))
	writeFileSync(t, filepath.Join(src, "f0"), testutil.SeededBytes(601, MiB)) // the old f0 stays for c2
	writeFileSync(t, v.path("c2", "own"), testutil.SeededBytes(602, 2*MiB))
	doppelOK(t, "snapshot", src, v.path("s3"))
	writeFileSync(t, filepath.Join(src, "f1"), testutil.SeededBytes(603, MiB)) // the old f1 stays for c2 and s3
	if grown := v.df(t); grown.PhysicalBytes < base.PhysicalBytes+8*MiB {
		t.Fatalf("physical bytes grew from %d to %d only, with 8 MiB of new data", base.PhysicalBytes, grown.PhysicalBytes)
	}
	ref := copyOut(t, src)

	doppelOK(t, "rmclone", v.path("c1"), v.path("c2"), v.path("s3"))
	for _, name := range []string{"c1", "c2", "s3"} {
		if _, err := os.Lstat(v.path(name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("right after rmclone, %s: %v; want it gone", name, err)
		}
	}
	compareDirs(t, ref, src)
	v.waitSpaceOf(t, "src")
	if out := doppelOK(t, "clones", "--json", v.Mnt); strings.TrimSpace(out) != "[]" {
		t.Errorf("doppel clones --json without clones prints %s, want []", out)
	}
	compareDirs(t, ref, src)

	doppelOK(t, "clone", src, v.path("c4"))
	writeFileSync(t, v.path("c4", "own"), testutil.SeededBytes(604, 3*MiB))
	if out, err := exec.Command("rm", "-rf", v.path("c4")).CombinedOutput(); err != nil {
		t.Fatalf("rm -rf of a clone: %v\n%s", err, out)
	}
	v.waitSpaceOf(t, "src")
	compareDirs(t, ref, src)
	v.umount(t)
	v.fsckStrict(t)
}

// waitSpaceOf waits until the volume stores exactly the chunks the
// subtree at name references: everything else was freed.
func (v *volume) waitSpaceOf(t *testing.T, name string) {
	t.Helper()
	var sub struct {
		Physical int64 `json:"physical_bytes"`
		Chunks   int64 `json:"chunks"`
	}
	out := doppelOK(t, "df", "--json", v.path(name))
	testutil.Check(t, json.Unmarshal([]byte(out), &sub))
	waitFor(t, "the volume to hold only the chunks of "+name, func() (bool, string) {
		st := v.df(t)
		return st.PhysicalBytes == sub.Physical && st.Chunks == sub.Chunks,
			fmt.Sprintf("volume %d bytes in %d chunks, %s %d bytes in %d chunks", st.PhysicalBytes, st.Chunks, name, sub.Physical, sub.Chunks)
	})
}
