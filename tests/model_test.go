package tests

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestModel applies a long random sequence of file system operations to a
// doppel mount (the system under test, "sut") and to a directory on the
// host file system (the reference, "ref"), and requires the same errnos,
// results and resulting state from both.
//
// Replay a failure with the seed it prints:
//
//	go test ./tests -run 'TestModel$' -model.seed=N [-model.ops=STEP]
//
// DOPPEL_MODEL_TARGET=plain runs against a second host directory instead
// of a mount, to validate the harness itself. DOPPEL_MODEL_INIT holds extra
// flags for doppel init, e.g. "--chunking fixed:4K --compression zstd".
var (
	modelSeed = flag.Int64("model.seed", 0, "seed for TestModel (0: time-based)")
	modelOps  = flag.Int("model.ops", 5000, "operations in TestModel (env DOPPEL_MODEL_OPS replaces the default)")
)

// Bounds that keep every step cheap.
const (
	maxFiles     = 40      // regular files and symlinks
	maxDirs      = 10      // besides the root
	maxDirDepth  = 2       // directories below the root, so 3 levels
	maxFileSize  = 2 << 20 // no operation grows a file beyond this
	maxIOSize    = 300 << 10
	numHandles   = 4    // long-lived open fds
	ringSize     = 20   // recent ops printed on failure
	fullEvery    = 100  // ops between full-tree comparisons
	remountEvery = 2500 // ops between remounts (persistence checks)
)

