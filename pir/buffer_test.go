package pir

import (
	"errors"
	"testing"
)

func TestBuffer(t *testing.T) {
	for _, n := range []int{3, 40} { // heap, then mapped (40 × 64 KiB)
		buf, err := NewBuffer(n, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		rows := buf.Rows()
		if len(rows) != n {
			t.Fatalf("%d rows, want %d", len(rows), n)
		}
		for i, r := range rows {
			if len(r) != 64<<10 || cap(r) != 64<<10 || r[0] != 0 {
				t.Fatalf("row %d: len %d cap %d", i, len(r), cap(r))
			}
			r[0], r[len(r)-1] = byte(i), byte(i)
		}
		for i, r := range rows { // rows do not overlap
			if r[0] != byte(i) || r[len(r)-1] != byte(i) {
				t.Fatalf("row %d overwritten", i)
			}
		}
		if err := buf.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := NewBuffer(1<<20, 1<<20); !errors.Is(err, ErrSize) {
		t.Errorf("1 TiB buffer: %v", err)
	}
}
