package pgstore_test

import (
	"errors"
	"testing"

	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/jackc/pgx/v5/pgconn"
)

// Serialization failures and deadlocks are tried again until the commit
// goes through; any other error returns at once.
func TestRetry(t *testing.T) {
	for _, code := range []string{"40001", "40P01"} {
		calls := 0
		err, retries := pgstore.Retry(func() error {
			calls++
			if calls < 3 {
				return &pgconn.PgError{Code: code}
			}
			return nil
		})
		if err != nil || calls != 3 || retries != 2 {
			t.Errorf("code %s: err %v after %d calls, %d retries; want success after 3 calls", code, err, calls, retries)
		}
	}
	calls := 0
	other := &pgconn.PgError{Code: "23505"} // unique_violation
	err, _ := pgstore.Retry(func() error { calls++; return other })
	if !errors.Is(err, other) || calls != 1 {
		t.Errorf("unique violation: err %v after %d calls, want it returned after 1", err, calls)
	}
	calls = 0
	err, _ = pgstore.Retry(func() error { calls++; return &pgconn.PgError{Code: "40001"} })
	if err == nil || calls < 2 {
		t.Errorf("a conflict forever: err %v after %d calls, want an error after several", err, calls)
	}
}
