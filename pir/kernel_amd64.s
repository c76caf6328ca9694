//go:build amd64 && !purego

#include "textflag.h"

// func gatherXORAVX512(acc, tab, idx *byte, nq, idxStride, n, w, tstride int, init bool)
//
// For each of nq queries q (accumulator acc + q*w, indices idx + q*idxStride)
// and each 256-byte chunk c of the w-byte slice (then each 64-byte chunk of
// what is left), the accumulator lives in Z0..Z3 while one table entry per
// group is XORed in: entry j is at tab + j*tstride + idx[j]*w + c. The chain
// starts from group 0's entry, not from acc's bytes, so that a slow load of
// acc stalls nothing: acc is XORed in last (unless init) and stored once.
TEXT ·gatherXORAVX512(SB), NOSPLIT, $0-65
	MOVQ    acc+0(FP), DI
	MOVQ    tab+8(FP), SI
	MOVQ    idx+16(FP), R8
	MOVQ    n+40(FP), R9
	MOVQ    w+48(FP), R10
	MOVQ    tstride+56(FP), R11
	MOVBQZX init+64(FP), R12
	MOVQ    nq+24(FP), AX
	TESTQ   AX, AX
	JZ      done

query:
	XORQ CX, CX // c: byte offset in the slice

chunk256:
	MOVQ R10, AX
	SUBQ CX, AX
	CMPQ AX, $256
	JB   chunk64
	LEAQ (SI)(CX*1), BX // group 0's table, shifted by c
	MOVBQZX (R8), DX
	IMULQ   R10, DX
	VMOVDQU64 (BX)(DX*1), Z0
	VMOVDQU64 64(BX)(DX*1), Z1
	VMOVDQU64 128(BX)(DX*1), Z2
	VMOVDQU64 192(BX)(DX*1), Z3
	ADDQ    R11, BX
	MOVQ    $1, R13 // j
	CMPQ    R13, R9
	JAE     fin256

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

fin256:
	TESTQ R12, R12
	JNZ   store256
	VPXORQ (DI)(CX*1), Z0, Z0
	VPXORQ 64(DI)(CX*1), Z1, Z1
	VPXORQ 128(DI)(CX*1), Z2, Z2
	VPXORQ 192(DI)(CX*1), Z3, Z3

store256:
	VMOVDQU64 Z0, (DI)(CX*1)
	VMOVDQU64 Z1, 64(DI)(CX*1)
	VMOVDQU64 Z2, 128(DI)(CX*1)
	VMOVDQU64 Z3, 192(DI)(CX*1)
	ADDQ      $256, CX
	JMP       chunk256

chunk64:
	CMPQ CX, R10
	JAE  nextq
	LEAQ (SI)(CX*1), BX
	MOVBQZX (R8), DX
	IMULQ   R10, DX
	VMOVDQU64 (BX)(DX*1), Z0
	ADDQ    R11, BX
	MOVQ    $1, R13
	CMPQ    R13, R9
	JAE     fin64

gloop64:
	MOVBQZX (R8)(R13*1), DX
	IMULQ   R10, DX
	VPXORQ  (BX)(DX*1), Z0, Z0
	ADDQ    R11, BX
	INCQ    R13
	CMPQ    R13, R9
	JB      gloop64

fin64:
	TESTQ R12, R12
	JNZ   store64
	VPXORQ (DI)(CX*1), Z0, Z0

store64:
	VMOVDQU64 Z0, (DI)(CX*1)
	ADDQ      $64, CX
	JMP       chunk64

nextq:
	ADDQ R10, DI
	ADDQ idxStride+32(FP), R8
	DECQ nq+24(FP)
	JNZ  query

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
