package namespace

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/doppelfs/doppel/internal/content"
	"github.com/doppelfs/doppel/internal/headroom"
	"github.com/doppelfs/doppel/internal/meta"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/versions"
	"github.com/doppelfs/doppel/internal/vfs"
)

// Options tune the namespace layer.
type Options struct {
	// DirtyLimit bounds buffered write data across all files; writers flush
	// themselves when it is exceeded (backpressure).
	DirtyLimit int64
	// StreamFlush is the size of a buffered run at which its complete chunks
	// are committed in the background while the writer goes on.
	StreamFlush int
	// FlushInterval is how often the background flusher runs.
	FlushInterval time.Duration
	// SyncInterval bounds how long committed changes may stay volatile.
	SyncInterval time.Duration
	// StoreDir is the host directory whose free space statfs reports.
	StoreDir string
	// JournalKeep is how many of the latest versions' journal entries are
	// kept even when nothing needs them (0: 4096).
	JournalKeep uint64
	// JournalPruneEvery is how often the journal pruner runs (0: 30s).
	JournalPruneEvery time.Duration
	// JournalCompactMin is how many entries must come below the retention
	// window before the pruner compacts the journal again (0: 4096; a
	// pass also waits for as many as the last one kept).
	JournalCompactMin int
	// Headroom keeps free space for metadata (nil: no reserve; a volume
	// opened by package volume always has one).
	Headroom *headroom.Guard
	// Sessions, on a volume several hosts mount at once, says which
	// session this host is: open files are then recorded per session
	// (open_records.go). nil: one host.
	Sessions Sessions
}

// FS is the file system of one volume: it implements vfs.FS over the
// content engine. (volume.Volume is the opened volume that holds it.)
type FS struct {
	meta meta.Store
	eng  *content.Engine
	opt  Options
	log  *slog.Logger

	locks stripes

	filesMu sync.Mutex
	files   map[uint64]*openFile
	handles map[vfs.Handle]*handle
	nextFh  vfs.Handle
	dirty   dirtyCounter
	runBufs *content.BufPool // arrays of streaming runs

	counters counters

	quit chan struct{}
	wg   sync.WaitGroup

	ret      *versions.Retainer // keeps the past that clones read
	readOnly sync.Map           // clone root ino -> bool (snapshot)

	releaseMu   sync.Mutex
	toRelease   []uint64 // pins whose retained versions are to be freed
	releaseWake chan struct{}
	pinReads    *pinReads // reads through pins the releaser waits for

	materializeWake chan struct{}
	reapWake        chan struct{}
	pruneWake       chan struct{}
	hasClones       atomic.Bool       // a clone record exists (or did since open)
	trees           treeCache         // the clones each directory lies in
	pruneMu         sync.Mutex        // one journal pruning pass at a time
	compaction      journalCompaction // the pruner's count of entries to compact (pruneMu)
	journalMu       sync.RWMutex      // diffs (read) against the journal floor rising
	excludes        sync.Map          // clone root ino -> exclude.Set
	pinExcludes     sync.Map          // pin version -> func(string, bool) bool (nil: none)

	others    otherHosts // what other hosts changed (other_hosts.go)
	fileLocks fileLocks  // this host's fcntl and flock lock records (file_locks.go)

	noSpaceLogged  atomic.Int64 // when ENOSPC was last logged (unix ns)
	metaFailLogged atomic.Int64 // when a failed metadata store was last logged
}

var _ vfs.FS = (*FS)(nil)