func TestModel(t *testing.T) {
	// Beside TestModelParallel: each keeps about one core busy, mostly
	// waiting for the other side of FUSE, so together they take little
	// more than the longer one.
	t.Parallel()
	seed, ops := modelConfig(t)
	target := os.Getenv("DOPPEL_MODEL_TARGET")
	t.Logf("model: seed=%d ops=%d target=%q (replay: -model.seed=%d)", seed, ops, target, seed)
	setModelUmask(t)

	refRoot := realTempDir(t)
	var v *volume
	var sutRoot string
	switch target {
	case "plain":
		sutRoot = realTempDir(t)
	case "", "doppel":
		v = newVolume(t, strings.Fields(os.Getenv("DOPPEL_MODEL_INIT"))...)
		// A subdirectory, so that anything doppel may show in the root of
		// a volume is out of the comparison.
		sutRoot = v.path("model")
		if err := os.Mkdir(sutRoot, 0o755); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("DOPPEL_MODEL_TARGET=%q: want plain or doppel", target)
	}
	for _, r := range []string{refRoot, sutRoot} {
		if err := os.Chmod(r, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	m := newModel(t, seed, target, refRoot, sutRoot)
	if v != nil {
		m.remount = func() { v.remount(t) }
	}
	t.Cleanup(m.closeHandles) // before the volume's cleanup unmounts
	stop := m.watchdog()
	defer stop()
	m.run(ops)

	m.logStats()
	m.closeHandles()
	m.compareTrees("at the end")
	if m.remount != nil {
		m.remount()
		m.compareTrees("after remount at the end")
		v.umount(t)
		v.fsck(t)
	}
}

// modelConfig returns the seed and the number of operations: flags first,
// then DOPPEL_MODEL_OPS, then the defaults (fewer with -short).
func modelConfig(t *testing.T) (seed int64, ops int) {
	seed = *modelSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	ops = *modelOps
	switch env := os.Getenv("DOPPEL_MODEL_OPS"); {
	case flagSet("model.ops"):
	case env != "":
		n, err := strconv.Atoi(env)
		if err != nil {
			t.Fatalf("DOPPEL_MODEL_OPS=%q: %v", env, err)
		}
		ops = n
	case testing.Short():
		ops = 1000
	}
	return seed, ops
}

// The umask is the process's: the model tests running at once share one
// setting, the first sets it and the last restores it.
var modelUmask struct {
	sync.Mutex
	users int
	saved int
}

// setModelUmask gives both sides a fixed, typical umask (applied by the
// kernel for FUSE, or by the daemon if it asks for FUSE_DONT_MASK) until
// t and every other model test running beside it end.
func setModelUmask(t *testing.T) {
	modelUmask.Lock()
	defer modelUmask.Unlock()
	if modelUmask.users == 0 {
		modelUmask.saved = syscall.Umask(0o022)
	}
	modelUmask.users++
	t.Cleanup(func() {
		modelUmask.Lock()
		defer modelUmask.Unlock()
		if modelUmask.users--; modelUmask.users == 0 {
			syscall.Umask(modelUmask.saved)
		}
	})
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// side is one of the two trees operations are applied to.
type side struct {
	name string
	root string
	h    [numHandles]int // long-lived fds; -1 when closed
}

// abs maps a model path ("." or "a/b") into the side's tree.
func (s *side) abs(rel string) string { return filepath.Join(s.root, rel) }

// op is one generated operation; run applies it to a side.
type op struct {
	desc    string
	paths   []string // model paths whose state to compare afterwards
	handles []int    // handles whose state to compare afterwards
	norm    func(syscall.Errno) syscall.Errno
	run     func(s *side) outcome
}

// outcome is what one side returned for an op.
type outcome struct {
	call  string // the system call that failed, if one did
	errno syscall.Errno
	n     int64
	data  []byte
	strs  []string
}

// do records the first failing call; it reports whether err was nil.
func (o *outcome) do(call string, err error) bool {
	if err == nil {
		return true
	}
	if o.errno == 0 {
		o.call, o.errno = call, errnoOf(err)
	}
	return false
}

func (o outcome) String() string {
	s := fmt.Sprintf("n=%d", o.n)
	if o.errno != 0 {
		s = fmt.Sprintf("%s: %s, %s", o.call, errName(o.errno), s)
	}
	if len(o.strs) > 0 {
		s += fmt.Sprintf(" %q", o.strs)
	}
	return s
}

func diffOutcome(ref, sut outcome) string {
	if ref.errno != sut.errno || ref.call != sut.call || ref.n != sut.n ||
		strings.Join(ref.strs, "\x00") != strings.Join(sut.strs, "\x00") {
		return fmt.Sprintf("ref: %v; sut: %v", ref, sut)
	}
	if d := diffBytes(ref.data, sut.data); d != "" {
		return "data returned: " + d
	}
	return ""
}

// model drives the test; all randomness comes from seed, and generation
// looks only at the reference side, so a seed replays exactly.
type model struct {
	t        *testing.T
	seed     int64
	target   string
	rng      *rand.Rand
	bytesRNG *rand.ChaCha8 // bulk random data
	motifs   [][]byte      // repeated content, for dedup
	ref, sut *side
	snap     *refSnapshot   // the reference tree before the current op
	bufs     [2][]byte      // ref and sut: read buffers reused by apply
	stats    map[string]int // "op errno" -> count, logged at the end
	remount  func()         // nil for the plain target

	mu   sync.Mutex // guards the fields below, read by the watchdog
	step int
	cur  string
	ring []string
	last time.Time
}

func newModel(t *testing.T, seed int64, target, refRoot, sutRoot string) *model {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed))
	m := &model{
		t:        t,
		seed:     seed,
		target:   target,
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x646f7070656c)),
		bytesRNG: rand.NewChaCha8(key),
		ref:      &side{name: "ref", root: refRoot},
		sut:      &side{name: "sut", root: sutRoot},
		stats:    map[string]int{},
	}
	for i := range numHandles {
		m.ref.h[i], m.sut.h[i] = -1, -1
	}
	for range 6 {
		b := make([]byte, 64<<10+m.rng.IntN(448<<10))
		m.bytesRNG.Read(b)
		m.motifs = append(m.motifs, b)
	}
	return m
}

