package schema

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Config is the volume configuration, fixed at init. It is stored as JSON:
// it is read once per mount and people read it in dumps.
type Config struct {
	Format      int    `json:"format"`
	UUID        string `json:"uuid"`
	Chunking    string `json:"chunking"`    // chunker.Policy string
	Compression string `json:"compression"` // off, zstd, auto
	Created     int64  `json:"created"`     // unix nanoseconds
	// PackAlign is where chunks start in the volume's S3 packs: 1, back
	// to back (format 2 on), or 0 for blob.Align boundaries, as every
	// volume had before.
	PackAlign int64 `json:"pack_align,omitempty"`
}

// FormatVersion is the newest metadata format this build reads. A volume
// is made at FormatBase unless it uses what a later format added, so that
// older builds still open every volume they can handle:
//
//	2: S3 packs without padding (PackAlign 1). A build that predates
//	   them would take their chunks' offsets for damage and round freed
//	   spans up to 4 KiB, marking live neighbours dead.
//	3: owned blocks (embedded volumes; docs/BLOCK.md, "Owned blocks"):
//	   extents that own their bytes, which no chunk record names. A
//	   build that predates them cannot decode such extents, and its
//	   recovery would punch their bytes as orphans.
//	4: owned blocks overwritten in place (docs/BLOCK.md): intent records
//	   name where writes may have been in flight. A build that predates
//	   them would call a block a crash left half written damaged.
//	5: blocks written in place named later (docs/BLOCK.md, "Blocks
//	   written in place, named later"): an extent or record may carry a
//	   provisional name (ProvisionalName) instead of a BLAKE3 hash. A
//	   build that predates them would take those blocks for damage, and
//	   its fsck --repair would drop them.
const FormatVersion = 5

// FormatBase is the format of a volume that uses nothing newer.
const FormatBase = 1

// FormatUnpaddedPacks is the first format with PackAlign.
const FormatUnpaddedPacks = 2

// FormatOwnedBlocks is the first format whose volumes may hold owned
// blocks.
const FormatOwnedBlocks = 3

// FormatInPlace is the first format whose owned blocks may be written
// over in place.
const FormatInPlace = 4

// FormatNamedLater is the first format whose blocks written in place
// may carry provisional names.
const FormatNamedLater = 5

// ErrNewerFormat is wrapped by the error for a volume written by a newer
// doppel: nothing may read or repair it.
var ErrNewerFormat = errors.New("volume was written by a newer doppel")

// EncodeConfig returns the record bytes.
func EncodeConfig(c Config) []byte {
	b, _ := json.Marshal(c)
	return b
}

// DecodeConfig parses a config record and refuses unknown formats.
func DecodeConfig(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if c.Format > FormatVersion {
		return c, fmt.Errorf("%w: volume metadata format %d, this doppel knows %d; upgrade doppel", ErrNewerFormat, c.Format, FormatVersion)
	}
	if c.Format < FormatBase {
		return c, fmt.Errorf("%w: unknown volume metadata format %d", ErrBadRecord, c.Format)
	}
	if c.PackAlign != 0 && (c.PackAlign != 1 || c.Format < FormatUnpaddedPacks) {
		return c, fmt.Errorf("%w: pack alignment %d in volume metadata format %d", ErrBadRecord, c.PackAlign, c.Format)
	}
	return c, nil
}
