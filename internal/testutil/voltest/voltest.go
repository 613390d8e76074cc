// Package voltest is the volume kind matrix of the tests: the helpers
// that create volumes for tests (namespace, fsck, the end-to-end tests)
// create an embedded volume by default, and a shared one, its metadata on
// a private PostgreSQL server, when DOPPEL_TEST_META=postgres. The same
// tests then run against both kinds of volume.
//
// A package whose tests use it calls Main from its TestMain: with the
// postgres kind, Main starts one server for the package's tests (each
// volume gets a schema of its own), sets PGPASSWORD for the volumes and
// the daemons the tests start, and stops the server when the tests end,
// passed or not.
package voltest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/volume"
)

// Env is the variable that picks the kind: "" or "pebble" (embedded),
// "postgres" (shared).
const Env = "DOPPEL_TEST_META"

// Postgres reports whether tests run on shared volumes.
func Postgres() bool { return os.Getenv(Env) == "postgres" }

// metaURL is the server's database URL without its password (the
// password comes from PGPASSWORD, as a user's would).
var metaURL string

// Main runs the package's tests (m.Run) and returns the exit code.
func Main(m *testing.M) int {
	switch k := os.Getenv(Env); k {
	case "", "pebble":
		return m.Run()
	case "postgres":
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want pebble or postgres\n", Env, k)
		return 2
	}
	srv, stop, err := pgtest.StartShared(pgtest.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=postgres: %v\n", Env, err)
		return 1
	}
	defer stop()
	dsn, err := srv.CreateDatabase("doppel")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=postgres: %v\n", Env, err)
		return 1
	}
	u, _ := url.Parse(dsn)
	u.User = url.User(u.User.Username())
	metaURL = u.String()
	os.Setenv("PGPASSWORD", srv.Password)
	fmt.Fprintf(os.Stderr, "%s=postgres: volumes keep their metadata in %s\n", Env, metaURL)
	return m.Run()
}

// MetaURL is the --meta URL of the postgres kind ("" for embedded). It
// panics when Main did not start the server.
func MetaURL() string {
	if !Postgres() {
		return ""
	}
	if metaURL == "" {
		panic(errors.New("voltest: " + Env + "=postgres needs voltest.Main in the package's TestMain"))
	}
	return metaURL
}

// Init creates a volume of the matrix's kind in dir.
func Init(t testing.TB, dir string, opt volume.InitOptions) {
	t.Helper()
	opt.Meta = MetaURL()
	if err := volume.Init(dir, opt); err != nil {
		t.Fatal(err)
	}
}

// VolumeInit is volume.Init creating a volume of the matrix's kind.
func VolumeInit(dir string, opt volume.InitOptions) error {
	opt.Meta = MetaURL()
	return volume.Init(dir, opt)
}
