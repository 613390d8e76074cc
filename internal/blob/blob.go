package blob

import "errors"

// Align is the alignment of every chunk's offset within its segment
// (unless the store is an Aligner that says otherwise). It matches the
// block size of common host file systems, so that punching the
// Align-rounded range of a freed chunk releases whole blocks.
const Align = 4096

// Loc says where a chunk's stored bytes are.
type Loc struct {
	Segment uint32 // segment number, >= 1
	Offset  uint64 // byte offset in the segment, a multiple of the store's alignment
	Length  uint32 // stored length in bytes
}

// Aligner is implemented by stores whose chunks start at multiples of
// something other than Align: S3 packs without padding, where nothing is
// ever punched and chunks lie back to back (alignment 1).
type Aligner interface {
	Alignment() int64
}

// AlignmentOf is the alignment of s's chunk offsets: what s says if it is
// an Aligner, else Align. Every span of a location (what a freed chunk
// releases, what a live one holds) is taken at it.
func AlignmentOf(s Store) int64 {
	if a, ok := s.(Aligner); ok {
		return a.Alignment()
	}
	return Align
}

// Store is where chunk bytes live. Implementations are safe for concurrent use.
type Store interface {
	// Put appends data and returns its location. Data is not durable until Sync.
	Put(data []byte) (Loc, error)
	// PutMany is Put of every slice of data, with locations in order, in
	// as few writes as the segments allow. On error nothing it wrote is
	// kept.
	PutMany(data [][]byte) ([]Loc, error)
	// StartPutMany is PutMany whose writes may go on after it returns:
	// the locations are known at once, and the bytes are in the store
	// once the Writing's Wait returns nil (data itself may be reused at
	// once). The caller must Wait, and before it references the
	// locations.
	StartPutMany(data [][]byte) (*Writing, error)
	// Read reads the stored bytes at loc into buf (len(buf) >= loc.Length)
	// and returns buf[:loc.Length]. A short read (truncated or missing
	// segment) is an error wrapping ErrCorrupt or os.ErrNotExist, never zeros.
	Read(loc Loc, buf []byte) ([]byte, error)
	// Prefetch asks the host to read the stored bytes at locs into its
	// page cache in the background, so that reads of them soon after do
	// not wait for the disk. It is only a hint: errors are ignored.
	Prefetch(locs []Loc)
	// Forget tells the host that the stored bytes at locs will not be read
	// again soon, so that its page cache may drop them (a reader that keeps
	// its own copy). Only a hint: errors are ignored.
	Forget(locs []Loc)
	// Free gives the space of loc back to the host file system at once by
	// punching a hole (fallocate PUNCH_HOLE|KEEP_SIZE over the Align-rounded
	// range). When a sealed segment (not the one currently appended to) has
	// no data left (lseek SEEK_DATA from 0 returns ENXIO), its file is
	// deleted. The caller guarantees loc is no longer referenced.
	Free(loc Loc) error
	// Sync makes every Put that returned before the call durable (fdatasync
	// of every segment written since the last Sync; fsync of the directory
	// when a segment file was created or removed).
	Sync() error
	// Usage reports the space the segments occupy where they are kept,
	// and their number: for segment files the allocated bytes (st_blocks*512
	// summed), for pack objects the bytes of the objects.
	Usage() (allocated int64, segments int, err error)
	// Segments lists existing segment numbers in order.
	Segments() ([]uint32, error)
	// SessionStart is the lowest segment number this open store writes to.
	SessionStart() uint32
	// Reclaim punches out the data of sealed segment num (below
	// SessionStart) outside the live spans and returns the bytes punched.
	Reclaim(num uint32, live []Span) (int64, error)
	Close() error
}

// LocSyncer is implemented by stores that can make the bytes at some
// locations durable without waiting for everything else put since: the S3
// store seals and awaits only the packs that hold them, so that a writer's
// commit waits for its own uploads while the next batch's are under way.
type LocSyncer interface {
	// SyncLocs returns nil only once the bytes at every one of locs (each
	// from a Put that returned) are durable.
	SyncLocs(locs []Loc) error
}

