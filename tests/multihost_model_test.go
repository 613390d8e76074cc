package tests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/crashtest"
	"github.com/doppelfs/doppel/internal/testutil"
)

var multiHostSeed = crashSeed // -crash.seed replays this test too

// TestMultiHostModel: three hosts mount one volume; random operations
// (write, append, rename across directories, unlink, mkdir, hard link,
// clone, unlink of a file open on another host, overwrite in place) run
// one at a time, each on a random host, against a reference model. After
// each, another host must see its result within the coherence bound
// (docs/SHARED.md, 9.3: the paths it touched, with their contents:
// metadata within the notification delay), and after an append or an
// overwrite another host must read the new content at once (data
// close-to-open); every 25
// operations every host's whole tree is compared with the model. At the
// end the volume, unmounted, is strictly clean. Seeded; the seed is
// printed. DOPPEL_MULTIHOST_MODEL_OPS sets the number of operations
// (default 150).
func TestMultiHostModel(t *testing.T) {
	ops := max(1, testutil.EnvInt(t, "DOPPEL_MULTIHOST_MODEL_OPS", 150))
	seed := crashtest.Seed(t, *multiHostSeed, "crash.seed")
	hosts := hostTrio(t, "model")
	m := &hostModel{t: t, hosts: hosts, r: rand.New(rand.NewPCG(seed, 11)),
		files: map[string][]byte{}, dirs: map[string]bool{"": true}}
	for i := range ops {
		m.step(i)
		if (i+1)%25 == 0 {
			m.compareAll()
		}
	}
	m.compareAll()
	t.Logf("%d operations on 3 hosts; slowest change to show on another host: %v", ops, m.slowest)
	for _, h := range hosts {
		h.umount(t)
	}
	hosts[0].fsckStrict(t)
}

// hostTrio is hostPair with a third host.
func hostTrio(t *testing.T, prefix string) []*volume {
	t.Helper()
	a, _, _ := s3Volume(t, prefix)
	return append([]*volume{a}, joinHosts(t, a, "b", "c")...)
}

// hostModel is the reference: regular files (path -> content) and
// directories, paths relative to the mount point.
type hostModel struct {
	t       *testing.T
	hosts   []*volume
	r       *rand.Rand
	files   map[string][]byte
	dirs    map[string]bool
	next    int
	slowest time.Duration
	log     []string // what each operation did, for failure messages
}

