package content

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/doppelfs/doppel/internal/blob"
	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/headroom"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
)

// Config chooses how content is cut and stored.
type Config struct {
	Chunking    chunker.Policy
	Compression string // off, zstd, auto
	// VerifyReads hashes every chunk read from the blob store, so that damaged
	// data yields an error instead of wrong bytes.
	VerifyReads bool
	CacheChunks int // chunk cache entries
	// ReclaimInterval is how often freed chunks are punched; default 500 ms.
	ReclaimInterval time.Duration
	// Headroom keeps free space for metadata: chunks are not stored into
	// the reserve (nil: no reserve).
	Headroom *headroom.Guard
	// Compact tunes the background compactor of stores that cannot punch
	// (blob.Compactable); other stores have none.
	Compact CompactConfig
	// InlineMax: new chunks of at most this many raw bytes are kept in
	// their chunk record instead of the blob store (SharedInlineMax on
	// shared volumes); 0 keeps every chunk in the blob store.
	InlineMax int
	// ReadaheadBytes is how far beyond a sequential reader chunks are
	// looked up and prefetched; default DefaultReadahead.
	ReadaheadBytes int64
	// DeferDedup stores every new chunk of a write without waiting for
	// the chunk table's answer, which is asked while the write goes on
	// (`doppel mount --dedup=background`, DeDe's deferred mode;
	// docs/SHARED.md, 9.7). Its commit still merges the write into the
	// chunk table with exact reference counts, and a chunk the table
	// already held leaves its new copy dead, returned by the reclaimer
	// (segment files: at once) or by compaction (S3 packs): the same
	// final space, more bytes written meanwhile.
	DeferDedup bool
	// OtherWriters says that other processes commit to the metadata
	// store (a volume several hosts mount): their changes reach this
	// engine only when it next commits, so it keeps no decoded extents
	// between reads (extent_window_cache.go).
	OtherWriters bool
	// OwnedBlocks writes new blocks of files cut in fixed-size blocks
	// owned by their extent, without a chunk record (owned.go), where the
	// store allows it (usesOwnedBlocks).
	OwnedBlocks bool
	// InPlace writes a new block of a disk image over the owned block it
	// replaces where nothing else references that block (inplace.go),
	// where owned blocks are written and the store allows it
	// (usesInPlace).
	InPlace bool
	// NameLater leaves a block written in place unhashed: its extent
	// gets a provisional name (schema.ProvisionalName) that the dedup
	// pass of owned blocks replaces with its hash (provisional.go). Only
	// with InPlace.
	NameLater bool
	// ExtentMapBudget bounds the extent records that the extent maps of
	// block exports hold in memory together (MapExtents); 0 means
	// DefaultExtentMapBudget.
	ExtentMapBudget int
}

// ErrCorrupt is returned when stored data does not match its hash.
var ErrCorrupt = errors.New("content: stored chunk is damaged")

