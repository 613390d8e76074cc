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

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "64K": 64 << 10, "512M": 512 << 20, "1G": 1 << 30, "2GB": 2 << 30, "1t": 1 << 40} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1X", "G", "99999999999T"} {
		if _, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) accepted", in)
		}
	}
}
