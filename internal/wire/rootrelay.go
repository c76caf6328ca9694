package wire

// Signed relays of a part's root (docs/protocol.md §5.2 v3, "every
// honest server holds the same parts"; docs/proto-node.md "Relayed
// roots").

// TypeRootRelay (v3): a chain server → every other chain server, a
// signed batch root it took in time, with the relay signatures of the
// chain servers that took and relayed it before (its own last): a copy
// with k of them is taken up to k relay steps past the part's deadline.
const TypeRootRelay Type = 57

// RelaySig is one chain server's signature over a relayed root
// (RelayDigest in the node: epoch id, round, S and root), by its chain
// position.
type RelaySig struct {
	Index uint16
	Sig   [64]byte
}

// RootRelay is a Root with its relay signatures, at most MaxServers.
type RootRelay struct {
	Root   Root
	Relays []RelaySig
}

// RootRelaySize is a RootRelay's size with n relay signatures.
func RootRelaySize(n int) int { return rootSize + 4 + n*(2+SigSize) }

func (m *RootRelay) Marshal() []byte {
	e := Enc{B: make([]byte, 0, RootRelaySize(len(m.Relays)))}
	e.Fixed(m.Root.Marshal())
	e.U32(uint32(len(m.Relays)))
	for _, r := range m.Relays {
		e.U16(r.Index)
		e.Fixed(r.Sig[:])
	}
	return e.B
}

func (m *RootRelay) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Root.Epoch = d.Array32("epoch id")
	m.Root.Round = d.U32("round")
	m.Root.S = d.U16("server")
	m.Root.Root = d.Array32("root")
	m.Root.Sig = d.Array64("signature")
	n := d.Count(MaxServers, 2+SigSize, "relay signatures")
	m.Relays = make([]RelaySig, 0, n)
	for i := 0; i < n && d.Err == nil; i++ {
		var r RelaySig
		r.Index = d.U16("relay position")
		r.Sig = d.Array64("relay signature")
		m.Relays = append(m.Relays, r)
	}
	return d.Done("root relay")
}
