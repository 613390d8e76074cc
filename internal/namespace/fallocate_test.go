package namespace_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

const (
	collapse = vfs.FallocCollapseRange
	insert   = vfs.FallocInsertRange
	unshare  = vfs.FallocUnshareRange
)

func wantContent(t *testing.T, fs vfs.FS, ino uint64, want []byte, what string) {
	t.Helper()
	if got := readFile(t, fs, ino); !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d expected", what, len(got), len(want))
	}
}

// TestFallocateCollapseInsert collapses and inserts ranges of a file with
// writes still buffered in its handle, and checks content, size, mapped
// blocks, times and fsck after each.
func TestFallocateCollapseInsert(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	want := testutil.SeededBytes(1, 1<<20) // several chunks, so extents split mid-chunk
	f := writeFile(t, fs, vfs.RootIno, "f", want)
	h := testutil.Must(fs.Open(f, syscall.O_RDWR))
	defer fs.Release(h)
	tail := testutil.SeededBytes(2, 5000)
	testutil.Must(fs.Write(h, int64(len(want)), tail)) // buffered, not committed
	want = append(want, tail...)

	past := time.Unix(1e9, 0)
	testutil.Must(fs.SetAttr(root, f, vfs.SetAttr{SetMtime: true, Mtime: past}))
	before := testutil.Must(fs.GetAttr(f))
	testutil.Must(0, fs.Fallocate(h, collapse, 12288, 40960))
	want = slices.Delete(want, 12288, 12288+40960)
	wantContent(t, fs, f, want, "after collapse")
	a := testutil.Must(fs.GetAttr(f))
	if a.Size != int64(len(want)) || a.Blocks != (int64(len(want))+511)/512 {
		t.Errorf("after collapse: size %d blocks %d, want %d and %d", a.Size, a.Blocks, len(want), (len(want)+511)/512)
	}
	if !a.Mtime.After(past) || !a.Ctime.After(before.Ctime) {
		t.Errorf("after collapse: mtime %v ctime %v, want both moved", a.Mtime, a.Ctime)
	}

	testutil.Must(0, fs.Fallocate(h, insert, 4096, 8192))
	want = slices.Insert(want, 4096, make([]byte, 8192)...)
	wantContent(t, fs, f, want, "after insert")
	if a := testutil.Must(fs.GetAttr(f)); a.Size != int64(len(want)) || a.Blocks != (int64(len(want))-8192+511)/512 {
		t.Errorf("after insert: size %d blocks %d, want %d and %d (the range is a hole)", a.Size, a.Blocks, len(want), (len(want)-8192+511)/512)
	}
	// Data written into the inserted hole, then a collapse of most of it.
	testutil.Must(fs.Write(h, 4096+100, []byte("in the gap")))
	copy(want[4096+100:], "in the gap")
	testutil.Must(0, fs.Fallocate(h, collapse, 0, 4096))
	want = want[4096:]
	wantContent(t, fs, f, want, "after the second collapse")
	wantFsckClean(t, v)
}

