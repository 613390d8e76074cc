// Package s3test runs a real S3 server for tests: versitygw (Apache-2.0)
// with its posix backend serving a temporary directory, on 127.0.0.1 and
// a free port, with test credentials. Nothing is mocked.
//
// The binary is built once by scripts/ensure-versitygw.sh (which
// scripts/ensure-deps.sh calls); Start finds it through $DOPPEL_VERSITYGW,
// the cache directories that script uses, or PATH. When it is missing,
// tests skip, except under CI (CI set), where they fail.
//
// Files:
//
//   - server.go: Start, the Server, Stop and Restart (fault tests).
//   - binary.go: finding the versitygw binary.
//   - bucket.go: creating buckets with the S3 API.
package s3test
