package main

import "fmt"

// The AVX2 kernels: the same two functions as the AVX-512 ones, eight
// lanes wide (YMM registers), for CPUs without AVX-512 (AMD before Zen 4,
// many Intel desktops).
//
// AVX2 has sixteen vector registers, all taken by the state v0–v15, and
// no rotate instruction. So the message words stay in memory (the chunk
// kernel transposes each block onto its stack frame first, the parent
// kernel reads its message as given), rotations by 16 and 8 are byte
// shuffles, and for those by 12 and 7 one state register is spilled to
// the frame to serve as the shift's temporary.

// rotMask returns the VPSHUFB mask that rotates each 32-bit word right
// by bits (a multiple of 8), as two DATA quadwords per 128-bit half.
func rotMask(bits int) [4]uint64 {
	var mask [32]byte
	for i := range mask {
		word, b := i/4*4, i%4
		mask[i] = byte(word + (b+bits/8)%4)
	}
	var q [4]uint64
	for i := range q {
		for b := 7; b >= 0; b-- {
			q[i] = q[i]<<8 | uint64(mask[8*i+b])
		}
	}
	return q
}

// constants writes the AVX2 kernels' read-only data: the IV, the block
// length and the two rotation masks.
func constants(emit emitter) {
	emit("")
	for i := 0; i < 8; i += 2 {
		emit("DATA iv8<>+%d(SB)/8, $0x%08x%08x", 4*i, iv[i+1], iv[i])
	}
	emit("GLOBL iv8<>(SB), RODATA|NOPTR, $32")
	emit("DATA blockLen8<>+0(SB)/4, $64")
	emit("GLOBL blockLen8<>(SB), RODATA|NOPTR, $4")
	for _, r := range []int{16, 8} {
		for i, q := range rotMask(r) {
			emit("DATA rot%d<>+%d(SB)/8, $0x%016x", r, 8*i, q)
		}
		emit("GLOBL rot%d<>(SB), RODATA|NOPTR, $32", r)
	}
}

// Frame of the chunk kernel: the transposed message, the spill slot,
// the flags word to broadcast.
const (
	msgFrame   = 0
	spillFrame = 16 * 32
	flagsFrame = spillFrame + 32
	chunkFrame = flagsFrame + 32
)

// chunks8 writes hashChunks8, hashChunks16 eight lanes wide, without the
// prefetch: the chaining values live in out from the first block on.
func chunks8(emit emitter) {
	emit("")
	emit("// func hashChunks8(ptrs *[8]*byte, blocks int, counters *[2][8]uint32, out *[8][8]uint32, flags, first, last uint32)")
	emit("TEXT ·hashChunks8(SB), 0, $%d-44", chunkFrame)
	chunkArgs(emit)
	for i := range 8 {
		emit("\tVPBROADCASTD iv8<>+%d(SB), Y0", 4*i)
		emit("\tVMOVDQU Y0, %d(R9)", 32*i)
	}
	emit("\tXORQ BX, BX // offset of this block within a chunk")
	emit("loop8:")
	var m [16]string
	for half := range 2 {
		// Lane k's half-block is row k; the rounds want word w of every
		// lane together, which goes to the frame.
		var rows [8]int
		for k := range rows {
			rows[k] = k
			emit("\tMOVQ %d(DI), R14", 8*k)
			emit("\tVMOVDQU %d(R14)(BX*1), Y%d", 32*half, k)
		}
		free := []int{8, 9, 10, 11, 12, 13, 14, 15}
		cols := transpose8(emit, rows, &free)
		for j, c := range cols {
			w := 8*half + j
			m[w] = fmt.Sprintf("%d(SP)", msgFrame+32*w)
			emit("\tVMOVDQU Y%d, %s", c, m[w])
		}
	}
	emit("\tMOVL R10, AX")
	emit("\tTESTQ BX, BX")
	emit("\tJNZ notfirst8")
	emit("\tORL R11, AX")
	emit("notfirst8:")
	emit("\tLEAQ 64(BX), DX")
	emit("\tCMPQ DX, R13")
	emit("\tJNE notlast8")
	emit("\tORL R12, AX")
	emit("notlast8:")
	emit("\tMOVL AX, %d(SP)", flagsFrame)
	var v [16]int
	for i := range v {
		v[i] = i
	}
	for i := range 8 {
		emit("\tVMOVDQU %d(R9), Y%d", 32*i, i)
	}
	ivAndLength8(emit, v)
	emit("\tVMOVDQU (R8), Y12")
	emit("\tVMOVDQU 32(R8), Y13")
	emit("\tVPBROADCASTD %d(SP), Y15", flagsFrame)
	rounds8(emit, v, m, fmt.Sprintf("%d(SP)", spillFrame))
	finish8(emit)
	emit("\tADDQ $64, BX")
	emit("\tCMPQ BX, R13")
	emit("\tJB loop8")
	emit("\tVZEROUPPER")
	emit("\tRET")
}

