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
}

// FormatVersion is the metadata format this build writes and reads.
const FormatVersion = 1

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
	if c.Format != FormatVersion {
		return c, fmt.Errorf("%w: unknown volume metadata format %d", ErrBadRecord, c.Format)
	}
	return c, nil
}
