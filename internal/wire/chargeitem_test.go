package wire

import (
	"bytes"
	"testing"
)

// TestChargeItemCapPerKind: each Charge kind's item is capped at its own
// largest encoding; only EvForward's holds a forward root of 4096 slots.
func TestChargeItemCapPerKind(t *testing.T) {
	big := func(n int) []byte { return bytes.Repeat([]byte{7}, n) }
	sigs := make([][64]byte, MaxServers)
	chain := make([][]byte, MaxServers)
	for i := range chain {
		chain[i] = big(MaxPeerID)
	}
	cands := make([][]byte, MaxCands)
	for i := range cands {
		cands[i] = append(big(MaxPeerID-1), byte(i))
	}
	one := func(kind uint8) []byte {
		c := Cert{Kind: kind, Number: 9, Chain: chain, Sigs: []CertSig{{Index: 3}}}
		if kind == CertFinal {
			c.Cands = cands
		}
		return c.Marshal()
	}
	var eq Enc
	eq.Bytes(one(CertFinal))
	eq.Bytes(one(CertTimeout))
	entries := make([]AccountEntry, 4096)
	for i := range entries {
		entries[i].Slot = uint32(i)
	}
	largest := map[uint8][]byte{
		EvAbort:   (&Abort{Signer: big(MaxPeerID), Reason: big(MaxReason)}).Marshal(),
		EvVoid:    (&RoundList{Flags: ListVoid, Sigs: sigs}).Marshal(),
		EvEquiv:   eq.B,
		EvHeld:    HeldItem(&OnionReceipt{}, &Dry{}),
		EvSilent:  (&OnionReceipt{}).Marshal(),
		EvForward: ForwardItem(&OnionReceipt{}, &ForwardRoot{Entries: entries}),
	}
	for k, item := range largest {
		if len(item) != ChargeItemMax(k) && k != EvForward {
			t.Errorf("kind %d: largest item %d bytes, cap %d", k, len(item), ChargeItemMax(k))
		}
		var m Charge
		if err := m.Unmarshal((&Charge{Kind: k, Number: 9, Item: item}).Marshal()); err != nil {
			t.Errorf("kind %d: its largest item refused: %v", k, err)
		}
		if k == EvForward {
			continue
		}
		// A root's worth of bytes under another kind.
		if err := m.Unmarshal((&Charge{Kind: k, Number: 9, Item: big(ChargeItemMax(k) + 1)}).Marshal()); err == nil {
			t.Errorf("kind %d: an item of %d bytes taken, cap %d", k, ChargeItemMax(k)+1, ChargeItemMax(k))
		}
		if err := m.Unmarshal((&Charge{Kind: k, Number: 9, Item: big(len(largest[EvForward]))}).Marshal()); err == nil {
			t.Errorf("kind %d: a forward root's %d bytes taken", k, len(largest[EvForward]))
		}
	}
}