// history is the operations that touched path p (or a directory above it).
func (m *hostModel) history(p string) string {
	var out []string
	for _, l := range m.log {
		for _, part := range strings.Split(p, "/") {
			if strings.Contains(l, part) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// listings is what every host lists of p's directory.
func (m *hostModel) listings(p string) string {
	var out []string
	for _, h := range m.hosts {
		ents, err := os.ReadDir(h.path(filepath.Dir(p)))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		out = append(out, fmt.Sprintf("%s: %v %v", h.Mnt, names, err))
	}
	return strings.Join(out, "\n")
}

func (m *hostModel) host() *volume { return m.hosts[m.r.IntN(len(m.hosts))] }

// other is a host other than h.
func (m *hostModel) other(h *volume) *volume {
	for {
		if o := m.hosts[m.r.IntN(len(m.hosts))]; o != h {
			return o
		}
	}
}

func (m *hostModel) pick(set map[string]bool) string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[m.r.IntN(len(keys))]
}

func (m *hostModel) pickFile() (string, bool) {
	if len(m.files) == 0 {
		return "", false
	}
	keys := make([]string, 0, len(m.files))
	for k := range m.files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[m.r.IntN(len(keys))], true
}

func (m *hostModel) newName(dir, prefix string) string {
	m.next++
	return filepath.Join(dir, fmt.Sprintf("%s%d", prefix, m.next))
}

func (m *hostModel) data() []byte {
	n := m.r.IntN(5)
	size := []int{0, 100, 5000, 70 << 10, 600 << 10}[n]
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(m.r.Uint32())
	}
	return b
}

func (m *hostModel) must(err error, what string) {
	m.t.Helper()
	if err != nil {
		m.t.Fatalf("%s: %v", what, err)
	}
}

// step runs one random operation on a random host and checks its result
// on another.
func (m *hostModel) step(i int) {
	t := m.t
	t.Helper()
	h := m.host()
	var touched []string
	var what string
	switch op := m.r.IntN(10); {
	case op < 3 || len(m.files) == 0: // a new file
		p := m.newName(m.pick(m.dirs), "f")
		d := m.data()
		m.must(writeSynced(h.path(p), d), "write "+p)
		m.files[p] = d
		touched, what = []string{p}, "write"
	case op == 3: // append
		p, _ := m.pickFile()
		d := m.data()
		f, err := os.OpenFile(h.path(p), os.O_WRONLY|os.O_APPEND, 0)
		m.must(err, "open "+p)
		_, err = f.Write(d)
		m.must(err, "append "+p)
		m.must(f.Close(), "close "+p)
		m.files[p] = append(slices.Clone(m.files[p]), d...)
		touched, what = []string{p}, "append"
	case op == 4: // rename, maybe to another directory
		p, _ := m.pickFile()
		q := m.newName(m.pick(m.dirs), "r")
		m.must(os.Rename(h.path(p), h.path(q)), "rename "+p)
		m.files[q] = m.files[p]
		delete(m.files, p)
		touched, what = []string{p, q}, "rename"
	case op == 5: // unlink
		p, _ := m.pickFile()
		m.must(os.Remove(h.path(p)), "unlink "+p)
		delete(m.files, p)
		touched, what = []string{p}, "unlink"
	case op == 6: // mkdir
		d := m.newName(m.pick(m.dirs), "d")
		m.must(os.Mkdir(h.path(d), 0o755), "mkdir "+d)
		m.dirs[d] = true
		touched, what = []string{d}, "mkdir"
	case op == 7: // hard link: both names show the content; then one goes
		p, _ := m.pickFile()
		q := m.newName(m.pick(m.dirs), "l")
		m.must(os.Link(h.path(p), h.path(q)), "link "+p)
		m.files[q] = m.files[p]
		m.settle(m.other(h), []string{p, q})
		m.must(os.Remove(h.path(q)), "unlink "+q)
		delete(m.files, q)
		touched, what = []string{p, q}, "link"
	case op == 8: // unlink of a file open on another host, read after
		p, _ := m.pickFile()
		o := m.other(h)
		m.settle(o, []string{p})
		f, err := os.Open(o.path(p))
		m.must(err, "open "+p+" on the other host")
		m.must(os.Remove(h.path(p)), "unlink "+p)
		want := m.files[p]
		delete(m.files, p)
		m.settle(o, []string{p}) // the name is gone there too
		got := make([]byte, len(want)+1)
		n, err := f.ReadAt(got, 0)
		if (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(got[:n], want) {
			t.Fatalf("op %d: %s open on %s, unlinked on %s: reads %d bytes (%v), want %d", i, p, o.Mnt, h.Mnt, n, err, len(want))
		}
		m.must(f.Close(), "close "+p)
		touched, what = []string{p}, "unlink while open elsewhere"
	case op == 9 && len(m.dirs) > 1: // clone a directory
		src := m.pick(m.dirs)
		for src == "" {
			src = m.pick(m.dirs)
		}
		dst := m.newName("", "c")
		if out, err := runDoppel(time.Minute, "clone", h.path(src), h.path(dst)); err != nil {
			t.Fatalf("doppel clone %s %s: %v\n%s", src, dst, err, out)
		}
		touched = m.cloneModel(src, dst)
		what = "clone"
	default: // overwrite in place (close-to-open)
		p, _ := m.pickFile()
		d := m.data()
		m.must(writeSynced(h.path(p), d), "overwrite "+p)
		m.files[p] = d
		touched, what = []string{p}, "overwrite"
	}
	if what == "append" || what == "overwrite" {
		m.closeToOpen(m.other(h), touched[0], i)
	}
	start := time.Now()
	o := m.other(h)
	m.settle(o, touched)
	if d := time.Since(start); d > m.slowest {
		m.slowest = d
	}
	m.log = append(m.log, fmt.Sprintf("op %d: %s on %s: %v", i, what, h.Mnt, touched))
	if m.t.Failed() {
		m.t.Fatalf("op %d (%s on %s)", i, what, h.Mnt)
	}
}

// cloneModel copies src's files and directories to dst in the model and
// returns the paths made.
func (m *hostModel) cloneModel(src, dst string) []string {
	made := []string{dst}
	m.dirs[dst] = true
	for d := range m.dirs {
		if strings.HasPrefix(d, src+"/") {
			nd := dst + strings.TrimPrefix(d, src)
			m.dirs[nd] = true
			made = append(made, nd)
		}
	}
	for f, data := range m.files {
		if strings.HasPrefix(f, src+"/") {
			nf := dst + strings.TrimPrefix(f, src)
			m.files[nf] = data
			made = append(made, nf)
		}
	}
	slices.Sort(made)
	return made
}

// closeToOpen reads p on host o at once, without waiting for the
// notification: p existed there before, and a close on one host that
// returned makes an open on any other see the data (docs/SHARED.md, 9.3).
func (m *hostModel) closeToOpen(o *volume, p string, i int) {
	m.t.Helper()
	if msg := m.check(o, p); msg != "" {
		m.t.Fatalf("op %d, close-to-open on %s: %s\nhistory:\n%s", i, o.Mnt, msg, m.history(p))
	}
}

// settle waits until host o shows the paths as the model says, within the
// coherence bound.
func (m *hostModel) settle(o *volume, paths []string) {
	m.t.Helper()
	if bad := m.within(func() string {
		for _, p := range paths {
			if msg := m.check(o, p); msg != "" {
				return msg
			}
		}
		return ""
	}); bad != "" {
		m.t.Fatalf("%s: %s after %v\nhistory:\n%s\nlistings:\n%s", o.Mnt, bad, coherenceBound, m.history(paths[0]), m.listings(paths[0]))
	}
}

// coherenceBound is how long another host's change may take to be seen
// (names and attributes; docs/SHARED.md, 9.3).
const coherenceBound = 3 * time.Second

// within calls differ until it returns "" or coherenceBound has passed,
// and returns what it said last.
func (m *hostModel) within(differ func() string) string {
	deadline := time.Now().Add(coherenceBound)
	for {
		msg := differ()
		if msg == "" || time.Now().After(deadline) {
			return msg
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// check compares path p on host o with the model; "" when they agree.
func (m *hostModel) check(o *volume, p string) string {
	if m.dirs[p] {
		if st, err := os.Stat(o.path(p)); err != nil || !st.IsDir() {
			return fmt.Sprintf("directory %s: %v", p, err)
		}
		return ""
	}
	want, ok := m.files[p]
	got, err := os.ReadFile(o.path(p))
	switch {
	case !ok && errors.Is(err, fs.ErrNotExist):
		return ""
	case !ok:
		return fmt.Sprintf("%s exists (%v), the model says it does not", p, err)
	case err != nil:
		return fmt.Sprintf("%s: %v", p, err)
	case !bytes.Equal(got, want):
		return fmt.Sprintf("%s has %d bytes, the model %d", p, len(got), len(want))
	}
	return ""
}

// compareAll compares every host's whole tree with the model, allowing
// each host the coherence bound for what the last operations changed.
func (m *hostModel) compareAll() {
	m.t.Helper()
	for _, h := range m.hosts {
		if msg := m.within(func() string { return m.compareHost(h) }); msg != "" {
			m.t.Fatalf("%s after %v", msg, coherenceBound)
		}
	}
}

// compareHost compares host h's whole tree with the model; "" when they
// agree.
func (m *hostModel) compareHost(h *volume) string {
	seen := map[string]bool{}
	err := filepath.WalkDir(h.Mnt, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(h.Mnt, path)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(rel, ".doppel") {
			return fs.SkipDir
		}
		seen[rel] = true
		if _, isFile := m.files[rel]; d.IsDir() && !m.dirs[rel] || !d.IsDir() && !isFile {
			return fmt.Errorf("%s: %s (directory: %v) is not in the model", h.Mnt, rel, d.IsDir())
		}
		return nil
	})
	if err != nil {
		return "walk " + h.Mnt + ": " + err.Error()
	}
	for p := range m.files {
		if msg := m.check(h, p); msg != "" || !seen[p] {
			return fmt.Sprintf("%s: %s (listed: %v)\nhistory:\n%s\nlistings:\n%s", h.Mnt, msg, seen[p], m.history(p), m.listings(p))
		}
	}
	for d := range m.dirs {
		if d != "" && !seen[d] {
			return fmt.Sprintf("%s: directory %s is missing", h.Mnt, d)
		}
	}
	return ""
}