// transpose8 turns eight rows (registers) of 8 words into eight columns,
// as transpose does sixteen: unpacks within 128-bit lanes, then
// VPERM2I128 across them.
func transpose8(emit emitter, rows [8]int, free *[]int) (cols [8]int) {
	b := unpackRows(emit, "Y", rows[:], free)
	take := func() int { return takeReg(free) }
	// Column 4L+j is lane L of b[j] (rows 0–3), then of b[4+j] (rows 4–7).
	for j := range 4 {
		lo, hi := take(), take()
		emit("\tVPERM2I128 $0x20, Y%d, Y%d, Y%d", b[4+j], b[j], lo)
		emit("\tVPERM2I128 $0x31, Y%d, Y%d, Y%d", b[4+j], b[j], hi)
		*free = append(*free, b[j], b[4+j])
		cols[j], cols[4+j] = lo, hi
	}
	return cols
}

// parents8 writes compress8, compress16 eight lanes wide. Its frame:
// the spill slot, the flags word.
func parents8(emit emitter) {
	emit("")
	emit("// func compress8(msg *[16][8]uint32, flags uint32, out *[8][8]uint32)")
	emit("TEXT ·compress8(SB), 0, $64-24")
	emit("\tMOVQ msg+0(FP), SI")
	emit("\tMOVQ out+16(FP), R9")
	var v [16]int
	var m [16]string
	for j := range 16 {
		v[j], m[j] = j, fmt.Sprintf("%d(SI)", 32*j)
	}
	for i := range 8 {
		emit("\tVPBROADCASTD iv8<>+%d(SB), Y%d", 4*i, i)
	}
	ivAndLength8(emit, v)
	emit("\tVPXOR Y12, Y12, Y12 // counter 0")
	emit("\tVPXOR Y13, Y13, Y13")
	emit("\tMOVL flags+8(FP), AX")
	emit("\tMOVL AX, 32(SP) // a broadcast reads memory or an XMM register")
	emit("\tVPBROADCASTD 32(SP), Y15")
	rounds8(emit, v, m, "0(SP)")
	finish8(emit)
	emit("\tVZEROUPPER")
	emit("\tRET")
}

// ivAndLength8 sets v8–v11 to the IV and v14 to the block length.
func ivAndLength8(emit emitter, v [16]int) {
	for i := range 4 {
		emit("\tVPBROADCASTD iv8<>+%d(SB), Y%d", 4*i, v[8+i])
	}
	emit("\tVPBROADCASTD blockLen8<>(SB), Y%d", v[14])
}

// rounds8 is rounds with message operands in memory.
func rounds8(emit emitter, v [16]int, m [16]string, spill string) {
	for range 7 {
		step8(emit, [4][4]int{{v[0], v[4], v[8], v[12]}, {v[1], v[5], v[9], v[13]}, {v[2], v[6], v[10], v[14]}, {v[3], v[7], v[11], v[15]}},
			[4][2]string{{m[0], m[1]}, {m[2], m[3]}, {m[4], m[5]}, {m[6], m[7]}}, spill)
		step8(emit, [4][4]int{{v[0], v[5], v[10], v[15]}, {v[1], v[6], v[11], v[12]}, {v[2], v[7], v[8], v[13]}, {v[3], v[4], v[9], v[14]}},
			[4][2]string{{m[8], m[9]}, {m[10], m[11]}, {m[12], m[13]}, {m[14], m[15]}}, spill)
		var next [16]string
		for i := range next {
			next[i] = m[schedule[i]]
		}
		m = next
	}
}

// step8 is step eight lanes wide. The rotations by 16 and 8 shuffle
// bytes; those by 12 and 7 shift twice and merge, through the register
// of the first G's c, which waits in spill meanwhile.
func step8(emit emitter, abcd [4][4]int, xy [4][2]string, spill string) {
	each := func(f func(a, b, c, d int, x, y string)) {
		for k := range 4 {
			r := abcd[k]
			f(r[0], r[1], r[2], r[3], xy[k][0], xy[k][1])
		}
	}
	tmp := abcd[0][2]
	for half, rot := range [2][2]int{{16, 12}, {8, 7}} {
		each(func(a, b, c, d int, x, y string) { emit("\tVPADDD %s, Y%d, Y%d", [2]string{x, y}[half], a, a) })
		each(func(a, b, c, d int, x, y string) { emit("\tVPADDD Y%d, Y%d, Y%d", b, a, a) })
		each(func(a, b, c, d int, x, y string) { emit("\tVPXOR Y%d, Y%d, Y%d", a, d, d) })
		each(func(a, b, c, d int, x, y string) { emit("\tVPSHUFB rot%d<>(SB), Y%d, Y%d", rot[0], d, d) })
		each(func(a, b, c, d int, x, y string) { emit("\tVPADDD Y%d, Y%d, Y%d", d, c, c) })
		each(func(a, b, c, d int, x, y string) { emit("\tVPXOR Y%d, Y%d, Y%d", c, b, b) })
		emit("\tVMOVDQU Y%d, %s", tmp, spill)
		each(func(a, b, c, d int, x, y string) {
			emit("\tVPSRLD $%d, Y%d, Y%d", rot[1], b, tmp)
			emit("\tVPSLLD $%d, Y%d, Y%d", 32-rot[1], b, b)
			emit("\tVPOR Y%d, Y%d, Y%d", tmp, b, b)
		})
		emit("\tVMOVDQU %s, Y%d", spill, tmp)
	}
}

// finish8 folds the state into the chaining value and stores it in out
// (R9).
func finish8(emit emitter) {
	for i := range 8 {
		emit("\tVPXOR Y%d, Y%d, Y%d", i+8, i, i)
		emit("\tVMOVDQU Y%d, %d(R9)", i, 32*i)
	}
}
