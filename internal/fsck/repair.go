package fsck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/schema"
)

// RepairReport is what a repair found, changed and left.
type RepairReport struct {
	Before  *Report     `json:"before"`  // the check before repairing
	Repairs []Repaired  `json:"repairs"` // what was changed, in order
	Lost    []LostRange `json:"lost"`    // file data turned into holes
	After   *Report     `json:"after"`   // the check after repairing: what remains
	// NeedOffline counts problems an online repair left alone because
	// only an offline repair (the volume unmounted) fixes them.
	NeedOffline int `json:"need_offline,omitempty"`
}

func newRepairReport(before *Report) *RepairReport {
	return &RepairReport{Before: before, Repairs: []Repaired{}, Lost: []LostRange{}}
}

// Repaired is one change a repair made.
type Repaired struct {
	Kind   string `json:"kind"` // the kind of problem it repairs
	Path   string `json:"path"` // "" if no inode is concerned
	Action string `json:"action"`
}

// LostRange is a byte range of a file whose data was lost (its chunk
// missing, damaged or unreadable). The repair replaced it by a hole: it
// now reads as zeros instead of failing with EIO.
type LostRange struct {
	Path  string `json:"path"`
	Start int64  `json:"start"`
	End   int64  `json:"end"` // exclusive; Start if the length is unknown
	Why   string `json:"why"`
}

// repairer applies a check's plan.
type repairer struct {
	c   *checker
	s   Stores
	eng *content.Engine
	rr  *RepairReport
}

// Repair checks the unmounted volume whose stores s holds, which nothing
// else may use, repairs what it can and checks it again.
//
// Each repair is a metadata transaction of the content engine, so the
// refcounts and the stats record stay exact and freed chunks take the
// normal path (a free record, punched once the change is durable). Data
// that is lost (extents naming a missing chunk, a chunk that fails its
// hash or lies outside its segment) is replaced by holes; every such range
// is in the report. Records that cannot be decoded are deleted where
// nothing else depends on them; an inode record or the volume's
// configuration that does not decode is left as it is and still reported.
// The content engine logs to log (nil: slog's default).
func Repair(s Stores, opt Options, log *slog.Logger) (*RepairReport, error) {
	if log == nil {
		log = slog.Default()
	}
	c, err := check(context.Background(), s, opt, false)
	if err != nil {
		return nil, err
	}
	rr := newRepairReport(&c.rep)
	if len(c.rep.Problems) == 0 {
		rr.After = &c.rep
		return rr, nil
	}
	r := &repairer{c: c, s: s, rr: rr}
	statsErr := r.statsError() // of the model before the repair changes it
	if err := r.early(); err != nil {
		return rr, err
	}
	// OwnedBlocks: its recovery must know owned blocks for live, on any
	// volume that may hold them (it writes none: reads are not verified).
	eng, err := content.New(s.Meta, s.Blobs, content.Config{Chunking: chunker.DefaultPolicy(), OwnedBlocks: true}, log)
	if err != nil {
		return rr, fmt.Errorf("fsck: open the content engine: %w", err)
	}
	r.eng = eng
	err = r.recover()
	for _, step := range []func() error{
		r.nextIno, r.dropExtents, r.fixRefs, r.fixKeys, r.fixEntries, r.reconnect, r.fixInodes,
		func() error { return r.fixStats(statsErr) }, r.reclaimOrphans,
	} {
		if err != nil {
			break
		}
		err = step()
	}
	// Closing punches the chunks freed above, once their deletion is durable.
	if cerr := eng.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rr, fmt.Errorf("fsck: repair: %w", err)
	}
	after, err := check(context.Background(), s, opt, false)
	if err != nil {
		return rr, err
	}
	rr.After = &after.rep
	return rr, nil
}

