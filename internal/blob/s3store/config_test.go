package s3store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil/s3test"
)

func TestParseURL(t *testing.T) {
	c, err := ParseURL("s3://bkt/vol/one/?endpoint=http://127.0.0.1:9000&region=eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Bucket != "bkt" || c.Prefix != "vol/one" || c.Endpoint != "http://127.0.0.1:9000" || c.Region != "eu-west-1" {
		t.Fatalf("parsed %+v", c)
	}
	for _, bad := range []string{
		"http://bkt/p", "s3:///p", "s3://key:secret@bkt/p", "s3://bkt/p?endpoint=ftp://x", "s3://bkt/p?color=red",
	} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
	// Credentials in a URL that is refused never show in the message, also
	// where the URL does not parse.
	for _, bad := range []string{
		"s3://AKID:s3cret@bkt/p", "s3://AKID:s3%ZZcret@bkt/p", "s3:/AKID:s3cret@bkt/p", "s3://AKID:s3cret@/p",
		"s3://bkt/p?endpoint=http://AKID:s3cret@", "s3://bkt/p?endpoint=ftp://AKID:s3cret@host",
	} {
		_, err := ParseURL(bad)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURL(%q): %v", bad, err)
		}
	}
}

// Credentials never show in formatted output or logs.
func TestCredentialsRedacted(t *testing.T) {
	c := Credentials{AccessKeyID: "AKIDSECRETID", SecretAccessKey: "topsecretvalue", SessionToken: "tokentoken"}
	cfg := Config{Bucket: "b", Credentials: c}
	var out bytes.Buffer
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&out, f+"\n", c)
		fmt.Fprintf(&out, f+"\n", cfg)
		fmt.Fprintf(&out, f+"\n", &cfg)
	}
	slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "creds", c, "cfg", cfg)
	slog.New(slog.NewTextHandler(&out, nil)).Info("x", "creds", c, "cfg", cfg)
	for _, secret := range []string{c.AccessKeyID, c.SecretAccessKey, c.SessionToken} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("%q shows in:\n%s", secret, out.String())
		}
	}
	if !strings.Contains(out.String(), redacted) {
		t.Fatal("no redaction marker in the output")
	}
}

func TestLoadCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "credentials")
	err := os.WriteFile(path, []byte("[default]\naws_access_key_id = A1\naws_secret_access_key=S1\n\n# c\n[other]\naws_access_key_id=A2\naws_secret_access_key = S2\naws_session_token=T2\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", path)
	t.Setenv("AWS_PROFILE", "")
	if c, err := LoadCredentials(); err != nil || c != (Credentials{"A1", "S1", ""}) {
		t.Fatalf("default profile: %v", err) // never print c
	}
	t.Setenv("AWS_PROFILE", "other")
	if c, err := LoadCredentials(); err != nil || c != (Credentials{"A2", "S2", "T2"}) {
		t.Fatalf("profile other: %v", err)
	}
	t.Setenv("AWS_PROFILE", "nope")
	if _, err := LoadCredentials(); err == nil {
		t.Fatal("a missing profile gave credentials")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "E1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ES1")
	if c, err := LoadCredentials(); err != nil || c.AccessKeyID != "E1" || c.SecretAccessKey != "ES1" {
		t.Fatalf("environment: %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	if _, err := LoadCredentials(); !errors.Is(err, errNoCredentials) {
		t.Fatalf("no credentials anywhere: %v", err)
	}
}

// Open fails clearly on refused credentials, a missing bucket and a
// directory another store holds; the error never carries the secret.
func TestOpenErrors(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "errors")
	bad := cfg
	bad.Credentials.SecretAccessKey = "wrong-secret-value"
	if _, err := Open(bad); err == nil {
		t.Fatal("Open with a wrong secret succeeded")
	} else if strings.Contains(err.Error(), bad.Credentials.SecretAccessKey) {
		t.Fatalf("error shows the secret: %v", err)
	}
	nob := cfg
	nob.Bucket, nob.Dir = "no-such-bucket", t.TempDir()
	if _, err := Open(nob); err == nil || !strings.Contains(err.Error(), "no-such-bucket") {
		t.Fatalf("Open of a missing bucket: %v", err)
	}
	s := mustOpen(t, cfg)
	defer s.Close()
	if _, err := Open(cfg); err == nil || !strings.Contains(err.Error(), "already open") {
		t.Fatalf("second Open of one directory: %v", err)
	}
}

// A store whose directory was lost (a new one) never reuses a pack
// number: it starts above every pack in the bucket.
func TestNewDirectoryStartsAboveListedPacks(t *testing.T) {
	srv := s3test.Start(t)
	cfg := testConfig(t, srv, "lostdir")
	s := mustOpen(t, cfg)
	r := rand.New(rand.NewPCG(6, 6))
	locs, data := putSome(t, s, r, 40)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = t.TempDir()
	s = mustOpen(t, cfg)
	defer s.Close()
	if s.SessionStart() <= maxSegment(locs) {
		t.Fatalf("SessionStart %d, at or below pack %d in the bucket", s.SessionStart(), maxSegment(locs))
	}
	checkAll(t, s, locs, data)
}
