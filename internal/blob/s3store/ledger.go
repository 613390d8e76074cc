package s3store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/doppelfs/doppel/internal/blob"
)

// DeadStore keeps the ledger's dead spans where they outlive the store
// directory: a shared volume's metadata store (one record per pack).
// Config.Dead nil keeps them in the file "dead" of the store directory.
type DeadStore interface {
	// LoadDead returns the dead spans of every pack it knows.
	LoadDead() (map[uint32][]blob.Span, error)
	// SaveDead durably replaces the spans of the packs in spans (merged,
	// complete) and forgets the packs in gone (deleted objects).
	SaveDead(spans map[uint32][]blob.Span, gone []uint32) error
}

// ledger keeps the dead spans of each pack: what Free and Reclaim gave
// up. It is a cache of what the chunk table implies (a pack's dead bytes
// are those no chunk record's live span covers), saved by Sync to its
// DeadStore. Losing records costs only space, which fsck's Reclaim finds
// again. Packs that no longer exist are forgotten at open.
type ledger struct {
	store DeadStore
	dead  map[uint32][]blob.Span // merged
	dirty map[uint32]bool        // changed since the last save
	gone  []uint32               // deleted since the last save
}

// loadLedger reads the ledger from store (nil: the file in dir), keeping
// only packs that exist.
func loadLedger(dir string, store DeadStore, exists func(uint32) bool) (*ledger, error) {
	file, isFile := store.(*fileDead)
	if store == nil {
		file, isFile = &fileDead{path: filepath.Join(dir, "dead")}, true
		store = file
	}
	l := &ledger{store: store, dead: map[uint32][]blob.Span{}, dirty: map[uint32]bool{}}
	all, err := store.LoadDead()
	if err != nil {
		return nil, err
	}
	var gone []uint32
	for num, spans := range all {
		if exists(num) {
			l.dead[num] = blob.MergeSpans(spans)
		} else {
			gone = append(gone, num)
		}
	}
	if isFile {
		err = file.rewrite(l.dead)
	} else if len(gone) > 0 {
		err = store.SaveDead(nil, gone)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// add marks spans of pack num dead and returns the bytes newly marked.
func (l *ledger) add(num uint32, spans ...blob.Span) int64 {
	before := total(l.dead[num])
	l.dead[num] = blob.MergeSpans(append(l.dead[num], spans...))
	added := total(l.dead[num]) - before
	if added > 0 {
		l.dirty[num] = true
	}
	return added
}

// allDead tells whether the dead spans of pack num cover [0, end).
func (l *ledger) allDead(num uint32, end int64) bool {
	d := l.dead[num]
	return end == 0 || (len(d) == 1 && d[0].Start <= 0 && d[0].End >= end)
}

// forget drops the spans of a deleted pack.
func (l *ledger) forget(num uint32) {
	delete(l.dead, num)
	delete(l.dirty, num)
	l.gone = append(l.gone, num)
}

// takeChanges returns what changed since the last save and clears it;
// the caller holds the store's lock and saves outside it.
func (l *ledger) takeChanges() (map[uint32][]blob.Span, []uint32) {
	spans := make(map[uint32][]blob.Span, len(l.dirty))
	for num := range l.dirty {
		spans[num] = slices.Clone(l.dead[num])
	}
	gone := l.gone
	l.dirty, l.gone = map[uint32]bool{}, nil
	return spans, gone
}

// restore marks changes whose save failed as unsaved again.
func (l *ledger) restore(spans map[uint32][]blob.Span, gone []uint32) {
	for num := range spans {
		if _, ok := l.dead[num]; ok {
			l.dirty[num] = true
		}
	}
	l.gone = append(l.gone, gone...)
}

// fileDead is the DeadStore of a store of its own: the file "dead" of
// the store directory, 20-byte records (pack, start, end; big endian),
// appended and synced; at open, records of packs that no longer exist
// are dropped and the file is rewritten merged. A torn last record is
// ignored.
type fileDead struct{ path string }

const recordSize = 20

func (f *fileDead) LoadDead() (map[uint32][]blob.Span, error) {
	all := map[uint32][]blob.Span{}
	b, err := os.ReadFile(f.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("s3: %w", err)
	}
	for ; len(b) >= recordSize; b = b[recordSize:] {
		num := binary.BigEndian.Uint32(b)
		s := blob.Span{Start: int64(binary.BigEndian.Uint64(b[4:])), End: int64(binary.BigEndian.Uint64(b[12:]))}
		if s.Start < s.End {
			all[num] = append(all[num], s)
		}
	}
	return all, nil
}

func appendRecords(b []byte, num uint32, spans []blob.Span) []byte {
	for _, s := range spans {
		b = binary.BigEndian.AppendUint32(b, num)
		b = binary.BigEndian.AppendUint64(b, uint64(s.Start))
		b = binary.BigEndian.AppendUint64(b, uint64(s.End))
	}
	return b
}

func encodeRecords(spans map[uint32][]blob.Span) []byte {
	var b []byte
	for _, num := range slices.Sorted(maps.Keys(spans)) {
		b = appendRecords(b, num, spans[num])
	}
	return b
}

// rewrite replaces the file with the records of all.
func (f *fileDead) rewrite(all map[uint32][]blob.Span) error {
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, encodeRecords(all), 0o600); err != nil {
		return fmt.Errorf("s3: %w", err)
	}
	fh, err := os.Open(tmp)
	if err == nil {
		err = fh.Sync()
		fh.Close()
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		return fmt.Errorf("s3: rewrite %s: %w", f.path, err)
	}
	return nil
}

// SaveDead appends the spans' records (merging at load makes the
// repetition harmless) and syncs; gone packs are dropped at the next
// open.
func (f *fileDead) SaveDead(spans map[uint32][]blob.Span, _ []uint32) error {
	records := encodeRecords(spans)
	if len(records) == 0 {
		return nil
	}
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("s3: %w", err)
	}
	w := bufio.NewWriter(fh)
	_, err = w.Write(records)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("s3: save %s: %w", f.path, err)
	}
	return nil
}

func total(spans []blob.Span) int64 {
	var n int64
	for _, s := range spans {
		n += s.End - s.Start
	}
	return n
}
