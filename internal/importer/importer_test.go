package importer_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/importer"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
	"github.com/doppelfs/doppel/internal/volume"
)

const MiB = 1 << 20

func openVolume(t *testing.T) *volume.Volume {
	t.Helper()
	dir := t.TempDir()
	testutil.Check(t, volume.Init(dir, volume.InitOptions{}))
	v := testutil.Must(volume.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { v.Close() })
	return v
}

// fsckClean closes v and checks that the volume has no damage.
func fsckClean(t *testing.T, v *volume.Volume) {
	t.Helper()
	testutil.Check(t, v.Close())
	v2 := testutil.Must(volume.Open(v.Dir, slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer v2.Close()
	rep := testutil.Must(fsck.Check(v2.FsckStores(), fsck.Options{VerifyData: true}))
	for _, p := range rep.Problems {
		t.Errorf("fsck: %s", p)
	}
}

// buildSource makes a tree with every kind of entry and attribute an
// import keeps; owners and device nodes only when run as root.
func buildSource(t *testing.T) string {
	root := filepath.Join(t.TempDir(), "src")
	p := func(name string) string { return filepath.Join(root, name) }
	write := func(name string, data []byte, mode os.FileMode) {
		testutil.Check(t, os.WriteFile(p(name), data, mode))
		testutil.Check(t, os.Chmod(p(name), mode)) // not masked by the umask
	}
	testutil.Check(t, os.MkdirAll(p("dir/sub"), 0o755))
	testutil.Check(t, os.Mkdir(p("emptydir"), 0o700))
	testutil.Check(t, os.Mkdir(p("ro-dir"), 0o755))
	write("empty", nil, 0o644)
	write("small", []byte("hello\n"), 0o600)
	write("exec", testutil.SeededBytes(1, 4097), 0o755)
	write("big", testutil.SeededBytes(2, 5*MiB+3), 0o640)
	write("dir/sub/deep", testutil.SeededBytes(3, 100), 0o644)
	write("ro-dir/f", []byte("inside a read-only directory\n"), 0o444)
	testutil.Check(t, os.Chmod(p("ro-dir"), 0o555))
	testutil.Check(t, os.Link(p("big"), p("dir/hard")))
	testutil.Check(t, os.Link(p("big"), p("hard2")))

	f := testutil.Must(os.Create(p("sparse")))
	testutil.Must(f.WriteAt(testutil.SeededBytes(4, MiB), 8*MiB))
	testutil.Must(f.WriteAt(testutil.SeededBytes(5, 4096), 40*MiB))
	testutil.Check(t, f.Truncate(64*MiB))
	testutil.Check(t, f.Close())
	testutil.Check(t, os.WriteFile(p("allhole"), nil, 0o644))
	testutil.Check(t, os.Truncate(p("allhole"), 10*MiB))

	testutil.Check(t, os.Symlink("small", p("link-rel")))
	testutil.Check(t, os.Symlink("../small", p("dir/link-up")))
	testutil.Check(t, os.Symlink("nowhere", p("dangling")))
	testutil.Check(t, unix.Mkfifo(p("fifo"), 0o640))
	testutil.Check(t, unix.Setxattr(p("small"), "user.color", []byte("blue"), 0))
	testutil.Check(t, unix.Setxattr(p("small"), "user.empty", nil, 0))
	testutil.Check(t, unix.Setxattr(p("dir"), "user.kind", []byte("directory"), 0))
	if isRoot() {
		testutil.Check(t, unix.Mknod(p("null"), syscall.S_IFCHR|0o620, int(unix.Mkdev(1, 3))))
		testutil.Check(t, os.Lchown(p("small"), 1234, 5678))
		testutil.Check(t, os.Lchown(p("dir"), 42, 43))
		testutil.Check(t, os.Lchown(p("link-rel"), 7, 8))
		testutil.Check(t, os.Chmod(p("exec"), 0o4755|os.ModeSetuid))
	}
	setTimes(t, root)
	return root
}

// setTimes gives every entry distinct nanosecond times, deepest first so
// that directories keep theirs. atime is in the future, after ctime, so
// that no read, under relatime, moves it.
func setTimes(t *testing.T, root string) {
	var paths []string
	testutil.Check(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		paths = append(paths, p)
		return err
	}))
	sort.Slice(paths, func(i, j int) bool { return strings.Count(paths[i], "/") > strings.Count(paths[j], "/") })
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	for i, p := range paths {
		ts := []unix.Timespec{
			unix.NsecToTimespec(base.Add(3*time.Hour + time.Duration(i*1000+3)).UnixNano()),
			unix.NsecToTimespec(base.Add(time.Duration(i*1000 + 7)).UnixNano()),
		}
		testutil.Check(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW))
	}
}

