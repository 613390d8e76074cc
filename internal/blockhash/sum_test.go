package blockhash

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/blake3"
)

// TestSumMatchesBLAKE3 hashes groups of every size from 0 to 40 blocks,
// with blocks of other lengths mixed in, and compares each sum with
// zeebo/blake3's.
func TestSumMatchesBLAKE3(t *testing.T) {
	if !haveSixteen && !haveEight {
		t.Log("no AVX-512F or AVX2: only the fallback is tested")
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

// TestSumOfMessagesOfEveryShape hashes messages around every boundary
// of BLAKE3's tree (one block, one chunk, powers of two of chunks, a
// short last chunk or none) together, in groups of several sizes, so
// that chunks of different messages share the kernels' lanes.
func TestSumOfMessagesOfEveryShape(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var lengths []int
	for _, chunks := range []int{0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 64, 100, 255, 256} {
		for _, extra := range []int{-1, 0, 1, 63, 64, 65, 1000} {
			if n := chunks*1024 + extra; n >= 0 {
				lengths = append(lengths, n)
			}
		}
	}
	for range 40 {
		lengths = append(lengths, r.IntN(300<<10))
	}
	msgs := make([][]byte, len(lengths))
	for i, n := range lengths {
		msgs[i] = make([]byte, n)
		for j := range msgs[i] {
			msgs[i][j] = byte(r.Uint32())
		}
	}
	r.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	for _, group := range []int{1, 2, 3, 5, 16, len(msgs)} {
		for lo := 0; lo < len(msgs); lo += group {
			check(t, msgs[lo:min(lo+group, len(msgs))])
		}
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

// FuzzSum compares Sum of messages made from the input with
// zeebo/blake3: n of them, 4 KiB blocks or, where long is set, of
// lengths that grow from it.
func FuzzSum(f *testing.F) {
	f.Add([]byte("doppel"), uint8(16), uint16(0))
	f.Add([]byte("doppel"), uint8(3), uint16(20000))
	f.Fuzz(func(t *testing.T, seed []byte, n uint8, long uint16) {
		msgs := make([][]byte, int(n)%40)
		for i := range msgs {
			size := Size
			if long != 0 {
				size = (int(long) * (i + 1)) % (200 << 10)
			}
			m := make([]byte, size)
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

// BenchmarkSum hashes 4 KiB blocks, sixteen at a time and one by one:
// 1 MiB of them, which the caches hold, and 64 MiB, which they do not.
func BenchmarkSum(b *testing.B) {
	for _, mib := range []int{1, 64} {
		run := make([]byte, mib<<20)
		for i := range run {
			run[i] = byte(i * 7)
		}
		var msgs [][]byte
		for off := 0; off < len(run); off += Size {
			msgs = append(msgs, run[off:off+Size])
		}
		out := make([][32]byte, len(msgs))
		b.Run(fmt.Sprintf("sixteen-%dMiB", mib), func(b *testing.B) {
			b.SetBytes(int64(len(run)))
			for range b.N {
				Sum(msgs, out)
			}
		})
		b.Run(fmt.Sprintf("one-by-one-%dMiB", mib), func(b *testing.B) {
			b.SetBytes(int64(len(run)))
			for range b.N {
				for i, m := range msgs {
					out[i] = blake3.Sum256(m)
				}
			}
		})
	}
}

// BenchmarkSumLong hashes 64 MiB cut into messages of 16 to 128 KiB, as
// content-defined chunks come: together, each alone, and one by one
// through zeebo/blake3.
func BenchmarkSumLong(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	data := make([]byte, 64<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	var msgs [][]byte
	for off := 0; off < len(data); {
		n := min(16<<10+r.IntN(112<<10), len(data)-off)
		msgs, off = append(msgs, data[off:off+n]), off+n
	}
	out := make([][32]byte, len(msgs))
	b.Run("together", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			Sum(msgs, out)
		}
	})
	b.Run("each-alone", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			for i := range msgs {
				Sum(msgs[i:i+1], out[i:i+1])
			}
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			for i, m := range msgs {
				out[i] = blake3.Sum256(m)
			}
		}
	})
}
