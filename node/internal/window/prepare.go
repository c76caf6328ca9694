package window

import (
	"fmt"
	"slices"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The window a Prepare pins (§6.3 v3) and the gap past a timeout: the
// rules the leader's choice and a member's check both follow, as pure
// functions of the Prepare and the certificates.

// PinnedRefs returns the refs of a walk's window.
func PinnedRefs(w proto.WindowWalk) []wire.WindowRef {
	out := make([]wire.WindowRef, 0, len(w.Pools))
	for _, pe := range w.Pools {
		out = append(out, wire.WindowRef{Number: pe.Number, Epoch: pe.ID, Closing: proto.ClosingDigest(w.Recs[pe.ID])})
	}
	return out
}

// LeftOutCertified returns a ref of prev (the window N−1's descriptor
// pinned) that window, N's, leaves out although it still could hold it:
// window has fewer than proto.DecoyEpochs epochs or pins an older one, and the
// ref is within N's look-back.
func LeftOutCertified(number uint64, prev, window []wire.WindowRef) (wire.WindowRef, bool) {
	for _, r := range prev {
		if r.Number+proto.WindowLookback < number || slices.Contains(window, r) {
			continue
		}
		if len(window) < proto.DecoyEpochs || window[len(window)-1].Number < r.Number {
			return r, true
		}
	}
	return wire.WindowRef{}, false
}

// GapFor is the Gap of a Prepare of number whose previous certificate is
// prev, from the certificates certOf gives.
func GapFor(number uint64, prev *wire.Cert, certOf func(uint64) (*wire.Cert, bool)) ([]wire.Cert, error) {
	if prev.Kind != wire.CertTimeout {
		return nil, nil
	}
	var out []wire.Cert
	for n := number - 2; n >= 1 && n+proto.WindowLookback >= number; n-- {
		c, ok := certOf(n)
		if !ok {
			return nil, fmt.Errorf("node: no certificate of epoch %d here for the gap of %d", n, number)
		}
		out = append(out, *c)
		if c.Kind != wire.CertTimeout {
			break
		}
	}
	return out, nil
}

// GapBytes encodes a Gap for comparison.
func GapBytes(gap []wire.Cert) []byte {
	var b []byte
	for i := range gap {
		b = append(b, gap[i].Marshal()...)
	}
	return b
}

// CheckGapShape checks a Gap on its own: empty unless prev (the
// certificate of number−1) is a timeout; else the certificates of
// number−2 down, a number at a time, each a timeout but the last, which
// names an epoch or is of the look-back's last number (or 1).
func CheckGapShape(number uint64, prev *wire.Cert, gap []wire.Cert) error {
	if prev.Kind != wire.CertTimeout {
		if len(gap) > 0 {
			return fmt.Errorf("node: a gap of %d certificates after a certificate of kind %d", len(gap), prev.Kind)
		}
		return nil
	}
	for i := range gap {
		c := &gap[i]
		if c.Kind == wire.CertNone || c.Number == 0 || c.Number+uint64(i)+2 != number || c.Number+proto.WindowLookback < number {
			return fmt.Errorf("node: the gap of %d holds the certificate of %d at %d", number, c.Number, i)
		}
		if c.Kind != wire.CertTimeout && i != len(gap)-1 {
			return fmt.Errorf("node: the gap of %d goes on past epoch %d", number, c.Number)
		}
	}
	end := number - 1 // the number of the last certificate
	if len(gap) > 0 {
		if gap[len(gap)-1].Kind != wire.CertTimeout {
			return nil
		}
		end = gap[len(gap)-1].Number
	}
	if end > 1 && end-1+proto.WindowLookback >= number {
		return fmt.Errorf("node: the gap of %d stops at %d, short of an epoch or the look-back", number, end)
	}
	return nil
}

// CheckWindowRefs checks a Prepare's window on its own: at most
// proto.DecoyEpochs epochs, newest first, each of number at most N−2 and within
// the look-back.
func CheckWindowRefs(number uint64, refs []wire.WindowRef) error {
	if len(refs) > proto.DecoyEpochs {
		return fmt.Errorf("node: window of %d epochs", len(refs))
	}
	for i, r := range refs {
		if r.Number+2 > number || r.Number+proto.WindowLookback < number || i > 0 && refs[i-1].Number <= r.Number {
			return fmt.Errorf("node: window pins epoch number %d for %d", r.Number, number)
		}
	}
	return nil
}
