package ops

import (
	"time"

	"github.com/doppelfs/doppel/internal/control/wire"
)

// CloneRequest asks for `doppel clone` or `doppel snapshot`.
type CloneRequest = wire.CloneRequest

// CloneResult is what a clone made.
type CloneResult = wire.CloneResult

// CloneInfo is one line of `doppel clones`.
type CloneInfo struct {
	Path       string    `json:"path"` // "" while being removed
	Ino        uint64    `json:"ino"`
	Origin     string    `json:"origin"` // where its source was when it was made
	Created    time.Time `json:"created"`
	Version    uint64    `json:"version"` // the pinned version it shows
	Excludes   []string  `json:"excludes,omitempty"`
	ReadOnly   bool      `json:"read_only"`
	Lazy       bool      `json:"lazy"`
	State      string    `json:"state"` // lazy, materializing, materialized, removing
	Done       uint64    `json:"materialized_inodes"`
	Stubs      uint64    `json:"stub_inodes"`
	PinHeld    bool      `json:"pin_held"`
	Exclusive  int64     `json:"exclusive_bytes"` // chunk bytes only it references
	MetaBytes  int64     `json:"meta_bytes"`      // its own metadata records
	SpaceError string    `json:"space_error,omitempty"`
}
