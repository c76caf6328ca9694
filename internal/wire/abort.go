package wire

import "fmt"

// Abort kinds (docs/protocol.md §3, refusal budget).
const (
	// AbortFault: the signer ends the epoch for what it saw itself: a
	// fault, a refusal on private grounds, free text. It counts against
	// the signer's refusal budget unless the log holds a public cause
	// of its epoch (a blame record, a backed AbortDown).
	AbortFault uint8 = 0
	// AbortCoord: the leader ends an epoch whose registration it could not
	// complete (a request to the chain failed). Accepted only before the
	// final descriptor; charged to nobody (a leader that never completes
	// an epoch is a silent leader).
	AbortCoord uint8 = 1
	// AbortNoPub: the signer never got round Round's publication. It
	// charges the first chain position whose part of the round more
	// than half of the chain's other servers attest they lacked, else
	// its signer (§3, "The control-plane log": a claim the majority
	// does not back is the claimant's).
	AbortNoPub uint8 = 2
	// AbortNoClose: the signer, not the leader, held the clients it needs
	// and no close of the registration came within T_lead after its
	// registration deadline. It charges the leader when more than half
	// of the chain's servers other than the leader attest no close by
	// their own deadline plus half of T_lead, else its signer.
	AbortNoClose uint8 = 3
	// AbortUnfilled: S_0 could not fill round Round: a slot held no
	// onion at the round limit. Only the slot's primary and its client
	// know whether the client sent none or the primary held it back, so
	// it charges no server (the primary counts a dry slot against its
	// client's key, §5.4); signed by another server, it charges its
	// signer. 4 is an Attest kind (ClaimLack).
	AbortUnfilled uint8 = 5
	// AbortDown: the server at chain position Round was down (its
	// probe failed). It charges that server, without blame, when more
	// than half of the chain's servers other than it attest it down,
	// else its signer; a backed one is the public cause that takes
	// back the other counts of its epoch.
	AbortDown uint8 = 6
	// AbortNoList: the signer published round Round and no final request
	// list of it came by its due (v3, since kind 7). No honest server
	// signs one; it charges its signer (attestations that no list came
	// framed an honest S_0 whose list a signer held back).
	AbortNoList uint8 = 7
)

// Abort ends an epoch for every server of its chain (TypeAbort). It is
// signed by the server that ends it, over SHA-256("riffle/v2/abort", the
// encoding before Sig), so that a server that gets it relays it and every
// server charges the same signer.
type Abort struct {
	Epoch  [32]byte
	Number uint64 // the epoch's number
	Round  uint32 // the round it ends in (0 before the rounds)
	Kind   uint8  // AbortFault, AbortCoord, AbortNoPub, AbortNoClose, AbortUnfilled, AbortDown or AbortNoList
	Signer []byte // peer id of the server that ends the epoch
	Reason []byte // free text, at most MaxReason
	Sig    [64]byte
}

// MarshalBody is the signed part.
func (m *Abort) MarshalBody() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U64(m.Number)
	e.U32(m.Round)
	e.U8(m.Kind)
	e.Bytes(m.Signer)
	e.Bytes(m.Reason)
	return e.B
}

func (m *Abort) Marshal() []byte {
	b := m.MarshalBody()
	return append(b, m.Sig[:]...)
}

func (m *Abort) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Number = d.U64("number")
	m.Round = d.U32("round")
	m.Kind = d.U8("kind")
	m.Signer = d.Bytes(MaxPeerID, "signer")
	m.Reason = d.Bytes(MaxReason, "reason")
	m.Sig = d.Array64("signature")
	if err := d.Done("abort"); err != nil {
		return err
	}
	if m.Kind > AbortNoClose && m.Kind != AbortUnfilled && m.Kind != AbortDown && m.Kind != AbortNoList {
		return fmt.Errorf("wire: decode abort: unknown kind %d", m.Kind)
	}
	return nil
}
