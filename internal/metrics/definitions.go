package metrics

import "github.com/prometheus/client_golang/prometheus"

// Names of the per-operation metrics.
const (
	opDurationName = "doppel_fuse_request_duration_seconds"
	opErrorsName   = "doppel_fuse_request_errors_total"
	opEIOName      = "doppel_fuse_request_eio_total"
)

var (
	opDuration = prometheus.NewDesc(opDurationName,
		"Time the daemon took to serve FUSE requests, by operation (the _count is the number of requests).",
		[]string{"op"}, nil)
	opErrors = prometheus.NewDesc(opErrorsName,
		"FUSE requests answered with an error, by operation (ENOENT from lookup and ENODATA from getxattr are routine).",
		[]string{"op"}, nil)
	opEIO = prometheus.NewDesc(opEIOName,
		"FUSE requests answered with EIO, by operation: the daemon failed (damaged data, store errors; see its log).",
		[]string{"op"}, nil)
)

// figureMetric is one metric read from Figures.
type figureMetric struct {
	name  string
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*Figures) int64
	scale float64 // what value is multiplied by (nanoseconds to seconds)
}

// of returns m's value in f.
func (m figureMetric) of(f *Figures) float64 { return float64(m.value(f)) * m.scale }

func counter(name, help string, value func(*Figures) int64) figureMetric {
	return figureMetric{name, prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, value, 1}
}

// counterSeconds is a counter of seconds whose value is in nanoseconds.
func counterSeconds(name, help string, ns func(*Figures) int64) figureMetric {
	return figureMetric{name, prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, ns, 1e-9}
}

func gauge(name, help string, value func(*Figures) int64) figureMetric {
	return figureMetric{name, prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, value, 1}
}

// figureMetrics are the volume's metrics other than the per-op ones.
var figureMetrics = []figureMetric{
	counter("doppel_written_bytes_total", "Bytes accepted by write calls.",
		func(f *Figures) int64 { return f.WrittenBytes }),
	counter("doppel_deduplicated_bytes_total", "Written bytes in chunks the volume already held, so not stored again.",
		func(f *Figures) int64 { return f.DeduplicatedBytes }),
	counter("doppel_zero_bytes_total", "Written bytes in all-zero chunks, kept as holes and not stored.",
		func(f *Figures) int64 { return f.ZeroBytes }),
	counter("doppel_stored_bytes_total", "Bytes of new chunks written to segment files, after compression.",
		func(f *Figures) int64 { return f.StoredBytes }),
	counter("doppel_chunk_cache_hits_total", "Chunk reads served from the chunk cache.",
		func(f *Figures) int64 { return f.CacheHits }),
	counter("doppel_chunk_cache_misses_total", "Chunk reads that had to load the chunk from its segment file.",
		func(f *Figures) int64 { return f.CacheMisses }),
	counter("doppel_reclaimed_bytes_total", "Bytes of freed chunks punched out of segment files (given back to the host).",
		func(f *Figures) int64 { return f.ReclaimedBytes }),
	counter("doppel_overwritten_blocks_total", "Disk images' 4 KiB blocks written over in place (owned by one extent, nothing else referencing them).",
		func(f *Figures) int64 { return f.OverwrittenBlocks }),
	counter("doppel_compacted_bytes_total", "Live chunk bytes compaction copied out of sparse pack objects (data in S3).",
		func(f *Figures) int64 { return f.CompactedBytes }),
	counter("doppel_packs_retired_total", "Pack objects compaction rewrote (data in S3).",
		func(f *Figures) int64 { return f.PacksRetired }),
	counter("doppel_packs_deleted_total", "Rewritten pack objects deleted once their grace period passed (data in S3).",
		func(f *Figures) int64 { return f.PacksDeleted }),
	counter("doppel_meta_round_trips_total", "Requests sent to the metadata server (PostgreSQL) and waited on (shared volumes).",
		func(f *Figures) int64 { return f.MetaRoundTrips }),
	counterSeconds("doppel_tx_lock_wait_seconds_total", "Time spent taking the volume's transaction lock, which orders every host's transactions (shared volumes).",
		func(f *Figures) int64 { return f.TxLockWaitNs }),
	counter("doppel_foreign_commits_total", "Transactions that found commits of other hosts since this host's last one, and dropped cached records (shared volumes).",
		func(f *Figures) int64 { return f.ForeignCommits }),
	gauge("doppel_dirty_bytes", "Write data buffered in memory and not yet committed (the flush queue).",
		func(f *Figures) int64 { return f.DirtyBytes }),
	gauge("doppel_dirty_files", "Files whose buffered writes wait for a flush.",
		func(f *Figures) int64 { return f.DirtyFiles }),
	gauge("doppel_open_files", "Files with open handles.",
		func(f *Figures) int64 { return f.OpenFiles }),
	gauge("doppel_logical_bytes", "Bytes the volume's files hold, holes excluded.",
		func(f *Figures) int64 { return f.Space.LogicalBytes }),
	gauge("doppel_unique_bytes", "Distinct chunk data, before compression.",
		func(f *Figures) int64 { return f.Space.UniqueBytes }),
	gauge("doppel_physical_bytes", "Chunk data stored, after compression.",
		func(f *Figures) int64 { return f.Space.PhysicalBytes }),
	gauge("doppel_segment_allocated_bytes", "Host disk space the segment files occupy.",
		func(f *Figures) int64 { return f.Space.AllocatedBytes }),
	gauge("doppel_dead_pack_bytes", "Bytes of pack objects no chunk uses any more, which compaction gives back (data in S3; 0 otherwise).",
		func(f *Figures) int64 { return f.Space.DeadBytes }),
	gauge("doppel_metadata_bytes", "Host disk space the metadata store occupies.",
		func(f *Figures) int64 { return f.Space.MetaBytes }),
	gauge("doppel_segments", "Segment files.",
		func(f *Figures) int64 { return f.Space.Segments }),
	gauge("doppel_chunks", "Distinct chunks stored.",
		func(f *Figures) int64 { return f.Space.Chunks }),
	gauge("doppel_owned_blocks", "Disk images' blocks stored without a chunk record (owned by their extent).",
		func(f *Figures) int64 { return f.Space.OwnedBlocks }),
	gauge("doppel_inodes", "Inodes in the volume.",
		func(f *Figures) int64 { return f.Space.Inodes }),
}
