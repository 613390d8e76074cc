package pgstore_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@h:5432/db?sslmode=require":       "postgres://u:xxxxx@h:5432/db?sslmode=require",
		"postgresql://u@h/db":                                 "postgresql://u@h/db",
		"postgres://u@h/db?password=s3cret":                   "postgres://u@h/db?password=xxxxx",
		"host=h user=u password=s3cret dbname=d":              "host=h user=u password=xxxxx dbname=d",
		"host=h password='s3 cret' dbname=d":                  "host=h password=xxxxx dbname=d",
		"postgres://u:p%40ss@h/db":                            "postgres://u:xxxxx@h/db",
		"postgres://u:s3cret@h:5432/db?options=-csearch_path": "postgres://u:xxxxx@h:5432/db?options=-csearch_path",
		// Query pairs Go's parser drops, and user parts it refuses, were
		// shown as written.
		"postgres://u@h/db?password=s3cret;x=1":        "postgres://u@h/db?password=xxxxx",
		"postgres://u@h/db?sslmode=off&password=s3%ZZ": "postgres://u@h/db?sslmode=off&password=xxxxx",
		"postgres://u:s3%ZZcret@h/db":                  "postgres://u:xxxxx@h/db",
		"postgres://u:s3cret@h:port/db":                "postgres://u:xxxxx@h:port/db",
	} {
		if got := pgstore.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// The password may come from the URL, PGPASSWORD or a .pgpass file; a
// wrong one fails with an error that does not show it.
func testCredentials(t *testing.T, e *env) {
	u, err := url.Parse(e.dsn)
	must(t, err)
	pw, _ := u.User.Password()
	bare := *u
	bare.User = url.User(u.User.Username())
	open := func(conn string) error {
		s, err := pgstore.Open(context.Background(), pgstore.Options{URL: conn, Schema: e.schema(), Create: true})
		if err == nil {
			s.Close()
		}
		return err
	}
	t.Run("PGPASSWORD", func(t *testing.T) {
		t.Setenv("PGPASSFILE", filepath.Join(t.TempDir(), "none"))
		t.Setenv("PGPASSWORD", pw)
		must(t, open(bare.String()))
	})
	t.Run("pgpass", func(t *testing.T) {
		t.Setenv("PGPASSWORD", "")
		os.Unsetenv("PGPASSWORD")
		f := filepath.Join(t.TempDir(), "pgpass")
		line := fmt.Sprintf("%s:%s:*:%s:%s\n", u.Hostname(), u.Port(), u.User.Username(), pw)
		must(t, os.WriteFile(f, []byte(line), 0o600))
		t.Setenv("PGPASSFILE", f)
		must(t, open(bare.String()))
	})
	t.Run("wrong", func(t *testing.T) {
		wrong := *u
		wrong.User = url.UserPassword(u.User.Username(), "wrong-Secret-42")
		err := open(wrong.String())
		if err == nil {
			t.Fatal("a wrong password was accepted")
		}
		if strings.Contains(err.Error(), "wrong-Secret-42") {
			t.Fatalf("the error shows the password: %v", err)
		}
		t.Logf("error: %v", err)
	})
}
