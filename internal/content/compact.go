package content

import (
	"fmt"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
)

// Compaction of stores that cannot punch (blob.Compactable: packs in S3).
// A freed chunk only marks its span dead there, so a pack whose live
// fraction fell low is rewritten: its live chunks are copied into new
// packs, uploaded, and their records re-pointed in one transaction that
// checks each record still names the old place (a chunk freed or changed
// meanwhile is simply not moved, and its new copy is freed). Only then is
// the old pack retired; the store deletes it after its grace period, so
// that a read that found the old location just before still finds bytes.

// CompactConfig tunes the background compactor.
type CompactConfig struct {
	// Interval between passes; 0 means 1 minute, < 0 disables compaction.
	Interval time.Duration
	// MaxLive: packs with less than this fraction live are rewritten;
	// default 0.5.
	MaxLive float64
	// MinReclaim: a pass rewrites nothing unless the candidates' dead
	// bytes reach this (each pass scans the chunk table); default 16 MiB.
	MinReclaim int64
	// MaxBytes bounds the live bytes one pass copies; default 64 MiB.
	MaxBytes int64
	// SweepEvery is how often a pass also sweeps for orphans; 0 means
	// 1 hour, < 0 never.
	SweepEvery time.Duration
}

func (c *CompactConfig) setDefaults() {
	if c.Interval == 0 {
		c.Interval = time.Minute
	}
	if c.MaxLive <= 0 {
		c.MaxLive = 0.5
	}
	if c.MinReclaim == 0 {
		c.MinReclaim = 16 << 20
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 64 << 20
	}
	if c.SweepEvery == 0 {
		c.SweepEvery = time.Hour
	}
}

// Compaction says what one pass did.
type Compaction struct {
	Rewritten    int   // packs whose live chunks were moved, then retired
	Moved        int   // chunks copied
	MovedBytes   int64 // their stored bytes
	Deleted      int   // retired packs deleted (their grace had passed)
	DeletedBytes int64
	Swept        bool  // the pass swept for orphans
	SweptBytes   int64 // bytes the sweep newly found dead
}

// Compact runs one compaction pass with cfg's limits (and a sweep if
// sweep): a no-op for stores that punch. It waits for nothing: while an
// online check holds the reclaimer, it returns without doing anything.
func (e *Engine) Compact(cfg CompactConfig, sweep bool) (Compaction, error) {
	cfg.setDefaults()
	var res Compaction
	store, ok := e.blobs.(blob.Compactable)
	if !ok {
		return res, nil
	}
	if !e.reclaimer.held.TryLock() {
		return res, nil // an online check reads a snapshot that may name old packs
	}
	defer e.reclaimer.held.Unlock()
	e.compactMu.Lock()
	defer e.compactMu.Unlock()
	var err error
	res.Deleted, res.DeletedBytes, err = store.DeleteRetired()
	e.counters.deleted.Add(int64(res.Deleted))
	if err != nil {
		return res, fmt.Errorf("delete retired packs: %w", err)
	}
	if sweep {
		res.Swept = true
		if res.SweptBytes, err = e.sweepOrphans(store); err != nil {
			return res, fmt.Errorf("orphan sweep: %w", err)
		}
	}
	cands := pickSparse(store.SparseSegments(cfg.MaxLive), cfg)
	if len(cands) == 0 {
		return res, nil
	}
	n, bytes, packs, err := e.compact(store, cands)
	res.Moved, res.MovedBytes, res.Rewritten = n, bytes, packs
	e.counters.compacted.Add(bytes)
	e.counters.retired.Add(int64(packs))
	return res, err
}

// maxPacksPerPass bounds the packs one pass reads whole (4 MiB each by
// default), however little of them is live.
const maxPacksPerPass = 64

// pickSparse takes candidates, fewest live bytes first, up to cfg's bound
// on bytes copied, if together they free enough to be worth a scan.
func pickSparse(all []blob.SegmentUse, cfg CompactConfig) []blob.SegmentUse {
	var picked []blob.SegmentUse
	var live, dead int64
	for _, s := range all {
		if len(picked) == maxPacksPerPass || (live+s.Live > cfg.MaxBytes && len(picked) > 0) {
			break
		}
		picked = append(picked, s)
		live += s.Live
		dead += s.Size - s.Live
	}
	if dead < cfg.MinReclaim {
		return nil
	}
	return picked
}

// startCompactor runs passes every cfg.Interval until stopCompactor.
func (e *Engine) startCompactor(cfg CompactConfig) {
	cfg.setDefaults()
	if _, ok := e.blobs.(blob.Compactable); !ok || cfg.Interval < 0 {
		return
	}
	e.compactQuit = make(chan struct{})
	e.compactDone = make(chan struct{})
	go func() {
		defer close(e.compactDone)
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		lastSweep := time.Now()
		for {
			select {
			case <-e.compactQuit:
				return
			case <-t.C:
			}
			if !e.leased("compaction", 2*cfg.Interval+time.Minute) {
				continue // another host compacts (docs/SHARED.md, 9.5)
			}
			sweep := cfg.SweepEvery > 0 && time.Since(lastSweep) >= cfg.SweepEvery
			res, err := e.Compact(cfg, sweep)
			if sweep && err == nil {
				lastSweep = time.Now()
			}
			if err != nil {
				e.log.Warn("compaction pass failed; the next pass tries again", "err", err)
			} else if res.Rewritten+res.Deleted > 0 || res.SweptBytes > 0 {
				e.log.Info("compaction", "rewritten", res.Rewritten, "moved_chunks", res.Moved,
					"moved_bytes", res.MovedBytes, "deleted", res.Deleted, "deleted_bytes", res.DeletedBytes,
					"swept_bytes", res.SweptBytes)
			}
		}
	}()
}

// stopCompactor ends the background passes and waits for the one under way.
func (e *Engine) stopCompactor() {
	if e.compactQuit != nil {
		close(e.compactQuit)
		<-e.compactDone
		e.compactQuit = nil
	}
}
