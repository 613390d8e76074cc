package ops

import "time"

// ImportRequest asks to import a host tree into the volume. A daemon
// reads Src itself: it runs on the same host, as the same user (the
// socket admits its owner only).
type ImportRequest struct {
	Src  string `json:"src"` // absolute host path
	Dst  string `json:"dst"` // path inside the volume
	Jobs int    `json:"jobs"`
	// ProgressEvery is how often progress is reported (0: the importer's
	// default).
	ProgressEvery time.Duration `json:"progress_every_ns,omitempty"`
}
