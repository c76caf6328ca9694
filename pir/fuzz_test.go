package pir

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// FuzzCheckMask: CheckMask never panics, and a mask it accepts decodes to a
// set of rows that encodes back to the same bytes.
func FuzzCheckMask(f *testing.F) {
	f.Add([]byte{0x05}, 3)
	f.Add([]byte{0xff, 0x01}, 9)
	f.Add([]byte{0xff, 0x02}, 9)
	f.Add([]byte{}, 0)
	f.Add(bytes.Repeat([]byte{0xaa}, 125), 1000)
	f.Fuzz(func(t *testing.T, mask []byte, L int) {
		if CheckMask(mask, L) != nil {
			return
		}
		var rows []int
		for i := 0; i < 8*len(mask); i++ {
			if mask[i/8]>>(i%8)&1 == 1 {
				rows = append(rows, i)
			}
		}
		enc := make([]byte, MaskBytes(L))
		for _, i := range rows {
			if i >= L {
				t.Fatalf("accepted mask selects row %d of %d", i, L)
			}
			enc[i/8] |= 1 << (i % 8)
		}
		if !bytes.Equal(enc, mask) {
			t.Fatalf("round trip %x -> %x", mask, enc)
		}
	})
}

// FuzzCheckRow: CheckRow never panics and accepts exactly the well-formed
// rows.
func FuzzCheckRow(f *testing.F) {
	f.Add([]byte("abc\x00\x00"), 3, false)
	f.Add([]byte("abc\x00\x01"), 3, false)
	f.Add([]byte{}, 0, true)
	f.Fuzz(func(t *testing.T, row []byte, length int, wrongID bool) {
		var id [32]byte
		if length >= 0 && length <= len(row) {
			id = sha256.Sum256(row[:length])
		}
		if wrongID {
			id[0] ^= 1
		}
		err := CheckRow(row, id, length)
		ok := !wrongID && length >= 0 && length <= len(row) && bytes.Count(row[length:], []byte{0}) == len(row)-length
		if (err == nil) != ok {
			t.Fatalf("CheckRow(%x, %d) = %v, want ok = %v", row, length, err, ok)
		}
	})
}

// FuzzEngine: on any small database and masks, the engine either refuses
// the sizes as Reference does or gives Reference's bytes.
func FuzzEngine(f *testing.F) {
	f.Add([]byte{3, 7, 2, 1, 0xff, 0x10, 0x20, 0x30}, uint8(2), uint8(0))
	f.Add(bytes.Repeat([]byte{0x5a}, 200), uint8(9), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, nrows, g uint8) {
		if len(data) < 2 {
			return
		}
		L, b := int(nrows%40)+1, int(data[0])%150+1
		Q := int(data[1])%9 + 1
		data = data[2:]
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			c := data[0]
			data = data[1:]
			return c
		}
		db := make(SliceRows, L)
		for i := range db {
			db[i] = make([]byte, int(next())%(b+1))
			for k := range db[i] {
				db[i][k] = next()
			}
		}
		masks := make([][]byte, Q)
		for q := range masks {
			masks[q] = make([]byte, MaskBytes(L))
			for k := range masks[q] {
				masks[q][k] = next()
			}
			clearUnused(masks[q], L)
		}
		want, got := newOut(Q, b, 0), newOut(Q, b, 1)
		if err := Reference(db, b, masks, want); err != nil {
			t.Fatal(err)
		}
		e := NewEngine(Options{GroupBits: int(g % 9), SliceBytes: 64 * int(g%4), BlockGroups: int(g % 3)})
		if err := e.Answer(db, b, masks, got); err != nil {
			t.Fatal(err)
		}
		for q := range got {
			if !bytes.Equal(got[q], want[q]) {
				t.Fatalf("query %d differs", q)
			}
		}
	})
}
