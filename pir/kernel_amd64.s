//go:build amd64 && !purego

#include "textflag.h"

// func gatherXORAVX512(dst, tab, idx *byte, n, w, tstride int, init bool)
//
// For each 256-byte chunk c of the w-byte slice (then each 64-byte chunk of
// what is left), the accumulator lives in Z0..Z3 while one entry per group is
// XORed in: entry j is at tab + j*tstride + idx[j]*w + c. The accumulator
// starts at zero when init is set, else at dst's bytes, and is stored once.
TEXT ·gatherXORAVX512(SB), NOSPLIT, $0-49
	MOVQ    dst+0(FP), DI
	MOVQ    tab+8(FP), SI
	MOVQ    idx+16(FP), R8
	MOVQ    n+24(FP), R9
	MOVQ    w+32(FP), R10
	MOVQ    tstride+40(FP), R11
	MOVBQZX init+48(FP), R12
	XORQ    CX, CX               // c: byte offset in the slice

chunk256:
	MOVQ R10, AX
	SUBQ CX, AX
	CMPQ AX, $256
	JB   chunk64
	TESTQ R12, R12
	JZ    load256
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	JMP    groups256

load256:
	VMOVDQU64 (DI)(CX*1), Z0
	VMOVDQU64 64(DI)(CX*1), Z1
	VMOVDQU64 128(DI)(CX*1), Z2
	VMOVDQU64 192(DI)(CX*1), Z3

groups256:
	LEAQ (SI)(CX*1), BX          // group 0's table, shifted by c
	XORQ R13, R13                // j

	PCALIGN $32
gloop256:
	MOVBQZX (R8)(R13*1), DX
	IMULQ   R10, DX
	VPXORQ  (BX)(DX*1), Z0, Z0
	VPXORQ  64(BX)(DX*1), Z1, Z1
	VPXORQ  128(BX)(DX*1), Z2, Z2
	VPXORQ  192(BX)(DX*1), Z3, Z3
	ADDQ    R11, BX
	INCQ    R13
	CMPQ    R13, R9
	JB      gloop256

	VMOVDQU64 Z0, (DI)(CX*1)
	VMOVDQU64 Z1, 64(DI)(CX*1)
	VMOVDQU64 Z2, 128(DI)(CX*1)
	VMOVDQU64 Z3, 192(DI)(CX*1)
	ADDQ      $256, CX
	JMP       chunk256

chunk64:
	CMPQ CX, R10
	JAE  done
	TESTQ R12, R12
	JZ    load64
	VPXORQ Z0, Z0, Z0
	JMP    groups64

load64:
	VMOVDQU64 (DI)(CX*1), Z0

groups64:
	LEAQ (SI)(CX*1), BX
	XORQ R13, R13

gloop64:
	MOVBQZX (R8)(R13*1), DX
	IMULQ   R10, DX
	VPXORQ  (BX)(DX*1), Z0, Z0
	ADDQ    R11, BX
	INCQ    R13
	CMPQ    R13, R9
	JB      gloop64

	VMOVDQU64 Z0, (DI)(CX*1)
	ADDQ      $64, CX
	JMP       chunk64

done:
	VZEROUPPER
	RET

// func xorBroadcastAVX512(dst, src, row *byte, n, w int)
//
// dst[j*w + c] = src[j*w + c] ^ row[c] for j < n, c < w; w a multiple of 64.
TEXT ·xorBroadcastAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ row+16(FP), R8
	MOVQ n+24(FP), R9
	MOVQ w+32(FP), R10

entry:
	TESTQ R9, R9
	JZ    bdone
	XORQ  CX, CX

bchunk256:
	MOVQ R10, AX
	SUBQ CX, AX
	CMPQ AX, $256
	JB   bchunk64
	VMOVDQU64 (R8)(CX*1), Z0
	VMOVDQU64 64(R8)(CX*1), Z1
	VMOVDQU64 128(R8)(CX*1), Z2
	VMOVDQU64 192(R8)(CX*1), Z3
	VPXORQ    (SI)(CX*1), Z0, Z0
	VPXORQ    64(SI)(CX*1), Z1, Z1
	VPXORQ    128(SI)(CX*1), Z2, Z2
	VPXORQ    192(SI)(CX*1), Z3, Z3
	VMOVDQU64 Z0, (DI)(CX*1)
	VMOVDQU64 Z1, 64(DI)(CX*1)
	VMOVDQU64 Z2, 128(DI)(CX*1)
	VMOVDQU64 Z3, 192(DI)(CX*1)
	ADDQ      $256, CX
	JMP       bchunk256

bchunk64:
	CMPQ CX, R10
	JAE  bnext
	VMOVDQU64 (R8)(CX*1), Z0
	VPXORQ    (SI)(CX*1), Z0, Z0
	VMOVDQU64 Z0, (DI)(CX*1)
	ADDQ      $64, CX
	JMP       bchunk64

bnext:
	ADDQ R10, DI
	ADDQ R10, SI
	DECQ R9
	JMP  entry

bdone:
	VZEROUPPER
	RET
