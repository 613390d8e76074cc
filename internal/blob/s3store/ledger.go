package s3store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/doppelfs/doppel/internal/blob"
)

// ledger keeps the dead spans of each pack: what Free and Reclaim gave
// up. It is a cache of what the chunk table implies (a pack's dead bytes
// are those no chunk record's live span covers), kept in the file "dead"
// of the store directory as 20-byte records (pack, start, end; big
// endian), appended and synced by Sync. Losing records costs only space,
// which fsck's Reclaim finds again. Records of packs that no longer exist
// are dropped when the file is rewritten at open.
type ledger struct {
	path    string
	dead    map[uint32][]blob.Span // merged
	unsaved []byte                 // records not yet in the file
}

const recordSize = 20

// loadLedger reads the ledger of dir, keeping only packs that exist, and
// rewrites it merged.
func loadLedger(dir string, exists func(uint32) bool) (*ledger, error) {
	l := &ledger{path: filepath.Join(dir, "dead"), dead: map[uint32][]blob.Span{}}
	b, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("s3: %w", err)
	}
	for ; len(b) >= recordSize; b = b[recordSize:] { // a torn last record is dropped
		num := binary.BigEndian.Uint32(b)
		s := blob.Span{Start: int64(binary.BigEndian.Uint64(b[4:])), End: int64(binary.BigEndian.Uint64(b[12:]))}
		if exists(num) && s.Start < s.End {
			l.dead[num] = append(l.dead[num], s)
		}
	}
	for num, spans := range l.dead {
		l.dead[num] = blob.MergeSpans(spans)
		l.unsaved = l.appendRecords(l.unsaved, num, l.dead[num])
	}
	if err := l.rewrite(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *ledger) appendRecords(b []byte, num uint32, spans []blob.Span) []byte {
	for _, s := range spans {
		b = binary.BigEndian.AppendUint32(b, num)
		b = binary.BigEndian.AppendUint64(b, uint64(s.Start))
		b = binary.BigEndian.AppendUint64(b, uint64(s.End))
	}
	return b
}

// rewrite replaces the file with the unsaved records.
func (l *ledger) rewrite() error {
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, l.unsaved, 0o600); err != nil {
		return fmt.Errorf("s3: %w", err)
	}
	f, err := os.Open(tmp)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		return fmt.Errorf("s3: rewrite %s: %w", l.path, err)
	}
	l.unsaved = nil
	return nil
}

// add marks spans of pack num dead and returns the bytes newly marked.
func (l *ledger) add(num uint32, spans ...blob.Span) int64 {
	before := total(l.dead[num])
	l.dead[num] = blob.MergeSpans(append(l.dead[num], spans...))
	added := total(l.dead[num]) - before
	if added > 0 {
		l.unsaved = l.appendRecords(l.unsaved, num, spans)
	}
	return added
}

// allDead tells whether the dead spans of pack num cover [0, end).
func (l *ledger) allDead(num uint32, end int64) bool {
	d := l.dead[num]
	return end == 0 || (len(d) == 1 && d[0].Start <= 0 && d[0].End >= end)
}

// forget drops the spans of a deleted pack (its records in the file are
// dropped at the next open).
func (l *ledger) forget(num uint32) { delete(l.dead, num) }

// save appends the unsaved records to the file and syncs it. The caller
// serialises saves; records is what it took from unsaved.
func saveRecords(path string, records []byte) error {
	if len(records) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("s3: %w", err)
	}
	w := bufio.NewWriter(f)
	_, err = w.Write(records)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("s3: save %s: %w", path, err)
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