// RepairLive repairs what is safe to repair in a volume in use, through
// eng: refcounts and the stats record (corrected by the difference the
// check counted, which later transactions do not change), and orphan
// space in segments of earlier sessions, which no transaction of the
// running session can come to reference. Everything else needs the
// volume unmounted: those problems stay, counted in NeedOffline.
func RepairLive(ctx context.Context, s Stores, eng *content.Engine, opt Options) (*RepairReport, error) {
	release := eng.HoldReclaim()
	c, err := check(ctx, s, opt, true)
	release()
	if err != nil {
		return nil, err
	}
	rr := newRepairReport(&c.rep)
	r := &repairer{c: c, s: s, eng: eng, rr: rr}
	if c.stats != nil {
		err = r.fixStats(r.statsError())
	}
	if err == nil {
		err = r.fixRefs()
	}
	if err == nil {
		err = r.reclaimOrphans()
	}
	if err != nil {
		return rr, fmt.Errorf("fsck: repair: %w", err)
	}
	if rr.After, err = CheckLive(ctx, s, eng, opt); err != nil {
		return rr, err
	}
	rr.NeedOffline = rr.After.Errors()
	return rr, nil
}

// tx runs fn in one engine transaction and records notes once it
// committed.
func (r *repairer) tx(fn func(tx *content.Tx) error, notes ...note) error {
	tx, err := r.eng.Begin()
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Abort()
		return err
	}
	if err := tx.Commit(false); err != nil {
		return err
	}
	for _, n := range notes {
		r.done(n)
	}
	return nil
}

func (r *repairer) done(n note) {
	r.rr.Repairs = append(r.rr.Repairs, Repaired{Kind: n.kind, Path: r.c.entryPath(n.ino, n.name), Action: n.action})
}

// early fixes, in one batch before the engine opens, the records that
// would keep it or its crash recovery from starting: a stats, version or
// session record that does not decode, and free records that do not
// decode or would punch a live chunk.
func (r *repairer) early() error {
	fixes := r.c.fix.early
	if r.c.version == 0 {
		v := max(r.c.maxVersion, 1)
		fixes = append(fixes, keyFix{key: schema.KeyVersion, value: schema.U64(v),
			note: note{KindDecode, noIno, "", fmt.Sprintf("set the version record to %d, the highest version in use", v)}})
	}
	if len(fixes) == 0 {
		return nil
	}
	b := r.s.Meta.NewBatch()
	defer b.Close()
	for _, f := range fixes {
		var err error
		if f.value == nil {
			err = b.Delete(f.key)
		} else {
			err = b.Set(f.key, f.value)
		}
		if err != nil {
			return err
		}
	}
	if err := b.Commit(true); err != nil {
		return err
	}
	for _, f := range fixes {
		r.done(f.note)
	}
	return nil
}

// recover starts the engine's session, which punches pending frees.
func (r *repairer) recover() error {
	rec, err := r.eng.Recover()
	if err != nil {
		return fmt.Errorf("crash recovery: %w", err)
	}
	if rec.FreedRecords > 0 {
		r.done(note{kind: KindPendingFree, action: fmt.Sprintf("punched %d freed chunks and deleted their free records", rec.FreedRecords)})
	}
	return nil
}

// statsError is what the stats record lacks: the counted totals minus the
// recorded ones (all of them if the record is missing or bad).
func (r *repairer) statsError() schema.Stats {
	d := r.c.counted()
	if s := r.c.stats; s != nil {
		d.LogicalBytes -= s.LogicalBytes
		d.PhysicalBytes -= s.PhysicalBytes
		d.RawBytes -= s.RawBytes
		d.Chunks -= s.Chunks
		d.OwnedBlocks -= s.OwnedBlocks
		d.Inodes -= s.Inodes
	}
	return d
}

// fixStats corrects the stats record by d. The repairs before it kept the
// record's error unchanged: each went through the transactions' deltas.
func (r *repairer) fixStats(d schema.Stats) error {
	if d == (schema.Stats{}) {
		return nil
	}
	n := note{kind: KindStats, action: fmt.Sprintf("corrected the stats record by %+v", d)}
	return r.tx(func(tx *content.Tx) error {
		tx.AdjustStats(d)
		return nil
	}, n)
}

// reclaimOrphans punches the segment data no record names.
func (r *repairer) reclaimOrphans() error {
	for _, num := range r.c.fix.orphanSegs {
		n, err := r.s.Blobs.Reclaim(num, r.c.usedSpans(num))
		if errors.Is(err, os.ErrNotExist) {
			continue // emptied and deleted since the check
		}
		if err != nil {
			return err
		}
		r.done(note{kind: KindOrphanSpace, action: fmt.Sprintf("punched %d bytes of segment %d that no chunk uses", n, num)})
	}
	return nil
}
