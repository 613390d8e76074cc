//go:build amd64 && !purego

#include "textflag.h"

// func scan4(p *byte, n int, fp, mask uint64) (cut int, out uint64)
//
// Feeds the first n bytes of p (n a multiple of 4) into the gear
// fingerprint fp, four bytes a step (scan_amd64.go says how), and returns
// the length of the shortest prefix after which fp&mask == 0 (cut, with
// out = 0), or cut = -1 and the fingerprint after all n bytes.
TEXT ·scan4(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ fp+16(FP), AX
	MOVQ mask+24(FP), BX
	LEAQ ·gear(SB), DI
	XORQ DX, DX

loop:
	CMPQ DX, CX
	JGE  none
	MOVBQZX 0(SI)(DX*1), R8
	MOVBQZX 1(SI)(DX*1), R9
	MOVBQZX 2(SI)(DX*1), R10
	MOVBQZX 3(SI)(DX*1), R11
	MOVQ (DI)(R8*8), R8         // g0
	MOVQ (DI)(R9*8), R9         // g1
	MOVQ (DI)(R10*8), R10       // g2
	MOVQ (DI)(R11*8), R11       // g3
	LEAQ (R9)(R8*2), R9         // a  = g0<<1 + g1
	LEAQ (R10)(R9*2), R10       // b  = a<<1 + g2
	LEAQ (R11)(R10*2), R11      // c  = b<<1 + g3
	LEAQ (R8)(AX*2), R8         // f1 = fp<<1 + g0
	LEAQ (R9)(AX*4), R9         // f2 = fp<<2 + a
	LEAQ (R10)(AX*8), R10       // f3 = fp<<3 + b
	SHLQ $4, AX
	ADDQ R11, AX                // fp = fp<<4 + c
	ADDQ $4, DX
	TESTQ BX, R8
	JEQ  cut1
	TESTQ BX, R9
	JEQ  cut2
	TESTQ BX, R10
	JEQ  cut3
	TESTQ BX, AX
	JNE  loop
	JMP  found

cut1:
	SUBQ $3, DX
	JMP  found

cut2:
	SUBQ $2, DX
	JMP  found

cut3:
	SUBQ $1, DX

found:
	MOVQ DX, cut+32(FP)
	MOVQ $0, out+40(FP)
	RET

none:
	MOVQ $-1, cut+32(FP)
	MOVQ AX, out+40(FP)
	RET