func (m *model) run(ops int) {
	start := time.Now()
	for step := 1; step <= ops; step++ {
		if step%5000 == 0 {
			m.t.Logf("step %d of %d after %v", step, ops, time.Since(start).Round(time.Second))
		}
		m.snap = scanRef(m.t, m.ref.root)
		o := m.genOp()
		m.mu.Lock()
		m.step, m.cur, m.last = step, o.desc, time.Now()
		m.ring = append(m.ring, fmt.Sprintf("%6d: %s", step, o.desc))
		if len(m.ring) > ringSize {
			m.ring = m.ring[1:]
		}
		m.mu.Unlock()
		m.apply(o)
		if step%fullEvery == 0 {
			m.compareTrees(fmt.Sprintf("full comparison after step %d", step))
		}
		if step%remountEvery == 0 && step < ops {
			// Handles are closed on both sides (also for the plain target,
			// so that a seed runs the same ops everywhere).
			m.closeHandles()
			m.compareTrees(fmt.Sprintf("before remount after step %d", step))
			if m.remount != nil {
				m.remount()
				m.compareTrees(fmt.Sprintf("after remount after step %d", step))
			}
		}
	}
}

// apply runs o on both sides and compares results and touched state.
func (m *model) apply(o *op) {
	ro, so := o.run(m.ref), o.run(m.sut)
	if o.norm != nil {
		ro.errno, so.errno = o.norm(ro.errno), o.norm(so.errno)
	}
	kind, _, _ := strings.Cut(o.desc, " ")
	m.stats[kind+" "+errName(ro.errno)]++
	if d := diffOutcome(ro, so); d != "" {
		m.fail("results differ: %s", d)
	}
	for _, p := range o.paths {
		rs, ss := pathStateInto(m.ref.abs(p), false, m.bufs[0]), pathStateInto(m.sut.abs(p), false, m.bufs[1])
		m.keepBuffers(rs, ss)
		if d := diffState(rs, ss); d != "" {
			m.fail("state of %q differs: %s", p, d)
		}
	}
	for _, h := range o.handles {
		rfd, sfd := m.ref.h[h], m.sut.h[h]
		if (rfd < 0) != (sfd < 0) {
			m.fail("handle %d open on one side only (ref fd %d, sut fd %d)", h, rfd, sfd)
		}
		if rfd < 0 {
			continue
		}
		rs, ss := fdState(rfd, m.bufs[0]), fdState(sfd, m.bufs[1])
		m.keepBuffers(rs, ss)
		if d := diffState(rs, ss); d != "" {
			m.fail("state of the file open as handle %d differs: %s", h, d)
		}
	}
}

// keepBuffers keeps the arrays the two sides' contents were read into
// for the next operation's states.
func (m *model) keepBuffers(ref, sut *nodeState) {
	for i, n := range []*nodeState{ref, sut} {
		if cap(n.Content) > cap(m.bufs[i]) {
			m.bufs[i] = n.Content[:0]
		}
	}
}

func (m *model) compareTrees(when string) {
	m.t.Helper()
	ref, err := snapshotTree(m.ref.root)
	if err != nil {
		m.fail("%s: walking ref: %v", when, err)
	}
	sut, err := snapshotTree(m.sut.root)
	if err != nil {
		m.fail("%s: walking sut: %v", when, err)
	}
	if d := diffTrees(ref, sut); len(d) > 0 {
		if len(d) > 20 {
			d = append(d[:20], fmt.Sprintf("... and %d more", len(d)-20))
		}
		m.fail("%s: trees differ:\n  %s", when, strings.Join(d, "\n  "))
	}
}

// fail stops the test with everything needed to understand and replay.
func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatal(m.report(fmt.Sprintf(format, args...)))
}