func lookup(t *testing.T, v vfs.FS, p string) vfs.Attr {
	t.Helper()
	a := vfs.Attr{Ino: vfs.RootIno}
	for _, c := range strings.Split(strings.Trim(p, "/"), "/") {
		a = testutil.Must(v.Lookup(a.Ino, c))
	}
	return a
}

func TestImportKeepsEverything(t *testing.T) {
	src := buildSource(t)
	v := openVolume(t)
	s, err := v.Import(context.Background(), src, "/dst", importer.Options{Jobs: 3})
	testutil.Check(t, err)
	if len(s.Failures) > 0 || s.WarnCount > 0 {
		t.Fatalf("failures %v, warnings %v", s.Failures, s.Warnings)
	}
	want, got := hostTree(t, src), volumeTree(t, v.NS, lookup(t, v.NS, "/dst").Ino)
	for _, d := range diffTrees(want, got) {
		t.Error(d)
	}
	specials := int64(1)
	if isRoot() {
		specials = 2
	}
	dataBytes := int64(0 + 6 + 4097 + 5*MiB + 3 + 100 + 29 + MiB + 4096)
	if s.Target != "/dst" || s.Files != 8 || s.Dirs != 5 || s.Symlinks != 3 || s.Specials != specials ||
		s.HardLinks != 2 || s.Bytes != dataBytes || s.TotalFiles != 8 || !s.Counted {
		t.Errorf("summary %+v; want target /dst, 8 files, 5 dirs, 3 symlinks, %d specials, 2 hard links, %d bytes read", s, specials, dataBytes)
	}
	if s.StoredBytes <= 0 || s.StoredBytes > dataBytes {
		t.Errorf("stored %d bytes for %d bytes of data", s.StoredBytes, dataBytes)
	}
	if a := lookup(t, v.NS, "/dst/sparse"); a.Blocks*512 > 2*MiB {
		t.Errorf("sparse file of 1 MiB + 4 KiB data maps %d bytes: holes were filled", a.Blocks*512)
	}
	fsckClean(t, v)
}

func TestImportDestination(t *testing.T) {
	src := buildSource(t)
	v := openVolume(t)
	ctx := context.Background()
	testutil.Must(v.NS.Mkdir(vfs.Caller{}, vfs.RootIno, "into", 0o755))
	s, err := v.Import(ctx, src, "/into", importer.Options{})
	testutil.Check(t, err)
	if s.Target != "/into/src" {
		t.Errorf("import into an existing directory made %s, want /into/src (like cp -a)", s.Target)
	}
	lookup(t, v.NS, "/into/src/dir/sub/deep")
	before := v.Engine.Stats()
	for dst, why := range map[string]string{
		"/into":             "already exists",  // /into/src does
		"/into/src/small":   "already exists",  // a file
		"/missing/dst":      "does not exist",  // parent missing
		"/into/src/small/x": "not a directory", // through a file
	} {
		if _, err := v.Import(ctx, src, dst, importer.Options{}); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("import to %s: error %v, want one saying %q", dst, err, why)
		}
	}
	if after := v.Engine.Stats(); after != before {
		t.Errorf("refused imports changed the volume: %+v -> %+v", before, after)
	}
	// A single file.
	s, err = v.Import(ctx, filepath.Join(src, "big"), "/one", importer.Options{})
	testutil.Check(t, err)
	if s.Files != 1 || lookup(t, v.NS, "/one").Size != 5*MiB+3 {
		t.Errorf("single-file import: %+v", s)
	}
	fsckClean(t, v)
}

