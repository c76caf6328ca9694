package blame

import "testing"

// TestExcludedUntil: 1, 2, 4, … epochs after the strike's number, capped
// at 2^MaxExcludeShift, never shortening a longer end already held.
func TestExcludedUntil(t *testing.T) {
	for _, c := range []struct {
		strikes       uint32
		until, number uint64
		want          uint64
	}{
		{1, 0, 10, 11},
		{2, 11, 10, 12},
		{3, 0, 10, 14},
		{MaxExcludeShift + 1, 0, 100, 100 + 1<<MaxExcludeShift},
		{MaxExcludeShift + 50, 0, 100, 100 + 1<<MaxExcludeShift},
		{1, 500, 10, 500},
	} {
		if got := ExcludedUntil(c.strikes, c.until, c.number); got != c.want {
			t.Errorf("strike %d (held to %d) in epoch %d: refused to %d, want %d", c.strikes, c.until, c.number, got, c.want)
		}
	}
}
