package blockhash

import (
	"math/rand/v2"
	"testing"

	"github.com/zeebo/blake3"
)

// TestSumMatchesBLAKE3 hashes groups of every size from 0 to 40 blocks,
// with blocks of other lengths mixed in, and compares each sum with
// zeebo/blake3's.
func TestSumMatchesBLAKE3(t *testing.T) {
	if !haveSixteen {
		t.Log("no AVX-512F: only the fallback is tested")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 41 {
		msgs := make([][]byte, n)
		for i := range msgs {
			size := Size
			if r.IntN(8) == 0 {
				size = r.IntN(2 * Size)
			}
			msgs[i] = make([]byte, size)
			for j := range msgs[i] {
				msgs[i][j] = byte(r.Uint32())
			}
		}
		check(t, msgs)
	}
}

// TestSumOfBlocksInOneArray hashes the blocks of one large array, as a
// write buffer's run holds them, and blocks far apart.
func TestSumOfBlocksInOneArray(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	run := make([]byte, 64*Size)
	for i := range run {
		run[i] = byte(r.Uint32())
	}
	var msgs [][]byte
	for off := 0; off < len(run); off += Size {
		msgs = append(msgs, run[off:off+Size])
	}
	check(t, msgs)
	// Reversed, so offsets from the first lane are negative.
	for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
		msgs[i], msgs[j] = msgs[j], msgs[i]
	}
	check(t, msgs)
	// Seven lanes with the same bytes (zeros) and one other.
	zeros := make([]byte, Size)
	check(t, [][]byte{zeros, zeros, zeros, zeros, zeros, zeros, zeros, msgs[0]})
}

func check(t *testing.T, msgs [][]byte) {
	t.Helper()
	out := make([][32]byte, len(msgs))
	Sum(msgs, out)
	for i, m := range msgs {
		if want := blake3.Sum256(m); out[i] != want {
			t.Fatalf("%d blocks: block %d (%d bytes): %x, want %x", len(msgs), i, len(m), out[i], want)
		}
	}
}

// FuzzSum compares Sum of blocks cut from the input with zeebo/blake3.
func FuzzSum(f *testing.F) {
	f.Add([]byte("doppel"), uint8(16))
	f.Fuzz(func(t *testing.T, seed []byte, n uint8) {
		msgs := make([][]byte, int(n)%40)
		for i := range msgs {
			m := make([]byte, Size)
			for j := range m {
				if len(seed) > 0 {
					m[j] = seed[(i*7+j)%len(seed)] ^ byte(j>>8) ^ byte(i)
				}
			}
			msgs[i] = m
		}
		check(t, msgs)
	})
}

func BenchmarkSum(b *testing.B) {
	run := make([]byte, 256*Size)
	for i := range run {
		run[i] = byte(i * 7)
	}
	var msgs [][]byte
	for off := 0; off < len(run); off += Size {
		msgs = append(msgs, run[off:off+Size])
	}
	out := make([][32]byte, len(msgs))
	b.Run("sixteen", func(b *testing.B) {
		b.SetBytes(int64(len(run)))
		for range b.N {
			Sum(msgs, out)
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		b.SetBytes(int64(len(run)))
		for range b.N {
			for i, m := range msgs {
				out[i] = blake3.Sum256(m)
			}
		}
	})
}
