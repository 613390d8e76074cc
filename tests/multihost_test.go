package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostPair is one shared volume mounted by two daemons, each with a store
// directory of its own (made by init and by join): two hosts, on one
// machine.
func hostPair(t *testing.T, prefix string) (a, b *volume) {
	t.Helper()
	a, _, _ = s3Volume(t, prefix)
	hosts := joinHosts(t, a, "b")
	return a, hosts[0]
}

// joinHosts mounts more hosts of a's volume: store directories made with
// doppel join from a's metadata URL, as a user does it, mounted with a's
// flags. The join marks
// the volume for several hosts, so a, mounted before for one host, is
// mounted again first (docs/SHARED.md, 9.1).
func joinHosts(t *testing.T, a *volume, names ...string) []*volume {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(a.Store, "shared.json"))
	if err != nil {
		t.Fatal(err)
	}
	var shared struct{ Meta string }
	if err := json.Unmarshal(raw, &shared); err != nil {
		t.Fatal(err)
	}
	var out []*volume
	for _, name := range names {
		v := &volume{Store: filepath.Join(realTempDir(t), name), Mnt: realTempDir(t), logPath: filepath.Join(t.TempDir(), "doppel.log"), flags: a.flags}
		t.Cleanup(func() { v.cleanup(t) })
		if out, err := runDoppel(time.Minute, "join", "--store", v.Store, "--meta", shared.Meta); err != nil {
			t.Fatalf("doppel join: %v\n%s", err, out)
		}
		out = append(out, v)
	}
	if a.mounted {
		a.umount(t)
		a.mount(t)
	}
	for _, v := range out {
		v.mount(t)
	}
	return out
}

