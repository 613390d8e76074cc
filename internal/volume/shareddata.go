package volume

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/blob/s3store"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/meta/pgstore"
	"github.com/doppelfs/doppel/internal/schema"
)

// S3Dir is the S3 data store's local directory in a shared volume's store
// directory: its read cache (cache/). Pack numbers and the dead-span
// ledger are in the metadata store. Losing it loses no data
// (docs/SHARED.md, section 8).
const S3Dir = "s3"

// DefaultCacheBytes bounds the local read cache of a volume whose chunk
// data is in S3 unless init says otherwise.
const DefaultCacheBytes = 1 << 30

// S3Readahead is how far ahead of a sequential reader a volume with data
// in S3 prefetches: a GET takes milliseconds, not the fraction of one a
// local read does, so streaming at disk speed needs tens of MiB in flight
// (measured in docs/BENCHMARKS.md, "Shared volumes"). Embedded volumes
// keep content.DefaultReadahead. It must stay well below the store's
// prefetch memory (s3store's PrefetchBytes, 64 MiB): at 64 MiB the 4 GiB
// cold read took 21–26 s instead of 3.6 s (2026-11-29, a throwaway
// build), prefetched ranges being dropped before they were read.
const S3Readahead = 32 << 20

// SharedStreamFlush is the run a streaming writer commits at a time on a
// volume whose commits are durable (PostgreSQL): there each commit is a
// transaction on the server (about 1.7 ms of its CPU and a few round
// trips) and seals a pack (one PUT), so runs of 16 MiB instead of 8 halve
// both; on a 4 GiB write PostgreSQL's CPU fell by a quarter
// (docs/BENCHMARKS.md, "A pack's body in one write; runs of 16 MiB on
// shared volumes"). Embedded volumes keep namespace's 8 MiB: no gain was
// measured there, and the runs in flight are heap memory.
const SharedStreamFlush = 16 << 20

// ErrDataNeedsMeta refuses --data without --meta.
var ErrDataNeedsMeta = errors.New("--data (chunk data in S3) needs --meta (metadata in PostgreSQL): " +
	"without --meta the metadata would stay in the store directory's Pebble store, on this machine's disk only, " +
	"so losing that disk would lose the volume whatever S3 keeps, and pack numbers could not be handed out safely; " +
	"give --meta postgres://USER@HOST:PORT/DB as well")

// tuneS3 lets tests shorten the S3 store's retries (faults are their
// business); nil in production.
var tuneS3 func(*s3store.Config)

// packAllocator hands out pack numbers from the volume's metadata store:
// one counter record (schema.KeyNextPack) advanced atomically by the
// store (meta.Counters), so that two hosts never get the same number.
type packAllocator struct{ c meta.Counters }

// Allocate implements s3store.Allocator.
func (a packAllocator) Allocate(n, above uint32) (uint32, error) {
	v, err := a.c.Reserve(schema.KeyNextPack, uint64(n), uint64(above))
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint32 {
		return 0, errors.New("pack numbers exhausted")
	}
	return uint32(v) - n + 1, nil
}

// s3Config is the S3 store configuration of the shared volume in dir
// whose data URL is dataURL; the credentials come from the environment or
// the credentials file, never from the store directory.
func s3Config(dir string, s sharedInfo, m meta.Store) (s3store.Config, error) {
	dataURL, cacheBytes := s.Data, s.CacheBytes
	cfg, err := s3store.ParseURL(dataURL)
	if err != nil {
		return cfg, err
	}
	if cfg.Credentials, err = s3store.LoadCredentials(); err != nil {
		return cfg, err
	}
	c, ok := m.(meta.Counters)
	if !ok {
		return cfg, fmt.Errorf("data in S3 needs a metadata store that reserves pack numbers atomically (%T does not)", m)
	}
	cfg.Allocator, cfg.Dead = packAllocator{c}, deadRecords{m: m, writer: sessionOf(m)}
	if cfg.Unpadded, err = unpaddedPacks(m); err != nil {
		return cfg, err
	}
	cfg.Dir = filepath.Join(dir, S3Dir)
	switch {
	case cacheBytes == 0:
		cfg.CacheBytes = DefaultCacheBytes
	case cacheBytes < 0:
		cfg.CacheBytes = -1 // disabled
	default:
		cfg.CacheBytes = cacheBytes
	}
	compact, err := compactFromEnv()
	if err != nil {
		return cfg, err
	}
	cfg.RetireGrace = compact.retireGrace
	if s.multiHost {
		// Another host may have uploaded a pack whose metadata it has not
		// committed yet: a sweep or recovery here must not take it for an
		// orphan (docs/SHARED.md, 9.5).
		cfg.Grace = multiHostGrace
	}
	if tuneS3 != nil {
		tuneS3(&cfg)
	}
	return cfg, nil
}

