package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The server accepts the password over TCP and refuses a wrong one, the
// created database exists, and after the cleanups the server is gone and
// its directory removed.
func TestServerLifecycle(t *testing.T) {
	if _, err := binDir(); err != nil {
		t.Skipf("PostgreSQL is not installed: %v", err)
	}
	var s *Server
	var dsn string
	t.Run("run", func(t *testing.T) {
		s = Start(t)
		dsn = s.CreateDB(t, "lifecycle")
		ctx := context.Background()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		var db string
		if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != "lifecycle" {
			t.Fatalf("current_database() = %q, %v", db, err)
		}
		c.Close(ctx)
		wrong := *s
		wrong.Password = "not-it"
		if c, err := pgx.Connect(ctx, wrong.DSN("lifecycle")); err == nil {
			c.Close(ctx)
			t.Fatal("a wrong password was accepted")
		}
	})
	if s == nil {
		t.Fatal("no server")
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server directory %s still there after cleanup: %v", s.Dir, err)
	}
	if c, err := pgx.Connect(context.Background(), dsn); err == nil {
		c.Close(context.Background())
		t.Error("server still accepts connections after cleanup")
	}
}
