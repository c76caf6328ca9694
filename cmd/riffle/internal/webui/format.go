package webui

import (
	"fmt"
	"strconv"
	"time"
)

// How sizes, rates and times are shown.

// humanBytes prints a byte count with a binary unit.
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + " B"
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// bytesOf is humanBytes for the integer types templates hold.
func bytesOf(v any) string {
	switch n := v.(type) {
	case uint64:
		return humanBytes(n)
	case int:
		return humanBytes(uint64(max(n, 0)))
	case int64:
		return humanBytes(uint64(max(n, 0)))
	}
	return fmt.Sprint(v)
}

// rateOf prints bytes a second.
func rateOf(r float64) string { return humanBytes(uint64(max(r, 0))) + "/s" }

// perHour says bytes an hour sent and received ("–" for none known).
func perHour(send, recv float64) string {
	if send <= 0 && recv <= 0 {
		return "–"
	}
	return humanBytes(uint64(max(send, 0))) + "/h sent, " + humanBytes(uint64(max(recv, 0))) + "/h received"
}

// when prints a time for a table.
func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}