// Engine is the content layer of one volume.
type Engine struct {
	meta      meta.Store
	blobs     blob.Store
	cfg       Config
	chunk     chunker.Chunker
	comp      *compressor
	cache     *chunkCache
	locs      *locCache
	loads     *loads
	log       *slog.Logger
	hostCache hostCache // files whose host page cache reads leave alone (hostcache.go)
	hints     bool      // extents carry location hints (hints.go)
	owned     bool      // new blocks of fixed-size files are written owned (owned.go)
	inPlace   bool      // owned blocks are overwritten in place (inplace.go)
	nameLater bool      // blocks written in place are named later (provisional.go)
	intents   intents   // where in-place writes may be in flight (intents.go)
	// snapshotReaders counts online checks reading a metadata snapshot
	// (HoldReclaim): no block is overwritten in place meanwhile.
	snapshotReaders atomic.Int64
	gone            blob.GoneTeller // where hints may name deleted segments
	// hostReadahead: sequential reads of data stored in order are left to
	// the host's readahead of the segment files (inorder.go).
	hostReadahead bool
	windows       *extentWindows  // nil with Config.OtherWriters (extent_window_cache.go)
	extentMaps    *extentMaps     // nil with Config.OtherWriters (extent_map.go)
	extentLog     extentLog       // commits that changed extents, for PlanInPlace's plans
	slots         blob.SlotReuser // nil unless freed blocks take new one-block chunks (reclaim.go)
	reclaimer
	counters counters

	// txMu serializes metadata transactions: every metadata write of the
	// volume happens inside one Tx at a time.
	txMu    sync.Mutex
	version uint64       // last committed volume version; guarded by txMu
	stats   schema.Stats // committed stats; guarded by txMu
	statsMu sync.Mutex   // guards reads of stats outside txMu

	sessionOpen bool // Recover started a session that Close must end

	created createdLog // chunk records recent commits created (created.go)

	// The dedup filter (dedupfilter.go): first built at the first lookup;
	// one build at a time, stopped by Close.
	filterStarted  atomic.Bool
	filterBuilding atomic.Bool
	filterQuit     chan struct{}
	filterWG       sync.WaitGroup

	retainer  Retainer                   // keeps old versions for pins; guarded by txMu
	beginHook func(*Tx)                  // runs as each transaction begins (SetBeginHook)
	own       ownCommits                 // versions this engine committed (TrackOwnCommits)
	onForeign []func(meta.Changes) error // run when other processes committed (OnForeignCommits); guarded by txMu
	// foreignFailed: applying other processes' changes failed; guarded by txMu
	foreignFailed bool

	// syncGate keeps transactions that bring new chunks from committing
	// while Sync runs. Sync makes the chunk data durable, then the metadata
	// log, which it fsyncs whole: a commit landing in between could name
	// chunk bytes that raced the data sync, and become durable before them.
	// Not taken by Sync where commits are durable (durableCommits).
	syncGate sync.RWMutex

	// durableCommits: the metadata store makes every commit durable at
	// once (meta.CommitsDurable), so commits sync new chunk data first.
	durableCommits bool

	// Compaction (compact.go, compact_move.go). packStates and late are
	// guarded by txMu; compactMu serializes passes.
	packStates  map[uint32]packState
	late        []schema.Hash
	compactMu   sync.Mutex
	compactQuit chan struct{}
	compactDone chan struct{}

	ownedDedup ownedDedupLoop // background dedup of owned blocks (owned_dedup.go)
}

// New creates the content engine.
func New(m meta.Store, b blob.Store, cfg Config, log *slog.Logger) (*Engine, error) {
	ch, err := chunker.New(cfg.Chunking)
	if err != nil {
		return nil, err
	}
	comp, err := newCompressor(cfg.Compression)
	if err != nil {
		return nil, err
	}
	if cfg.CacheChunks <= 0 {
		cfg.CacheChunks = 256
	}
	if cfg.ReadaheadBytes <= 0 {
		cfg.ReadaheadBytes = DefaultReadahead
	}
	e := &Engine{meta: m, blobs: b, cfg: cfg, chunk: ch, comp: comp, cache: newChunkCache(cfg.CacheChunks), locs: newLocCache(),
		loads: newLoads(cfg.ReadaheadBytes), log: log, hints: usesHints(cfg)}
	e.slots, _ = b.(blob.SlotReuser)
	e.gone, _ = b.(blob.GoneTeller)
	e.hostReadahead = e.hints && !movesChunks(b)
	e.owned = usesOwnedBlocks(cfg, b)
	if v, err := m.Get(schema.KeyStats); err == nil {
		if e.stats, err = schema.DecodeStats(v); err != nil {
			return nil, fmt.Errorf("volume stats: %w", err)
		}
	} else if !errors.Is(err, meta.ErrNotFound) {
		return nil, err
	}
	if !cfg.OtherWriters {
		e.windows = newExtentWindows()
		e.extentMaps = newExtentMaps(cfg.ExtentMapBudget)
	}
	if v, err := m.Get(schema.KeyVersion); err == nil {
		if e.version, err = schema.ParseU64(v); err != nil {
			return nil, fmt.Errorf("volume version: %w", err)
		}
	} else if !errors.Is(err, meta.ErrNotFound) {
		return nil, err
	}
	_, e.durableCommits = m.(meta.CommitsDurable)
	if h, ok := m.(meta.DurabilityHook); ok {
		// Metadata a store makes durable by itself must not name chunk
		// bytes that are not durable yet. Bytes written over owned blocks
		// in place need not be: intent records cover them until a Sync
		// (intents.go), and syncing them at every memtable flush stalled
		// the writes in place behind the writeback.
		h.SetBeforeDurable(e.storedSync())
		if !e.durableCommits {
			// A synced commit (an intent record, the journal's cursor, a
			// repair) syncs the whole log: the chunks every commit before
			// it names go first, and no commit slips in between.
			h.SetCommitSync(e.syncStoredData)
		}
	}
	e.inPlace = usesInPlace(cfg, b, e.owned, e.durableCommits)
	e.nameLater = e.inPlace && cfg.NameLater
	if cfg.ReclaimInterval <= 0 {
		cfg.ReclaimInterval = 500 * time.Millisecond
	}
	e.reclaimer.start(e, cfg.ReclaimInterval)
	e.filterQuit = make(chan struct{})
	return e, nil
}