// within polls cond until it holds or limit passes, and returns how long
// it took.
func within(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not seen within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// TestMultiHostBasics: two hosts mount one volume. Data closed on one is
// read whole by an open on the other (close-to-open); names created,
// renamed and removed on one are seen on the other within a second; both
// create files in one directory at once and both see all of them; each
// writes its half of one file and both read the whole; the same data
// written on both is stored once; both sessions are listed; after both
// unmount, fsck finds the volume clean.
func TestMultiHostBasics(t *testing.T) {
	a, b := hostPair(t, "basics")
	limit := 2 * time.Second // the target is 1 s (the kernel's cache timeout); allow a loaded machine

	data := bytes.Repeat([]byte("from host a\n"), 50000)
	if err := writeSynced(a.path("f"), data); err != nil {
		t.Fatal(err)
	}
	var lat []time.Duration
	lat = append(lat, within(t, limit, "a's file on b", func() bool {
		got, err := os.ReadFile(b.path("f"))
		return err == nil && bytes.Equal(got, data)
	}))

	if err := os.Mkdir(b.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.path("d", "x"), []byte("from b"), 0o644); err != nil {
		t.Fatal(err)
	}
	lat = append(lat, within(t, limit, "b's d/x on a", func() bool {
		got, err := os.ReadFile(a.path("d", "x"))
		return err == nil && string(got) == "from b"
	}))

	if err := os.Rename(a.path("d", "x"), a.path("y")); err != nil {
		t.Fatal(err)
	}
	lat = append(lat, within(t, limit, "a's rename on b", func() bool {
		_, errOld := os.Stat(b.path("d", "x"))
		got, err := os.ReadFile(b.path("y"))
		return errors.Is(errOld, fs.ErrNotExist) && err == nil && string(got) == "from b"
	}))
	if err := os.Remove(a.path("f")); err != nil {
		t.Fatal(err)
	}
	lat = append(lat, within(t, limit, "a's unlink on b", func() bool {
		_, err := os.Stat(b.path("f"))
		return errors.Is(err, fs.ErrNotExist)
	}))
	t.Logf("changes seen on the other host after %v", lat)

	// A file open on a, unlinked on b: a keeps reading and writing it
	// through its descriptor; once a closes it, its space goes.
	openData := bytes.Repeat([]byte("open on a\n"), 100000)
	if err := writeSynced(a.path("o"), openData); err != nil {
		t.Fatal(err)
	}
	fd, err := os.OpenFile(a.path("o"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	within(t, limit, "o on b", func() bool { _, err := os.Stat(b.path("o")); return err == nil })
	if err := os.Remove(b.path("o")); err != nil {
		t.Fatal(err)
	}
	within(t, limit, "b's unlink of o on a", func() bool {
		_, err := os.Stat(a.path("o"))
		return errors.Is(err, fs.ErrNotExist)
	})
	if err := a.dropCaches(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(openData))
	if n, err := fd.ReadAt(got, 0); err != nil || n != len(openData) || !bytes.Equal(got, openData) {
		t.Fatalf("a's descriptor of a file b unlinked reads %d bytes (%v), not the file", n, err)
	}
	if _, err := fd.WriteAt([]byte("still here"), 0); err != nil {
		t.Fatal(err)
	}
	if err := fd.Sync(); err != nil {
		t.Fatalf("fsync of the unlinked file on a: %v", err)
	}
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}

	// Both hosts create files in one directory at once.
	if err := os.Mkdir(a.path("shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	within(t, limit, "the shared directory on b", func() bool { _, err := os.Stat(b.path("shared")); return err == nil })
	const each = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, h := range []struct {
		v    *volume
		name string
	}{{a, "a"}, {b, "b"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := os.WriteFile(h.v.path("shared", fmt.Sprintf("%s%02d", h.name, i)), []byte(h.name), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, v := range []*volume{a, b} {
		within(t, limit, "all files of both hosts in "+v.Mnt, func() bool {
			ents, err := os.ReadDir(v.path("shared"))
			return err == nil && len(ents) == 2*each
		})
	}

	// Each host writes its half of one file, in place, and closes it.
	half := 1 << 20
	if err := os.WriteFile(a.path("halves"), make([]byte, 2*half), 0o644); err != nil {
		t.Fatal(err)
	}
	within(t, limit, "halves on b", func() bool {
		st, err := os.Stat(b.path("halves"))
		return err == nil && st.Size() == int64(2*half)
	})
	r := rand.New(rand.NewPCG(1, 2))
	parts := [2][]byte{make([]byte, half), make([]byte, half)}
	for _, p := range parts {
		for i := range p {
			p[i] = byte(r.Uint32())
		}
	}
	for i, v := range []*volume{a, b} {
		f, err := os.OpenFile(v.path("halves"), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(parts[i], int64(i*half)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	want := append(append([]byte{}, parts[0]...), parts[1]...)
	for _, v := range []*volume{a, b} {
		within(t, limit, "both halves on "+v.Mnt, func() bool {
			got, err := os.ReadFile(v.path("halves"))
			return err == nil && bytes.Equal(got, want)
		})
	}

	// The same data written on both hosts is stored once.
	same := make([]byte, 8<<20)
	for i := range same {
		same[i] = byte(r.Uint32())
	}
	before := a.df(t).PhysicalBytes
	if err := writeSynced(a.path("same-a"), same); err != nil {
		t.Fatal(err)
	}
	if err := writeSynced(b.path("same-b"), same); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if grew := a.df(t).PhysicalBytes - before; grew > int64(len(same))*11/10 {
		t.Errorf("the same 8 MiB written on both hosts grew the volume by %d bytes", grew)
	}

	// Both sessions are listed on each host.
	for _, v := range []*volume{a, b} {
		e := doppelStatus(t, v.Mnt)[0]
		var mounts []string
		for _, s := range e.Daemon.Sessions {
			if s.Alive {
				mounts = append(mounts, s.Mount)
			}
		}
		sort.Strings(mounts)
		wantMounts := []string{a.Mnt, b.Mnt}
		sort.Strings(wantMounts)
		if strings.Join(mounts, " ") != strings.Join(wantMounts, " ") {
			t.Errorf("%s lists live sessions %v, want %v", v.Mnt, mounts, wantMounts)
		}
	}

	a.umount(t)
	b.umount(t)
	a.fsckStrict(t) // also: the unlinked file's space went with a's close
}

// dropCaches drops the host's page cache, so that reads of the mount go
// to its daemon.
func (v *volume) dropCaches() error {
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o200)
}

// TestMultiHostDedup: the same data written on three hosts at once is
// stored once (the one chunk table is the shared dedup index); deleting
// it on two hosts at once keeps the third copy whole; deleting the last
// gives the space back; and the refcounts are exact throughout (strict
// fsck after unmounting).
func TestMultiHostDedup(t *testing.T) {
	hosts := hostTrio(t, "dedup")
	r := rand.New(rand.NewPCG(3, 3))
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	before := hosts[0].df(t).PhysicalBytes
	parallel(t, hosts, func(i int, h *volume) error {
		return writeSynced(h.path(fmt.Sprintf("same-%d", i)), data)
	})
	grew := hosts[0].df(t).PhysicalBytes - before
	t.Logf("16 MiB written on 3 hosts at once: the volume grew by %d bytes", grew)
	if grew > int64(len(data))*11/10 {
		t.Errorf("the same 16 MiB written on 3 hosts grew the volume by %d bytes: not deduplicated", grew)
	}
	parallel(t, hosts[:2], func(i int, h *volume) error {
		return os.Remove(h.path(fmt.Sprintf("same-%d", i)))
	})
	for _, h := range hosts {
		within(t, 2*time.Second, "the third copy on "+h.Mnt, func() bool {
			got, err := os.ReadFile(h.path("same-2"))
			return err == nil && bytes.Equal(got, data)
		})
	}
	if err := os.Remove(hosts[2].path("same-2")); err != nil {
		t.Fatal(err)
	}
	within(t, 30*time.Second, "the space back", func() bool { return hosts[0].df(t).PhysicalBytes <= before })

	// Deferred dedup: host c, mounted with --dedup background, writes
	// what a and b wrote. It stores all of it without asking, and its
	// commit merges it: the volume does not grow, every copy reads back,
	// and the bytes it stored are dead (compaction returns them).
	parallel(t, hosts[:2], func(i int, h *volume) error {
		return writeSynced(h.path(fmt.Sprintf("again-%d", i)), data)
	})
	c := hosts[2]
	c.umount(t)
	c.flags = []string{"--dedup", "background"}
	c.mount(t)
	if st := doppelStatus(t, c.Mnt)[0]; st.Daemon == nil || !st.Daemon.DedupBackground {
		t.Fatalf("status of the host mounted with --dedup background: %+v", st.Daemon)
	}
	// Space as the writing host's store counts it (each host keeps its
	// own account of the packs it knows).
	physical, cBefore := hosts[0].df(t).PhysicalBytes, c.df(t)
	if err := writeSynced(c.path("again-2"), data); err != nil {
		t.Fatal(err)
	}
	if st := doppelStatus(t, c.Mnt)[0]; st.Daemon.StoredBytes < int64(len(data))*9/10 {
		t.Errorf("the background host stored %d bytes of the %d it wrote: it looked them up first", st.Daemon.StoredBytes, len(data))
	}
	if grew := hosts[0].df(t).PhysicalBytes - physical; grew > int64(len(data))/10 {
		t.Errorf("data the volume held, written with --dedup background, grew the volume by %d bytes", grew)
	}
	// The merged copy is freed: packs of nothing else are deleted at once,
	// the rest is dead space for compaction; none of it stays live.
	after := c.df(t)
	if r := rawInt(after, "reclaimed_bytes") - rawInt(cBefore, "reclaimed_bytes"); r < int64(len(data))*9/10 {
		t.Errorf("the background host freed %d bytes of its copy, want about %d", r, len(data))
	}
	alloc := rawInt(after, "allocated_bytes") - rawInt(cBefore, "allocated_bytes")
	if dead := rawInt(after, "dead_bytes") - rawInt(cBefore, "dead_bytes"); alloc-dead > int64(len(data))/10 {
		t.Errorf("the background host's copy holds %d bytes of the bucket, %d of them dead", alloc, dead)
	}
	for _, h := range hosts {
		got, err := os.ReadFile(h.path("again-2"))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the background host's copy on %s: %d bytes, %v", h.Mnt, len(got), err)
		}
	}
	for _, h := range hosts {
		h.umount(t)
	}
	hosts[0].fsckStrict(t)
}

// rawInt is a number of doppel df --json's output (0 if it is missing).
func rawInt(st dfStats, name string) int64 {
	d, _ := st.Raw[name].(float64)
	return int64(d)
}
