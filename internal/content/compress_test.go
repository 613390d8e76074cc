package content

import (
	"math/rand/v2"
	"testing"

	"github.com/doppelfs/doppel/internal/chunker"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
)

func TestCompressionZstd(t *testing.T) {
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy(), Compression: "zstd"})
	r := rand.New(rand.NewPCG(35, 36))
	text := textBytes(r, 1<<20)
	v.write(1, 0, text)
	st := v.e.Stats()
	if st.PhysicalBytes >= st.RawBytes || st.RawBytes != int64(len(text)) {
		t.Errorf("compressible data: PhysicalBytes %d, RawBytes %d", st.PhysicalBytes, st.RawBytes)
	}
	for h, c := range v.allChunks() {
		if c.Comp != schema.CompZstd || c.Stored >= c.Raw {
			t.Errorf("chunk %x: comp %d, stored %d of %d", h[:8], c.Comp, c.Stored, c.Raw)
		}
	}
	// Random data does not compress and is kept as is, even under zstd.
	v.write(2, 0, testutil.RandBytes(r, 200000))
	v.reopen() // cold cache: decompress from the blob store
	v.checkContent(1, text)
	v.checkInvariants()
}

func TestCompressionAuto(t *testing.T) {
	v := newEnv(t, Config{Chunking: chunker.DefaultPolicy(), Compression: "auto"})
	r := rand.New(rand.NewPCG(37, 38))
	random := testutil.RandBytes(r, 1<<20)
	v.write(1, 0, random)
	st := v.e.Stats()
	if st.PhysicalBytes != st.RawBytes {
		t.Errorf("incompressible data: PhysicalBytes %d != RawBytes %d", st.PhysicalBytes, st.RawBytes)
	}
	for h, c := range v.allChunks() {
		if c.Comp != schema.CompNone || c.Stored != c.Raw {
			t.Errorf("chunk %x: comp %d, stored %d of %d", h[:8], c.Comp, c.Stored, c.Raw)
		}
	}
	text := textBytes(r, 1<<20)
	v.write(2, 0, text)
	if st2 := v.e.Stats(); st2.PhysicalBytes-st.PhysicalBytes >= st2.RawBytes-st.RawBytes {
		t.Errorf("auto did not compress text: %d stored for %d raw", st2.PhysicalBytes-st.PhysicalBytes, st2.RawBytes-st.RawBytes)
	}
	v.reopen()
	v.checkContent(1, random)
	v.checkContent(2, text)
	v.checkInvariants()
}

func TestCompressionAutoSkipsSmallSavings(t *testing.T) {
	// Data that compresses by a few percent: zstd keeps the saving, auto
	// stores it raw (savings under 1/8 are not worth decompressing).
	// Each 64 KiB chunk: 5 KiB of zeros, then random bytes (~8% saving).
	r := rand.New(rand.NewPCG(39, 40))
	data := testutil.RandBytes(r, 256<<10)
	for off := 0; off < len(data); off += 64 << 10 {
		clear(data[off : off+5<<10])
	}
	for _, mode := range []string{"zstd", "auto"} {
		v := newEnv(t, Config{Chunking: policy(t, "fixed:64K"), Compression: mode})
		v.write(1, 0, data)
		st := v.e.Stats()
		saving := float64(st.RawBytes-st.PhysicalBytes) / float64(st.RawBytes)
		switch mode {
		case "zstd":
			if saving <= 0 || saving >= 1.0/8 {
				t.Skipf("zstd saves %.1f%% on this data; the test needs a small saving", 100*saving)
			}
		case "auto":
			if st.PhysicalBytes != st.RawBytes {
				t.Errorf("auto stored %d bytes for %d raw: small saving kept", st.PhysicalBytes, st.RawBytes)
			}
		}
		v.checkContent(1, data)
	}
}
