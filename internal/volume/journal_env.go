package volume

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/doppelfs/doppel/internal/namespace"
)

// JournalEnv tunes how much of the change journal a volume keeps whole
// and how often its pruner (and compaction) runs; unset, the defaults
// hold (namespace/journal_prune.go). A comma-separated list of settings:
//
//   - keep: how many of the latest versions' entries are kept whole (4096)
//   - prune: time between pruning passes (30s)
//   - compact-min: entries below the window before it is compacted again
//     (4096)
//
// For example DOPPEL_JOURNAL=keep=16,prune=100ms,compact-min=64. Tests use it to prune
// and compact the journal continuously under a mounted volume's load.
const JournalEnv = "DOPPEL_JOURNAL"

// journalFromEnv sets opt's journal settings from JournalEnv where the
// caller left them at their defaults; a setting it does not know or
// cannot parse fails the open, so that a typo is not silently ignored.
func journalFromEnv(opt *namespace.Options) error {
	env := os.Getenv(JournalEnv)
	if env == "" {
		return nil
	}
	for _, kv := range strings.Split(env, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		var err error
		switch k {
		case "keep":
			var n uint64
			if n, err = strconv.ParseUint(v, 10, 64); err == nil && n == 0 {
				err = fmt.Errorf("want at least 1")
			}
			if err == nil && opt.JournalKeep == 0 {
				opt.JournalKeep = n
			}
		case "prune":
			var d time.Duration
			if d, err = time.ParseDuration(v); err == nil && d <= 0 {
				err = fmt.Errorf("want a positive duration")
			}
			if err == nil && opt.JournalPruneEvery == 0 {
				opt.JournalPruneEvery = d
			}
		case "compact-min":
			var n int
			if n, err = strconv.Atoi(v); err == nil && n <= 0 {
				err = fmt.Errorf("want at least 1")
			}
			if err == nil && opt.JournalCompactMin == 0 {
				opt.JournalCompactMin = n
			}
		default:
			err = fmt.Errorf("unknown setting (want keep, prune or compact-min)")
		}
		if err != nil {
			return fmt.Errorf("%s: %q: %v", JournalEnv, kv, err)
		}
	}
	return nil
}