// TestFallocateShiftRules checks ext4's rules: block-aligned offset and
// length, collapse ending before EOF, insert starting before it, no other
// flags with either, regular files only. A refused call changes nothing.
func TestFallocateShiftRules(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	data := testutil.SeededBytes(3, 64<<10)
	f := writeFile(t, fs, vfs.RootIno, "f", data)
	h := testutil.Must(fs.Open(f, syscall.O_RDWR))
	defer fs.Release(h)
	d := testutil.Must(fs.Mkdir(root, vfs.RootIno, "d", 0o755)).Ino
	dh := testutil.Must(fs.Open(d, syscall.O_RDONLY))
	defer fs.Release(dh)
	size := int64(len(data))
	for _, c := range []struct {
		what      string
		h         vfs.Handle
		mode      uint32
		off, size int64
		want      syscall.Errno
	}{
		{"collapse, offset not aligned", h, collapse, 100, 4096, syscall.EINVAL},
		{"collapse, length not aligned", h, collapse, 4096, 4000, syscall.EINVAL},
		{"collapse to EOF", h, collapse, size - 8192, 8192, syscall.EINVAL},
		{"collapse past EOF", h, collapse, size - 4096, 8192, syscall.EINVAL},
		{"insert, offset not aligned", h, insert, 4095, 4096, syscall.EINVAL},
		{"insert, length not aligned", h, insert, 0, 1, syscall.EINVAL},
		{"insert at EOF", h, insert, size, 4096, syscall.EINVAL},
		{"collapse|KEEP_SIZE", h, collapse | vfs.FallocKeepSize, 0, 4096, syscall.EINVAL},
		{"insert|KEEP_SIZE", h, insert | vfs.FallocKeepSize, 0, 4096, syscall.EINVAL},
		{"collapse|insert", h, collapse | insert, 0, 4096, syscall.EINVAL},
		{"collapse|PUNCH_HOLE|KEEP_SIZE", h, collapse | vfs.FallocPunchHole | vfs.FallocKeepSize, 0, 4096, syscall.EINVAL},
		{"unshare|ZERO_RANGE", h, unshare | vfs.FallocZeroRange, 0, 4096, syscall.EINVAL},
		{"PUNCH_HOLE|ZERO_RANGE|KEEP_SIZE", h, vfs.FallocPunchHole | vfs.FallocZeroRange | vfs.FallocKeepSize, 0, 4096, syscall.EOPNOTSUPP},
		{"unknown flag", h, 0x80, 0, 4096, syscall.EOPNOTSUPP},
		{"zero length", h, collapse, 0, 0, syscall.EINVAL},
		{"directory", dh, collapse, 0, 4096, syscall.EISDIR},
		{"directory, mode 0", dh, 0, 0, 4096, syscall.EISDIR},
	} {
		if err := fs.Fallocate(c.h, c.mode, c.off, c.size); err != c.want {
			t.Errorf("%s: got %v, want %v", c.what, err, c.want)
		}
	}
	wantContent(t, fs, f, data, "after refused calls")
	if a := testutil.Must(fs.GetAttr(d)); a.Size != 4096 {
		t.Errorf("directory size %d after refused calls", a.Size)
	}
	// Beyond the largest file size doppel takes.
	testutil.Must(fs.SetAttr(root, f, vfs.SetAttr{SetSize: true, Size: 1<<62 - 4096}))
	wantErr(t, fs.Fallocate(h, insert, 0, 8192), syscall.EFBIG)
	testutil.Must(0, fs.Fallocate(h, insert, 0, 4096))
	if a := testutil.Must(fs.GetAttr(f)); a.Size != 1<<62 {
		t.Errorf("size %d after inserting up to the limit", a.Size)
	}
	wantFsckClean(t, v)
}

// TestFallocateUnshare: with immutable chunks there is nothing to unshare,
// so it is a preallocation, extending the size unless KEEP_SIZE.
func TestFallocateUnshare(t *testing.T) {
	v, _ := openVolume(t)
	fs := v.NS
	data := testutil.SeededBytes(4, 10000)
	f := writeFile(t, fs, vfs.RootIno, "f", data)
	g := writeFile(t, fs, vfs.RootIno, "g", data) // shares f's chunks
	h := testutil.Must(fs.Open(f, syscall.O_RDWR))
	defer fs.Release(h)
	testutil.Must(0, fs.Fallocate(h, unshare|vfs.FallocKeepSize, 0, 50000))
	wantContent(t, fs, f, data, "after unshare|KEEP_SIZE")
	testutil.Must(0, fs.Fallocate(h, unshare, 100, 19900))
	want := append(slices.Clone(data), make([]byte, 10000)...)
	wantContent(t, fs, f, want, "after unshare")
	wantContent(t, fs, g, data, "the other file after unshare")
	wantFsckClean(t, v)
}

