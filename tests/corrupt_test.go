package tests

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

// TestDamageDetected damages a store on purpose while it is unmounted and
// checks, through a real mount, that damage is detected and never served:
// reads of the damaged range fail with EIO, the daemon log names the file
// and the chunk, the rest of the volume keeps working and the daemon lives
// on (it unmounts cleanly at the end).
func TestDamageDetected(t *testing.T) {
	requireDoppel(t)

	t.Run("FlippedBit", func(t *testing.T) {
		needSegmentFiles(t)
		d := newDamageFixture(t)
		victim := d.files["dir/victim"]
		c := d.chunkInMiddle(t, "dir/victim")
		flipBit(t, d.segmentPath(c.Segment), int64(c.Offset)+int64(c.Stored)/2)
		d.v.mount(t)
		d.wantEIO(t, "dir/victim", c.fileOff, int64(c.Length))
		d.wantReadableOutside(t, "dir/victim", victim, c.fileOff, c.fileOff+int64(c.Length))
		d.wantLogged(t, "/dir/victim", c.hashHex, segName(c.Segment), fmt.Sprint(c.Offset))
		d.afterDamage(t, "dir/victim")
	})

	t.Run("TruncatedSegment", func(t *testing.T) {
		needSegmentFiles(t)
		d := newDamageFixture(t)
		c := d.chunkInMiddle(t, "dir/victim") // written last: at the segment's end
		if err := os.Truncate(d.segmentPath(c.Segment), int64(c.Offset)+100); err != nil {
			t.Fatal(err)
		}
		d.v.mount(t)
		d.wantEIO(t, "dir/victim", c.fileOff, int64(c.Length))
		d.wantLogged(t, "/dir/victim", c.hashHex, segName(c.Segment))
		d.afterDamage(t, "dir/victim")
	})

	t.Run("MissingSegment", func(t *testing.T) {
		needSegmentFiles(t)
		d := newDamageFixture(t)
		c := d.writeLate(t)
		if err := os.Remove(d.segmentPath(c.Segment)); err != nil {
			t.Fatal(err)
		}
		d.v.mount(t)
		d.wantEIO(t, "late", 0, int64(len(d.files["late"])))
		d.wantLogged(t, "/late", "chunk=", segName(c.Segment)) // the first chunk read fails
		d.afterDamage(t, "late")
	})

	t.Run("FlippedBitInPack", func(t *testing.T) {
		needS3Data(t)
		d := newDamageFixture(t)
		victim := d.files["dir/victim"]
		c := d.chunkInMiddle(t, "dir/victim")
		d.dropReadCache(t)
		d.editPack(t, c.Segment, func(b []byte) []byte {
			b[int64(c.Offset)+int64(c.Stored)/2] ^= 0x10
			return b
		})
		d.v.mount(t)
		d.wantEIO(t, "dir/victim", c.fileOff, int64(c.Length))
		d.wantReadableOutside(t, "dir/victim", victim, c.fileOff, c.fileOff+int64(c.Length))
		bucket, key := packObject(t, d.v.Store, c.Segment)
		d.wantLogged(t, "/dir/victim", c.hashHex, "pack=s3://"+bucket+"/"+key, fmt.Sprint("pack_offset=", c.Offset))
		d.afterDamage(t, "dir/victim")
	})

	t.Run("MissingPack", func(t *testing.T) {
		needS3Data(t)
		d := newDamageFixture(t)
		c := d.writeLate(t)
		d.dropReadCache(t)
		d.deletePack(t, c.Segment)
		d.v.mount(t)
		d.wantEIO(t, "late", c.fileOff, int64(c.Length))
		bucket, key := packObject(t, d.v.Store, c.Segment)
		d.wantLogged(t, "/late", "chunk=", "pack=s3://"+bucket+"/"+key) // the first chunk read fails
		d.afterDamage(t, "late")
	})

	t.Run("DamagedMetadata", func(t *testing.T) {
		d := newDamageFixture(t)
		garbage := []byte{0xee, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		extentKey := d.firstExtentKey(t, "dir/victim")
		d.editMeta(t, func(b meta.Batch) error {
			if err := b.Set(schema.InodeKey(d.ino["small"]), garbage); err != nil {
				return err
			}
			if err := b.Set(schema.DirentKey(d.ino["dir"], "named"), garbage); err != nil {
				return err
			}
			if err := shiftSecondExtent(b, d.ino["big"], -300); err != nil {
				return err
			}
			return b.Set(extentKey, garbage)
		})
		d.v.mount(t)
		// A damaged inode record: stat, open and unlink fail with EIO.
		_, err := os.Stat(d.v.path("small"))
		wantEIOErr(t, "stat of a file whose inode record is damaged", err)
		_, err = os.ReadFile(d.v.path("small"))
		wantEIOErr(t, "read of a file whose inode record is damaged", err)
		wantEIOErr(t, "unlink of a file whose inode record is damaged", os.Remove(d.v.path("small")))
		d.wantLogged(t, "/small", "damaged inode record")
		// A damaged directory entry: looking the name up fails.
		_, err = os.Stat(d.v.path("dir", "named"))
		wantEIOErr(t, "stat through a damaged directory entry", err)
		d.wantLogged(t, "/dir", `damaged directory entry \"named\" record`)
		// A damaged extent: reading the file fails, its attributes do not.
		if _, err := os.Stat(d.v.path("dir", "victim")); err != nil {
			t.Errorf("stat of a file with a damaged extent: %v", err)
		}
		_, err = os.ReadFile(d.v.path("dir", "victim"))
		wantEIOErr(t, "read of a file with a damaged extent", err)
		d.wantLogged(t, "/dir/victim", "read failed")
		// A damaged extent key: the extent overlaps the one before.
		_, err = os.ReadFile(d.v.path("big"))
		wantEIOErr(t, "read of a file whose extents overlap", err)
		d.wantLogged(t, "/big", "metadata is damaged", "overlaps")
		d.checkOthers(t, "small", "dir/named", "dir/victim", "big")
		writeFileSync(t, d.v.path("new"), testutil.SeededBytes(110, 100<<10)) // still writable
		d.v.umount(t)
		d.wantNoPanic(t)
	})
}

// damageFixture is a volume holding a few files, unmounted so that its
// store can be damaged.
type damageFixture struct {
	v     *volume
	files map[string][]byte // path in the volume -> content
	ino   map[string]uint64
}

func newDamageFixture(t *testing.T) *damageFixture {
	v := newVolume(t)
	d := &damageFixture{v: v, files: map[string][]byte{}, ino: map[string]uint64{}}
	if err := os.Mkdir(v.path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.ino["dir"] = inodeOf(t, v.path("dir"))
	for i, f := range []struct {
		name string
		size int
	}{{"small", 5000}, {"big", 3 * MiB}, {"dir/named", 400 << 10}, {"dir/victim", 2 * MiB}} {
		data := testutil.SeededBytes(100+uint64(i), f.size)
		writeFileSync(t, v.path(f.name), data)
		d.files[f.name] = data
		d.ino[f.name] = inodeOf(t, v.path(f.name))
	}
	v.umount(t)
	return d
}

// writeLate writes the file "late" in a second mount, whose writes go to
// segments (or packs) of their own, and returns the chunk in its middle,
// which lives apart from the first mount's files.
func (d *damageFixture) writeLate(t *testing.T) located {
	t.Helper()
	d.v.mount(t)
	late := testutil.SeededBytes(109, 700<<10)
	writeFileSync(t, d.v.path("late"), late)
	d.files["late"] = late
	d.ino["late"] = inodeOf(t, d.v.path("late"))
	d.v.umount(t)
	c := d.chunkInMiddle(t, "late")
	if first := d.chunkInMiddle(t, "dir/victim"); first.Segment == c.Segment {
		t.Fatalf("the files of two mounts share segment or pack %d; the test needs them apart", c.Segment)
	}
	return c
}

// checkOthers reads every file not in skip and requires its content.
func (d *damageFixture) checkOthers(t *testing.T, skip ...string) {
	t.Helper()
	for name, data := range d.files {
		if !contains(skip, name) {
			checkFile(t, d.v.path(name), data)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// wantEIO requires a read of [off, off+n) of the file to fail with EIO.
func (d *damageFixture) wantEIO(t *testing.T, name string, off, n int64) {
	t.Helper()
	f, err := os.Open(d.v.path(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.ReadAt(make([]byte, n), off)
	wantEIOErr(t, fmt.Sprintf("read of %s [%d, %d) over damage", name, off, off+n), err)
}

// wantReadableOutside requires the file's pages that do not touch
// [from, to) to read back as written. Readahead is off, so that the kernel
// reads only the pages asked for.
func (d *damageFixture) wantReadableOutside(t *testing.T, name string, want []byte, from, to int64) {
	t.Helper()
	f, err := os.Open(d.v.path(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM); err != nil {
		t.Fatal(err)
	}
	const page = 4096
	ranges := [][2]int64{{0, from &^ (page - 1)}, {(to + page - 1) &^ (page - 1), int64(len(want))}}
	for _, r := range ranges {
		if r[1] <= r[0] {
			continue
		}
		got := make([]byte, r[1]-r[0])
		if _, err := f.ReadAt(got, r[0]); err != nil {
			t.Errorf("read of undamaged %s [%d, %d): %v", name, r[0], r[1], err)
		} else if !bytes.Equal(got, want[r[0]:r[1]]) {
			t.Errorf("undamaged %s [%d, %d) reads wrong bytes", name, r[0], r[1])
		}
	}
}

// afterDamage checks, once the damage to file name was detected, that the
// other files read correctly, that fsck reports the damage, and that the
// damaged file can be deleted with the volume going on working.
func (d *damageFixture) afterDamage(t *testing.T, name string) {
	t.Helper()
	d.checkOthers(t, name)
	d.v.umount(t)
	d.wantFsckReports(t, "/"+name)
	d.v.mount(t)
	if err := os.Remove(d.v.path(name)); err != nil {
		t.Errorf("delete of damaged %s: %v", name, err)
	}
	delete(d.files, name)
	d.checkOthers(t)
	writeFileSync(t, d.v.path("after-"+filepath.Base(name)), testutil.SeededBytes(111, 300<<10))
	d.v.umount(t)
	d.wantNoPanic(t)
}

// wantNoPanic requires the daemon log to show no panic (go-fuse would
// have turned one in a request handler into EIO).
func (d *damageFixture) wantNoPanic(t *testing.T) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(d.v.Store, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(log, []byte("panic")); i >= 0 {
		t.Errorf("the daemon panicked:\n%s", log[i:])
	}
}

// wantLogged requires a line of the daemon log to hold every one of the
// words.
func (d *damageFixture) wantLogged(t *testing.T, words ...string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(d.v.Store, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(log), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			t.Logf("daemon log: %s", line)
			return
		}
	}
	t.Errorf("no line of the daemon log holds all of %q; log:\n%s", words, log)
}

// wantFsckReports requires doppel fsck --verify-data to find damage
// affecting path.
func (d *damageFixture) wantFsckReports(t *testing.T, path string) {
	t.Helper()
	out, err := runDoppel(5*time.Minute, "fsck", "--verify-data", "--store", d.v.Store)
	if err == nil || !strings.Contains(string(out), "\t"+path+"\t") {
		t.Errorf("fsck --verify-data of a damaged store (err %v) does not report %s:\n%s", err, path, out)
	}
}

func wantEIOErr(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("%s: err = %v, want EIO", what, err)
	}
}

// shiftSecondExtent moves the key of ino's second extent by delta bytes,
// as damage to the key would.
func shiftSecondExtent(b meta.Batch, ino uint64, delta int64) error {
	it, err := b.NewIter(schema.ExtentRange(ino))
	if err != nil {
		return err
	}
	if !it.First() || !it.Next() {
		it.Close()
		return fmt.Errorf("inode %d has fewer than two extents", ino)
	}
	key, val := append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...)
	if err := it.Close(); err != nil {
		return err
	}
	off, err := schema.ExtentOffset(key)
	if err != nil {
		return err
	}
	if err := b.Delete(key); err != nil {
		return err
	}
	return b.Set(schema.ExtentKey(ino, off+delta), val)
}
