package main

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/doppelfs/doppel/bench/internal/datafiles"
	"github.com/doppelfs/doppel/internal/schema"
)

// maxRun bounds one dedupe request; btrfs refuses more than 16 MiB.
const maxRun = 16 << 20

// loc is a block: a file (index into deduper.paths) and an offset.
type loc struct {
	file int
	off  int64
}

// key identifies a block's content. Blocks shorter than the block size
// (file tails) only match tails of the same length.
type key struct {
	hash schema.Hash
	n    int64
}

// span is a pending dedupe request: n bytes of dst become shared with src.
type span struct {
	src, dst loc
	n        int64
}

// Stats is what a run did.
type Stats struct {
	Files         int64    `json:"files"`
	DataBytes     int64    `json:"data_bytes"`     // hashed (holes excluded)
	DupBytes      int64    `json:"dup_bytes"`      // found to be a copy of an earlier block
	DedupedBytes  int64    `json:"deduped_bytes"`  // the kernel reported as shared
	Requests      int64    `json:"requests"`       // FIDEDUPERANGE calls
	Differed      int64    `json:"differed"`       // requests whose bytes differed after all
	Failed        int64    `json:"failed"`         // requests the kernel refused
	Seconds       float64  `json:"seconds"`        // wall time
	MiBPerSecond  float64  `json:"mib_per_second"` // data bytes over wall time
	FirstFailures []string `json:"first_failures,omitempty"`
}

// deduper hashes blocks in file order and shares every block seen before
// with its first occurrence.
type deduper struct {
	bs      int64
	dryRun  bool
	paths   []string
	first   map[key]loc
	pending span
	stats   Stats
	// share makes dst's n bytes share src's; tests replace it.
	share func(src, dst loc, n int64) (deduped int64, differed bool, err error)
}

func newDeduper(bs int64, dryRun bool) *deduper {
	d := &deduper{bs: bs, dryRun: dryRun, first: map[key]loc{}}
	d.share = d.ioctl
	return d
}

// file hashes one file's data ranges block by block; a range boundary
// (a hole) is block-aligned on the file systems this is meant for.
func (d *deduper) file(path string) error {
	f, err := datafiles.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	idx := len(d.paths)
	d.paths = append(d.paths, path)
	d.stats.Files++
	buf := make([]byte, d.bs)
	err = f.Ranges(func(data, hole int64) error {
		for off := data - data%d.bs; off < hole; off += d.bs {
			n, err := f.ReadAt(buf[:min(d.bs, f.Size-off)], off)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			d.stats.DataBytes += int64(n)
			d.block(loc{idx, off}, key{schema.Sum(buf[:n]), int64(n)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return d.flush()
}

// block handles the block at dst with content k.
func (d *deduper) block(dst loc, k key) {
	src, seen := d.first[k]
	if !seen {
		d.first[k] = dst
		return
	}
	d.stats.DupBytes += k.n
	p := &d.pending
	if p.n > 0 && p.n+k.n <= maxRun && p.src.file == src.file && p.dst.file == dst.file &&
		p.src.off+p.n == src.off && p.dst.off+p.n == dst.off &&
		(src.file != dst.file || src.off+k.n <= p.dst.off) {
		p.n += k.n // contiguous in both files, and not overlapping itself
		return
	}
	d.flushErr(d.flush())
	d.pending = span{src: src, dst: dst, n: k.n}
}

// flush submits the pending request.
func (d *deduper) flush() error {
	p := d.pending
	d.pending = span{}
	if p.n == 0 || d.dryRun {
		return nil
	}
	d.stats.Requests++
	deduped, differed, err := d.share(p.src, p.dst, p.n)
	d.stats.DedupedBytes += deduped
	if differed {
		d.stats.Differed++
	}
	return err
}

// flushErr counts a refused request and goes on: one refusal (e.g. an
// inline btrfs extent) must not end the run.
func (d *deduper) flushErr(err error) {
	if err == nil {
		return
	}
	d.stats.Failed++
	if len(d.stats.FirstFailures) < 5 {
		d.stats.FirstFailures = append(d.stats.FirstFailures, err.Error())
	}
}

// ioctl shares dst's bytes with src's through FIDEDUPERANGE.
func (d *deduper) ioctl(src, dst loc, n int64) (int64, bool, error) {
	sf, err := os.Open(d.paths[src.file])
	if err != nil {
		return 0, false, err
	}
	defer sf.Close()
	df, err := os.OpenFile(d.paths[dst.file], os.O_RDWR, 0)
	if err != nil {
		return 0, false, err
	}
	defer df.Close()
	var deduped int64
	for deduped < n {
		r := unix.FileDedupeRange{
			Src_offset: uint64(src.off + deduped),
			Src_length: uint64(n - deduped),
			Info:       []unix.FileDedupeRangeInfo{{Dest_fd: int64(df.Fd()), Dest_offset: uint64(dst.off + deduped)}},
		}
		if err := unix.IoctlFileDedupeRange(int(sf.Fd()), &r); err != nil {
			return deduped, false, &os.PathError{Op: "FIDEDUPERANGE", Path: d.paths[dst.file], Err: err}
		}
		info := r.Info[0]
		switch {
		case info.Status == unix.FILE_DEDUPE_RANGE_DIFFERS:
			return deduped, true, nil
		case info.Status < 0:
			return deduped, false, &os.PathError{Op: "FIDEDUPERANGE", Path: d.paths[dst.file], Err: unix.Errno(-info.Status)}
		case info.Bytes_deduped == 0:
			return deduped, false, nil
		}
		deduped += int64(info.Bytes_deduped)
	}
	return deduped, false, nil
}
