package tests

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestMultiHostCloneWhileWriting: host b keeps creating numbered files,
// alternately in two directories of src, each written whole and closed
// before the next; meanwhile host a clones src three times. Each clone
// is one instant of src: the numbers it holds are 0..k with no gap (in
// both directories together), every file but the newest is whole and the
// newest is empty or whole (its data commits at its close); after b
// stopped, the clones still hold what they held, on both hosts.
func TestMultiHostCloneWhileWriting(t *testing.T) {
	a, b := hostPair(t, "clonewrite")
	for _, d := range []string{"x", "y"} {
		if err := os.MkdirAll(a.path("src", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	within(t, 2*time.Second, "src on b", func() bool { _, err := os.Stat(b.path("src", "y")); return err == nil })
	content := func(n int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("%06d\n", n)), 2000) }
	dirOf := func(n int) string { return []string{"x", "y"}[n%2] }

	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := os.WriteFile(b.path("src", dirOf(n), fmt.Sprintf("%06d", n)), content(n), 0o644); err != nil {
				done <- err
				return
			}
		}
	}()
	// check reads clone dst through h and returns its newest number.
	check := func(h *volume, dst string) int {
		t.Helper()
		var nums []int
		for _, d := range []string{"x", "y"} {
			ents, err := os.ReadDir(h.path(dst, d))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				n, err := strconv.Atoi(e.Name())
				if err != nil || dirOf(n) != d {
					t.Fatalf("%s: unexpected %s/%s", dst, d, e.Name())
				}
				nums = append(nums, n)
			}
		}
		slices.Sort(nums)
		for i, n := range nums {
			if n != i {
				t.Fatalf("%s on %s holds files %v...: %d is missing, not one instant of src", dst, h.Mnt, nums[:min(i+1, len(nums))], i)
			}
			got, err := os.ReadFile(h.path(dst, dirOf(n), fmt.Sprintf("%06d", n)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, content(n)) && (i < len(nums)-1 || len(got) != 0) {
				t.Fatalf("%s on %s: file %d holds %d bytes starting %q, want it whole (%d bytes of %q)", dst, h.Mnt, n, len(got), got[:min(len(got), 14)], len(content(n)), content(n)[:14])
			}
		}
		return len(nums) - 1
	}
	time.Sleep(300 * time.Millisecond)
	newest := map[string]int{}
	for i := range 3 {
		dst := fmt.Sprintf("clone%d", i)
		if out, err := runDoppel(time.Minute, "clone", a.path("src"), a.path(dst)); err != nil {
			t.Fatalf("doppel clone: %v\n%s", err, out)
		}
		newest[dst] = check(a, dst)
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("clones made while b wrote hold files up to %v", newest)
	if newest["clone0"] == newest["clone2"] {
		t.Fatalf("b wrote nothing between the clones (%v): the test did not overlap them", newest)
	}
	for dst, n := range newest {
		for _, h := range []*volume{a, b} {
			within(t, 2*time.Second, dst+" on "+h.Mnt, func() bool { _, err := os.Stat(h.path(dst)); return err == nil })
			if got := check(h, dst); got != n {
				t.Fatalf("%s on %s holds files up to %d, it held up to %d when made", dst, h.Mnt, got, n)
			}
		}
	}
	a.umount(t)
	b.umount(t)
	a.fsckStrict(t)
}
