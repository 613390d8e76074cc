package volume

import (
	"strings"
	"testing"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
)

func TestJournalFromEnv(t *testing.T) {
	t.Setenv(JournalEnv, "keep=16, prune=100ms,compact-min=64")
	var opt namespace.Options
	if err := journalFromEnv(&opt); err != nil {
		t.Fatal(err)
	}
	if opt.JournalKeep != 16 || opt.JournalPruneEvery != 100*time.Millisecond || opt.JournalCompactMin != 64 {
		t.Fatalf("parsed %d, %v, %d", opt.JournalKeep, opt.JournalPruneEvery, opt.JournalCompactMin)
	}
	// What a caller set stays.
	opt = namespace.Options{JournalKeep: 3}
	if err := journalFromEnv(&opt); err != nil || opt.JournalKeep != 3 {
		t.Fatalf("keep %d, %v: the caller's setting was overridden", opt.JournalKeep, err)
	}
	for _, bad := range []string{"keep=0", "keep=x", "prune=-1s", "prune=soon", "compact-min=0", "every=1s"} {
		t.Setenv(JournalEnv, bad)
		err := journalFromEnv(&namespace.Options{})
		if err == nil || !strings.Contains(err.Error(), JournalEnv) {
			t.Errorf("%s=%s: err %v, want an error naming the variable", JournalEnv, bad, err)
		}
	}
}
