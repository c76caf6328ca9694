//go:build amd64 && !purego

#include "textflag.h"

// func gatherXORAVX2(acc, tab, idx *byte, nq, idxStride, n, w, tstride int, init bool)
//
// gatherXORAVX512 for CPUs with AVX2 only: the same loop, with the 256-byte
// accumulator chunk in Y0..Y7 and a 64-byte tail chunk in Y0..Y1. w is a
// multiple of 64.
TEXT ·gatherXORAVX2(SB), NOSPLIT, $0-65
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
	ADDQ    BX, DX
	VMOVDQU (DX), Y0
	VMOVDQU 32(DX), Y1
	VMOVDQU 64(DX), Y2
	VMOVDQU 96(DX), Y3
	VMOVDQU 128(DX), Y4
	VMOVDQU 160(DX), Y5
	VMOVDQU 192(DX), Y6
	VMOVDQU 224(DX), Y7
	ADDQ    R11, BX
	MOVQ    $1, R13 // j
	CMPQ    R13, R9
	JAE     fin256

	PCALIGN $32
gloop256:
	MOVBQZX (R8)(R13*1), DX
	IMULQ   R10, DX
	ADDQ    BX, DX
	VPXOR   (DX), Y0, Y0
	VPXOR   32(DX), Y1, Y1
	VPXOR   64(DX), Y2, Y2
	VPXOR   96(DX), Y3, Y3
	VPXOR   128(DX), Y4, Y4
	VPXOR   160(DX), Y5, Y5
	VPXOR   192(DX), Y6, Y6
	VPXOR   224(DX), Y7, Y7
	ADDQ    R11, BX
	INCQ    R13
	CMPQ    R13, R9
	JB      gloop256

fin256:
	LEAQ  (DI)(CX*1), DX
	TESTQ R12, R12
	JNZ   store256
	VPXOR (DX), Y0, Y0
	VPXOR 32(DX), Y1, Y1
	VPXOR 64(DX), Y2, Y2
	VPXOR 96(DX), Y3, Y3
	VPXOR 128(DX), Y4, Y4
	VPXOR 160(DX), Y5, Y5
	VPXOR 192(DX), Y6, Y6
	VPXOR 224(DX), Y7, Y7

store256:
	VMOVDQU Y0, (DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	VMOVDQU Y4, 128(DX)
	VMOVDQU Y5, 160(DX)
	VMOVDQU Y6, 192(DX)
	VMOVDQU Y7, 224(DX)
	ADDQ    $256, CX
	JMP     chunk256

chunk64:
	CMPQ CX, R10
	JAE  nextq
	LEAQ (SI)(CX*1), BX
	MOVBQZX (R8), DX
	IMULQ   R10, DX
	ADDQ    BX, DX
	VMOVDQU (DX), Y0
	VMOVDQU 32(DX), Y1
	ADDQ    R11, BX
	MOVQ    $1, R13
	CMPQ    R13, R9
	JAE     fin64

gloop64:
	MOVBQZX (R8)(R13*1), DX
	IMULQ   R10, DX
	ADDQ    BX, DX
	VPXOR   (DX), Y0, Y0
	VPXOR   32(DX), Y1, Y1
	ADDQ    R11, BX
	INCQ    R13
	CMPQ    R13, R9
	JB      gloop64

fin64:
	LEAQ  (DI)(CX*1), DX
	TESTQ R12, R12
	JNZ   store64
	VPXOR (DX), Y0, Y0
	VPXOR 32(DX), Y1, Y1

store64:
	VMOVDQU Y0, (DX)
	VMOVDQU Y1, 32(DX)
	ADDQ    $64, CX
	JMP     chunk64

nextq:
	ADDQ R10, DI
	ADDQ idxStride+32(FP), R8
	DECQ nq+24(FP)
	JNZ  query

done:
	VZEROUPPER
	RET
