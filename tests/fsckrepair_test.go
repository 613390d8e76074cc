package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/testutil"
)

// fsckJSON runs doppel fsck --json with args and decodes the report; exit
// status 1 (problems) is no failure.
func fsckJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	b, err := runDoppel(5*time.Minute, append([]string{"fsck", "--json"}, args...)...)
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		t.Fatalf("doppel fsck %v: %v\n%s", args, err, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("doppel fsck %v: output is not the expected JSON: %v\n%s", args, err, b)
	}
}

// TestFsckOnlineDuringWrites checks a mounted volume, through the mount
// point and through the store, while files are written, overwritten and
// deleted: every check must find nothing at all.
func TestFsckOnlineDuringWrites(t *testing.T) {
	v := newVolume(t)
	for i := range 5 {
		writeFileSync(t, v.path(fmt.Sprintf("base%d", i)), testutil.SeededBytes(uint64(i), 500<<10))
	}
	var quit atomic.Bool
	var writes atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !quit.Load(); i++ {
			p := v.path(fmt.Sprintf("w%d", i%20))
			err := os.WriteFile(p, testutil.SeededBytes(uint64(100+i%7), 100<<10+i*997%(400<<10)), 0o644)
			if err == nil && i%3 == 0 {
				err = os.Remove(v.path(fmt.Sprintf("w%d", (i+7)%20)))
				if errors.Is(err, os.ErrNotExist) {
					err = nil
				}
			}
			if err != nil {
				errc <- err
				return
			}
			writes.Add(1)
		}
	}()
	type report struct {
		Clean    bool          `json:"clean"`
		Online   bool          `json:"online"`
		Problems []fsckProblem `json:"problems"`
	}
	checks := 0
	for ; checks < 4 || writes.Load() < 100; checks++ {
		args := []string{v.Mnt}
		if checks%2 == 1 {
			args = []string{"--verify-data", "--store", v.Store}
		}
		var r report
		fsckJSON(t, &r, args...)
		if !r.Clean || !r.Online || len(r.Problems) > 0 {
			quit.Store(true)
			t.Fatalf("online fsck %v during writes: clean %v online %v, problems %+v", args, r.Clean, r.Online, r.Problems)
		}
	}
	quit.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	t.Logf("%d online checks during %d file writes", checks, writes.Load())
	v.umount(t)
	v.fsckStrict(t)
}

// TestFsckRepairFlippedBit damages the first chunk of a file, then checks
// that reading it fails, that fsck --repair --verify-data turns the damaged
// range into zeros, names it and leaves the other files intact, and that
// fsck then finds the volume clean.
func TestFsckRepairFlippedBit(t *testing.T) {
	v := newVolume(t)
	victim := testutil.SeededBytes(1, 700<<10)
	writeFileSync(t, v.path("victim"), victim) // first, so its first chunk starts the segment
	others := map[string][]byte{}
	for i := range 3 {
		name := fmt.Sprintf("other%d", i)
		others[name] = testutil.SeededBytes(uint64(10+i), 300<<10)
		writeFileSync(t, v.path(name), others[name])
	}
	v.umount(t)
	needSegmentFiles(t)
	seg := filepath.Join(v.Store, "chunks", "seg-00000001")
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 100); err == nil {
		b[0] ^= 0x04
		_, err = f.WriteAt(b, 100)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	v.mount(t)
	if _, err := os.ReadFile(v.path("victim")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading the damaged file: %v, want EIO", err)
	}
	v.umount(t)

	var rep struct {
		Clean bool `json:"clean"`
		Lost  []struct {
			Path       string `json:"path"`
			Start, End int64
		} `json:"lost"`
		Repairs []struct{ Kind, Path, Action string } `json:"repairs"`
	}
	fsckJSON(t, &rep, "--repair", "--verify-data", "--store", v.Store)
	if !rep.Clean || len(rep.Lost) != 1 || rep.Lost[0].Path != "/victim" || rep.Lost[0].Start != 0 || rep.Lost[0].End <= 100 {
		t.Fatalf("fsck --repair: clean %v, lost %+v, repairs %+v", rep.Clean, rep.Lost, rep.Repairs)
	}
	want := bytes.Clone(victim)
	clear(want[:rep.Lost[0].End])
	v.fsckStrict(t)

	v.mount(t)
	checkFile(t, v.path("victim"), want)
	for name, data := range others {
		checkFile(t, v.path(name), data)
	}
	v.umount(t)
	if out, err := runDoppel(5*time.Minute, "fsck", "--verify-data", "--store", v.Store); err != nil || !bytes.HasSuffix(out, []byte("\nclean\n")) {
		t.Fatalf("fsck after the repair and a mount: %v\n%s", err, out)
	}
}
