// Package sharedtest is the server half of the volume kind matrix
// (DOPPEL_TEST_META, see voltest): it starts the private PostgreSQL server
// and versitygw of a test binary, hands out their URLs, and opens raw
// metadata and chunk stores of the matrix's kind on them. voltest builds
// volumes on top of it; packages below the volume package (the content
// engine), which cannot import voltest without an import cycle, take
// their stores from here.
package sharedtest

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/doppelfs/doppel/internal/testutil/pgtest"
	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

// Env is the variable that picks the kind: "" or "pebble" (embedded),
// "postgres" (shared, data in the store directory), "postgres+s3"
// (shared, data in S3).
const Env = "DOPPEL_TEST_META"

// Postgres reports whether tests run on shared volumes.
func Postgres() bool { k := os.Getenv(Env); return k == "postgres" || k == "postgres+s3" }

// S3 reports whether the shared volumes keep their chunk data in S3.
func S3() bool { return os.Getenv(Env) == "postgres+s3" }

// CacheEnv, when set, is the bound in bytes of the local read cache of
// the postgres+s3 kind's volumes (default: the product's): a small one
// makes the tests go through the cache's eviction and promotion.
const CacheEnv = "DOPPEL_TEST_CACHE_BYTES"

// CacheBytes is CacheEnv's value, 0 when unset. It panics on a value that
// is not a positive number of bytes.
func CacheBytes() int64 {
	v := os.Getenv(CacheEnv)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		panic(fmt.Sprintf("%s=%q: want a positive number of bytes", CacheEnv, v))
	}
	return n
}

// metaURL is the server's database URL without its password (the
// password comes from PGPASSWORD, as a user's would).
var metaURL string

// s3srv is the S3 server of the postgres+s3 kind; prefixes counts the
// key prefixes handed out, schemas the schemas.
var (
	s3srv    *s3test.Server
	prefixes atomic.Int64
	schemas  atomic.Int64
)

// Main runs the package's tests (m.Run) and returns the exit code. With
// a shared kind it starts the servers first, sets PGPASSWORD (and for
// postgres+s3 AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) for the stores
// and the daemons the tests start, and stops the servers when the tests
// end, passed or not.
func Main(m *testing.M) int {
	switch k := os.Getenv(Env); k {
	case "", "pebble":
		return m.Run()
	case "postgres", "postgres+s3":
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want pebble, postgres or postgres+s3\n", Env, k)
		return 2
	}
	if S3() {
		srv, stop, err := s3test.StartShared()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=postgres+s3: %v\n", Env, err)
			return 1
		}
		defer stop()
		s3srv = srv
		os.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
		os.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
		fmt.Fprintf(os.Stderr, "%s=postgres+s3: chunk data in bucket %s of %s\n", Env, srv.Bucket, srv.Endpoint)
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

// MetaURL is the --meta URL of the shared kinds ("" for embedded). It
// panics when Main did not start the server.
func MetaURL() string {
	if !Postgres() {
		return ""
	}
	if metaURL == "" {
		panic(errors.New("sharedtest: " + Env + "=postgres needs voltest.Main or sharedtest.Main in the package's TestMain"))
	}
	return metaURL
}

// S3Client is a client of the postgres+s3 kind's S3 server, for tests
// that reach under a volume into its bucket (nil for the other kinds).
func S3Client() *s3.Client {
	if s3srv == nil {
		return nil
	}
	return s3srv.Client()
}

// DataURL is a --data URL with a prefix no other volume of the test
// binary has ("" unless the kind is postgres+s3).
func DataURL() string {
	if !S3() {
		return ""
	}
	if s3srv == nil {
		panic(errors.New("sharedtest: " + Env + "=postgres+s3 needs voltest.Main or sharedtest.Main in the package's TestMain"))
	}
	return fmt.Sprintf("s3://%s/v%d?endpoint=%s&region=%s", s3srv.Bucket, prefixes.Add(1), s3srv.Endpoint, s3test.Region)
}
