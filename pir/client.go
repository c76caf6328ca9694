package pir

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Errors of the client's answer check (§6.3). A failure must change nothing
// that the client sends (v2); the caller only tells its user.
var (
	ErrBadRow     = errors.New("pir: row does not hash to the requested id")
	ErrBadPadding = errors.New("pir: row padding is not zero")
	ErrMask       = errors.New("pir: malformed mask")
)

// CheckMask validates a mask received from the network for a round of L rows:
// exactly MaskBytes(L) bytes and every bit at a position ≥ L zero (the only
// canonical encoding; a client never sets them).
func CheckMask(mask []byte, L int) error {
	if L < 1 {
		return fmt.Errorf("%w: round of %d rows", ErrSize, L)
	}
	if len(mask) != MaskBytes(L) {
		return fmt.Errorf("%w: mask of %d bytes for %d rows, want %d", ErrSize, len(mask), L, MaskBytes(L))
	}
	if r := L % 8; r != 0 && mask[len(mask)-1]>>r != 0 {
		return fmt.Errorf("%w: bits set beyond row %d", ErrMask, L-1)
	}
	return nil
}

// PrimaryMask builds the mask the client sends its primary (§6.3):
// e_row ⊕ (⊕ others), where others are the non-primaries' masks for this
// (round, slot), each of MaskBytes(L) bytes.
func PrimaryMask(row, L int, others [][]byte) ([]byte, error) {
	if L < 1 || row < 0 || row >= L {
		return nil, fmt.Errorf("%w: row %d of %d", ErrSize, row, L)
	}
	m := make([]byte, MaskBytes(L))
	for j, o := range others {
		if err := CheckMask(o, L); err != nil {
			return nil, fmt.Errorf("pir: mask of server %d: %w", j, err)
		}
		subtle.XORBytes(m, m, o)
	}
	// Set bit row without a memory access that depends on the row: the
	// wanted row is the one secret here.
	bit := byte(1) << (row % 8)
	for i := range m {
		m[i] ^= bit & byte(-subtle.ConstantTimeEq(int32(i), int32(row/8)))
	}
	return m, nil
}

// Query derives the non-primaries' masks for (round, slot) from their keys
// and returns the primary's mask for row. The same (round, slot, row) always
// gives the same mask, so a query sent again is identical (§6.1 v2).
func Query(others []*Keys, round uint64, slot uint32, L, row int) ([]byte, error) {
	ms := make([][]byte, len(others))
	for j, k := range others {
		ms[j] = k.Mask(round, slot, L)
	}
	return PrimaryMask(row, L, ms)
}

// CoverRow draws a row uniformly from [0, L) with the reader (crypto/rand in
// production), by rejection sampling so that no row is favoured.
func CoverRow(rand io.Reader, L int) (int, error) {
	if L < 1 || int64(L) > 1<<32 {
		return 0, fmt.Errorf("%w: cover row among %d rows", ErrSize, L)
	}
	n := uint64(L)
	limit := (1 << 32) / n * n // largest multiple of n not above 2^32
	var buf [4]byte
	for {
		if _, err := io.ReadFull(rand, buf[:]); err != nil {
			return 0, fmt.Errorf("pir: draw cover row: %w", err)
		}
		if v := uint64(binary.BigEndian.Uint32(buf[:])); v < limit {
			return int(v % n), nil
		}
	}
}

// Combine XORs the non-primaries' padded answers into the primary's answer
// dst, in place (§6.3): dst = R_p ⊕ (⊕ parts). Every part must have len(dst).
func Combine(dst []byte, parts ...[]byte) error {
	for j, p := range parts {
		if len(p) != len(dst) {
			return fmt.Errorf("%w: answer %d of %d bytes, want %d", ErrSize, j, len(p), len(dst))
		}
	}
	for _, p := range parts {
		XorInto(dst, p)
	}
	return nil
}

// Unpad removes the non-primaries' pads for (round, slot) from the combined
// answer, in place, leaving the row.
func Unpad(others []*Keys, round uint64, slot uint32, answer []byte) {
	for _, k := range others {
		k.XORPad(round, slot, answer)
	}
}

// CheckRow checks a whole row of b bytes (§6.3 v2): SHA-256 of its first
// length bytes is id and every byte after them is zero. Both checks always
// run over the whole row, whatever fails first.
func CheckRow(row []byte, id [32]byte, length int) error {
	if length < 0 || length > len(row) {
		return fmt.Errorf("%w: listed length %d for a row of %d bytes", ErrSize, length, len(row))
	}
	sum := sha256.Sum256(row[:length])
	var acc byte
	for _, c := range row[length:] {
		acc |= c
	}
	hashOK := subtle.ConstantTimeCompare(sum[:], id[:]) == 1
	switch {
	case !hashOK:
		return fmt.Errorf("%w: %d bytes", ErrBadRow, length)
	case acc != 0:
		return fmt.Errorf("%w: after byte %d of %d", ErrBadPadding, length, len(row))
	}
	return nil
}