// Chunker returns the volume's chunker.
func (e *Engine) Chunker() chunker.Chunker { return e.chunk }

// Stats returns the committed space counters. On a store that other
// processes (hosts) write too, they are read from the store, which holds
// every host's latest; if that fails, this engine's are returned.
func (e *Engine) Stats() schema.Stats {
	if f, ok := e.meta.(interface{ Fresh() meta.Reader }); ok {
		if v, err := f.Fresh().Get(schema.KeyStats); err == nil {
			if s, err := schema.DecodeStats(v); err == nil {
				return s
			}
		}
	}
	e.statsMu.Lock()
	defer e.statsMu.Unlock()
	return e.stats
}

// Sync makes everything committed so far durable, data before metadata.
// The intent records of zones written in place in the epoch it ends stay
// for one more Sync (intents.go): a writer still in them would otherwise
// make them again at once, each with a synced commit in its pipeline.
func (e *Engine) Sync() error { return e.syncClearing(1) }

// syncAll is Sync that also deletes the intent records of the epoch it
// ends: a volume that closes cleanly keeps none.
func (e *Engine) syncAll() error { return e.syncClearing(0) }

// syncClearing is Sync keeping the intent records of the last keep epochs.
func (e *Engine) syncClearing(keep uint64) error {
	epoch := e.syncEpoch() // before the gate: commits under txMu may wait for it
	if err := e.syncData(); err != nil {
		return err
	}
	if epoch < keep {
		return nil
	}
	return e.clearIntents(epoch - keep)
}

// syncData is Sync without the intent records.
func (e *Engine) syncData() error { return e.syncWith(e.blobs.Sync) }

// syncStoredData is syncData for what metadata may name: the bytes stored
// (blob.StoredSyncer), not those written in place, which the intent
// records cover.
func (e *Engine) syncStoredData() error { return e.syncWith(e.storedSync()) }

// storedSync is the blob store's sync of what it stored: SyncStored where
// it keeps writes in place apart (blob.StoredSyncer), else Sync.
func (e *Engine) storedSync() func() error {
	if s, ok := e.blobs.(blob.StoredSyncer); ok {
		return s.SyncStored
	}
	return e.blobs.Sync
}

// syncWith makes the chunk bytes durable with syncBlobs, then every
// commit so far.
func (e *Engine) syncWith(syncBlobs func() error) error {
	// Where every commit is durable at once, each has made its own chunks
	// durable before it (Tx.Commit): no commit can overtake this data sync,
	// so commits go on meanwhile. Held back, a streaming writer's commits
	// waited for every upload in flight at each periodic sync (every 5 s),
	// and the write's pipeline drained.
	if !e.durableCommits {
		// A first pass without the gate takes the bulk of the data: the
		// gated pass then syncs only what was written meanwhile. Gated
		// whole, a periodic Sync of a disk image written in place held
		// every commit of new chunks and every intent record (which
		// syncs through here) for its fdatasync of seconds of writes,
		// and with them the writer's pipeline: 0.7 s of idle cores every
		// 5 s of a copy over an export's data.
		if err := syncBlobs(); err != nil {
			return err
		}
		e.syncGate.Lock()
		defer e.syncGate.Unlock()
	}
	if err := syncBlobs(); err != nil {
		return err
	}
	return e.meta.Sync()
}

// Close stops the reclaimer after freeing what it still holds and marks
// the session closed cleanly.
func (e *Engine) Close() error {
	e.stopOwnedDedup() // first: a pass may start the dedup filter
	e.stopDedupFilter()
	e.loads.running.Wait()
	if e.extentMaps != nil {
		e.extentMaps.close() // its loads hold snapshots of the store
	}
	e.stopCompactor()
	e.reclaimer.stop()
	err := e.closeSession()
	if h, ok := e.meta.(meta.DurabilityHook); ok {
		h.SetBeforeDurable(nil) // everything is synced; the blob store closes next
		h.SetCommitSync(nil)
	}
	return errors.Join(err, e.comp.close())
}
