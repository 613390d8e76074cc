// Package pgtest starts a private PostgreSQL server for a test: a fresh
// cluster in a temporary directory, listening on 127.0.0.1 on a free port
// and on a Unix socket inside that directory, stopped and removed when the
// test ends (t.Cleanup), whether it passed or not.
//
// initdb refuses to run as root, so as root the cluster belongs to the
// `postgres` user and the server runs as it; as any other user it runs as
// that user. The test is skipped, saying why, only when the PostgreSQL
// binaries are not installed (scripts/ensure-deps.sh installs them).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running test cluster.
type Server struct {
	Dir      string // the temporary directory: data/, the socket, the log
	Port     int
	User     string // the cluster's superuser
	Password string // its password (TCP connections need it)
	cmd      *exec.Cmd
	exited   chan struct{}
	bin      string
	cred     *syscall.Credential
	opts     Options
}

// Options tune the cluster. The zero value is what tests want.
type Options struct {
	// Fsync keeps PostgreSQL's fsync and synchronous commits on (off by
	// default: tests do not survive power loss anyway, and the machine's
	// disk is shared). Benchmarks that measure commit cost turn it on.
	Fsync bool
	// Settings are more server settings, each NAME=VALUE.
	Settings []string
}

// Start starts a server for t with the default options.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith starts a server for t.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Skipf("PostgreSQL is not installed (%v): scripts/ensure-deps.sh installs Debian's postgresql package", err)
	}
	cred, owner, err := runAs()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // runs after the server's stop (LIFO)
	s := &Server{Dir: dir, User: "doppel", Password: randomHex(12), bin: bin, cred: cred, opts: o}
	if err := s.initdb(bin, cred, owner); err != nil {
		t.Fatal(err)
	}
	// A free port can be taken by someone else between our probe and the
	// server's bind: try a few.
	for attempt := 0; ; attempt++ {
		s.Port, err = freePort()
		if err == nil {
			err = s.start()
		}
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("start PostgreSQL: %v\n%s", err, s.logTail())
		}
	}
	t.Cleanup(s.stop)
	return s
}

// ErrNotInstalled is StartShared's error when the PostgreSQL binaries are
// missing.
var ErrNotInstalled = errors.New("PostgreSQL is not installed (scripts/ensure-deps.sh installs Debian's postgresql package)")

// StartShared starts a server for a whole test binary (a TestMain that
// runs many tests against one server). The caller must call stop, which
// stops the server and removes its directory; if the binary dies first,
// the server follows it (Pdeathsig).
func StartShared(o Options) (s *Server, stop func(), err error) {
	bin, err := binDir()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	cred, owner, err := runAs()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, nil, err
	}
	s = &Server{Dir: dir, User: "doppel", Password: randomHex(12), bin: bin, cred: cred, opts: o}
	stop = func() { s.stop(); os.RemoveAll(dir) }
	if err := s.initdb(bin, cred, owner); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		s.Port, err = freePort()
		if err == nil {
			err = s.start()
		}
		if err == nil {
			return s, stop, nil
		}
		if attempt == 2 {
			log := s.logTail()
			stop()
			return nil, nil, fmt.Errorf("start PostgreSQL: %v\n%s", err, log)
		}
	}
}

// Restart stops the server (fast shutdown: sessions are ended) and starts
// it again on the same port, as an administrator's restart would.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.stop()
	if err := s.start(); err != nil {
		t.Fatalf("restart PostgreSQL: %v\n%s", err, s.logTail())
	}
}

// Crash stops the server as a crash would (immediate shutdown: no
// checkpoint, WAL not yet written is lost) and starts it again, which
// runs crash recovery (unlogged tables come back empty).
func (s *Server) Crash(t testing.TB) {
	t.Helper()
	s.crash()
	if err := s.start(); err != nil {
		t.Fatalf("start PostgreSQL after a crash: %v\n%s", err, s.logTail())
	}
}

// Stop stops the server (fast shutdown: sessions are ended) until
// Resume; a stopped server is still stopped for good by the cleanup.
func (s *Server) Stop() { s.stop() }

// Resume starts a server Stop stopped, on the same port.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("start PostgreSQL again: %v\n%s", err, s.logTail())
	}
}

// Outage stops the server (fast shutdown), leaves it down for d and
// starts it again on the same port.
func (s *Server) Outage(t testing.TB, d time.Duration) {
	t.Helper()
	s.stop()
	time.Sleep(d)
	if err := s.start(); err != nil {
		t.Fatalf("restart PostgreSQL: %v\n%s", err, s.logTail())
	}
}

// binDir finds initdb and postgres: PG_BINDIR, then Debian's
// /usr/lib/postgresql/N/bin (the newest), then PATH.
func binDir() (string, error) {
	var dirs []string
	if d := os.Getenv("PG_BINDIR"); d != "" {
		dirs = append(dirs, d)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	dirs = append(dirs, found...)
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres in PG_BINDIR, /usr/lib/postgresql/*/bin or PATH")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// runAs returns the credentials the server runs with: the postgres user's
// when we are root, none (ourselves) otherwise; owner is its uid, or -1.
func runAs() (*syscall.Credential, int, error) {
	if os.Geteuid() != 0 {
		return nil, -1, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, fmt.Errorf("running as root, and initdb refuses root: %w (the postgresql package creates that user)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// DSN is a URL for database db over TCP with the password in it.
func (s *Server) DSN(db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(s.User, s.Password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// CreateDB creates database name and returns its DSN.
func (s *Server) CreateDB(t testing.TB, name string) string {
	t.Helper()
	dsn, err := s.CreateDatabase(name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// CreateDatabase creates database name and returns its DSN.
func (s *Server) CreateDatabase(name string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
