//go:build riffletest

package node

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestClientCertCheck: a client takes a descriptor of number N only with
// the certificate of N−1 verifying against the servers it knows (its last
// group, its primary, its required servers; the descriptor's own group
// before it took any). A tampered signature, a certificate of strangers,
// of another number or none at all makes it refuse with the reason.
func TestClientCertCheck(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		keys := newCertKeys(t, 3)
		strangers := newCertKeys(t, 3)
		ids := func(ks []certKey) []peer.ID {
			out := make([]peer.ID, len(ks))
			for i, k := range ks {
				out[i] = k.id
			}
			return out
		}
		group, primary := ids(keys), keys[0].id
		desc := func(n uint64, c *wire.Cert) *wire.Descriptor {
			d := &wire.Descriptor{Number: n}
			if c != nil {
				d.Previous = *c
			}
			return d
		}
		check := func(d *wire.Descriptor, last []peer.ID) error {
			return CheckPrevious(d, group, last, primary, nil)
		}

		if err := check(desc(6, finalCertBy(t, keys, keys, 5)), group); err != nil {
			t.Fatalf("valid certificate by the last group: %v", err)
		}
		if err := check(desc(6, finalCertBy(t, keys, keys, 5)), nil); err != nil {
			t.Fatalf("valid certificate, first descriptor taken: %v", err)
		}
		if err := check(desc(1, nil), nil); err != nil {
			t.Fatalf("epoch 1 without a certificate: %v", err)
		}

		tampered := finalCertBy(t, keys, keys, 5)
		tampered.Sigs[1].Sig[7] ^= 1
		if err := check(desc(6, tampered), group); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("a certificate with a tampered signature: %v", err)
		}
		tampered = finalCertBy(t, keys, keys, 5)
		tampered.Digest[0] ^= 1
		if err := check(desc(6, tampered), group); err == nil {
			t.Error("a certificate with a tampered digest was taken")
		}
		if err := check(desc(6, finalCertBy(t, strangers, strangers, 5)), group); err == nil || !strings.Contains(err.Error(), "known here") {
			t.Errorf("a certificate of servers the client never saw: %v", err)
		}
		// The primary alone does not make a majority of strangers known.
		mixed := []certKey{keys[0], strangers[1], strangers[2]}
		sortKeys(mixed)
		if err := check(desc(6, finalCertBy(t, mixed, mixed, 5)), group); err == nil {
			t.Error("a certificate of the primary and two strangers was taken")
		}
		if err := check(desc(6, nil), group); err == nil || !strings.Contains(err.Error(), "no certificate") {
			t.Errorf("a descriptor of 6 without a certificate: %v", err)
		}
		if err := check(desc(7, finalCertBy(t, keys, keys, 5)), group); err == nil || !strings.Contains(err.Error(), "certificate of 5") {
			t.Errorf("a descriptor of 7 with the certificate of 5: %v", err)
		}
		if err := check(desc(1, finalCertBy(t, keys, keys, 5)), nil); err == nil {
			t.Error("epoch 1 with a certificate was taken")
		}
		// Required servers count as known: a group of pinned servers verifies
		// although the last group was another.
		d := desc(6, finalCertBy(t, strangers, strangers, 5))
		if err := CheckPrevious(d, group, group, primary, ids(strangers)); err != nil {
			t.Errorf("a certificate of the required servers: %v", err)
		}
	})
}