func TestImportSourceErrors(t *testing.T) {
	src := buildSource(t)
	testutil.Check(t, os.WriteFile(filepath.Join(src, "secret"), []byte("no"), 0o600))
	testutil.Check(t, os.WriteFile(filepath.Join(src, "dir", "bad"), testutil.SeededBytes(6, 9*MiB), 0o644))
	testutil.Check(t, os.Link(filepath.Join(src, "dir", "bad"), filepath.Join(src, "zz-bad-link")))
	var mu sync.Mutex
	badFds := map[int]int{} // fd of dir/bad -> reads so far
	open, pread := *importer.OpenSource, *importer.PreadSource
	t.Cleanup(func() { *importer.OpenSource, *importer.PreadSource = open, pread })
	*importer.OpenSource = func(p string) (*os.File, error) {
		if filepath.Base(p) == "secret" {
			return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EACCES}
		}
		f, err := open(p)
		if err == nil && strings.HasSuffix(p, "dir/bad") {
			mu.Lock()
			badFds[int(f.Fd())] = 0
			mu.Unlock()
		}
		return f, err
	}
	*importer.PreadSource = func(fd int, b []byte, off int64) (int, error) {
		mu.Lock()
		n, ok := badFds[fd]
		if ok {
			badFds[fd] = n + 1
		}
		mu.Unlock()
		if ok && n == 1 {
			return 0, syscall.EIO
		}
		return pread(fd, b, off)
	}
	v := openVolume(t)
	s, err := v.Import(context.Background(), src, "/dst", importer.Options{Jobs: 1})
	testutil.Check(t, err)
	got := map[string]string{}
	for _, f := range s.Failures {
		got[strings.TrimPrefix(f.Path, src+"/")] = f.Err
	}
	if len(got) != 3 || s.Failed != 3 || !strings.Contains(got["secret"], "permission denied") ||
		!strings.Contains(got["dir/bad"], "input/output error") || !strings.Contains(got["zz-bad-link"], "dir/bad") {
		t.Errorf("failures %q (%d); want secret: permission denied, dir/bad: input/output error, zz-bad-link: a link to dir/bad", got, s.Failed)
	}
	// What failed is not in the volume (neither name of dir/bad); all
	// the rest is, with its directories' times intact.
	want := hostTree(t, src)
	for _, p := range []string{"secret", "dir/bad", "zz-bad-link"} {
		delete(want.entries, p)
	}
	want.links = nil
	want.linkGroups()
	for _, d := range diffTrees(want, volumeTree(t, v.NS, lookup(t, v.NS, "/dst").Ino)) {
		t.Error(d)
	}
	fsckClean(t, v)
}

func TestImportDedup(t *testing.T) {
	src := buildSource(t)
	v := openVolume(t)
	first, err := v.Import(context.Background(), src, "/a", importer.Options{})
	testutil.Check(t, err)
	second, err := v.Import(context.Background(), src, "/b", importer.Options{})
	testutil.Check(t, err)
	if first.StoredBytes <= 0 || second.StoredBytes != 0 || second.Bytes != first.Bytes {
		t.Errorf("stored %d then %d bytes for %d and %d bytes read; want the second import to store nothing new",
			first.StoredBytes, second.StoredBytes, first.Bytes, second.Bytes)
	}
}

func TestImportNeverReadsItsStore(t *testing.T) {
	v := openVolume(t)
	ctx := context.Background()
	if _, err := v.Import(ctx, filepath.Join(v.Dir, "chunks"), "/x", importer.Options{}); err == nil || !strings.Contains(err.Error(), "store") {
		t.Errorf("import of the volume's own store: %v, want a refusal", err)
	}
	// A source holding the store imports everything but the store.
	parent := filepath.Dir(v.Dir)
	testutil.Check(t, os.WriteFile(filepath.Join(parent, "note"), []byte("kept\n"), 0o644))
	s, err := v.Import(ctx, parent, "/p", importer.Options{})
	testutil.Check(t, err)
	lookup(t, v.NS, "/p/note")
	if _, err := v.NS.Lookup(lookup(t, v.NS, "/p").Ino, filepath.Base(v.Dir)); err == nil {
		t.Errorf("the store was imported into itself")
	}
	if s.WarnCount != 1 || !strings.Contains(s.Warnings[0], "skipped") {
		t.Errorf("warnings %q, want one about skipping the store", s.Warnings)
	}
}

// TestImportLeavesAtimes checks that reading the source moves no atime,
// even where relatime would (atime before mtime), so that the atimes
// imported are the ones the source had before.
func TestImportLeavesAtimes(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	testutil.Check(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	testutil.Check(t, os.WriteFile(filepath.Join(src, "d", "f"), []byte("data"), 0o644))
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	atime := mtime.Add(-time.Hour + 5)
	for _, p := range []string{"d/f", "d", "."} {
		testutil.Check(t, os.Chtimes(filepath.Join(src, p), atime, mtime))
	}
	v := openVolume(t)
	_, err := v.Import(context.Background(), src, "/dst", importer.Options{})
	testutil.Check(t, err)
	for _, p := range []string{"d/f", "d", "."} {
		fi := testutil.Must(os.Stat(filepath.Join(src, p)))
		hostAtime := time.Unix(fi.Sys().(*syscall.Stat_t).Atim.Unix())
		got := lookup(t, v.NS, filepath.Join("/dst", p))
		if !hostAtime.Equal(atime) || !got.Atime.Equal(atime) {
			t.Errorf("%s: atime %v, now %v in the source and %v in the volume", p, atime, hostAtime, got.Atime)
		}
	}
}
