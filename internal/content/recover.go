package content

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Recovery says what Recover found and did.
type Recovery struct {
	Unclean        bool  // the previous session did not close cleanly
	FreedRecords   int   // pending frees a crash left unpunched
	OrphanSegments int   // segments scanned for unreferenced chunk data
	ReclaimedBytes int64 // bytes punched out of segments, both kinds
	// IntentZones and RetakenBlocks: zones of files where blocks may
	// have been written in place (intent records), and their blocks whose
	// bytes recovery took as it found them (inplace_recover.go).
	IntentZones   int
	RetakenBlocks int
	Took          time.Duration // time spent
}

// Recover returns the space a crash left behind and starts a session. It
// must run before the first write through the engine.
//
// Two kinds of space can be left: chunks whose last reference was dropped
// by a durable commit but that were not punched yet (free records, written
// in the same batch as the drop), and chunk data written for transactions
// that never committed. The latter can only lie in segments written since
// the previous session began (Session.FirstSegment), so only those are
// compared against the chunk table. Reclaiming twice is harmless: the
// blob store never reuses space.
func (e *Engine) Recover() (Recovery, error) {
	start := time.Now()
	var rec Recovery
	prev, err := e.session()
	if err != nil {
		return rec, err
	}
	if err := e.punchFreeRecords(&rec); err != nil {
		return rec, err
	}
	if err := e.recoverIntents(&rec); err != nil {
		return rec, err
	}
	if prev.Open {
		rec.Unclean = true
		if err := e.reclaimOrphans(prev.FirstSegment, &rec); err != nil {
			return rec, err
		}
	}
	// The marker must be durable before this session writes a segment.
	if err := e.setSession(schema.Session{FirstSegment: e.blobs.SessionStart(), Open: true}); err != nil {
		return rec, err
	}
	e.sessionOpen = true
	e.startCompactor(e.cfg.Compact) // only a volume in use compacts, never fsck's
	if err := e.startOwnedDedup(); err != nil {
		return rec, err
	}
	rec.Took = time.Since(start)
	return rec, nil
}

func (e *Engine) session() (schema.Session, error) {
	v, err := e.meta.Get(schema.KeySession)
	if errors.Is(err, meta.ErrNotFound) {
		return schema.Session{}, nil
	}
	if err != nil {
		return schema.Session{}, err
	}
	s, err := schema.DecodeSession(v)
	if err != nil {
		return s, fmt.Errorf("session record: %w", err)
	}
	return s, nil
}

func (e *Engine) setSession(s schema.Session) error {
	b := e.meta.NewBatch()
	defer b.Close()
	if err := b.Set(schema.KeySession, s.Encode()); err != nil {
		return err
	}
	return b.Commit(true)
}

// closeSession marks a clean close once everything is durable.
func (e *Engine) closeSession() error {
	if !e.sessionOpen {
		return nil
	}
	if err := e.syncAll(); err != nil {
		return err
	}
	e.sessionOpen = false
	return e.setSession(schema.Session{FirstSegment: e.blobs.SessionStart()})
}

// punchFreeRecords punches every location a free record names.
func (e *Engine) punchFreeRecords(rec *Recovery) error {
	it, err := e.meta.NewIter(schema.FreeRange())
	if err != nil {
		return err
	}
	var locs []blob.Loc
	for ok := it.First(); ok; ok = it.Next() {
		seg, off, n, err := schema.DecodeFree(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return fmt.Errorf("free record %x: %w", it.Key(), err)
		}
		locs = append(locs, blob.Loc{Segment: seg, Offset: off, Length: n})
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, loc := range locs {
		if err := e.blobs.Free(loc); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("punch freed chunk: %w", err)
		}
		rec.ReclaimedBytes += int64(loc.Length)
	}
	rec.FreedRecords = len(locs)
	return e.dropFreeRecords(locs)
}

// dropFreeRecords deletes the free records of punched locations. Losing
// the deletion in a crash only means punching again.
func (e *Engine) dropFreeRecords(locs []blob.Loc) error {
	if len(locs) == 0 {
		return nil
	}
	b := e.meta.NewBatch()
	defer b.Close()
	for _, loc := range locs {
		if err := b.Delete(schema.FreeKey(loc.Segment, loc.Offset)); err != nil {
			return err
		}
	}
	return b.Commit(false)
}

// reclaimOrphans punches the data of segments first and up, written before
// this session, that no chunk record references.
func (e *Engine) reclaimOrphans(first uint32, rec *Recovery) error {
	nums, err := e.blobs.Segments()
	if err != nil {
		return err
	}
	end := e.blobs.SessionStart()
	var todo []uint32
	for _, n := range nums {
		if n >= first && n < end {
			todo = append(todo, n)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	live := map[uint32][]blob.Span{}
	align := blob.AlignmentOf(e.blobs)
	it, err := e.meta.NewIter(schema.ChunkRange())
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		c, err := schema.DecodeChunk(it.Value())
		if err != nil {
			it.Close()
			return fmt.Errorf("chunk record %x: %w", it.Key(), err)
		}
		if !c.IsInline() && c.Segment >= first && c.Segment < end {
			loc := blob.Loc{Segment: c.Segment, Offset: c.Offset, Length: c.Stored}
			live[c.Segment] = append(live[c.Segment], blob.SpanAt(loc, align))
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if err := e.ownedSpans(first, end, align, live); err != nil {
		return err
	}
	for _, n := range todo {
		punched, err := e.blobs.Reclaim(n, live[n])
		if err != nil {
			return err
		}
		rec.OrphanSegments++
		rec.ReclaimedBytes += punched
	}
	return nil
}
