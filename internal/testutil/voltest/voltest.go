// Package voltest is the volume kind matrix of the tests: the helpers
// that create volumes for tests (namespace, fsck, the end-to-end tests)
// create an embedded volume by default, and a shared one, its metadata on
// a private PostgreSQL server, when DOPPEL_TEST_META=postgres, and with
// its chunk data also in S3 (a private versitygw, a key prefix per
// volume) when DOPPEL_TEST_META=postgres+s3. The same tests then run
// against every kind of volume.
//
// A package whose tests use it calls Main from its TestMain: with the
// postgres kind, Main starts one server for the package's tests (each
// volume gets a schema of its own), sets PGPASSWORD for the volumes and
// the daemons the tests start, and stops the server when the tests end,
// passed or not; postgres+s3 does the same with a versitygw, and puts its
// credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. The servers
// are sharedtest's, which the packages below the volume package use
// directly.
package voltest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/doppelfs/doppel/internal/testutil/sharedtest"
	"github.com/doppelfs/doppel/internal/volume"
)

// Env is the variable that picks the kind: "" or "pebble" (embedded),
// "postgres" (shared, data in the store directory), "postgres+s3"
// (shared, data in S3).
const Env = sharedtest.Env

// Postgres reports whether tests run on shared volumes.
func Postgres() bool { return sharedtest.Postgres() }

// S3 reports whether the shared volumes keep their chunk data in S3.
func S3() bool { return sharedtest.S3() }

// Main runs the package's tests (m.Run) and returns the exit code.
func Main(m *testing.M) int { return sharedtest.Main(m) }

// CacheBytes bounds the read cache of the postgres+s3 kind's volumes (0:
// the default; sharedtest.CacheEnv).
func CacheBytes() int64 { return sharedtest.CacheBytes() }

// MetaURL is the --meta URL of the postgres kind ("" for embedded). It
// panics when Main did not start the server.
func MetaURL() string { return sharedtest.MetaURL() }

// DataURL is a --data URL with a prefix no other volume of the test
// binary has ("" unless the kind is postgres+s3).
func DataURL() string { return sharedtest.DataURL() }

// S3Client is a client of the postgres+s3 kind's S3 server (nil for the
// other kinds).
func S3Client() *s3.Client { return sharedtest.S3Client() }

// Init creates a volume of the matrix's kind in dir.
func Init(t testing.TB, dir string, opt volume.InitOptions) {
	t.Helper()
	if err := VolumeInit(dir, opt); err != nil {
		t.Fatal(err)
	}
}

// VolumeInit is volume.Init creating a volume of the matrix's kind.
func VolumeInit(dir string, opt volume.InitOptions) error {
	opt.Meta, opt.Data = MetaURL(), DataURL()
	if opt.Data != "" {
		opt.CacheBytes = sharedtest.CacheBytes()
	}
	return volume.Init(dir, opt)
}
