package content

import (
	"fmt"
	"runtime"

	"github.com/doppelfs/doppel/internal/schema"
	"github.com/klauspost/compress/zstd"
)

// compressor compresses chunks when it pays. "zstd" keeps any saving;
// "auto" keeps only savings of at least 1/8, so that barely compressible
// data is not paid for twice at read time.
type compressor struct {
	mode string
	enc  *zstd.Encoder
	dec  *zstd.Decoder
}

// Compression modes accepted at init.
var CompressionModes = []string{"off", "zstd", "auto"}

func newCompressor(mode string) (*compressor, error) {
	c := &compressor{mode: mode}
	var err error
	switch mode {
	case "", "off":
		c.mode = "off"
	case "zstd", "auto":
		if c.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0))); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown compression %q (want off, zstd or auto)", mode)
	}
	// Every volume can read compressed chunks, whatever it writes now.
	if c.dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0)); err != nil {
		return nil, err
	}
	return c, nil
}

// compress returns the bytes to store and their compression kind.
func (c *compressor) compress(p []byte) ([]byte, uint8) {
	if c.enc == nil {
		return p, schema.CompNone
	}
	out := c.enc.EncodeAll(p, make([]byte, 0, len(p)))
	limit := len(p)
	if c.mode == "auto" {
		limit -= len(p) / 8
	}
	if len(out) >= limit {
		return p, schema.CompNone
	}
	return out, schema.CompZstd
}

func (c *compressor) decompress(p []byte, comp uint8, raw int) ([]byte, error) {
	switch comp {
	case schema.CompNone:
		return p, nil
	case schema.CompZstd:
		out, err := c.dec.DecodeAll(p, make([]byte, 0, raw))
		if err != nil || len(out) != raw {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unknown compression %d", ErrCorrupt, comp)
}

func (c *compressor) close() error {
	if c.enc != nil {
		c.enc.Close()
	}
	c.dec.Close()
	return nil
}