func (m *model) report(msg string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "model failure: seed=%d step=%d target=%q\n", m.seed, m.step, m.target)
	fmt.Fprintf(&b, "op: %s\n%s\n", m.cur, msg)
	fmt.Fprintf(&b, "last %d ops:\n%s\n", len(m.ring), strings.Join(m.ring, "\n"))
	env := ""
	if m.target != "" {
		env = "DOPPEL_MODEL_TARGET=" + m.target + " "
	}
	if init := os.Getenv("DOPPEL_MODEL_INIT"); init != "" {
		env += fmt.Sprintf("DOPPEL_MODEL_INIT=%q ", init)
	}
	fmt.Fprintf(&b, "replay: %sgo test ./tests -run 'TestModel$' -model.seed=%d -model.ops=%d -v", env, m.seed, m.step)
	return b.String()
}

// watchdog prints the seed and recent ops if a step hangs (say, a
// deadlocked daemon), since a test timeout would lose them.
func (m *model) watchdog() (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		reported := -1
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			m.mu.Lock()
			step, stuck := m.step, time.Since(m.last)
			m.mu.Unlock()
			if stuck > 2*time.Minute && step != reported {
				reported = step
				fmt.Fprintf(os.Stderr, "TestModel: step stuck for %v\n%s\n", stuck.Round(time.Second), m.report("(still running)"))
			}
		}
	}()
	return func() { close(done) }
}

func (m *model) closeHandles() {
	for _, s := range []*side{m.ref, m.sut} {
		for i, fd := range s.h {
			if fd >= 0 {
				unix.Close(fd)
				s.h[i] = -1
			}
		}
	}
}

// refSnapshot is the reference tree as generation sees it.
type refSnapshot struct {
	dirs  []refEntry // including the root "."
	files []refEntry // regular files
	links []refEntry // symlinks
	all   []refEntry // everything but the root
	byIno map[uint64][]string
}

type refEntry struct {
	path   string
	typ    uint32
	size   int64
	ino    uint64
	depth  int // of the entry itself: 1 for a name in the root
	height int // directories: depth of the deepest descendant minus own depth
	empty  bool
}

func scanRef(t *testing.T, root string) *refSnapshot {
	s := &refSnapshot{byIno: map[uint64][]string{}}
	var walk func(rel string, depth int) int
	walk = func(rel string, depth int) int {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(root, rel), &st); err != nil {
			t.Fatalf("scanning reference: %v", err)
		}
		e := refEntry{path: rel, typ: st.Mode & unix.S_IFMT, size: st.Size, ino: st.Ino, depth: depth}
		switch e.typ {
		case unix.S_IFDIR:
			ents, err := os.ReadDir(filepath.Join(root, rel))
			if err != nil {
				t.Fatalf("scanning reference: %v", err)
			}
			i := len(s.dirs)
			s.dirs = append(s.dirs, e)
			for _, c := range ents {
				e.height = max(e.height, walk(joinPath(rel, c.Name()), depth+1)-depth)
			}
			s.dirs[i].height, s.dirs[i].empty = e.height, len(ents) == 0
			if rel != "." {
				s.all = append(s.all, s.dirs[i])
			}
			return depth + e.height
		case unix.S_IFREG:
			s.files = append(s.files, e)
		case unix.S_IFLNK:
			s.links = append(s.links, e)
		}
		s.all = append(s.all, e)
		s.byIno[e.ino] = append(s.byIno[e.ino], rel)
		return depth
	}
	walk(".", 0)
	return s
}

func joinPath(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

func pathDepth(p string) int {
	if p == "." {
		return 0
	}
	return strings.Count(p, "/") + 1
}

// logStats logs how often each operation ended with each errno, to show
// what a run covered.
func (m *model) logStats() {
	lines := []string{fmt.Sprintf("(final tree: %d files, %d symlinks, %d dirs)", len(m.snap.files), len(m.snap.links), len(m.snap.dirs))}
	for k, n := range m.stats {
		lines = append(lines, fmt.Sprintf("%-22s %6d", k, n))
	}
	slices.Sort(lines)
	m.t.Logf("operations by result:\n  %s", strings.Join(lines, "\n  "))
}