// Open starts the namespace of a volume: it removes inodes left unlinked
// but open by a previous run and starts the background flusher.
func Open(m meta.Store, eng *content.Engine, opt Options, log *slog.Logger) (*FS, error) {
	if opt.DirtyLimit <= 0 {
		opt.DirtyLimit = 128 << 20
	}
	if opt.FlushInterval <= 0 {
		opt.FlushInterval = time.Second
	}
	if opt.StreamFlush <= 0 {
		opt.StreamFlush = 8 << 20
	}
	if opt.SyncInterval <= 0 {
		opt.SyncInterval = 5 * time.Second
	}
	if opt.JournalKeep == 0 {
		opt.JournalKeep = defaultJournalKeep
	}
	if opt.JournalPruneEvery <= 0 {
		opt.JournalPruneEvery = defaultPruneEvery
	}
	if opt.JournalCompactMin <= 0 {
		opt.JournalCompactMin = defaultJournalCompactMin
	}
	v := &FS{
		meta: m, eng: eng, opt: opt, log: log,
		files: map[uint64]*openFile{}, handles: map[vfs.Handle]*handle{},
		quit: make(chan struct{}), releaseWake: make(chan struct{}, 1), pinReads: newPinReads(),
		materializeWake: make(chan struct{}, 1), reapWake: make(chan struct{}, 1),
		pruneWake: make(chan struct{}, 1),
		// Room for a run to grow from its kept tail to StreamFlush bytes
		// plus one more write, whatever its array lost to committed heads.
		runBufs: content.NewBufPool(opt.StreamFlush+(6<<20), opt.StreamFlush+(2<<20)),
	}
	ret, err := versions.NewRetainer(m)
	if err != nil {
		return nil, fmt.Errorf("load pins: %w", err)
	}
	v.ret = ret
	// A pin keeps the past only of what its clone shows.
	ret.SetExcluder(v.pinExcluder)
	eng.SetRetainer(ret)
	eng.OnForeignCommits(v.foreignCommits)
	if err := v.reapOpens(); err != nil {
		return nil, err
	}
	if err := v.startTreeJournal(); err != nil {
		return nil, err
	}
	if err := v.noteClones(); err != nil {
		return nil, err
	}
	// Once the volume has a clone, every transaction journals into the
	// clones its changes lie in.
	eng.SetBeginHook(func(tx *content.Tx) {
		if v.hasClones.Load() {
			tx.SetTrees(v.trees.forTx(tx))
		}
	})
	if opt.Sessions != nil {
		v.wg.Add(1)
		go v.openReaper()
	}
	v.wg.Add(5)
	go v.flusher()
	go v.releaser()
	go v.materializer()
	go v.reaper()
	go v.journalPruner() // its first pass runs now: a long journal shrinks
	v.queueFreePins()
	return v, nil
}

// Close flushes every buffered write and stops background work. The
// content engine is closed by its owner.
func (v *FS) Close() error {
	close(v.quit)
	v.wg.Wait()
	err := v.flushAll(true)
	if serr := v.eng.Sync(); err == nil {
		err = serr
	}
	return err
}

// InitRoot creates the root directory of a new volume.
func InitRoot(tx *content.Tx, uid, gid uint32) error {
	now := time.Now().UnixNano()
	root := schema.Inode{Mode: syscall.S_IFDIR | 0o755, Uid: uid, Gid: gid, Nlink: 2, Atime: now, Mtime: now, Ctime: now, Btime: now, Version: tx.Version()}
	b := tx.Batch()
	if err := b.Set(schema.InodeKey(vfs.RootIno), root.Encode()); err != nil {
		return err
	}
	tx.AddInodes(1)
	return b.Set(schema.KeyNextIno, schema.U64(vfs.RootIno+1))
}

func now() int64 { return time.Now().UnixNano() }

// begin starts a transaction or reports why it could not.
func (v *FS) begin() (*content.Tx, error) {
	tx, err := v.eng.Begin()
	if err != nil {
		return nil, fmt.Errorf("begin transaction: %w", err)
	}
	return tx, nil
}

// commit runs fill in a transaction of its own and commits it, or aborts
// it if fill fails.
func (v *FS) commit(fill func(tx *content.Tx) error) error {
	tx, err := v.begin()
	if err != nil {
		return err
	}
	if err := fill(tx); err != nil {
		tx.Abort()
		return err
	}
	return tx.Commit(false)
}
