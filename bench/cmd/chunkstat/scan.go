package main

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"github.com/doppelfs/doppel/bench/internal/datafiles"
	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/schema"
)

// window is how much of a data range is read at once; a chunk's undecided
// tail is carried into the next window, so boundaries are those of one
// sequential pass, as in doppel's importer.
const window = 8 << 20

// scanner cuts files with every policy and accumulates the statistics.
type scanner struct {
	policies  []*policyStats
	wholeFile *policyStats
	files     int64
	size      int64 // file sizes, holes included
	data      int64 // bytes in data ranges (holes excluded)
	buf       []byte
}

func newScanner(chs []chunker.Chunker) *scanner {
	sc := &scanner{wholeFile: newPolicyStats("whole-file", nil), buf: make([]byte, window)}
	for _, ch := range chs {
		sc.policies = append(sc.policies, newPolicyStats(ch.Policy().String(), ch))
	}
	return sc
}

// file reads one file's data ranges and cuts each with every policy.
func (sc *scanner) file(path string) error {
	f, err := datafiles.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc.files++
	sc.size += f.Size
	whole := sha256.New()
	var wholeLen int64
	err = f.Ranges(func(data, hole int64) error {
		// Where each range starts is part of the content: files with the
		// same bytes at other offsets are not the same file.
		_, _ = whole.Write(binary.LittleEndian.AppendUint64(nil, uint64(data)))
		sc.data += hole - data
		return sc.cutRange(f.File, data, hole, func(p []byte) {
			_, _ = whole.Write(p) // hash.Hash never fails
			wholeLen += int64(len(p))
		})
	})
	if err != nil {
		return err
	}
	if wholeLen > 0 {
		var h schema.Hash
		copy(h[:], whole.Sum(nil))
		sc.wholeFile.add(h, wholeLen)
	}
	return nil
}

// cutRange reads [start, end) window by window and cuts it with every
// policy. Each policy keeps its own undecided tail, since boundaries
// differ; see policyStats.feed.
func (sc *scanner) cutRange(f *os.File, start, end int64, seen func([]byte)) error {
	for _, ps := range sc.policies {
		ps.begin(start)
	}
	for off := start; off < end; {
		n, err := f.ReadAt(sc.buf[:min(int64(len(sc.buf)), end-off)], off)
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the file shrank while it was read
			}
			return err
		}
		p := sc.buf[:n]
		seen(p)
		off += int64(n)
		for _, ps := range sc.policies {
			ps.feed(p, off == end)
		}
	}
	return nil
}