// CachedPutter is implemented by stores that write around the host's
// page cache (direct writes, see direct.go) but can also write through
// it, for bytes that will be read again soon with no cache above doppel
// to hold them (a block export's file, as qemu-nbd's writeback cache
// keeps its image's).
type CachedPutter interface {
	// StartPutManyCached is StartPutMany through the host's page cache.
	StartPutManyCached(data [][]byte) (*Writing, error)
}

// MemoryPutter is implemented by stores whose StartPutMany only copies the
// bytes into memory (the S3 store's open packs, uploaded in the
// background): a writer gains no overlap by handing a batch over in
// groups, and handing it over whole lets the store cut it into full packs
// instead of leaving a partly filled one at its end.
type MemoryPutter interface {
	// PutsToMemory marks the store; it does nothing.
	PutsToMemory()
}

// Lender is implemented by stores that can keep a batch's bytes where the
// caller has them instead of copying them (the S3 store, whose packs
// without padding hold chunks back to back, as a streaming writer's run
// does): the copy into a pack was a twentieth of a shared volume's write.
type Lender interface {
	// StartPutManyLent is StartPutMany of chunks that are all slices of
	// backing. The store may keep referencing backing instead of copying
	// them; it calls release exactly once, when it no longer does (at
	// once if it copied). The caller must not change backing's bytes
	// before then.
	StartPutManyLent(data [][]byte, backing []byte, release func()) (*Writing, error)
}

// StreamPrefetcher is implemented by stores that keep prefetched bytes in
// a bounded cache of their own (the S3 store's read cache): told how far
// the sequential reader it prefetches for has read, such a store can keep
// a long scan from pushing everything else, and the scan's own beginning,
// out of the cache.
type StreamPrefetcher interface {
	// PrefetchStream is Prefetch for a sequential reader that has read
	// streamed bytes since its stream began.
	PrefetchStream(locs []Loc, streamed int64)
}

// GoneTeller is implemented by stores whose segments can be deleted while
// location hints still name them (packs that compaction rewrote and
// retired): a read through such a hint would ask for bytes that are not
// there and then fall back to the chunk's record, so the content layer
// asks first.
type GoneTeller interface {
	// Gone reports whether the store knows segment to be deleted (it
	// deleted it, or a read found it missing); false when it cannot tell.
	Gone(segment uint32) bool
}

// ResidencyProber is implemented by stores that can tell, without
// waiting, whether a location's bytes are in memory (the segment files'
// pages in the host's page cache): readahead of data already there is
// work for nothing.
type ResidencyProber interface {
	// InMemory reports whether the first byte of loc can be read without
	// waiting for a disk; false when it cannot be told.
	InMemory(loc Loc) bool
}

// ErrCorrupt is wrapped by errors for stored bytes that are not all there
// (a segment shorter than a location needs) and for impossible locations.
var ErrCorrupt = errors.New("blob: corrupt or truncated segment")

// Options tune a Dir.
type Options struct {
	SegmentSize int64 // seal a segment when it would grow past this; default 256 MiB
	// BufferedWrites writes segments through the host's page cache
	// instead of with O_DIRECT (see direct.go).
	BufferedWrites bool
}

const defaultSegmentSize = 256 << 20

// roundUp returns n rounded up to a multiple of Align.
func roundUp(n int64) int64 { return AlignUp(n, Align) }

// Inspector is implemented by stores whose segments are not files in the
// volume directory's chunks/ (the S3 store's pack objects): fsck asks
// them what it would otherwise stat and seek in the segment files.
type Inspector interface {
	// SegmentSize is the size of segment num's bytes, an error wrapping
	// os.ErrNotExist when it does not exist.
	SegmentSize(num uint32) (int64, error)
	// SegmentData lists the spans of segment num that hold data, in
	// order: all of it but what was punched or recorded dead.
	SegmentData(num uint32) ([]Span, error)
	// SegmentName names segment num in messages.
	SegmentName(num uint32) string
}
