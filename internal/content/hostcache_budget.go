package content

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A kept file's new chunks go through the host's page cache so that a
// read soon after a write finds them in memory (hostcache.go). That pays
// while the amount is small: the kernel copies the bytes into its pages
// cheaply and writes them back behind us. Past the kernel's dirty-page
// threshold it does not. Measured on a 24 GiB VM (docs/BENCHMARKS.md, "A
// bulk copy into an export goes around the page cache"): buffered 1 MiB
// writes with writeback started every 8 MiB, as the segment store does,
// cost the kernel about 1.1-1.5 s of CPU per GiB for the first GiB and 2.3
// s per GiB over 4 GiB, where direct writes cost 0.5; and an export's 4
// GiB copy took 15-16 s through the cache against 10 s when only its first
// GiB went through it. A bulk copy's bytes are also the least likely to be
// read again soon.
//
// So the page cache takes a kept file's writes only up to a budget per
// cacheWindow, summed over the engine's kept files; what comes after
// goes around it, as every other file's large writes do. The budget is
// half the kernel's background dirty threshold (vm.dirty_background_bytes,
// or vm.dirty_background_ratio of the available memory), about 1.1 GiB on
// that VM; the window is the kernel's default dirty expiry.

// cacheWindow is how long bytes written through the page cache count
// against the budget.
const cacheWindow = 30 * time.Second

// cacheSlots is how many parts the window is counted in.
const cacheSlots = 30

// fallbackCacheBudget is the budget when the kernel's settings cannot be
// read.
const fallbackCacheBudget = 256 << 20

// cacheWriteBudget counts the bytes written through the page cache in the
// last cacheWindow, in cacheSlots slots of the window.
type cacheWriteBudget struct {
	limit int64
	now   func() time.Time

	mu    sync.Mutex
	spent [cacheSlots]int64
	slot  [cacheSlots]int64 // the slot number each entry of spent counts
}

func newCacheWriteBudget(limit int64, now func() time.Time) *cacheWriteBudget {
	return &cacheWriteBudget{limit: limit, now: now}
}

// take reports whether n more bytes fit in the budget, and counts them if
// they do.
func (b *cacheWriteBudget) take(n int64) bool {
	cur := b.now().UnixNano() / int64(cacheWindow/cacheSlots)
	b.mu.Lock()
	defer b.mu.Unlock()
	var sum int64
	for i := range b.spent {
		if cur-b.slot[i] < cacheSlots {
			sum += b.spent[i]
		}
	}
	if sum+n > b.limit {
		return false
	}
	i := cur % cacheSlots
	if b.slot[i] != cur {
		b.slot[i], b.spent[i] = cur, 0
	}
	b.spent[i] += n
	return true
}

// hostCacheBudget is half the kernel's background dirty threshold, or
// fallbackCacheBudget.
func hostCacheBudget() int64 {
	if v, ok := readProcInt("/proc/sys/vm/dirty_background_bytes"); ok && v > 0 {
		return v / 2
	}
	ratio, ok := readProcInt("/proc/sys/vm/dirty_background_ratio")
	avail, ok2 := memAvailable()
	if !ok || !ok2 || ratio <= 0 {
		return fallbackCacheBudget
	}
	return avail / 100 * ratio / 2
}

func readProcInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}

// memAvailable is MemAvailable of /proc/meminfo, in bytes.
func memAvailable() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			return kib << 10, err == nil
		}
	}
	return 0, false
}