// TestFallocateShiftKeepsClones: a clone taken before a collapse or an
// insert still reads the old content, whether it was copied or is read
// through the pin (lazy).
func TestFallocateShiftKeepsClones(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		v, _ := openVolume(t)
		fs := v.NS
		top := testutil.Must(fs.Mkdir(root, vfs.RootIno, "t", 0o755)).Ino
		old := testutil.SeededBytes(5, 300<<10)
		f := writeFile(t, fs, top, "f", old)
		testutil.Must(fs.ClonePath("/t", "/c", namespace.CloneOptions{Lazy: lazy}))
		h := testutil.Must(fs.Open(f, syscall.O_RDWR))
		testutil.Must(0, fs.Fallocate(h, collapse, 8192, 65536))
		testutil.Must(0, fs.Fallocate(h, insert, 4096, 4096))
		testutil.Must(0, fs.Release(h))
		want := slices.Insert(slices.Delete(slices.Clone(old), 8192, 8192+65536), 4096, make([]byte, 4096)...)
		wantContent(t, fs, f, want, "the shifted file")
		c := testutil.Must(fs.Lookup(testutil.Must(fs.Lookup(vfs.RootIno, "c")).Ino, "f")).Ino
		wantContent(t, fs, c, old, "the clone")
		wantFsckClean(t, v)
		testutil.Must(0, fs.Unlink(top, "f"))
		wantContent(t, fs, c, old, "the clone, origin deleted")
		wantFsckClean(t, v)
	}
}

// TestFallocateShiftMatchesHost replays random collapses, inserts,
// punches and writes on a volume file and on a file of the host file
// system (ext4 or XFS collapse and insert; others skip), and requires the
// same errnos, sizes and content after each step. Mode combinations are
// left out: kernels since 6.13 refuse them with EOPNOTSUPP before the file
// system is asked, older ones with EINVAL, as doppel does.
func TestFallocateShiftMatchesHost(t *testing.T) {
	host, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hfd := int(host.Fd())
	if err := unix.Fallocate(hfd, unix.FALLOC_FL_INSERT_RANGE, 0, 4096); err == unix.EOPNOTSUPP {
		t.Skip("the host file system cannot insert ranges")
	}
	v, _ := openVolume(t)
	fs := v.NS
	data := testutil.SeededBytes(6, 256<<10)
	f := writeFile(t, fs, vfs.RootIno, "f", data)
	h := testutil.Must(fs.Open(f, syscall.O_RDWR))
	defer fs.Release(h)
	testutil.Must(0, host.Truncate(0))
	testutil.Must(host.WriteAt(data, 0))

	r := rand.New(rand.NewPCG(7, 0))
	var log []string
	outcomes := map[string]int{} // "op errno", logged to show the mix
	for step := range 300 {
		size := testutil.Must(fs.GetAttr(f)).Size
		block := func(limit int64) int64 { return r.Int64N(limit/4096+2) * 4096 }
		var desc string
		var errD, errH error
		switch k := r.IntN(10); {
		case k < 7:
			mode, name := uint32(collapse), "collapse"
			if k >= 4 {
				mode, name = insert, "insert"
			}
			off, n := block(size), 4096+block(64<<10)
			if r.IntN(10) == 0 {
				off += int64(1 + r.IntN(4095)) // misaligned
			}
			desc = fmt.Sprintf("%s [%d,+%d) of %d", name, off, n, size)
			errD, errH = fs.Fallocate(h, mode, off, n), unix.Fallocate(hfd, mode, off, n)
		case k < 8:
			off, n := r.Int64N(size+1), 1+r.Int64N(50000)
			desc = fmt.Sprintf("punch [%d,+%d)", off, n)
			mode := uint32(vfs.FallocPunchHole | vfs.FallocKeepSize)
			errD, errH = fs.Fallocate(h, mode, off, n), unix.Fallocate(hfd, mode, off, n)
		default:
			off, p := r.Int64N(size+1), testutil.SeededBytes(uint64(step), 1+r.IntN(40000))
			desc = fmt.Sprintf("write [%d,+%d)", off, len(p))
			_, errD = fs.Write(h, off, p)
			_, errH = host.WriteAt(p, off)
		}
		log = append(log, desc)
		outcomes[strings.Fields(desc)[0]+" "+fmt.Sprint(errH)]++
		if errD != errH {
			t.Fatalf("step %d, %s: doppel %v, host %v\n%s", step, desc, errD, errH, strings.Join(log, "\n"))
		}
		want, err := os.ReadFile(host.Name())
		if err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, fs, f); !bytes.Equal(got, want) {
			t.Fatalf("step %d, %s: content differs (%d bytes, host %d)\n%s", step, desc, len(got), len(want), strings.Join(log, "\n"))
		}
	}
	t.Logf("outcomes: %v", outcomes)
	wantFsckClean(t, v)
}
