package ops

import (
	"errors"
	"time"
)

// ErrNotMounted answers what only a serving daemon knows (Status) about
// a volume no daemon serves.
var ErrNotMounted = errors.New("the volume is not mounted")

// Status is a mounted volume's daemon and its main counters, as
// `doppel status` shows them. The byte counters count since the daemon
// started; the space figures describe the whole volume.
type Status struct {
	Store string `json:"store"`
	// MetaURL and DataURL are where a shared volume keeps its metadata
	// (PostgreSQL, the URL without its password) and, when not in the
	// store directory, its chunk data (S3); both empty for an embedded
	// volume. MetaSchema is the volume's schema in that database.
	MetaURL    string `json:"meta_url,omitempty"`
	MetaSchema string `json:"meta_schema,omitempty"`
	DataURL    string `json:"data_url,omitempty"`
	// MultiHost says the daemon runs the shared volume for several hosts
	// at once (`doppel join` marked it).
	MultiHost bool `json:"multi_host,omitempty"`
	// DedupBackground says the daemon stores new data first and merges
	// it into the chunk table at commit (`doppel mount --dedup=background`).
	DedupBackground bool      `json:"dedup_background,omitempty"`
	Mountpoint      string    `json:"mountpoint"`
	PID             int       `json:"pid"`
	Started         time.Time `json:"started"`
	UptimeSeconds   float64   `json:"uptime_seconds"`
	Requests        uint64    `json:"fuse_requests"`
	RequestErrors   uint64    `json:"fuse_request_errors"`
	RequestEIO      uint64    `json:"fuse_request_eio"`
	WrittenBytes    int64     `json:"written_bytes"`
	DedupBytes      int64     `json:"deduplicated_bytes"`
	StoredBytes     int64     `json:"stored_bytes"`
	ReclaimedBytes  int64     `json:"reclaimed_bytes"`
	DirtyBytes      int64     `json:"dirty_bytes"`
	DirtyFiles      int64     `json:"dirty_files"`
	OpenFiles       int64     `json:"open_files"`
	LogicalBytes    int64     `json:"logical_bytes"`
	PhysicalBytes   int64     `json:"physical_bytes"`
	// Exports are the NBD servers running on the volume (`doppel nbd`).
	Exports []ExportStatus `json:"exports,omitempty"`
	// Sessions are the processes that have a shared volume open, on
	// every host (docs/SHARED.md, 9.1); SessionsError says why they could
	// not be listed.
	Sessions      []SessionStatus `json:"sessions,omitempty"`
	SessionsError string          `json:"sessions_error,omitempty"`
}

// SessionStatus is one session of a shared volume.
type SessionStatus struct {
	ID    int64  `json:"id"`
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Mount string `json:"mount"`
	// This is the session of the daemon that answered.
	This    bool      `json:"this"`
	Alive   bool      `json:"alive"`
	Started time.Time `json:"started"`
	// HeartbeatAgeSeconds is how long ago (server time) it renewed its
	// heartbeat.
	HeartbeatAgeSeconds float64 `json:"heartbeat_age_seconds"`
}
