package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitDataNeedsMeta: --data without --meta is refused before anything
// is created, with a message that says why.
func TestInitDataNeedsMeta(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	err := runInit([]string{"--store", dir, "--data", "s3://b/p?endpoint=http://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "needs --meta") || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("init --data without --meta: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused init left %s behind (%v)", dir, err)
	}
}