// unpaddedPacks tells whether the volume in m puts its chunks back to back
// in S3 packs (its config's PackAlign). A volume being made has no config
// yet; nothing is put into its packs before it has.
func unpaddedPacks(m meta.Store) (bool, error) {
	raw, err := m.Get(schema.KeyConfig)
	if errors.Is(err, meta.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c, err := schema.DecodeConfig(raw)
	if err != nil {
		return false, err
	}
	return c.PackAlign == 1, nil
}

// openSharedData opens the chunk store of a shared volume: the segment
// files of dir/chunks, or the S3 store shared.json names.
func openSharedData(dir string, s sharedInfo, m meta.Store) (blob.Store, error) {
	if s.Data == "" {
		return blob.OpenDir(filepath.Join(dir, "chunks"), blob.Options{})
	}
	cfg, err := s3Config(dir, s, m)
	if err != nil {
		return nil, fmt.Errorf("data store %s: %w", s.Data, err)
	}
	b, err := s3store.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("data store %s: %w", s.Data, err)
	}
	return b, nil
}

// checkDataURL refuses a data URL this doppel cannot open.
func checkDataURL(dataURL string) error {
	if dataURL == "" {
		return nil
	}
	if _, err := s3store.ParseURL(dataURL); err != nil {
		return fmt.Errorf("data store: %w", err)
	}
	return nil
}

// initSharedData opens the new volume's S3 store once, so that a wrong
// endpoint, missing bucket or refused credentials fail init, and refuses
// a prefix that already holds packs (another volume's data).
func initSharedData(dir string, s sharedInfo, m meta.Store) error {
	if s.Data == "" {
		return nil
	}
	b, err := openSharedData(dir, s, m)
	if err != nil {
		return err
	}
	nums, err := b.Segments()
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("data store %s: %w", s.Data, err)
	}
	if len(nums) > 0 {
		return fmt.Errorf("data store %s already holds %d packs (another volume's data?); give an empty prefix", s.Data, len(nums))
	}
	return nil
}

// deadRecords keeps the S3 store's dead-span ledger in the metadata store
// (schema.DeadKeyOf records), so that it outlives the store directory and
// is the same for every host. Each save writes the complete merged spans
// this host knows of the packs it names, in records of its own session
// (writer), and a load takes the union of every writer's: hosts freeing
// chunks of one pack at once never overwrite each other's spans (before
// 2026-11-26 they shared one record per pack and the last save won).
type deadRecords struct {
	m      meta.Store
	writer func() uint64 // this process's session; 0: none
}

// sessionOf is the session id of m, 0 if it has none.
func sessionOf(m meta.Store) func() uint64 {
	return func() uint64 {
		if pg, ok := m.(*pgstore.Store); ok && pg.SessionID() > 0 {
			return uint64(pg.SessionID())
		}
		return 0
	}
}

// LoadDead implements s3store.DeadStore.
func (d deadRecords) LoadDead() (map[uint32][]blob.Span, error) {
	lo, hi := schema.DeadRange()
	it, err := d.m.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	all := map[uint32][]blob.Span{}
	for ok := it.First(); ok; ok = it.Next() {
		num, err := schema.DecodeDeadKey(it.Key())
		if err != nil {
			continue // fsck reports it
		}
		spans, err := schema.DecodeSpans(it.Value())
		if err != nil {
			continue // a cache: fsck reports it, its space is found again
		}
		for _, s := range spans {
			all[num] = append(all[num], blob.Span{Start: s[0], End: s[1]})
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	return all, nil
}

// SaveDead implements s3store.DeadStore: one durable batch.
func (d deadRecords) SaveDead(spans map[uint32][]blob.Span, gone []uint32) error {
	b := d.m.NewBatch()
	defer b.Close()
	for num, ss := range spans {
		pairs := make([][2]int64, len(ss))
		for i, s := range ss {
			pairs[i] = [2]int64{s.Start, s.End}
		}
		if err := b.Set(schema.DeadKeyOf(num, d.writer()), schema.EncodeSpans(pairs)); err != nil {
			return err
		}
	}
	for _, num := range gone {
		lo, hi := schema.DeadPackRange(num)
		if err := deleteRange(b, lo, hi); err != nil {
			return err
		}
	}
	return b.Commit(true)
}

// deleteRange deletes the keys of [lo, hi) in b: with one range deletion
// where the batch has it, else key by key.
func deleteRange(b meta.Batch, lo, hi []byte) error {
	if rd, ok := b.(meta.RangeDeleter); ok {
		return rd.DeleteRange(lo, hi)
	}
	return meta.DeleteEach(b, lo, hi)
}
